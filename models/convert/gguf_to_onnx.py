"""Convert a GGUF decoder (llama or qwen2 architecture) into an ONNX model
for ONNX Runtime, with the tokenizer and generation settings beside it.

Run by `cargo xtask models --group <name>-onnx` in a pinned virtual
environment (models/convert/requirements.txt); the output is deterministic
and its sha256 is checked against models/manifest.json.

Why a converter of our own: the package registries ship GGUF files, not
ONNX exports, and the usual exporters start from a model hub checkpoint.
GGUF already holds everything: the weights, the vocabulary and merges,
the chat template and the architecture's numbers.

The weights keep their quantised values exactly:
- 4-bit blocks (Q4_0, Q4_1, Q4_K) become MatMulNBits with 4 bits, block 32.
  Blocks that carry an offset (value = a*q + b, Q4_1 and Q4_K) are written
  as a*(q - 8) and the offsets (b + 8a per block) as a small dense matrix
  applied to the block sums of the input, so that x.W is exact.
- 8-bit and 6-bit blocks (Q8_0, Q6_K) become MatMulNBits with 8 bits
  (block 32 and block 16), again exact.
- Any other type is dequantised by gguf-py and written as 8-bit blocks
  of 32 (round to nearest).
The attention is GroupQueryAttention with the rotary embedding inside
(cos and sin caches as initialisers), the norms SimplifiedLayerNormalization.

Graph interface (batch B, new tokens S, past length P):
  inputs  input_ids int64 [B,S]; seqlens_k int32 [B] (each sequence's
          total length minus one, right padding); total_sequence_length
          int32 scalar (P+S); last_index int64 [B] (the position in S whose
          logits are wanted); cos_cache, sin_cache float32 [positions,
          head_dim/2] (cos and sin of position * rope_theta^(-2i/head_dim));
          past_key_values.{i}.key/value float32 [B, kv_heads, P, head_dim]
  outputs logits float32 [B, vocab]; present.{i}.key/value float32
          [B, kv_heads, P+S, head_dim]
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import gguf
from gguf import GGMLQuantizationType as Q

CONVERTER_VERSION = 1

# The qwen2 pre-tokenizer expression, as llama.cpp and the family's
# published tokenizer.json write it (gpt2-style vocabularies use the
# ByteLevel pre-tokenizer's own expression).
QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


# --- weights -------------------------------------------------------------


def f16(raw):
    return raw.view(np.float16).astype(np.float32)


def blocks_q4_0(raw):
    """(q uint8 [n, 32], a [n], b [n] or None): value = a*(q-8)."""
    d = f16(raw[:, 0:2])[:, 0]
    qs = raw[:, 2:18]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
    return q, d, None


def blocks_q4_1(raw):
    """value = a*q + b."""
    d = f16(raw[:, 0:2])[:, 0]
    m = f16(raw[:, 2:4])[:, 0]
    qs = raw[:, 4:20]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
    return q, d, m


def scale_min_k4(scales):
    s = scales.reshape(-1, 3, 4)
    d, m, m_d = s[:, 0], s[:, 1], s[:, 2]
    sc = np.concatenate([d & 0x3F, (m_d & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
    mn = np.concatenate([m & 0x3F, (m_d >> 4) | ((m >> 2) & 0x30)], axis=-1)
    return sc.astype(np.float32), mn.astype(np.float32)


def blocks_q4_k(raw):
    """Super-blocks of 256 as 8 blocks of 32: value = a*q + b."""
    n = raw.shape[0]
    d = f16(raw[:, 0:2])
    dmin = f16(raw[:, 2:4])
    sc, mn = scale_min_k4(raw[:, 4:16])
    qs = raw[:, 16:144].reshape(n, 4, 1, 32)
    q = (qs >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 0x0F
    q = q.reshape(n * 8, 32)
    a = (d * sc).reshape(-1)
    b = (-(dmin * mn)).reshape(-1)
    return q, a, b


def blocks_q8_0(raw):
    """(u uint8 [n, 32], a [n]): value = a*(u-128)."""
    d = f16(raw[:, 0:2])[:, 0]
    q = raw[:, 2:34].view(np.int8).astype(np.int16)
    return (q + 128).astype(np.uint8), d


def blocks_q6_k(raw):
    """Super-blocks of 256 as 16 blocks of 16: value = a*(u-128)."""
    n = raw.shape[0]
    ql = raw[:, 0:128]
    qh = raw[:, 128:192]
    scales = raw[:, 192:208].view(np.int8).astype(np.float32)
    d = f16(raw[:, 208:210])
    ql = ql.reshape(n, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    ql = (ql & 0x0F).reshape(n, 2, 2, 64).reshape(n, -1, 32)
    qh = qh.reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
    qh = (qh & 0x03).reshape(n, -1, 32)
    q = (ql | (qh << 4)).astype(np.int16) - 32
    u = (q + 128).astype(np.uint8).reshape(n * 16, 16)
    a = (d * scales).reshape(-1)
    return u, a


class Weight:
    """One linear weight [N out, K in] in MatMulNBits form."""

    def __init__(self, bits, block, packed, scales, offsets, n, k):
        self.bits, self.block = bits, block
        self.packed, self.scales, self.offsets = packed, scales, offsets
        self.n, self.k = n, k


def quantise_8bit(w):
    """Round-to-nearest symmetric 8-bit blocks of 32 of a dense [N, K]."""
    n, k = w.shape
    b = w.reshape(n, k // 32, 32)
    amax = np.abs(b).max(axis=-1, keepdims=True)
    a = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    u = (np.clip(np.rint(b / a), -127, 127) + 128).astype(np.uint8)
    return Weight(8, 32, u, a.reshape(-1), None, n, k)


def linear_weight(t):
    """A GGUF tensor of shape [K, N] (ne0 = K fastest) as a Weight."""
    k, n = int(t.shape[0]), int(t.shape[1])
    ty = t.tensor_type
    raw = np.ascontiguousarray(t.data).view(np.uint8)
    if ty in (Q.Q4_0, Q.Q4_1, Q.Q4_K):
        bs = 32
        if ty == Q.Q4_0:
            q, a, b = blocks_q4_0(raw.reshape(-1, 18))
        elif ty == Q.Q4_1:
            q, a, b = blocks_q4_1(raw.reshape(-1, 20))
        else:
            q, a, b = blocks_q4_k(raw.reshape(-1, 144))
        q = q.reshape(n, k // bs, bs)
        packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
        offsets = None
        if b is not None:
            # a*q + b == a*(q - 8) + (b + 8a)
            offsets = (b + 8.0 * a).astype(np.float32).reshape(n, k // bs).T.copy()
        w = Weight(4, bs, packed, a.astype(np.float32), offsets, n, k)
    elif ty == Q.Q8_0:
        u, a = blocks_q8_0(raw.reshape(-1, 34))
        w = Weight(8, 32, u.reshape(n, k // 32, 32), a.astype(np.float32), None, n, k)
    elif ty == Q.Q6_K:
        u, a = blocks_q6_k(raw.reshape(-1, 210))
        w = Weight(8, 16, u.reshape(n, k // 16, 16), a.astype(np.float32), None, n, k)
    else:
        dense = gguf.quants.dequantize(t.data, ty).astype(np.float32).reshape(n, k)
        w = quantise_8bit(dense)
    return w


def dense_of(w):
    """The exact float matrix [N, K] a Weight stands for (for checks)."""
    if w.bits == 4:
        q = np.empty((w.n, w.k // w.block, w.block), dtype=np.float32)
        q[:, :, 0::2] = w.packed & 0x0F
        q[:, :, 1::2] = w.packed >> 4
        q -= 8.0
    else:
        q = w.packed.astype(np.float32) - 128.0
    v = q * w.scales.reshape(w.n, -1, 1)
    if w.offsets is not None:
        v += w.offsets.T.reshape(w.n, -1, 1)
    return v.reshape(w.n, w.k)


def check_exact(t, w):
    """The Weight must reproduce gguf-py's dequantisation (first rows)."""
    rows = min(8, w.n)
    k = w.k
    ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(w.n, k)[:rows]
    got = dense_of(w)[:rows]
    err = np.abs(ref - got).max()
    tol = 1e-6 * max(1.0, np.abs(ref).max())
    if t.tensor_type in (Q.Q4_0, Q.Q4_1, Q.Q4_K, Q.Q8_0, Q.Q6_K) and err > tol:
        sys.exit(f"{t.name}: repacked weights differ from gguf-py by {err}")


