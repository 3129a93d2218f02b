//! Round trips, determinism, the header layout, cross-table ids and the
//! manifest of the native index format (`core/src/format.rs`), through
//! the public API only.

mod common;

use codegloss_core::format::{sha256_hex, HEADER_LEN};
use codegloss_core::{
    CoreError, DataKind, Edge, EdgeKind, IndexData, Manifest, FORMAT_VERSION, MAGIC,
};
use common::*;

// ---------------------------------------------------------------------------
// Round trip and determinism
// ---------------------------------------------------------------------------

#[test]
fn sample_is_consistent() {
    let data = sample();
    data.check_ids()
        .expect("the hand-built index is consistent");
    assert_eq!(data.files.len(), 2);
    assert_eq!(data.entities.len(), 8);
    assert!(data.entities.iter().any(|e| !e.name.is_ascii()));
}

#[test]
fn round_trip_gives_equal_index() {
    let data = sample();
    let files = encoded(&data);
    let decoded = IndexData::decode(&files[0], &files[1], &files[2], &files[3]).expect("decodes");
    assert_eq!(decoded, data);
    // Unicode survives byte-exactly.
    assert_eq!(decoded.entities[7].name, "粒子 — Überblick");
    assert_eq!(
        decoded.entities[6].qualified_name,
        "picsim::BareField::λ_view_type"
    );
    assert_eq!(decoded.files[0].includes[1].resolved, Some(1));
    assert_eq!(decoded.files[1].includes[0].resolved, Some(0));
}

#[test]
fn empty_index_round_trips() {
    let data = IndexData::default();
    let files = encoded(&data);
    for bytes in &files {
        assert!(
            bytes.len() > HEADER_LEN,
            "an empty table still has a payload"
        );
    }
    let decoded = IndexData::decode(&files[0], &files[1], &files[2], &files[3]).expect("decodes");
    assert_eq!(decoded, data);
}

#[test]
fn encoding_is_deterministic() {
    let a = encoded(&sample());
    let b = encoded(&sample());
    assert_eq!(a, b, "two encodings of equal data are byte-identical");
    // Re-encoding the decoded value gives the same bytes again.
    let decoded = IndexData::decode(&a[0], &a[1], &a[2], &a[3]).expect("decodes");
    assert_eq!(encoded(&decoded), a);
}

#[test]
fn header_layout_is_as_documented() {
    let files = encoded(&sample());
    let mut tags = Vec::new();
    for bytes in &files {
        assert_eq!(&bytes[..8], &MAGIC);
        assert_eq!(&bytes[8..12], &FORMAT_VERSION.to_le_bytes());
        tags.push(bytes[12]);
        assert_eq!(&bytes[13..16], &[0, 0, 0], "reserved bytes are zero");
        let len = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
        assert_eq!(len as usize, bytes.len() - HEADER_LEN);
        assert_eq!(
            hex_decode(&sha256_hex(&bytes[HEADER_LEN..])),
            &bytes[24..56]
        );
    }
    tags.sort_unstable();
    tags.dedup();
    assert_eq!(tags.len(), 4, "each kind has its own tag");
}

// ---------------------------------------------------------------------------
// Cross-table ids
// ---------------------------------------------------------------------------

#[test]
fn edge_outside_entity_table_is_inconsistent() {
    let mut data = sample();
    let n = data.entities.len() as u32;
    data.edges.push(Edge {
        from: 2,
        to: n,
        kind: EdgeKind::Calls,
    });
    let err = data.check_ids().expect_err("dangling edge");
    assert!(
        matches!(&err, CoreError::Inconsistent { file, .. } if file == "graph.bin"),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("graph.bin: "), "{err}");
    assert!(err.to_string().contains(&format!("2 -> {n}")), "{err}");

    // The same index, encoded and decoded, fails the same way: every data
    // file is individually valid, but they do not fit together.
    let files = encoded(&data);
    let decoded = IndexData::decode(&files[0], &files[1], &files[2], &files[3]);
    assert_eq!(decoded, Err(err));
}

#[test]
fn other_dangling_ids_are_inconsistent() {
    type Breaker = fn(&mut IndexData);
    let cases: [(&str, &str, Breaker); 7] = [
        ("files.bin", "file id out of order", |d| d.files[1].id = 7),
        ("files.bin", "include resolved outside the table", |d| {
            d.files[0].includes[1].resolved = Some(2)
        }),
        ("entities.bin", "entity id out of order", |d| {
            d.entities[3].id = 4
        }),
        ("entities.bin", "parent outside the table", |d| {
            d.entities[5].parent = Some(99)
        }),
        ("entities.bin", "file outside the table", |d| {
            d.entities[4].file = Some(2)
        }),
        ("chunks.bin", "chunk of a missing entity", |d| {
            d.chunks[2].entity = 8
        }),
        ("graph.bin", "edge from a missing entity", |d| {
            d.edges.push(Edge {
                from: u32::MAX,
                to: 0,
                kind: EdgeKind::Contains,
            })
        }),
    ];
    for (file, what, breaker) in cases {
        let mut data = sample();
        breaker(&mut data);
        let err = data.check_ids().expect_err(what);
        assert!(
            matches!(&err, CoreError::Inconsistent { file: f, .. } if f == file),
            "{what}: {err:?}"
        );
        let files = encoded(&data);
        let decoded = IndexData::decode(&files[0], &files[1], &files[2], &files[3]);
        assert_eq!(decoded, Err(err), "{what}");
    }
}

