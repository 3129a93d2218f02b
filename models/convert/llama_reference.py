"""llama.cpp's side of the decoder parity check (run in the
llama-cpp-python environment, `cargo xtask llm-server --python`):

    python llama_reference.py MODEL.gguf RENDERED.json REF.json [STEPS]

RENDERED.json comes from `decoder_parity render` ([{"text", "ids"}]). For
each text this writes llama.cpp's token ids (special tokens parsed, as its
server does) and its greedy continuation of STEPS tokens (default 64),
stopping early at end of generation.
"""

import json
import sys
import time

from llama_cpp import Llama


def main():
    gguf, rendered, out = sys.argv[1:4]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    llm = Llama(model_path=gguf, n_ctx=8192, n_threads=2, verbose=False)
    rows = []
    started = time.time()
    for i, item in enumerate(json.load(open(rendered))):
        ids = llm.tokenize(item["text"].encode("utf-8"), add_bos=False, special=True)
        gen = []
        for t in llm.generate(ids, temp=0.0, top_k=1, reset=True):
            if llm.token_eos() == t or t in (llm.token_eos(),):
                break
            gen.append(int(t))
            if len(gen) >= steps:
                break
        rows.append({"ids": item["ids"], "llama_ids": list(map(int, ids)), "gen": gen})
        print(f"prompt {i + 1}: {len(ids)} tokens, {len(gen)} generated", file=sys.stderr, flush=True)
    json.dump(rows, open(out, "w"))
    print(f"{len(rows)} prompts in {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
