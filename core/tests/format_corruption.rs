//! Corruption tests of the native index format (`core/src/format.rs`):
//! truncation, bit flips, another kind, trailing bytes, garbage and bad
//! payloads behind a valid checksum, hostile lengths.
//!
//! The reader must turn every malformed input into a typed [`CoreError`]
//! naming the data file, and never panic: the browser client decodes
//! whatever bytes the network hands it.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use codegloss_core::format::{sha256_hex, HEADER_LEN};
use codegloss_core::{
    decode_data_file, Chunk, CoreError, DataKind, Edge, Entity, IndexData, SourceFile,
    FORMAT_VERSION,
};
use common::*;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Decode one data file on its own, returning whether it equals the table
/// of `original` it came from. Panics inside the decoder are caught and
/// reported with `what`.
fn decode_one(
    kind: DataKind,
    bytes: &[u8],
    original: &IndexData,
    what: &str,
) -> Result<bool, CoreError> {
    let name = kind.file_name();
    let result = catch_unwind(AssertUnwindSafe(|| match kind {
        DataKind::Files => {
            decode_data_file::<Vec<SourceFile>>(name, kind, bytes).map(|v| v == original.files)
        }
        DataKind::Entities => {
            decode_data_file::<Vec<Entity>>(name, kind, bytes).map(|v| v == original.entities)
        }
        DataKind::Chunks => {
            decode_data_file::<Vec<Chunk>>(name, kind, bytes).map(|v| v == original.chunks)
        }
        DataKind::Graph => {
            decode_data_file::<Vec<Edge>>(name, kind, bytes).map(|v| v == original.edges)
        }
        DataKind::Vectors => codegloss_core::VectorIndex::decode(bytes).map(|_| false),
        DataKind::Lexical => {
            codegloss_core::lexical::LexicalIndex::decode(bytes, original.chunks.len())
                .map(|_| false)
        }
    }));
    match result {
        Ok(r) => r,
        Err(_) => panic!("decoder panicked on {what}"),
    }
}

/// Lengths to try when truncating a file of `len` bytes: all of them for
/// small files; for larger ones every length through the header and a bit
/// beyond, then a stride, then the last few.
fn truncation_lengths(len: usize) -> Vec<usize> {
    if len <= 4096 {
        return (0..len).collect();
    }
    let mut lengths: Vec<usize> = (0..=HEADER_LEN + 64).collect();
    lengths.extend((HEADER_LEN + 65..len).step_by(37));
    lengths.extend(len.saturating_sub(16)..len);
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// Bit positions to flip: every bit for small files; for larger ones every
/// bit of the header and of the first payload bytes, then a stride.
fn flip_positions(len: usize) -> Vec<(usize, u8)> {
    let bytes: Vec<usize> = if len <= 4096 {
        (0..len).collect()
    } else {
        let mut b: Vec<usize> = (0..HEADER_LEN + 256).collect();
        b.extend((HEADER_LEN + 256..len).step_by(13));
        b.push(len - 1);
        b.dedup();
        b
    };
    bytes
        .into_iter()
        .flat_map(|i| (0..8u8).map(move |bit| (i, bit)))
        .collect()
}

/// Small deterministic PRNG (xorshift64*), so the garbage is reproducible.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 56) as u8).collect()
    }
}

// ---------------------------------------------------------------------------
// Truncation
// ---------------------------------------------------------------------------

#[test]
fn every_truncation_is_an_error() {
    let data = sample();
    let files = encoded(&data);
    for kind in DataKind::ALL {
        let full = &files[position(kind)];
        let payload_len = (full.len() - HEADER_LEN) as u64;
        for len in truncation_lengths(full.len()) {
            let what = format!("{} truncated to {len} bytes", kind.file_name());
            let err = decode_one(kind, &full[..len], &data, &what)
                .expect_err(&format!("{what} must not decode"));
            // Every prefix of a valid file starts with (a prefix of) the
            // magic, so the reader must call it truncated, never bad magic.
            let expected = if len < HEADER_LEN {
                HEADER_LEN as u64
            } else {
                HEADER_LEN as u64 + payload_len
            };
            assert_eq!(
                err,
                CoreError::Truncated {
                    file: kind.file_name().to_string(),
                    got: len as u64,
                    expected,
                },
                "{what}"
            );
        }
    }
}