// ---------------------------------------------------------------------------
// Manifest
// ---------------------------------------------------------------------------

#[test]
fn manifest_round_trips_through_json() {
    let data = sample();
    let files = encoded(&data);
    let manifest = manifest_for(&data, &files);
    let json = manifest.to_json();
    assert!(json.ends_with("}\n"), "pretty JSON with a trailing newline");
    assert_eq!(json, manifest.to_json(), "deterministic");
    let back = Manifest::from_json(&json).expect("parses");
    assert_eq!(back, manifest);
    assert_eq!(back.counts.entities, 8);
    assert_eq!(back.counts.entities_by_kind.get("method"), Some(&2));
    assert_eq!(back.counts.functions_in_error, 1);
    assert_eq!(back.counts.files_with_warnings, 1);
    // Data kinds are written by name.
    assert!(json.contains("\"kind\": \"entities\""), "{json}");
}

#[test]
fn manifest_with_wrong_format_name_is_rejected() {
    let data = sample();
    let mut manifest = manifest_for(&data, &encoded(&data));
    manifest.format = "codegloss-index-v0".into();
    let err = Manifest::from_json(&manifest.to_json()).expect_err("wrong format");
    assert!(matches!(err, CoreError::Manifest { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("manifest.json: "), "{msg}");
    assert!(msg.contains("codegloss-index-v0"), "{msg}");
}

#[test]
fn manifest_with_other_version_is_unsupported() {
    let data = sample();
    let mut manifest = manifest_for(&data, &encoded(&data));
    manifest.format_version = FORMAT_VERSION + 1;
    let err = Manifest::from_json(&manifest.to_json()).expect_err("newer version");
    assert_eq!(
        err,
        CoreError::UnsupportedVersion {
            file: "manifest.json".into(),
            found: FORMAT_VERSION + 1,
            expected: FORMAT_VERSION,
        }
    );
    assert!(err.to_string().contains("manifest.json"), "{err}");
}

#[test]
fn garbage_manifest_is_a_manifest_error() {
    let data = sample();
    let good = manifest_for(&data, &encoded(&data)).to_json();
    let cases = [
        String::new(),
        "not json at all".to_string(),
        "[]".to_string(),
        "{}".to_string(),
        "{\"format\": \"codegloss-index\"}".to_string(),
        good[..good.len() / 2].to_string(),
        good.replace("\"files\"", "\"fyles\""),
        good.replace("\"kind\": \"graph\"", "\"kind\": \"vektors\""),
        "\u{feff}\u{0}\u{1}garbage".to_string(),
    ];
    for text in &cases {
        let err = Manifest::from_json(text).expect_err("garbage manifest");
        assert!(
            matches!(err, CoreError::Manifest { .. }),
            "{text:?}: {err:?}"
        );
        assert!(err.to_string().starts_with("manifest.json: "), "{err}");
    }
}

#[test]
fn verify_data_file_detects_changes() {
    let data = sample();
    let files = encoded(&data);
    let manifest = manifest_for(&data, &files);
    for kind in DataKind::ALL {
        let bytes = &files[position(kind)];
        manifest
            .verify_data_file(kind, bytes)
            .expect("unchanged file verifies");

        // One changed byte anywhere, header or payload.
        for i in [0, 12, 30, bytes.len() / 2, bytes.len() - 1] {
            let mut changed = bytes.clone();
            changed[i] = changed[i].wrapping_add(1);
            let err = manifest
                .verify_data_file(kind, &changed)
                .expect_err("changed byte");
            assert_eq!(
                err,
                CoreError::ChecksumMismatch {
                    file: kind.file_name().into(),
                    stored: sha256_hex(bytes),
                    computed: sha256_hex(&changed),
                }
            );
            assert!(err.to_string().contains(kind.file_name()), "{err}");
        }

        // Length changes.
        let err = manifest
            .verify_data_file(kind, &bytes[..bytes.len() - 1])
            .expect_err("shorter file");
        assert!(matches!(err, CoreError::ChecksumMismatch { .. }), "{err:?}");
    }

    // Another kind's bytes do not verify.
    let err = manifest
        .verify_data_file(DataKind::Files, &files[position(DataKind::Graph)])
        .expect_err("swapped file");
    assert!(matches!(err, CoreError::ChecksumMismatch { .. }), "{err:?}");
}

#[test]
fn verify_data_file_of_unlisted_kind_is_inconsistent() {
    let data = sample();
    let files = encoded(&data);
    let mut manifest = manifest_for(&data, &files);
    manifest.data_files.retain(|d| d.kind != DataKind::Chunks);
    let err = manifest
        .verify_data_file(DataKind::Chunks, &files[position(DataKind::Chunks)])
        .expect_err("unlisted");
    assert!(
        matches!(&err, CoreError::Inconsistent { file, .. } if file == "chunks.bin"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "chunks.bin: not listed in manifest.json");
}
