//! Indexing the fixture repository end to end: snapshots of entities,
//! chunks and edges, spot checks of hard C++ cases, determinism, and the
//! round trip through the on-disk index.

use codegloss_core::{EdgeKind, EntityKind, GlossSource, IndexData, Scope, SourceType};
use codegloss_indexer::{ingest::build, store, Config};
use codegloss_tests::fixture_repo;
use indicatif::ProgressBar;
use serde::Serialize;

fn index_fixture() -> build::BuildOutput {
    build::build_index(&fixture_repo(), &Config::default(), &ProgressBar::hidden())
        .expect("fixture indexes")
}

#[derive(Serialize)]
struct EntityView<'a> {
    kind: &'a str,
    qualified_name: &'a str,
    at: String,
    parent: Option<&'a str>,
    signature: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    template: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    returns: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    params: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bases: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    doc: Option<&'a str>,
}

fn location(data: &IndexData, id: u32) -> String {
    let e = &data.entities[id as usize];
    match (e.file, e.span) {
        (Some(f), Some(s)) => format!(
            "{}:{}-{} [{}..{}]",
            data.files[f as usize].path, s.start_line, s.end_line, s.start_byte, s.end_byte
        ),
        (Some(f), None) => data.files[f as usize].path.clone(),
        _ => String::new(),
    }
}

#[test]
fn entities_snapshot() {
    let out = index_fixture();
    let d = &out.data;
    let view: Vec<EntityView> = d
        .entities
        .iter()
        .filter(|e| e.kind != EntityKind::CallChain)
        .map(|e| EntityView {
            kind: e.kind.as_str(),
            qualified_name: &e.qualified_name,
            at: location(d, e.id),
            parent: e
                .parent
                .map(|p| d.entities[p as usize].qualified_name.as_str()),
            signature: &e.signature,
            template: e.template_params.as_deref(),
            returns: e.return_type.as_deref(),
            params: e
                .params
                .iter()
                .map(|p| format!("{}|{}|{}", p.ty, p.name, p.default.as_deref().unwrap_or("")))
                .collect(),
            bases: e.bases.iter().map(String::as_str).collect(),
            doc: e.doc_comment.as_deref(),
        })
        .collect();
    insta::assert_yaml_snapshot!("entities", view);
}

#[test]
fn edges_snapshot() {
    let d = index_fixture().data;
    let lines: Vec<String> = d
        .edges
        .iter()
        .map(|e| {
            let (a, b) = (&d.entities[e.from as usize], &d.entities[e.to as usize]);
            format!(
                "{} {} -[{}]-> {} {}",
                a.kind.as_str(),
                a.qualified_name,
                e.kind.as_str(),
                b.kind.as_str(),
                b.qualified_name
            )
        })
        .collect();
    insta::assert_yaml_snapshot!("edges", lines);
}

#[test]
fn chunks_snapshot() {
    let d = index_fixture().data;
    let lines: Vec<String> = d
        .chunks
        .iter()
        .map(|c| {
            format!(
                "{} {}:{}-{} {} {} part {}/{} parent={} class={} returns={} params=({}) tokens~{}",
                c.id,
                c.path,
                c.start_line,
                c.end_line,
                c.chunk_type,
                c.symbol_name,
                c.part,
                c.parts,
                c.parent_symbol,
                c.class_name.as_deref().unwrap_or("-"),
                c.return_type.as_deref().unwrap_or("-"),
                c.parameters,
                codegloss_core::text::estimate_tokens(&c.code),
            )
        })
        .collect();
    insta::assert_yaml_snapshot!("chunks", lines);
}

