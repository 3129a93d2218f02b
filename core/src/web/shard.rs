//! The shard envelope of the web layout: every shard is the magic number,
//! [`WEB_FORMAT_VERSION`], a kind tag and a deflated bincode payload, named
//! by its [`ShardHash`] (the first 64 bits of the SHA-256 of its bytes),
//! or, for the shards a directory lists, sealed ([`seal_shards`]).
//! Apart from `mod.rs` because it is the one place that writes and checks
//! those bytes (size, hash, magic, version, kind, inflate limit, trailing
//! bytes), and keeps the version's history; the manifest and the loader
//! only call it. Payloads are written
//! by bincode through serde and read by [`crate::wire`], without serde.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ShardKind;
use crate::error::CoreError;
use crate::format::{bincode_config, verify_hashed};
use crate::wire::{Reader, Wire};
use sha2::{Digest, Sha256};

/// Magic number at the start of every shard.
pub const WEB_MAGIC: [u8; 8] = *b"CGLOSSWB";
/// Version of the web layout; bumped on any incompatible change (4: text
/// shards carry each chunk's [`crate::model::CodeFrame`]; 5: vectors carry
/// their partitions, and a site ranked with `ivf_probe > 0` ships them as
/// a directory and partition shards; 6: partition shards carry product
/// codes, and the int8 vectors move to refine blocks; 7: the partitions
/// carry each chunk's radius, [`crate::hubness`]; 8: the vocabulary moves
/// from the search shard into the postings shards, whose first terms the
/// manifest lists, and the qualified names into a shard of their own; 9:
/// shards are named and checked by a [`ShardHash`], 128 bits, entity
/// names are predicted from their parents and files and qualified names
/// from the stored parent symbols, parents are steps from the entity
/// before's parent, a later part's first line a step from the end of the
/// part before, non-blank line counts steps from line counts, refine
/// blocks hold [`crate::retrieve::REFINE_BLOCK`] = 4 vectors, and the
/// search shard drops the token estimates and the edges the entities
/// imply; 10: document lengths are one byte each,
/// [`crate::lexical::length_code`], a chunk's non-blank line count is one
/// flag, [`crate::retrieve::features::SUBSTANTIAL_LINES`], and files carry
/// no `#include` directives: retrieval follows the include edges; 11: the
/// edges that the entities do not imply move from the search shard into
/// edge shards by range of entities, fetched for the entities a question's
/// expansion and answer look up; 12: an entity's parent is stored as its
/// place among the ancestors of the entity before; 13: a chunk's lines
/// move from the search shard into its text shard, since only what shows
/// or quotes a chunk reads them; 14: the postings and edge shards are
/// listed in the search shard's [`super::ShardDirectory`], not the manifest; 15:
/// product codes of [`crate::pq::SUBSPACE_DIM`] = 6 components a byte, and
/// 60 chunks refined by default; 16: the manifest is written in a binary
/// form too, `codegloss.bin`, which the browser reads instead of the JSON;
/// 17: the names of entities with a file, and of their chunks, move from
/// the search shard into name shards by range of files, listed in its
/// directory, and the lookups by name into the postings shards, keyed like
/// the vocabulary, `names.rs`; 18: a [`ShardHash`] is 64 bits; 19: the
/// search shard leaves out what no browser stage reads before an entity's
/// text arrives (an entity's section path and gloss model move into its
/// text shard; a file's size and line count are not shipped; whether an
/// entity is a definition and a chunk's text facts, which ranking reads of
/// candidates only, ride with the names in name shards; a postings run is
/// listed by the shortest prefix of its first term after the run before),
/// and predicts a chunk's part numbers from its entity's run of chunks, a
/// file's module from its folder, an entity's file from its kind (a call
/// chain's from its callable's), a call chain's parent as a step among the
/// callables, and blank names for the entities whose names load apart);
/// 20: the search shard stores whether an entity is a definition, and a
/// chunk's text facts, only for the rows whose names it carries
/// (`columns::SplitColumn`), an entity's kind and parent code share a
/// byte (`columns::KindsAndParents`), and directories list their shards'
/// hashes without their sizes; 21: the search shard stores a chunk's
/// length as its [`crate::lexical::coarse_code`], and a chunk's text facts
/// carry the fine [`crate::lexical::length_step`] within it; 22: the shards
/// a directory lists are sealed (`seal_shards`): named by the
/// directory's key and their place, each checked by the seal it ends
/// with, and the directories list the key once instead of every shard's
/// hash.
pub const WEB_FORMAT_VERSION: u32 = 22;

