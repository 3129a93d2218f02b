//! Round-trip and corruption tests of the index format (`core/src/format.rs`),
//! through the public API only.
//!
//! The reader must turn every malformed input into a typed [`CoreError`]
//! naming the data file, and never panic: the browser client decodes
//! whatever bytes the network hands it.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use codegloss_core::format::{sha256_hex, DataFileInfo, HEADER_LEN};
use codegloss_core::{
    decode_data_file, encode_data_file, Chunk, CodeFrame, CoreError, DataKind, Edge, EdgeKind,
    Entity, EntityKind, Gloss, GlossSource, Include, IndexData, Language, Manifest, Param,
    ParseStats, Scope, SourceFile, SourceType, Span, FORMAT_VERSION, MAGIC,
};

// ---------------------------------------------------------------------------
// A small, hand-built index
// ---------------------------------------------------------------------------

fn source_file(id: u32, path: &str, source_type: SourceType) -> SourceFile {
    SourceFile {
        id,
        path: path.to_string(),
        language: Language::Cpp,
        source_type,
        scope: Scope::Source,
        module: "src/Field".to_string(),
        sha256: sha256_hex(path.as_bytes()),
        bytes: 1000 + u64::from(id),
        lines: 40 + id,
        includes: Vec::new(),
        parse: None,
        warnings: Vec::new(),
    }
}

fn entity(id: u32, kind: EntityKind, name: &str, qualified_name: &str) -> Entity {
    let parent_symbol = qualified_name
        .rsplit_once("::")
        .map_or(String::new(), |(q, _)| q.to_string());
    Entity {
        id,
        kind,
        name: name.to_string(),
        qualified_name: qualified_name.to_string(),
        parent: None,
        parent_symbol,
        class_name: None,
        file: Some(0),
        span: None,
        signature: String::new(),
        return_type: None,
        params: Vec::new(),
        template_params: None,
        bases: Vec::new(),
        doc_comment: None,
        is_definition: false,
        section_path: None,
        module: "src/Field".to_string(),
        gloss: Gloss {
            text: format!("Structural gloss of {name}."),
            source: GlossSource::Structural,
            model: None,
        },
        concepts: String::new(),
    }
}

fn chunk(id: u32, owner: &Entity, part: u16, parts: u16, path: &str, code: &str) -> Chunk {
    let file_name = path.rsplit('/').next().unwrap_or(path).to_string();
    let base_name = file_name
        .rsplit_once('.')
        .map_or(file_name.clone(), |(b, _)| b.to_string());
    let span = owner.span.unwrap_or_default();
    Chunk {
        id,
        entity: owner.id,
        part,
        parts,
        path: path.to_string(),
        file_name,
        base_name,
        source_type: Some(SourceType::Header),
        scope: Scope::Source,
        language: Some(Language::Cpp),
        entity_type: owner.kind,
        chunk_type: if parts > 1 {
            format!("{}_part", owner.kind.as_str())
        } else {
            owner.kind.as_str().to_string()
        },
        symbol_name: owner.name.clone(),
        parent_symbol: owner.parent_symbol.clone(),
        class_name: owner.class_name.clone(),
        return_type: owner.return_type.clone(),
        parameters: owner
            .params
            .iter()
            .map(|p| format!("{} {}", p.ty, p.name))
            .collect::<Vec<_>>()
            .join(", "),
        leading_comment: owner.doc_comment.clone(),
        code: code.to_string(),
        frame: CodeFrame::default(),
        start_line: span.start_line,
        end_line: span.end_line,
        module: owner.module.clone(),
        section_path: owner.section_path.clone(),
    }
}