#[test]
fn hard_cases_are_found_with_right_spans_and_parents() {
    let d = index_fixture().data;
    let find = |qn: &str, def: bool| {
        d.entities
            .iter()
            .find(|e| {
                e.qualified_name == qn && e.is_definition == def && e.kind != EntityKind::CallChain
            })
            .unwrap_or_else(|| panic!("{qn} (definition: {def}) not found"))
    };
    // Out-of-namespace qualified free function.
    let init = find("picsim::initialize", true);
    assert_eq!(init.kind, EntityKind::Function);
    assert_eq!(d.files[init.file.unwrap() as usize].path, "src/Picsim.cpp");
    assert_eq!(init.return_type.as_deref(), Some("void"));
    // Out-of-class template method definition, linked to its declaration.
    let fill = find("picsim::BareField::fillHalo", true);
    assert_eq!(fill.kind, EntityKind::Method);
    assert_eq!(
        d.entities[fill.parent.unwrap() as usize].qualified_name,
        "picsim::BareField"
    );
    assert!(fill.template_params.is_some());
    let decl = find("picsim::BareField::fillHalo", false);
    assert!(d
        .edges
        .iter()
        .any(|e| e.kind == EdgeKind::Defines && e.from == fill.id && e.to == decl.id));
    // Calls resolve across files through the member's class.
    assert!(d.edges.iter().any(|e| e.kind == EdgeKind::Calls
        && e.from == fill.id
        && d.entities[e.to as usize].qualified_name == "picsim::detail::HaloCells::fillHalo"));
    // The macro-written base class resolves through the macro's definition.
    let cc = d
        .entities
        .iter()
        .find(|e| e.kind == EntityKind::Class && e.name.starts_with("FFT<CCTransform"))
        .expect("FFT<CCTransform, ...> specialisation");
    assert!(
        cc.bases
            .iter()
            .any(|b| b.contains("IN_PLACE_FFT_BASE_CLASS")),
        "{:?}",
        cc.bases
    );
    assert!(d.edges.iter().any(|e| e.kind == EdgeKind::Inherits
        && e.from == cc.id
        && d.entities[e.to as usize].name == "FFTBase"));
    // CUDA kernels parse.
    let push = d
        .entities
        .iter()
        .find(|e| e.name == "pushParticles" && e.is_definition)
        .expect("CUDA kernel");
    assert_eq!(
        d.files[push.file.unwrap() as usize].source_type,
        SourceType::Cuda
    );
    // Scopes from path conventions.
    let scope = |p: &str| d.find_file(p).unwrap().scope;
    assert_eq!(scope("test/TestField.cpp"), Scope::Test);
    assert_eq!(scope("examples/landau.cpp"), Scope::Example);
    assert_eq!(scope("CMakeLists.txt"), Scope::Build);
    assert_eq!(scope("docs/INSTALL.rst"), Scope::Docs);
    // Ignored files stay out.
    assert!(d.find_file("build/ignored.cpp").is_none());
    // Every entity has a structural gloss; every function in the fixture parses.
    assert!(d
        .entities
        .iter()
        .all(|e| e.gloss.source == GlossSource::Structural && !e.gloss.text.is_empty()));
    assert!(d
        .files
        .iter()
        .filter_map(|f| f.parse.as_ref())
        .all(|p| p.functions_in_error == 0));
}

#[test]
fn long_bodies_split_with_signature_header() {
    let d = index_fixture().data;
    let parts: Vec<_> = d
        .chunks
        .iter()
        .filter(|c| c.parts > 1 && c.chunk_type.ends_with("_part"))
        .collect();
    assert!(!parts.is_empty(), "the fixture has a long function");
    for c in &parts {
        let e = &d.entities[c.entity as usize];
        let code = c.code.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            code.starts_with(&e.signature),
            "part {} of {} keeps the signature:\n{code}",
            c.part,
            e.qualified_name
        );
        assert!(
            codegloss_core::text::estimate_tokens(&c.code) <= 400 + 60,
            "{}",
            c.code.len()
        );
    }
}

#[test]
fn docs_are_sectioned_with_paths() {
    let d = index_fixture().data;
    let paths: Vec<&str> = d
        .entities
        .iter()
        .filter_map(|e| e.section_path.as_deref())
        .collect();
    assert!(
        paths.iter().any(|p| p.matches(" > ").count() >= 2),
        "{paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p.contains("not a heading")),
        "{paths:?}"
    );
    let readme = d
        .chunks
        .iter()
        .find(|c| c.code.contains("# not a heading"))
        .expect("fenced block kept");
    assert!(readme.code.contains("```"), "fence stays intact");
}

#[test]
fn output_is_deterministic_and_round_trips() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let cfg = Config::default();
    let d1 = index_fixture().data;
    let d2 = index_fixture().data;
    store::write_index(a.path(), &d1, None, &cfg.hash()).unwrap();
    store::write_index(b.path(), &d2, None, &cfg.hash()).unwrap();
    let names = |d: &std::path::Path| {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(a.path()), names(b.path()));
    assert_eq!(names(a.path()).len(), 6, "{:?}", names(a.path()));
    for name in names(a.path()) {
        let x = std::fs::read(a.path().join(&name)).unwrap();
        let y = std::fs::read(b.path().join(&name)).unwrap();
        assert!(x == y, "{name} differs between two runs");
    }
    let (manifest, back) = store::read_index(a.path()).unwrap();
    assert_eq!(back, d1);
    assert_eq!(manifest.counts.files, d1.files.len() as u64);
    assert_eq!(manifest.source_files.len(), d1.files.len());
    assert!(manifest.embedding.is_none());
}