/// Magic number, version and kind tag (with three zero bytes).
const SHARD_HEADER: usize = 8 + 4 + 4;
/// Upper bound on an inflated shard, so a hostile file cannot exhaust memory.
const INFLATE_LIMIT: usize = 1 << 28;
/// miniz's deflate level: [`Packing::Bulk`], and every kind where the
/// `pack` feature is off (readers only).
const DEFLATE_LEVEL: u8 = 9;
/// Zopfli iterations for the shards a site has one of ([`Packing::One`]).
/// Measured on Kokkos's search shard (1.36 MB before compression): miniz
/// level 9 53,869 bytes; zopfli 1 / 5 / 15 / 40 iterations 45,409 / 45,044 /
/// 44,818 / 44,756 bytes in 0.8 / 1.1 / 2.0 / 5.5 s; libdeflate level 12
/// 45,713 bytes in 0.12 s.
#[cfg(feature = "pack")]
const ZOPFLI_ITERATIONS: u64 = 15;
/// Payloads smaller than this are deflated as [`Packing::Many`] even where
/// [`Packing::One`] is asked for.
const ZOPFLI_MIN_BYTES: usize = 64 * 1024;

/// How an envelope's payload is deflated. All write plain deflate, which
/// every reader inflates alike. Measured on a Kokkos site (`codegloss
/// site`): miniz level 9 everywhere 3.0 s; zopfli for the one-of-a-kind
/// shards 6.5 s, and libdeflate for postings, names and edges 7.5 s;
/// libdeflate for every other kind too 22 s (the text
/// shards, 35 MB before compression, only 1.7% smaller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Packing {
    /// miniz at level 9: for the kinds that are large in all (text,
    /// vectors), fetched after the first results.
    Bulk,
    /// libdeflate at its best level (12): for the kinds a site has
    /// hundreds of shards of that a question fetches before its first
    /// results. On Kokkos against miniz's level 9: the postings, name and
    /// edge shards in all 1,687,054 / 191,991 / 111,142 -> 1,626,463 /
    /// 189,173 / 109,522 bytes, those of its first benchmark question
    /// 71,141 -> 68,485, in about 1 s more.
    Many,
    /// Zopfli: smaller again (a postings, name and edge shard at 6,515,
    /// 2,289 and 809 bytes where libdeflate writes 6,631, 2,420 and 835)
    /// but about 0.2 s a call even on a small shard, so only for the kinds
    /// a site has one of, the search shard above all, which every reader
    /// fetches before the first results.
    One,
}

/// `payload` deflated as `packing` says. The compressors fail only on
/// their output buffer, which is sized for the worst case (libdeflate) or
/// grows (zopfli); miniz stands in if one ever does, and where the `pack`
/// feature is off (readers only).
fn deflate(payload: &[u8], packing: Packing) -> Vec<u8> {
    // Zopfli's fixed cost (about 0.2 s a call) buys nothing on a small
    // payload (a manifest, a small site's search shard), and under a
    // fuzzer's instrumentation it ran past the 10 s unit timeout.
    let packing = if packing == Packing::One && payload.len() < ZOPFLI_MIN_BYTES {
        Packing::Many
    } else {
        packing
    };
    #[cfg(feature = "pack")]
    match packing {
        Packing::One => {
            let mut out = Vec::new();
            let options = zopfli::Options {
                iteration_count: std::num::NonZeroU64::new(ZOPFLI_ITERATIONS)
                    .unwrap_or(std::num::NonZeroU64::MIN),
                ..zopfli::Options::default()
            };
            if zopfli::compress(options, zopfli::Format::Deflate, payload, &mut out).is_ok() {
                return out;
            }
        }
        // libdeflate does not build for wasm32; miniz stands in there.
        Packing::Many => {
            #[cfg(not(target_arch = "wasm32"))]
            {
                let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::best());
                let mut out = vec![0; c.deflate_compress_bound(payload.len())];
                if let Ok(n) = c.deflate_compress(payload, &mut out) {
                    out.truncate(n);
                    return out;
                }
            }
        }
        Packing::Bulk => {}
    }
    #[cfg(not(feature = "pack"))]
    let _ = packing;
    miniz_oxide::deflate::compress_to_vec(payload, DEFLATE_LEVEL)
}