/// Two files, eight entities of various kinds (some with non-ASCII names),
/// five chunks (one entity split in two parts) and edges of several kinds.
fn sample() -> IndexData {
    let mut header = source_file(0, "src/Field/BareField.h", SourceType::Header);
    header.includes = vec![
        Include {
            target: "Kokkos_Core.hpp".into(),
            system: true,
            line: 3,
            resolved: None,
        },
        Include {
            target: "Field/BareField.hpp".into(),
            system: false,
            line: 120,
            resolved: Some(1),
        },
    ];
    header.parse = Some(ParseStats {
        functions: 4,
        functions_in_error: 0,
        functions_in_error_raw: 2,
        functions_raw: 4,
        error_nodes: 0,
        neutralised_macros: 5,
    });

    let mut implementation = source_file(1, "src/Field/BareField.hpp", SourceType::Header);
    implementation.includes = vec![Include {
        target: "Field/BareField.h".into(),
        system: false,
        line: 1,
        resolved: Some(0),
    }];
    implementation.parse = Some(ParseStats {
        functions: 3,
        functions_in_error: 1,
        functions_in_error_raw: 1,
        functions_raw: 3,
        error_nodes: 1,
        neutralised_macros: 2,
    });
    implementation.warnings = vec!["1 function inside an ERROR node — Größe ≥ 1".into()];

    let mut file_entity = entity(0, EntityKind::File, "BareField.h", "src/Field/BareField.h");
    file_entity.parent_symbol = String::new();
    file_entity.span = Some(Span {
        start_byte: 0,
        end_byte: 1000,
        start_line: 1,
        end_line: 40,
    });

    let mut ns = entity(1, EntityKind::Namespace, "picsim", "picsim");
    ns.parent = Some(0);
    ns.is_definition = true;

    let mut class = entity(2, EntityKind::Class, "BareField", "picsim::BareField");
    class.parent = Some(1);
    class.template_params = Some("<typename T, unsigned Dim, class... ViewArgs>".into());
    class.bases = vec!["public detail::Expression<BareField<T, Dim>>".into()];
    class.doc_comment = Some("A field on a Cartesian mesh — ∇·E = ρ/ε₀.".into());
    class.is_definition = true;
    class.signature =
        "template <typename T, unsigned Dim, class... ViewArgs> class BareField".into();
    class.span = Some(Span {
        start_byte: 120,
        end_byte: 980,
        start_line: 8,
        end_line: 38,
    });

    let mut decl = entity(
        3,
        EntityKind::Method,
        "fillHalo",
        "picsim::BareField::fillHalo",
    );
    decl.parent = Some(2);
    decl.class_name = Some("BareField".into());
    decl.return_type = Some("void".into());
    decl.signature = "void fillHalo();".into();
    decl.span = Some(Span {
        start_byte: 400,
        end_byte: 416,
        start_line: 20,
        end_line: 20,
    });

    let mut def = entity(
        4,
        EntityKind::Method,
        "fillHalo",
        "picsim::BareField::fillHalo",
    );
    def.parent = Some(2);
    def.file = Some(1);
    def.class_name = Some("BareField".into());
    def.return_type = Some("void".into());
    def.signature =
        "template <typename T, unsigned Dim, class... ViewArgs> void BareField<T, Dim, ViewArgs...>::fillHalo()"
            .into();
    def.is_definition = true;
    def.span = Some(Span {
        start_byte: 50,
        end_byte: 900,
        start_line: 5,
        end_line: 60,
    });
    def.gloss = Gloss {
        text: "Fills the ghost layers of the field from its neighbours.".into(),
        source: GlossSource::Model,
        model: Some("qwen2.5-coder-1.5b".into()),
    };

    let mut ctor = entity(
        5,
        EntityKind::Constructor,
        "BareField",
        "picsim::BareField::BareField",
    );
    ctor.parent = Some(2);
    ctor.class_name = Some("BareField".into());
    ctor.params = vec![
        Param {
            ty: "const Layout&".into(),
            name: "layout".into(),
            default: None,
        },
        Param {
            ty: "int".into(),
            name: "nghost".into(),
            default: Some("1".into()),
        },
    ];

    let mut alias = entity(
        6,
        EntityKind::TypeAlias,
        "λ_view_type",
        "picsim::BareField::λ_view_type",
    );
    alias.parent = Some(2);
    alias.signature = "using λ_view_type = Kokkos::View<T*>;".into();
    alias.gloss.source = GlossSource::SkippedLowInformation;

    let mut section = entity(
        7,
        EntityKind::DocSection,
        "粒子 — Überblick",
        "README.md > 粒子 — Überblick",
    );
    section.parent_symbol = String::new();
    section.file = Some(1);
    section.section_path = Some("README.md > 粒子 — Überblick".into());
    section.module = ".".into();

    let entities = vec![file_entity, ns, class, decl, def, ctor, alias, section];

    let long_code = "for (size_t i = 0; i < n; ++i) {\n    x[i] += dt * v[i];\n}\n".repeat(4);
    let chunks = vec![
        chunk(
            0,
            &entities[2],
            1,
            1,
            "src/Field/BareField.h",
            "class BareField { /* … */ };",
        ),
        chunk(
            1,
            &entities[3],
            1,
            1,
            "src/Field/BareField.h",
            "void fillHalo();",
        ),
        Chunk {
            frame: CodeFrame {
                prelude_lines: 0,
                prelude_from: 0,
                trailer_lines: 1,
            },
            ..chunk(2, &entities[4], 1, 2, "src/Field/BareField.hpp", &long_code)
        },
        Chunk {
            // A later part: the signature repeated, its marker, one line.
            frame: CodeFrame {
                prelude_lines: 2,
                prelude_from: 40,
                trailer_lines: 0,
            },
            ..chunk(
                3,
                &entities[4],
                2,
                2,
                "src/Field/BareField.hpp",
                "void BareField::fillHalo() {\n    // [part 2/2]\n    halo_m.fillHalo(dview_m, layout_m);",
            )
        },
        chunk(
            4,
            &entities[7],
            1,
            1,
            "README.md",
            "## 粒子 — Überblick\n\nÉtude: ∂ρ/∂t + ∇·J = 0\n",
        ),
    ];

    let mut edges = vec![
        Edge {
            from: 0,
            to: 1,
            kind: EdgeKind::Contains,
        },
        Edge {
            from: 1,
            to: 2,
            kind: EdgeKind::Contains,
        },
        Edge {
            from: 2,
            to: 3,
            kind: EdgeKind::Contains,
        },
        Edge {
            from: 2,
            to: 5,
            kind: EdgeKind::Contains,
        },
        Edge {
            from: 2,
            to: 6,
            kind: EdgeKind::Contains,
        },
        Edge {
            from: 4,
            to: 3,
            kind: EdgeKind::Defines,
        },
        Edge {
            from: 5,
            to: 4,
            kind: EdgeKind::Calls,
        },
        Edge {
            from: 0,
            to: 0,
            kind: EdgeKind::Includes,
        },
    ];
    edges.sort();

    IndexData {
        files: vec![header, implementation],
        entities,
        chunks,
        edges,
    }
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// The four encoded data files of `data`, indexed by position in `DataKind::ALL`.
fn encoded(data: &IndexData) -> Vec<Vec<u8>> {
    let files = data.encode().expect("sample encodes");
    let kinds: Vec<DataKind> = files.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        DataKind::ALL.to_vec(),
        "encode returns the files in order"
    );
    files.into_iter().map(|(_, bytes)| bytes).collect()
}