def f32_tensor(t):
    return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)


# --- graph ----------------------------------------------------------------


class Builder:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op, inputs, outputs=None, domain="", **attrs):
        if outputs is None:
            outputs = [self.name(op)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.name(op + "_n"), domain=domain, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def const_i64(self, values, base="c"):
        return self.init(self.name(base), np.array(values, dtype=np.int64))

    def linear(self, x, w, prefix, block_sums, rank=3):
        """x [.., K] @ W^T, exact for offset blocks; `block_sums` caches the
        per-32 sums of an input shared by several weights."""
        b = self.init(prefix + ".qweight", w.packed)
        s = self.init(prefix + ".scales", w.scales)
        y = self.node(
            "MatMulNBits",
            [x, b, s],
            domain="com.microsoft",
            K=w.k,
            N=w.n,
            bits=w.bits,
            block_size=w.block,
            accuracy_level=ACCURACY_LEVEL,
        )
        if w.offsets is not None:
            key = (x, w.k)
            if key not in block_sums:
                shape = self.const_i64([0] * (rank - 1) + [w.k // 32, 32])
                r = self.node("Reshape", [x, shape])
                block_sums[key] = self.node("ReduceSum", [r, self.const_i64([-1])], keepdims=0)
            off = self.init(prefix + ".offsets", w.offsets)
            y = self.node("Add", [y, self.node("MatMul", [block_sums[key], off])])
        return y

    def embedding(self, t, ids, vocab, hidden):
        """Rows of the token table: 4-bit tables stay 4-bit
        (GatherBlockQuantized, with their block offsets gathered beside
        them, exact); others become float16 rows."""
        if t.tensor_type in (Q.Q4_0, Q.Q4_1, Q.Q4_K):
            w = linear_weight(t)
            data = self.init("embed_tokens.qweight", w.packed.reshape(vocab, hidden // 2))
            scales = self.init("embed_tokens.scales", w.scales.reshape(vocab, hidden // 32))
            x = self.node(
                "GatherBlockQuantized",
                [data, ids, scales],
                domain="com.microsoft",
                gather_axis=0,
                quantize_axis=1,
                block_size=32,
                bits=4,
            )
            if w.offsets is not None:
                off = self.init("embed_tokens.offsets", w.offsets.T.copy())
                rows = self.node("Unsqueeze", [self.node("Gather", [off, ids], axis=0), self.const_i64([-1])])
                blocks = self.node("Expand", [rows, self.const_i64([1, 1, 1, 32])])
                x = self.node("Add", [x, self.node("Reshape", [blocks, self.const_i64([0, 0, hidden])])])
            return x
        emb = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float16).reshape(vocab, hidden)
        table = self.init("embed_tokens.weight", emb)
        return self.node("Cast", [self.node("Gather", [table, ids], axis=0)], to=TensorProto.FLOAT)

    def rms(self, x, weight, eps, prefix):
        g = self.init(prefix, weight)
        return self.node("SimplifiedLayerNormalization", [x, g], axis=-1, epsilon=eps, stash_type=1)


ACCURACY_LEVEL = 4


def build(reader, max_positions):
    arch = field(reader, "general.architecture")
    if arch not in ("llama", "qwen2"):
        sys.exit(f"architecture {arch!r} is not supported (llama, qwen2)")
    n_layer = field(reader, f"{arch}.block_count")
    hidden = field(reader, f"{arch}.embedding_length")
    heads = field(reader, f"{arch}.attention.head_count")
    kv_heads = field(reader, f"{arch}.attention.head_count_kv", heads)
    eps = float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon"))
    base = float(field(reader, f"{arch}.rope.freq_base", 10000.0))
    context = int(field(reader, f"{arch}.context_length"))
    head_dim = hidden // heads
    rot_dim = int(field(reader, f"{arch}.rope.dimension_count", head_dim))
    if rot_dim != head_dim:
        sys.exit(f"partial rotary ({rot_dim} of {head_dim}) is not supported")
    # llama.cpp's converter permutes llama's q and k for adjacent-pair
    # rotation; qwen2 keeps the half-split (NeoX) layout.
    interleaved = 1 if arch == "llama" else 0
    tensors = {t.name: t for t in reader.tensors}
    vocab = int(tensors["token_embd.weight"].shape[1])
    positions = min(context, max_positions)

    bld = Builder()
    ids = "input_ids"
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
        helper.make_tensor_value_info("last_index", TensorProto.INT64, ["batch"]),
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", vocab])]

    emb_t = tensors["token_embd.weight"]
    x = bld.embedding(emb_t, ids, vocab, hidden)

    # The rotary tables are inputs, computed by the runtime from
    # generation.json: transcendental functions differ in the last bit
    # between libm builds, and the file must hash the same everywhere.
    cos, sin = "cos_cache", "sin_cache"
    for nm in (cos, sin):
        inputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, ["positions", head_dim // 2]))

    for i in range(n_layer):
        p = f"blk.{i}"
        past_k, past_v = f"past_key_values.{i}.key", f"past_key_values.{i}.value"
        for nm in (past_k, past_v):
            inputs.append(
                helper.make_tensor_value_info(nm, TensorProto.FLOAT, ["batch", kv_heads, "past_sequence", head_dim])
            )
        pres_k, pres_v = f"present.{i}.key", f"present.{i}.value"
        for nm in (pres_k, pres_v):
            outputs.append(
                helper.make_tensor_value_info(nm, TensorProto.FLOAT, ["batch", kv_heads, "total_sequence", head_dim])
            )
        h = bld.rms(x, f32_tensor(tensors[f"{p}.attn_norm.weight"]), eps, f"{p}.attn_norm.weight")
        sums = {}
        qkv = []
        for part in ("q", "k", "v"):
            t = tensors[f"{p}.attn_{part}.weight"]
            w = linear_weight(t)
            if i == 0:
                check_exact(t, w)
            y = bld.linear(h, w, f"{p}.attn_{part}", sums)
            bias = tensors.get(f"{p}.attn_{part}.bias")
            if bias is not None:
                y = bld.node("Add", [y, bld.init(f"{p}.attn_{part}.bias", f32_tensor(bias))])
            qkv.append(y)
        attn, _, _ = bld.node(
            "GroupQueryAttention",
            [qkv[0], qkv[1], qkv[2], past_k, past_v, "seqlens_k", "total_sequence_length", cos, sin],
            [bld.name("attn"), pres_k, pres_v],
            domain="com.microsoft",
            num_heads=heads,
            kv_num_heads=kv_heads,
            do_rotary=1,
            rotary_interleaved=interleaved,
            scale=1.0 / float(np.sqrt(head_dim)),
        )
        o = bld.linear(attn, linear_weight(tensors[f"{p}.attn_output.weight"]), f"{p}.attn_output", {})
        x = bld.node("Add", [x, o])
        h = bld.rms(x, f32_tensor(tensors[f"{p}.ffn_norm.weight"]), eps, f"{p}.ffn_norm.weight")
        sums = {}
        gate = bld.linear(h, linear_weight(tensors[f"{p}.ffn_gate.weight"]), f"{p}.ffn_gate", sums)
        up = bld.linear(h, linear_weight(tensors[f"{p}.ffn_up.weight"]), f"{p}.ffn_up", sums)
        act = bld.node("Mul", [bld.node("Mul", [gate, bld.node("Sigmoid", [gate])]), up])
        down_t = tensors[f"{p}.ffn_down.weight"]
        down_w = linear_weight(down_t)
        if i == 0:
            check_exact(down_t, down_w)
        x = bld.node("Add", [x, bld.linear(act, down_w, f"{p}.ffn_down", {})])
        print(f"layer {i + 1}/{n_layer}", file=sys.stderr, flush=True)

    x = bld.rms(x, f32_tensor(tensors["output_norm.weight"]), eps, "output_norm.weight")
    # Only the wanted position of each sequence reaches the vocabulary.
    idx = bld.node("Unsqueeze", ["last_index", bld.const_i64([1])])
    last = bld.node("GatherND", [x, idx], batch_dims=1)
    head_t = tensors.get("output.weight", emb_t)
    bld.linear(last, linear_weight(head_t), "lm_head", {}, rank=2)
    bld.nodes[-1].output[0] = "logits"

    graph = helper.make_graph(bld.nodes, "decoder", inputs, outputs, bld.inits)
    model = helper.make_model(
        graph,
        ir_version=10,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
        producer_name="codegloss-gguf-to-onnx",
        producer_version=str(CONVERTER_VERSION),
    )
    config = {
        "converter_version": CONVERTER_VERSION,
        "architecture": arch,
        "name": field(reader, "general.name", ""),
        "layers": n_layer,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab": vocab,
        "max_positions": positions,
        "rope_theta": base,
        "rms_epsilon": eps,
    }
    return model, config


# --- tokenizer --------------------------------------------------------------


def tokenizer_json(reader):
    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        sys.exit(f"tokenizer model {model!r} is not supported (gpt2 byte-level BPE)")
    pre = field(reader, "tokenizer.ggml.pre", "default")
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    merges = field(reader, "tokenizer.ggml.merges")
    if pre == "qwen2":
        pre_tok = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        }
    elif pre in ("smollm", "gpt-2", "default"):
        steps = [{"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]
        if pre == "smollm":
            steps.insert(0, {"type": "Digits", "individual_digits": True})
        pre_tok = {"type": "Sequence", "pretokenizers": steps}
    else:
        sys.exit(f"pre-tokenizer {pre!r} is not supported (qwen2, smollm, gpt-2)")
    added = [
        {
            "id": i,
            "content": tok,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": types[i] == 3,
        }
        for i, tok in enumerate(tokens)
        if types[i] in (3, 4)
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tok,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {tok: i for i, tok in enumerate(tokens)},
            "merges": list(merges),
        },
    }


def generation_json(reader, tokens):
    eos = field(reader, "tokenizer.ggml.eos_token_id")
    stops = {int(eos)} if eos is not None else set()
    types = field(reader, "tokenizer.ggml.token_type")
    # End-of-turn markers of chat templates stop generation too.
    for i, tok in enumerate(tokens):
        if types[i] == 3 and tok in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>"):
            stops.add(i)
    bos = field(reader, "tokenizer.ggml.bos_token_id")
    return {
        "chat_template": field(reader, "tokenizer.chat_template", ""),
        "bos_token_id": None if bos is None else int(bos),
        "bos_token": None if bos is None else tokens[int(bos)],
        "eos_token": None if eos is None else tokens[int(eos)],
        "add_bos_token": bool(field(reader, "tokenizer.ggml.add_bos_token", False)),
        "stop_token_ids": sorted(stops),
        "pad_token_id": int(field(reader, "tokenizer.ggml.padding_token_id", eos or 0)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("out_dir")
    ap.add_argument("--max-positions", type=int, default=32768)
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.gguf)
    os.makedirs(args.out_dir, exist_ok=True)
    model, config = build(reader, args.max_positions)
    tokens = field(reader, "tokenizer.ggml.tokens")
    config.update(generation_json(reader, tokens))
    onnx_path = os.path.join(args.out_dir, "model.onnx")
    data_name = "model.onnx.data"
    for stale in (onnx_path, os.path.join(args.out_dir, data_name)):
        if os.path.exists(stale):
            os.remove(stale)
    onnx.save_model(
        model,
        onnx_path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data_name,
        size_threshold=1024,
    )
    with open(os.path.join(args.out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(reader), f, ensure_ascii=False, indent=None, separators=(",", ":"))
    with open(os.path.join(args.out_dir, "generation.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2, sort_keys=True)
        f.write("\n")
    print(f"wrote {args.out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