/// A file deflated as the kinds a site has one shard of are
/// ([`Packing::One`]: zopfli from 64 KiB up where the `pack` feature is
/// on): for the other files every reader fetches once before the first
/// results, the search module above all (`cargo xtask site-assets`).
pub fn deflate_once(payload: &[u8]) -> Vec<u8> {
    deflate(payload, Packing::One)
}

/// A shard's content hash: the first 64 bits of the SHA-256 of its bytes.
///
/// It names the shard (content addressing: a changed shard gets a new URL,
/// so caches never serve a stale one) and checks its bytes on arrival. It
/// is a quarter of a full SHA-256 because the search shard's directory,
/// the text directory and the vector directory list one per shard, and a
/// hash is the one thing in them that does not compress: on a
/// 44,000-chunk codebase the search shard, fetched before the first
/// results, lists 1,032 shards, and 64 bits less each took it from
/// 128,484 to 119,757 bytes (`cargo xtask bench site`). 64 bits
/// still keep a collision among a site's shards out of reach (even a
/// million shards collide with odds of 1 in 3.7e7, and a site has
/// thousands) and leave corruption in transit undetected with odds of 1 in
/// 1.8e19; the host that could forge a shard serves the manifest too, so a
/// longer hash would not stop it.
pub type ShardHash = [u8; SHARD_HASH_BYTES];
/// Bytes of a [`ShardHash`].
pub const SHARD_HASH_BYTES: usize = 8;

/// The [`ShardHash`] of `bytes`.
pub fn shard_hash(bytes: &[u8]) -> ShardHash {
    keyed_hash(&[], bytes)
}

/// The [`ShardHash`] of `key` followed by `body` (an empty key: the
/// [`shard_hash`] of the body).
fn keyed_hash(key: &[u8], body: &[u8]) -> ShardHash {
    let digest = Sha256::new()
        .chain_update(key)
        .chain_update(body)
        .finalize();
    let mut out = [0u8; SHARD_HASH_BYTES];
    out.copy_from_slice(&digest[..SHARD_HASH_BYTES]);
    out
}

/// End `bytes` with their trailer: the [`keyed_hash`] of `key` and the
/// bytes so far. The binary manifest carries one with an empty key (no
/// host lists its hash), a sealed shard one with its directory's key.
pub(super) fn append_trailer(bytes: &mut Vec<u8>, key: &[u8]) {
    let trailer = keyed_hash(key, bytes);
    bytes.extend_from_slice(&trailer);
}

/// The bytes before the trailer [`append_trailer`] wrote with `key`, once
/// it is checked: a file too short for one is `Truncated`, a trailer that
/// differs a `ChecksumMismatch`.
pub(super) fn check_trailer<'a>(
    file: &str,
    bytes: &'a [u8],
    key: &[u8],
) -> Result<&'a [u8], CoreError> {
    let Some(end) = bytes.len().checked_sub(SHARD_HASH_BYTES) else {
        return Err(CoreError::Truncated {
            file: file.into(),
            got: bytes.len() as u64,
            expected: SHARD_HASH_BYTES as u64,
        });
    };
    let (body, stored) = bytes.split_at(end);
    let computed = keyed_hash(key, body);
    if stored != computed {
        return Err(CoreError::ChecksumMismatch {
            file: file.into(),
            stored: hex::encode(stored),
            computed: hex::encode(computed),
        });
    }
    Ok(body)
}