fn position(kind: DataKind) -> usize {
    DataKind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("kind in ALL")
}

/// Decode the whole index with one data file replaced by `bytes`.
fn decode_with(files: &[Vec<u8>], kind: DataKind, bytes: &[u8]) -> Result<IndexData, CoreError> {
    let mut parts: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    parts[position(kind)] = bytes;
    IndexData::decode(parts[0], parts[1], parts[2], parts[3])
}

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

/// The data file an error names, when it names one.
fn error_file(e: &CoreError) -> Option<&str> {
    match e {
        CoreError::Truncated { file, .. }
        | CoreError::BadMagic { file }
        | CoreError::UnsupportedVersion { file, .. }
        | CoreError::WrongKind { file, .. }
        | CoreError::ChecksumMismatch { file, .. }
        | CoreError::TrailingBytes { file, .. }
        | CoreError::Decode { file, .. }
        | CoreError::Encode { file, .. }
        | CoreError::Inconsistent { file, .. } => Some(file),
        CoreError::Manifest { .. }
        | CoreError::ModelMismatch { .. }
        | CoreError::Malformed { .. }
        | CoreError::Settings { .. } => None,
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

fn hex_decode(hex: &str) -> Vec<u8> {
    assert_eq!(hex.len() % 2, 0, "even-length hex");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// A data file with a correct header (magic, version, kind, length and
/// checksum) around an arbitrary payload. The kind tag is copied from a
/// real encoding, so the test does not hard-code the tag values.
fn frame(kind: DataKind, payload: &[u8]) -> Vec<u8> {
    let reference = encode_data_file(kind, &Vec::<Edge>::new()).expect("empty table encodes");
    let mut out = reference[..16].to_vec();
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&hex_decode(&sha256_hex(payload)));
    out.extend_from_slice(payload);
    assert_eq!(out.len(), HEADER_LEN + payload.len());
    out
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

fn manifest_for(data: &IndexData, files: &[Vec<u8>]) -> Manifest {
    Manifest {
        format: Manifest::FORMAT_NAME.to_string(),
        format_version: FORMAT_VERSION,
        tool_version: "0.1.0".to_string(),
        config_hash: sha256_hex(b"[index]\nmax_chunk_tokens = 512\n"),
        counts: data.counts(),
        source_files: data
            .files
            .iter()
            .map(|f| (f.path.clone(), f.sha256.clone()))
            .collect::<BTreeMap<_, _>>(),
        embedding: None,
        glosses: None,
        retrieval: None,
        data_files: DataKind::ALL
            .iter()
            .zip(files)
            .map(|(kind, bytes)| DataFileInfo {
                name: kind.file_name().to_string(),
                kind: *kind,
                bytes: bytes.len() as u64,
                sha256: sha256_hex(bytes),
            })
            .collect(),
    }
}

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