#[test]
fn truncation_through_full_decode_names_the_file() {
    let files = encoded(&sample());
    for kind in DataKind::ALL {
        let full = &files[position(kind)];
        for len in [0, 5, 8, HEADER_LEN - 1, HEADER_LEN, full.len() - 1] {
            let err = decode_with(&files, kind, &full[..len]).expect_err("truncated");
            assert!(matches!(err, CoreError::Truncated { .. }), "{err:?}");
            assert_eq!(error_file(&err), Some(kind.file_name()));
            assert!(
                err.to_string().contains(kind.file_name()),
                "message names the file: {err}"
            );
        }
    }
}

#[test]
fn short_input_that_is_not_a_magic_prefix_is_bad_magic() {
    let data = sample();
    for bytes in [
        &b"X"[..],
        b"CGLOSSIY",
        b"cglossix",
        b"CG\0",
        b"PK\x03\x04",
        b"\x7fELF",
    ] {
        let err = decode_one(DataKind::Files, bytes, &data, "short garbage").expect_err("bad");
        assert_eq!(
            err,
            CoreError::BadMagic {
                file: "files.bin".into()
            },
            "{bytes:?}"
        );
    }
    // A prefix of the magic is merely truncated.
    for bytes in [&b""[..], b"C", b"CGLOSS", b"CGLOSSI"] {
        let err = decode_one(DataKind::Files, bytes, &data, "magic prefix").expect_err("short");
        assert!(
            matches!(err, CoreError::Truncated { .. }),
            "{bytes:?}: {err:?}"
        );
    }
    // Something that is not an index at all, but long enough.
    let json =
        br#"{"format": "codegloss-index", "format_version": 1, "padding": "...................."}"#;
    let err = decode_one(DataKind::Graph, json, &data, "json").expect_err("json is not an index");
    assert!(matches!(err, CoreError::BadMagic { .. }), "{err:?}");
    assert!(err.to_string().contains("graph.bin"), "{err}");
}

// ---------------------------------------------------------------------------
// Bit flips
// ---------------------------------------------------------------------------

/// What kind of error a flip of bit `bit` of byte `i` of a valid file must give.
fn expected_flip_error(original: &[u8], i: usize, bit: u8) -> &'static str {
    match i {
        0..=7 => "BadMagic",
        8..=11 => "UnsupportedVersion",
        12 => "WrongKind",
        13..=15 => "Decode",
        16..=23 => {
            // Setting a bit of the length announces more payload than there
            // is; clearing one announces less and leaves trailing bytes.
            if original[i] & (1 << bit) == 0 {
                "Truncated"
            } else {
                "TrailingBytes"
            }
        }
        _ => "ChecksumMismatch",
    }
}

fn variant_name(e: &CoreError) -> &'static str {
    match e {
        CoreError::Truncated { .. } => "Truncated",
        CoreError::BadMagic { .. } => "BadMagic",
        CoreError::UnsupportedVersion { .. } => "UnsupportedVersion",
        CoreError::WrongKind { .. } => "WrongKind",
        CoreError::ChecksumMismatch { .. } => "ChecksumMismatch",
        CoreError::TrailingBytes { .. } => "TrailingBytes",
        CoreError::Decode { .. } => "Decode",
        CoreError::Encode { .. } => "Encode",
        CoreError::Manifest { .. } => "Manifest",
        CoreError::Inconsistent { .. } => "Inconsistent",
        CoreError::ModelMismatch { .. } => "ModelMismatch",
        CoreError::Malformed { .. } => "Malformed",
        CoreError::Settings { .. } => "Settings",
    }
}

#[test]
fn every_single_bit_flip_is_detected() {
    let data = sample();
    let files = encoded(&data);
    for kind in DataKind::ALL {
        let original = &files[position(kind)];
        let mut bytes = original.clone();
        for (i, bit) in flip_positions(original.len()) {
            bytes[i] ^= 1 << bit;
            let what = format!("{} with bit {bit} of byte {i} flipped", kind.file_name());
            match decode_one(kind, &bytes, &data, &what) {
                // A flip that still decodes would have to give the same
                // value; with a checksum over the payload it cannot happen.
                Ok(equal) => assert!(equal, "{what} decoded to a different value"),
                Err(err) => {
                    assert_eq!(
                        variant_name(&err),
                        expected_flip_error(original, i, bit),
                        "{what}: {err}"
                    );
                    assert_eq!(error_file(&err), Some(kind.file_name()), "{what}");
                }
            }
            bytes[i] ^= 1 << bit;
        }
        assert_eq!(&bytes, original);
    }
}