/// The [`ShardHash`] of `bytes` in hex, as the manifest lists it.
pub fn shard_hash_hex(bytes: &[u8]) -> String {
    hex::encode(shard_hash(bytes))
}

/// A value as a shard of `kind`: bincode, then [`wrap_shard`].
pub(super) fn encode_shard<T: Serialize>(kind: ShardKind, value: &T) -> Result<Vec<u8>, CoreError> {
    let payload =
        bincode::serde::encode_to_vec(value, bincode_config()).map_err(|e| CoreError::Encode {
            file: kind.as_str().into(),
            message: e.to_string(),
        })?;
    Ok(wrap_shard(kind, &payload))
}

/// An encoded payload deflated behind the shard header.
pub(super) fn wrap_shard(kind: ShardKind, payload: &[u8]) -> Vec<u8> {
    wrap_envelope(kind.tag(), payload, kind.packing())
}

/// An encoded payload deflated behind the header with this kind tag (a
/// [`ShardKind`]'s, or the binary manifest's).
pub(super) fn wrap_envelope(tag: u8, payload: &[u8], packing: Packing) -> Vec<u8> {
    let packed = deflate(payload, packing);
    let mut out = Vec::with_capacity(SHARD_HEADER + packed.len());
    out.extend_from_slice(&WEB_MAGIC);
    out.extend_from_slice(&WEB_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&[tag, 0, 0, 0]);
    out.extend_from_slice(&packed);
    out
}

/// A shard's bytes as fetched, with their payload where the caller has
/// inflated it already.
///
/// It exists because the browser inflates with its own
/// `DecompressionStream`: the search module then carries no inflater
/// (core's `inflate` feature, off in the wasm modules), which took 6.9 KB
/// off the gzipped module, fetched before the first results. The bytes
/// are still checked here (hash or seal, then the header): the payload is
/// trusted to be what they inflate to, as the inflater's own output would
/// be.
#[derive(Clone, Copy, Debug)]
pub struct Fetched<'a> {
    /// The file's bytes.
    pub bytes: &'a [u8],
    /// The envelope's deflated stream, inflated by the caller.
    pub inflated: Option<&'a [u8]>,
}

impl<'a> Fetched<'a> {
    /// A file and the payload its caller inflated from it.
    pub fn inflated(bytes: &'a [u8], payload: &'a [u8]) -> Self {
        Fetched {
            bytes,
            inflated: Some(payload),
        }
    }
}

impl<'a> From<&'a [u8]> for Fetched<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Fetched {
            bytes,
            inflated: None,
        }
    }
}

impl<'a> From<&'a Vec<u8>> for Fetched<'a> {
    fn from(bytes: &'a Vec<u8>) -> Self {
        Fetched::from(bytes.as_slice())
    }
}

/// Check a shard's bytes against its entry (its hash, or its seal) and
/// return the inflated payload.
pub fn open_shard<'a>(
    info: &ShardInfo,
    shard: impl Into<Fetched<'a>>,
) -> Result<Vec<u8>, CoreError> {
    let Fetched { bytes, inflated } = shard.into();
    let file = info.name.as_str();
    let (tag, kind) = (info.kind.tag(), info.kind.as_str());
    if info.sealed {
        let body = unseal(file, bytes, &info.sha256)?;
        return open_envelope(
            file,
            tag,
            kind,
            Fetched {
                bytes: body,
                inflated,
            },
        );
    }
    // A directory lists no sizes (`bytes` 0): the hash alone checks them.
    let listed = match info.bytes {
        0 => bytes.len() as u64,
        n => n,
    };
    verify_hashed(file, bytes, listed, &info.sha256, shard_hash_hex)?;
    open_envelope(file, tag, kind, Fetched { bytes, inflated })
}

