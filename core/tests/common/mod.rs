//! Fixtures shared by the index-format tests (`format_native.rs`,
//! `format_corruption.rs`, `format_golden.rs`): a small hand-built index
//! with non-ASCII names, split chunks and edges of several kinds, its
//! encoded data files and manifest, and the helpers that decode an index
//! with one file replaced.
//!
//! Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::collections::BTreeMap;

use codegloss_core::format::{sha256_hex, DataFileInfo, HEADER_LEN};
use codegloss_core::{
    encode_data_file, Chunk, CodeFrame, CoreError, DataKind, Edge, EdgeKind, Entity, EntityKind,
    Gloss, GlossSource, Include, IndexData, Language, Manifest, Param, ParseStats, Scope,
    SourceFile, SourceType, Span, FORMAT_VERSION,
};

// ---------------------------------------------------------------------------
// A small, hand-built index
// ---------------------------------------------------------------------------

pub fn source_file(id: u32, path: &str, source_type: SourceType) -> SourceFile {
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

pub fn entity(id: u32, kind: EntityKind, name: &str, qualified_name: &str) -> Entity {
    let parent_symbol = qualified_name
        .rsplit_once("::")
        .map_or(String::new(), |(q, _)| q.to_string());
    Entity {
        parent_symbol,
        file: Some(0),
        module: "src/Field".to_string(),
        gloss: Gloss {
            text: format!("Structural gloss of {name}."),
            source: GlossSource::Structural,
            model: None,
        },
        ..Entity::new(id, kind, name.to_string(), qualified_name.to_string())
    }
}

pub fn chunk(id: u32, owner: &Entity, part: u16, parts: u16, path: &str, code: &str) -> Chunk {
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
pub fn sample() -> IndexData {
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
pub fn encoded(data: &IndexData) -> Vec<Vec<u8>> {
    let files = data.encode().expect("sample encodes");
    let kinds: Vec<DataKind> = files.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        DataKind::ALL.to_vec(),
        "encode returns the files in order"
    );
    files.into_iter().map(|(_, bytes)| bytes).collect()
}

pub fn position(kind: DataKind) -> usize {
    DataKind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("kind in ALL")
}

/// Decode the whole index with one data file replaced by `bytes`.
pub fn decode_with(
    files: &[Vec<u8>],
    kind: DataKind,
    bytes: &[u8],
) -> Result<IndexData, CoreError> {
    let mut parts: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    parts[position(kind)] = bytes;
    IndexData::decode(parts[0], parts[1], parts[2], parts[3])
}

/// The data file an error names, when it names one.
pub fn error_file(e: &CoreError) -> Option<&str> {
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

pub fn hex_decode(hex: &str) -> Vec<u8> {
    assert_eq!(hex.len() % 2, 0, "even-length hex");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// A data file with a correct header (magic, version, kind, length and
/// checksum) around an arbitrary payload. The kind tag is copied from a
/// real encoding, so the test does not hard-code the tag values.
pub fn frame(kind: DataKind, payload: &[u8]) -> Vec<u8> {
    let reference = encode_data_file(kind, &Vec::<Edge>::new()).expect("empty table encodes");
    let mut out = reference[..16].to_vec();
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&hex_decode(&sha256_hex(payload)));
    out.extend_from_slice(payload);
    assert_eq!(out.len(), HEADER_LEN + payload.len());
    out
}

pub fn manifest_for(data: &IndexData, files: &[Vec<u8>]) -> Manifest {
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