#[test]
fn bit_flip_errors_carry_useful_details() {
    let data = sample();
    let files = encoded(&data);
    let entities = &files[position(DataKind::Entities)];

    let mut v = entities.clone();
    v[8] ^= 0x02; // version 1 -> 3
    let err = decode_with(&files, DataKind::Entities, &v).expect_err("bad version");
    assert_eq!(
        err,
        CoreError::UnsupportedVersion {
            file: "entities.bin".into(),
            found: FORMAT_VERSION ^ 0x02,
            expected: FORMAT_VERSION,
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("entities.bin") && msg.contains("codegloss index"),
        "{msg}"
    );

    let mut p = entities.clone();
    let last = p.len() - 1;
    p[last] ^= 0x80;
    let err = decode_with(&files, DataKind::Entities, &p).expect_err("bad payload");
    match &err {
        CoreError::ChecksumMismatch {
            file,
            stored,
            computed,
        } => {
            assert_eq!(file, "entities.bin");
            assert_eq!(stored, &sha256_hex(&entities[HEADER_LEN..]));
            assert_eq!(computed, &sha256_hex(&p[HEADER_LEN..]));
        }
        other => panic!("expected ChecksumMismatch, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("entities.bin: checksum mismatch"),
        "{err}"
    );

    let mut k = entities.clone();
    k[12] = 0xEE;
    let err = decode_with(&files, DataKind::Entities, &k).expect_err("unknown kind");
    match &err {
        CoreError::WrongKind {
            file,
            found,
            expected,
        } => {
            assert_eq!(file, "entities.bin");
            assert!(found.contains("238"), "{found}");
            assert_eq!(expected, "entities");
        }
        other => panic!("expected WrongKind, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Wrong kind, trailing bytes
// ---------------------------------------------------------------------------

#[test]
fn a_data_file_of_another_kind_is_rejected() {
    let data = sample();
    let files = encoded(&data);
    let entities = files[position(DataKind::Entities)].clone();
    let err = decode_with(&files, DataKind::Files, &entities).expect_err("wrong kind");
    assert_eq!(
        err,
        CoreError::WrongKind {
            file: "files.bin".into(),
            found: "entities".into(),
            expected: "files".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "files.bin: holds entities data, expected files"
    );

    // Every mismatched pair, through the single-file decoder.
    for stored in DataKind::ALL {
        for wanted in DataKind::ALL {
            let bytes = &files[position(stored)];
            let result = decode_one(wanted, bytes, &data, "kind swap");
            if stored == wanted {
                assert_eq!(result, Ok(true));
            } else {
                let err = result.expect_err("mismatched kind");
                assert!(matches!(err, CoreError::WrongKind { .. }), "{err:?}");
            }
        }
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    let data = sample();
    let files = encoded(&data);
    for kind in DataKind::ALL {
        for extra in [1usize, 2, 57, 4096] {
            let mut bytes = files[position(kind)].clone();
            bytes.extend(std::iter::repeat_n(0u8, extra));
            let err = decode_with(&files, kind, &bytes).expect_err("trailing bytes");
            assert_eq!(
                err,
                CoreError::TrailingBytes {
                    file: kind.file_name().to_string(),
                    extra: extra as u64,
                }
            );
        }
    }
    // Two concatenated files are not one file.
    let graph = &files[position(DataKind::Graph)];
    let doubled = [graph.as_slice(), graph.as_slice()].concat();
    let err = decode_with(&files, DataKind::Graph, &doubled).expect_err("doubled");
    assert!(matches!(err, CoreError::TrailingBytes { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------
// Valid checksum, bad payload
// ---------------------------------------------------------------------------

#[test]
fn garbage_payload_with_valid_checksum_never_panics() {
    let data = sample();
    let mut rng = XorShift(0x5EED_C0DE_2024_0001);
    for kind in DataKind::ALL {
        for round in 0..300 {
            let len = match round % 4 {
                0 => (rng.next() % 8) as usize,
                1 => (rng.next() % 64) as usize,
                2 => (rng.next() % 512) as usize,
                _ => (rng.next() % 4096) as usize,
            };
            let payload = rng.bytes(len);
            let bytes = frame(kind, &payload);
            let what = format!(
                "{} with {len} random payload bytes (round {round})",
                kind.file_name()
            );
            match decode_one(kind, &bytes, &data, &what) {
                // Tiny payloads can be valid (`[0]` is an empty table).
                Ok(_) => {}
                Err(err) => {
                    assert!(matches!(err, CoreError::Decode { .. }), "{what}: {err:?}");
                    assert_eq!(error_file(&err), Some(kind.file_name()));
                }
            }
        }
    }
}

#[test]
fn specific_bad_payloads_are_decode_errors() {
    let data = sample();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty payload", Vec::new()),
        ("all 0xFF", vec![0xFF; 64]),
        // Varint marker for a u64 length, then an absurd element count.
        ("huge element count", {
            let mut p = vec![253];
            p.extend_from_slice(&u64::MAX.to_le_bytes());
            p
        }),
        // One element whose first field is 0 and whose second is a length
        // (or number) far beyond the payload: 256 MiB, under the decode
        // limit, so the decoder may allocate it but must still fail cleanly.
        ("large string length", {
            let mut p = vec![1, 0, 252];
            p.extend_from_slice(&0x1000_0000u32.to_le_bytes());
            p
        }),
        // The same with 2^40 bytes, over the decode limit.
        ("huge string length", {
            let mut p = vec![1, 0, 253];
            p.extend_from_slice(&(1u64 << 40).to_le_bytes());
            p
        }),
        ("count larger than content", vec![200, 1, 2, 3]),
        ("count with no elements", vec![5]),
    ];
    for kind in DataKind::ALL {
        for (name, payload) in &cases {
            let bytes = frame(kind, payload);
            let what = format!("{}: {name}", kind.file_name());
            let err = decode_one(kind, &bytes, &data, &what).expect_err(&what);
            assert!(matches!(err, CoreError::Decode { .. }), "{what}: {err:?}");
            assert!(err.to_string().contains(kind.file_name()), "{err}");
        }
    }
}

#[test]
fn payload_with_extra_bytes_after_the_value_is_a_decode_error() {
    let data = sample();
    let files = encoded(&data);
    for kind in DataKind::ALL {
        let valid = &files[position(kind)];
        let mut payload = valid[HEADER_LEN..].to_vec();
        payload.push(0);
        let bytes = frame(kind, &payload);
        let err = decode_one(kind, &bytes, &data, "extra payload byte").expect_err("extra byte");
        match err {
            CoreError::Decode { file, message } => {
                assert_eq!(file, kind.file_name());
                assert!(message.contains("1 bytes left"), "{message}");
            }
            other => panic!("expected Decode, got {other:?}"),
        }
    }
}

#[test]
fn a_frame_around_a_real_payload_decodes() {
    // Sanity check of `frame` itself, so the tests above test the decoder
    // and not a broken header.
    let data = sample();
    let files = encoded(&data);
    for kind in DataKind::ALL {
        let valid = &files[position(kind)];
        assert_eq!(&frame(kind, &valid[HEADER_LEN..]), valid);
    }
}

#[test]
fn hostile_length_near_u64_max_is_truncated_not_overflow() {
    // A header announcing nearly 2^64 payload bytes must be reported as
    // truncated; computing `HEADER_LEN + len` must not overflow.
    let data = sample();
    for len in [
        u64::MAX,
        u64::MAX - 1,
        u64::MAX - HEADER_LEN as u64 + 1,
        1 << 63,
    ] {
        let mut bytes = frame(DataKind::Chunks, &[0]);
        bytes[16..24].copy_from_slice(&len.to_le_bytes());
        let err = decode_one(DataKind::Chunks, &bytes, &data, &format!("length {len}"))
            .expect_err("hostile length");
        assert!(matches!(err, CoreError::Truncated { .. }), "{err:?}");
    }
}