/// Check the header of bytes [`wrap_envelope`] wrote with `tag` (whose
/// kind is called `kind` in messages) and return the inflated payload
/// (the caller's, when it inflated it).
pub(super) fn open_envelope(
    file: &str,
    tag: u8,
    kind: &str,
    Fetched { bytes, inflated }: Fetched<'_>,
) -> Result<Vec<u8>, CoreError> {
    if bytes.len() < SHARD_HEADER {
        return Err(CoreError::Truncated {
            file: file.into(),
            got: bytes.len() as u64,
            expected: SHARD_HEADER as u64,
        });
    }
    if bytes[..8] != WEB_MAGIC {
        return Err(CoreError::BadMagic { file: file.into() });
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != WEB_FORMAT_VERSION {
        return Err(CoreError::UnsupportedVersion {
            file: file.into(),
            found: version,
            expected: WEB_FORMAT_VERSION,
        });
    }
    if bytes[12] != tag || bytes[13..16] != [0, 0, 0] {
        return Err(CoreError::WrongKind {
            file: file.into(),
            found: format!("tag {}", bytes[12]),
            expected: kind.into(),
        });
    }
    match inflated {
        Some(payload) if payload.len() > INFLATE_LIMIT => Err(CoreError::Decode {
            file: file.into(),
            message: format!("inflated to more than {INFLATE_LIMIT} bytes"),
        }),
        Some(payload) => Ok(payload.to_vec()),
        None => inflate(file, &bytes[SHARD_HEADER..]),
    }
}

/// An envelope's deflated stream, inflated (at most [`INFLATE_LIMIT`]
/// bytes).
#[cfg(feature = "inflate")]
fn inflate(file: &str, deflated: &[u8]) -> Result<Vec<u8>, CoreError> {
    miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, INFLATE_LIMIT).map_err(|e| {
        CoreError::Decode {
            file: file.into(),
            message: format!("cannot inflate: {e}"),
        }
    })
}

/// Without the `inflate` feature (the browser's modules), the caller
/// inflates: a shard handed over without its payload is an error.
#[cfg(not(feature = "inflate"))]
fn inflate(file: &str, _deflated: &[u8]) -> Result<Vec<u8>, CoreError> {
    Err(CoreError::Decode {
        file: file.into(),
        message: "cannot inflate: this build inflates nothing, and no inflated payload came with the shard".into(),
    })
}

/// A shard's value: [`open_shard`], then its payload read with nothing
/// left over.
pub(super) fn decode_shard<T: Wire>(info: &ShardInfo, shard: Fetched<'_>) -> Result<T, CoreError> {
    decode_payload(&info.name, &open_shard(info, shard)?)
}

/// An inflated payload's value: bincode's wire format read by
/// [`crate::wire`] (bounded by the input, no serde), with nothing left
/// over.
pub(super) fn decode_payload<T: Wire>(file: &str, payload: &[u8]) -> Result<T, CoreError> {
    Reader::decode_all(payload).map_err(|e| CoreError::Decode {
        file: file.into(),
        message: e.to_string(),
    })
}

