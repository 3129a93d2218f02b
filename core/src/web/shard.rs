//! The shard envelope of the web layout: every shard is the magic number,
//! [`WEB_FORMAT_VERSION`], a kind tag and a deflated bincode payload, named
//! by the SHA-256 of its bytes. Apart from `mod.rs` because it is the one
//! place that writes and checks those bytes (size, hash, magic, version,
//! kind, inflate limit, trailing bytes); the manifest and the loader only
//! call it.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{ShardInfo, ShardKind, WEB_FORMAT_VERSION, WEB_MAGIC};
use crate::error::CoreError;
use crate::format::{bincode_config, sha256_hex, verify_listed};

/// Magic number, version and kind tag (with three zero bytes).
const SHARD_HEADER: usize = 8 + 4 + 4;
/// Upper bound on an inflated shard, so a hostile file cannot exhaust memory.
const INFLATE_LIMIT: usize = 1 << 28;
/// Deflate level of every shard (the best: shards are written once).
const DEFLATE_LEVEL: u8 = 9;

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
    let packed = miniz_oxide::deflate::compress_to_vec(payload, DEFLATE_LEVEL);
    let mut out = Vec::with_capacity(SHARD_HEADER + packed.len());
    out.extend_from_slice(&WEB_MAGIC);
    out.extend_from_slice(&WEB_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&[kind.tag(), 0, 0, 0]);
    out.extend_from_slice(&packed);
    out
}

/// Check a shard's bytes against its manifest entry and return the
/// inflated payload.
pub fn open_shard(info: &ShardInfo, bytes: &[u8]) -> Result<Vec<u8>, CoreError> {
    let file = info.name.as_str();
    verify_listed(file, bytes, info.bytes, &info.sha256)?;
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
    if bytes[12] != info.kind.tag() || bytes[13..16] != [0, 0, 0] {
        return Err(CoreError::WrongKind {
            file: file.into(),
            found: format!("tag {}", bytes[12]),
            expected: info.kind.as_str().into(),
        });
    }
    miniz_oxide::inflate::decompress_to_vec_with_limit(&bytes[SHARD_HEADER..], INFLATE_LIMIT)
        .map_err(|e| CoreError::Decode {
            file: file.into(),
            message: format!("cannot inflate: {e}"),
        })
}

/// A shard's value: [`open_shard`], then bincode with nothing left over.
pub(super) fn decode_shard<T: DeserializeOwned>(
    info: &ShardInfo,
    bytes: &[u8],
) -> Result<T, CoreError> {
    let payload = open_shard(info, bytes)?;
    let (value, used) = crate::bounded::decode(&payload).map_err(|e| CoreError::Decode {
        file: info.name.clone(),
        message: e.to_string(),
    })?;
    if used != payload.len() {
        return Err(CoreError::Decode {
            file: info.name.clone(),
            message: format!("{} bytes left after decoding", payload.len() - used),
        });
    }
    Ok(value)
}

/// A shard's manifest entry (named by its hash) with its bytes.
pub(super) fn shard(
    kind: ShardKind,
    bytes: Vec<u8>,
    chunks: Option<[u32; 2]>,
) -> (ShardInfo, Vec<u8>) {
    let sha256 = sha256_hex(&bytes);
    (
        ShardInfo {
            kind,
            name: format!("shards/{}-{sha256}.bin", kind.as_str()),
            bytes: bytes.len() as u64,
            sha256,
            chunks,
            terms: None,
            first_term: None,
        },
        bytes,
    )
}