/// Whether [`crate::wire`] reads a shard exactly as bincode wrote it: the
/// payload decoded by hand and encoded again through serde gives the same
/// bytes. `cargo test` runs it over every shard kind of the fixture site,
/// so a field listed out of order in a `wire_struct!` cannot go unnoticed.
/// Vectors shards are skipped: their layout (instant-distance's, through
/// serde) has no encoder here; `core/src/hnsw.rs`'s tests check
/// [`crate::hnsw::StoredVectors`] against the native index instead.
#[doc(hidden)]
pub fn wire_reads_as_written(info: &ShardInfo, bytes: &[u8]) -> Result<bool, CoreError> {
    fn again<T: Wire + Serialize>(file: &str, payload: &[u8]) -> Result<bool, CoreError> {
        let value: T = decode_payload(file, payload)?;
        let bytes = bincode::serde::encode_to_vec(&value, bincode_config()).map_err(|e| {
            CoreError::Encode {
                file: file.into(),
                message: e.to_string(),
            }
        })?;
        Ok(bytes == payload)
    }
    use super::{edges::EdgeShard, vectors::BlockShard, *};
    let payload = open_shard(info, bytes)?;
    let file = info.name.as_str();
    match info.kind {
        ShardKind::Search => again::<SearchShard>(file, &payload),
        ShardKind::Text => again::<TextShard>(file, &payload),
        ShardKind::Edges => again::<EdgeShard>(file, &payload),
        ShardKind::Postings => again::<PostingsShard>(file, &payload),
        ShardKind::VectorDirectory => again::<VectorDirectory>(file, &payload),
        ShardKind::Partition => again::<PartitionShard>(file, &payload),
        ShardKind::Block => again::<BlockShard>(file, &payload),
        ShardKind::Qualified => again::<QualifiedShard>(file, &payload),
        ShardKind::TextDirectory => again::<TextDirectory>(file, &payload),
        ShardKind::Names => again::<NameShard>(file, &payload),
        ShardKind::Vectors => Ok(true),
    }
}

/// One shard as the manifest lists it, or as a directory lists it (the
/// search shard's [`super::ShardDirectory`] or the
/// [`super::TextDirectory`], which give back these entries). Every field
/// is written, `null` where it does not apply, so that the binary manifest
/// (bincode, which cannot skip a field) stores it as it is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    /// What it holds.
    pub kind: ShardKind,
    /// Path relative to the manifest: `shards/<kind>-<hash>.bin`, or
    /// `shards/<kind>-<key>-<place>.bin` when `sealed`.
    pub name: String,
    /// Size in bytes; 0 for a shard a directory lists, whose hash or seal
    /// alone checks it.
    pub bytes: u64,
    /// The bytes' [`ShardHash`] (hex): the first 64 bits of their SHA-256;
    /// when `sealed`, its directory's key instead.
    pub sha256: String,
    /// Whether the shard is sealed (`seal_shards` in `shard.rs`): named by its
    /// directory's key and its place there, and checked by the
    /// [`ShardHash`] it ends with, that of the key and the bytes before.
    #[serde(default)]
    pub sealed: bool,
    /// For text shards: the first and last chunk id it covers.
    #[serde(default)]
    pub chunks: Option<[u32; 2]>,
    /// For postings shards: the first and last term id it covers.
    #[serde(default)]
    pub terms: Option<[u32; 2]>,
    /// For postings shards: where its run of the vocabulary starts, the
    /// shortest prefix of its first term that sorts after the last term of
    /// the run before (the vocabulary's boundaries: a term lies in the last
    /// shard whose start is not after it).
    #[serde(default)]
    pub first_term: Option<String>,
    /// For edge shards: the first and last entity id it covers.
    #[serde(default)]
    pub entities: Option<[u32; 2]>,
    /// For name shards: the first and last file id it covers.
    #[serde(default)]
    pub files: Option<[u32; 2]>,
}

crate::wire::wire_struct!(ShardInfo {
    kind,
    name,
    bytes,
    sha256,
    sealed,
    chunks,
    terms,
    first_term,
    entities,
    files
});

impl ShardInfo {
    /// The entry of a shard of `kind` with this [`ShardHash`] (hex) and
    /// size: named `shards/<kind>-<hash>.bin`, the rule for the shards the
    /// manifest lists.
    pub fn hashed(kind: ShardKind, sha256: String, bytes: u64, chunks: Option<[u32; 2]>) -> Self {
        ShardInfo {
            kind,
            name: format!("shards/{}-{sha256}.bin", kind.as_str()),
            bytes,
            sha256,
            sealed: false,
            chunks,
            terms: None,
            first_term: None,
            entities: None,
            files: None,
        }
    }

    /// The entry of the sealed shard at `place` among a directory's shards
    /// of `kind`, under the directory's `key` (hex): named
    /// `shards/<kind>-<key>-<place>.bin`, the rule for the shards a
    /// directory lists. No size: the seal checks it.
    pub fn sealed(kind: ShardKind, key: String, place: usize) -> Self {
        ShardInfo {
            name: format!("shards/{}-{key}-{place}.bin", kind.as_str()),
            sealed: true,
            ..ShardInfo::hashed(kind, key, 0, None)
        }
    }
}

/// Seal the shards one directory lists, in its order (each kind's shards
/// together): the key is the [`ShardHash`] of their hashes; each shard is
/// renamed by the key and its place among the shards of its kind
/// ([`ShardInfo::sealed`], without its size, as the directory lists it;
/// its ranges kept) and ends with its seal, the trailer [`append_trailer`] writes with the key. Returns the key, which the directory stores once.
///
/// It exists because a directory that listed each shard's own hash paid 8
/// bytes a shard that do not compress, for every shard of the site, in a
/// file fetched before the first results (the search shard: 8.3 KB of
/// 63.7 on Kokkos's 1,038 listed shards). A seal costs those 8 bytes only
/// in the shards a question fetches. Names stay immutable: the key
/// changes whenever any of the shards does, so a name never stands for
/// other bytes, and a shard of another build fails its seal. (What that
/// costs: a rebuild that changes one shard renames its directory's
/// others, which a returning reader fetches again; rows shift by entity,
/// file and term ids, so a changed codebase changes most of them anyway.)
pub(super) fn seal_shards(shards: &mut [(ShardInfo, Vec<u8>)]) -> ShardHash {
    let hashes: Vec<&str> = shards.iter().map(|(s, _)| s.sha256.as_str()).collect();
    let key = shard_hash(hashes.join("\n").as_bytes());
    let key_hex = hex::encode(key);
    let mut places: BTreeMap<ShardKind, usize> = BTreeMap::new();
    for (info, bytes) in shards.iter_mut() {
        let place = places.entry(info.kind).or_default();
        append_trailer(bytes, &key);
        *info = ShardInfo {
            chunks: info.chunks,
            terms: info.terms,
            first_term: info.first_term.take(),
            entities: info.entities,
            files: info.files,
            ..ShardInfo::sealed(info.kind, key_hex.clone(), *place)
        };
        *place += 1;
    }
    key
}

/// The bytes of a sealed shard before its seal, once the seal is checked
/// under the key (hex) its entry gives.
fn unseal<'a>(file: &str, bytes: &'a [u8], key_hex: &str) -> Result<&'a [u8], CoreError> {
    let mut key = [0u8; SHARD_HASH_BYTES];
    hex::decode_to_slice(key_hex, &mut key)
        .map_err(|e| CoreError::malformed(format!("{file}: key {key_hex}: {e}")))?;
    check_trailer(file, bytes, &key)
}

/// A shard's manifest entry (named by its hash) with its bytes.
pub(super) fn shard(
    kind: ShardKind,
    bytes: Vec<u8>,
    chunks: Option<[u32; 2]>,
) -> (ShardInfo, Vec<u8>) {
    let info = ShardInfo::hashed(kind, shard_hash_hex(&bytes), bytes.len() as u64, chunks);
    (info, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every packing writes plain deflate that inflates to the payload;
    /// with the `pack` feature the slower ones are no larger.
    #[test]
    fn every_packing_inflates_to_its_payload() {
        let payload: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i % 97 + i / 1000).to_le_bytes())
            .collect();
        let sizes: Vec<usize> = [Packing::Bulk, Packing::Many, Packing::One]
            .into_iter()
            .map(|packing| {
                let packed = deflate(&payload, packing);
                assert_eq!(
                    miniz_oxide::inflate::decompress_to_vec(&packed).ok(),
                    Some(payload.clone()),
                    "{packing:?}"
                );
                packed.len()
            })
            .collect();
        if cfg!(feature = "pack") {
            assert!(sizes[2] <= sizes[0], "{sizes:?}");
        }
    }

    fn sealed_pair() -> (ShardHash, Vec<(ShardInfo, Vec<u8>)>) {
        let mut shards = vec![
            shard(
                ShardKind::Postings,
                wrap_shard(ShardKind::Postings, b"first"),
                None,
            ),
            shard(
                ShardKind::Edges,
                wrap_shard(ShardKind::Edges, b"second"),
                None,
            ),
            shard(
                ShardKind::Edges,
                wrap_shard(ShardKind::Edges, b"third"),
                None,
            ),
        ];
        shards[0].0.terms = Some([0, 4]);
        let key = seal_shards(&mut shards);
        (key, shards)
    }

    #[test]
    fn sealed_shards_open_and_are_named_by_key_and_place() {
        let (key, shards) = sealed_pair();
        let key_hex = hex::encode(key);
        let names: Vec<&str> = shards.iter().map(|(s, _)| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                format!("shards/postings-{key_hex}-0.bin"),
                format!("shards/edges-{key_hex}-0.bin"),
                format!("shards/edges-{key_hex}-1.bin"),
            ]
        );
        // What the entry said besides its name and hash stays.
        assert_eq!(shards[0].0.terms, Some([0, 4]));
        for ((info, bytes), payload) in shards.iter().zip([&b"first"[..], b"second", b"third"]) {
            assert!(info.sealed);
            assert_eq!(info.sha256, key_hex);
            assert_eq!(open_shard(info, bytes).unwrap(), payload);
            // As a directory gives it back: no size.
            let listed = ShardInfo {
                bytes: 0,
                ..info.clone()
            };
            assert_eq!(open_shard(&listed, bytes).unwrap(), payload);
        }
        // Deterministic: the same shards, the same key.
        assert_eq!(sealed_pair().0, key);
    }

    #[test]
    fn a_broken_seal_a_foreign_key_or_a_stub_is_a_typed_error() {
        let (_, shards) = sealed_pair();
        let (info, bytes) = &shards[1];
        for i in [0, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(matches!(
                open_shard(info, &bad),
                Err(CoreError::ChecksumMismatch { .. })
            ));
        }
        // The same place under another build's key.
        let foreign = ShardInfo {
            sha256: "00".repeat(SHARD_HASH_BYTES),
            ..info.clone()
        };
        assert!(matches!(
            open_shard(&foreign, bytes),
            Err(CoreError::ChecksumMismatch { .. })
        ));
        assert!(matches!(
            open_shard(info, &bytes[..3]),
            Err(CoreError::Truncated { .. })
        ));
        let garbled = ShardInfo {
            sha256: "not hex".into(),
            ..info.clone()
        };
        assert!(open_shard(&garbled, bytes).is_err());
    }

    /// A payload the caller inflated is used once the bytes pass their
    /// checks, which come first: damaged bytes fail whatever payload comes
    /// with them.
    #[test]
    fn a_payload_inflated_by_the_caller_is_read_after_the_checks() {
        let (_, shards) = sealed_pair();
        let (info, bytes) = &shards[0];
        let payload = open_shard(info, bytes).unwrap();
        let given = open_shard(info, Fetched::inflated(bytes, b"given")).unwrap();
        assert_eq!(given, b"given");
        let mut bad = bytes.clone();
        bad[3] ^= 1;
        assert!(matches!(
            open_shard(info, Fetched::inflated(&bad, &payload)),
            Err(CoreError::ChecksumMismatch { .. })
        ));
        // A manifest-listed shard too: its hash first.
        let (plain, plain_bytes) =
            shard(ShardKind::Search, wrap_shard(ShardKind::Search, b"s"), None);
        assert_eq!(
            open_shard(&plain, Fetched::inflated(&plain_bytes, b"s")).unwrap(),
            b"s"
        );
        let mut bad = plain_bytes.clone();
        bad[17] ^= 1;
        assert!(open_shard(&plain, Fetched::inflated(&bad, b"s")).is_err());
    }
}
