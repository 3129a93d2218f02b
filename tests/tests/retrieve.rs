//! The retrieval pipeline of `codegloss-core` on the fixture repository,
//! with real vectors from the default model: one test per stage (signals,
//! routing, candidate pool, reranking and primary gates, noise filter,
//! expansion, supplementary chunks, final filter) and snapshots of the
//! `query --json` view for one fixture question per intent.

use std::sync::OnceLock;

use codegloss_core::answer::build_context_estimated;
use codegloss_core::lexical::{FieldWeights, LexicalIndex};
use codegloss_core::query::Intent;
use codegloss_core::retrieve::{
    retrieve, Corpus, EntityTarget, Retrieval, RetrievalSettings, Role, Source,
};
use codegloss_core::{EdgeKind, Scope, SourceType};
use codegloss_indexer::embed::Embedder;
use codegloss_indexer::{ingest::build, Config};
use codegloss_tests::{embedded_fixture, keyword_corpus};
use indicatif::ProgressBar;
use serde::Serialize;

struct Fixture {
    corpus: Corpus,
    embedder: std::sync::Mutex<Embedder>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (data, v, embedder) = embedded_fixture();
        let lexical = LexicalIndex::build(&data, FieldWeights::default());
        Fixture {
            corpus: Corpus::new(data, Some(v.index), lexical),
            embedder: std::sync::Mutex::new(embedder),
        }
    })
}

fn ask(question: &str) -> Retrieval {
    let f = fixture();
    let q = f.embedder.lock().unwrap().embed_query(question).unwrap();
    retrieve(&f.corpus, question, Some(&q), &RetrievalSettings::default()).unwrap()
}

fn chunk(id: u32) -> &'static codegloss_core::Chunk {
    &fixture().corpus.data.chunks[id as usize]
}

#[test]
fn signals_find_files_siblings_symbols_and_modules() {
    let r = ask("What does BareField.h declare, and how does fillHalo use HaloCells?");
    let s = &r.signals;
    assert_eq!(s.exact_filenames.len(), 1);
    let m = &s.exact_filenames[0];
    let data = &fixture().corpus.data;
    assert_eq!(
        data.files[m.exact[0] as usize].path,
        "src/Field/BareField.h"
    );
    assert!(m
        .siblings
        .iter()
        .any(|&f| data.files[f as usize].path == "src/Field/BareField.hpp"));
    assert!(s.exact_symbols.contains(&"fillHalo".to_string()), "{s:?}");
    assert!(s.exact_symbols.contains(&"HaloCells".to_string()), "{s:?}");
    assert!(!s.test_intent && !s.build_intent);
    let r = ask("Give an overview of the Particle module");
    assert!(!r.signals.modules.is_empty(), "{:?}", r.signals);
    assert_eq!(r.route.intent, Intent::ModuleOverview);
    assert_eq!(r.route.entity_target, Some(EntityTarget::Module));
}

#[test]
fn a_plain_word_names_a_member_only_with_its_class() {
    // `unpack` is a method of the halo class: an ordinary verb names it
    // only when the question also names its class's words.
    let unrelated = ask("Where do I unpack the input deck of a run?");
    assert!(
        !unrelated
            .signals
            .exact_symbols
            .contains(&"unpack".to_string()),
        "{:?}",
        unrelated.signals
    );
    let related = ask("How do the halo cells unpack what neighbours sent?");
    assert!(
        related
            .signals
            .exact_symbols
            .contains(&"unpack".to_string()),
        "{:?}",
        related.signals
    );
}

#[test]
fn exact_filename_is_first_and_siblings_join() {
    let r = ask("What is the purpose of BareField.hpp?");
    let first = chunk(r.chunks[0].chunk);
    assert_eq!(first.path, "src/Field/BareField.hpp");
    assert_eq!(first.chunk_type, "file");
    assert!(r.chunks[0].sources.contains(&Source::ExactFilename));
    assert_eq!(r.route.intent, Intent::FilePurpose);
    let files = r.files(&fixture().corpus);
    assert!(files.contains(&"src/Field/BareField.h"), "{files:?}");
}

#[test]
fn exact_symbols_are_injected_at_most_twice() {
    let r = ask("What does fillHalo do?");
    let injected: Vec<_> = r
        .chunks
        .iter()
        .filter(|c| c.sources.contains(&Source::ExactSymbol))
        .collect();
    assert!(!injected.is_empty() && injected.len() <= 2, "{injected:?}");
    assert!(chunk(r.chunks[0].chunk).symbol_name.contains("fillHalo"));
}

#[test]
fn api_call_sites_are_found_for_api_questions() {
    let r = ask("How do I use Kokkos::parallel_for here?");
    assert_eq!(r.route.intent, Intent::ApiUsage);
    assert!(
        r.chunks
            .iter()
            .any(|c| c.sources.contains(&Source::ApiCallSite)
                && chunk(c.chunk).code.contains("Kokkos::parallel_for(")),
        "{:?}",
        r.chunks
    );
}

#[test]
fn primary_gates_cap_files_and_symbols() {
    let r = ask("How are halo cells exchanged between neighbouring ranks?");
    let primary: Vec<_> = r
        .chunks
        .iter()
        .filter(|c| c.role == Role::Primary)
        .collect();
    assert!(!primary.is_empty() && primary.len() <= RetrievalSettings::default().k + 1);
    let mut per_file = std::collections::BTreeMap::new();
    for p in &primary {
        let c = chunk(p.chunk);
        if c.chunk_type != "file" {
            *per_file.entry(c.path.clone()).or_insert(0) += 1;
        }
    }
    assert!(per_file.values().all(|&n| n <= 2), "{per_file:?}");
    assert!(primary
        .windows(2)
        .all(|w| w[0].score.combined >= w[1].score.combined
            || w[0].sources.contains(&Source::ExactFilename)));
    let top = chunk(primary[0].chunk);
    assert!(top.path.contains("Halo") || top.code.to_lowercase().contains("halo"));
    for p in &primary {
        assert!(!p.sources.is_empty());
        assert!(p.score.combined.is_finite());
    }
}

#[test]
fn test_and_build_chunks_only_when_asked() {
    let r = ask("How does the field fill its halo?");
    for c in &r.chunks {
        let ch = chunk(c.chunk);
        assert!(
            ch.scope != Scope::Test && ch.source_type != Some(SourceType::Build),
            "noise {} in context",
            ch.path
        );
    }
    let r = ask("Where is the field tested?");
    assert!(r.signals.test_intent);
    assert!(
        r.chunks.iter().any(|c| chunk(c.chunk).scope == Scope::Test),
        "{:?}",
        r.files(&fixture().corpus)
    );
    let r = ask("How is the project built with CMake?");
    assert!(r.signals.build_intent);
    assert!(r
        .files(&fixture().corpus)
        .iter()
        .any(|f| f.ends_with("CMakeLists.txt") || f.ends_with(".cmake")));
}

#[test]
fn expansion_follows_graph_edges_within_budget() {
    let r = ask("Where is fillHalo defined?");
    assert_eq!(r.route.intent, Intent::LocationLookup);
    let expanded: Vec<_> = r
        .chunks
        .iter()
        .filter(|c| c.role == Role::StructuralExpansion)
        .collect();
    assert!(expanded.len() <= RetrievalSettings::default().expansion_minimal);
    for e in &expanded {
        let via = e.via.as_ref().expect("expansion has an edge");
        // From a primary chunk (which the final-context filter may have
        // dropped afterwards as a trivial declaration).
        assert!(
            r.chunks
                .iter()
                .any(|c| c.chunk == via.from_chunk && c.role == Role::Primary)
                || r.dropped.iter().any(|(c, _)| *c == via.from_chunk),
            "{via:?}"
        );
    }
    // The declaration/definition pair is joined through the defines edge.
    let files = r.files(&fixture().corpus);
    assert!(files.contains(&"src/Field/BareField.hpp"), "{files:?}");
    assert!(files.contains(&"src/Field/BareField.h"), "{files:?}");
}

#[test]
fn expansion_follows_a_class_to_its_few_derived_classes() {
    let r = ask("What does the FFT base class do?");
    let corpus = &fixture().corpus;
    let derived: Vec<_> = r
        .chunks
        .iter()
        .filter_map(|c| Some((c, c.via.as_ref()?)))
        .filter(|(_, via)| via.edge == "derived_by")
        .collect();
    assert!(!derived.is_empty(), "{:?}", r.files(corpus));
    for (c, via) in derived {
        assert_eq!(c.role, Role::StructuralExpansion);
        let base = chunk(via.from_chunk).entity;
        let inherits = |e: u32| {
            corpus
                .out_edges(e)
                .iter()
                .any(|&(k, t)| k == EdgeKind::Inherits && t == base)
        };
        assert!(inherits(chunk(c.chunk).entity), "{via:?}");
        // Only a class with at most two derived classes is followed.
        let all = corpus
            .in_edges(base)
            .iter()
            .filter(|(k, _)| *k == EdgeKind::Inherits)
            .count();
        assert!(all <= 2, "{all} derived classes followed");
    }
}

#[test]
fn supplementary_chunks_come_from_referenced_files() {
    let r = ask("How does the spatial particle layout update particles across ranks?");
    for s in r.chunks.iter().filter(|c| c.role == Role::Supplementary) {
        let via = s.via.as_ref().unwrap();
        assert_eq!(via.edge, "referenced_file");
        let primary_files: Vec<&str> = r
            .chunks
            .iter()
            .filter(|c| c.role != Role::Supplementary)
            .map(|c| chunk(c.chunk).path.as_str())
            .collect();
        assert!(!primary_files.contains(&chunk(s.chunk).path.as_str()));
    }
}

#[test]
fn keyword_only_retrieval_works_without_vectors() {
    let f = fixture();
    let r = retrieve(
        &f.corpus,
        "How are halo cells exchanged?",
        None,
        &RetrievalSettings::default(),
    )
    .unwrap();
    assert!(!r.chunks.is_empty());
    assert!(r.chunks.iter().all(|c| c.score.distance.is_none()));
    assert!(r.files(&f.corpus).iter().any(|p| p.contains("Halo")));
}

#[test]
fn a_long_file_shows_the_member_nearest_the_question_by_meaning() {
    let f = fixture();
    let question = "How does the field report the spread of its values?";
    let r = ask(question);
    // Every chunk of the context's files has its distance; none without a vector.
    for rc in &r.chunks {
        let file = f.corpus.file_of_chunk(rc.chunk).unwrap();
        for c in f.corpus.chunks_of_file(file) {
            assert!(r.file_distances.contains_key(c), "chunk {c}");
        }
    }
    let plain = retrieve(&f.corpus, question, None, &RetrievalSettings::default()).unwrap();
    assert!(plain.file_distances.is_empty());
    // The file unit alone, in a budget far smaller than the file: the body
    // of the member nearest the question is shown, though its lines do
    // not use the question's words.
    let file = f
        .corpus
        .data
        .chunks
        .iter()
        .find(|c| c.path == "src/Field/BareField.hpp" && c.chunk_type == "file")
        .unwrap()
        .id;
    let mut only = r.clone();
    only.chunks = vec![codegloss_core::retrieve::RetrievedChunk {
        chunk: file,
        ..r.chunks[0].clone()
    }];
    // The file's part nearest the question by meaning.
    let nearest = f
        .corpus
        .chunks_of_file(f.corpus.file_of_chunk(file).unwrap())
        .iter()
        .filter(|&&c| c != file)
        .min_by(|a, b| r.file_distances[a].total_cmp(&r.file_distances[b]))
        .copied()
        .unwrap();
    let near_lines = |text: &str| {
        chunk(nearest)
            .code
            .lines()
            .map(str::trim)
            .filter(|l| l.len() >= 12 && text.contains(l))
            .count()
    };
    let with = build_context_estimated(&f.corpus, &only, question, 900);
    only.file_distances.clear();
    let without = build_context_estimated(&f.corpus, &only, question, 900);
    assert!(
        near_lines(&with.text) >= near_lines(&without.text) + 3,
        "with:\n{}\nwithout:\n{}",
        with.text,
        without.text
    );
}

#[test]
fn retrieval_is_deterministic() {
    let a = ask("How does the FFT solver transform a field?");
    let b = ask("How does the FFT solver transform a field?");
    assert_eq!(a, b);
}

/// The `query --json` view without floating-point scores (which may differ
/// in the last digits across CPUs).
#[derive(Serialize)]
struct View {
    intent: &'static str,
    target: Option<EntityTarget>,
    chunks: Vec<String>,
}

fn view(question: &str) -> View {
    let r = ask(question);
    View {
        intent: r.route.intent.as_str(),
        target: r.route.entity_target,
        chunks: r
            .chunks
            .iter()
            .map(|c| {
                let ch = chunk(c.chunk);
                format!(
                    "{:?} {}:{}-{} {} {} {:?}{}",
                    c.role,
                    ch.path,
                    ch.start_line,
                    ch.end_line,
                    ch.chunk_type,
                    ch.symbol_name,
                    c.sources,
                    c.via
                        .as_ref()
                        .map(|v| format!(" via {}", v.edge))
                        .unwrap_or_default()
                )
            })
            .collect(),
    }
}

/// Every chunk of one file carries the same file evidence, within the
/// weights' sum, and some file has evidence for a question in concepts;
/// a question about a module gets none (a folder is no file).
#[test]
fn file_evidence_is_one_score_per_file_and_none_for_module_questions() {
    let r = ask("How is charge transferred from particles to the grid?");
    let mut per_file: std::collections::BTreeMap<&str, f32> = Default::default();
    let primaries: Vec<_> = r
        .chunks
        .iter()
        .filter(|c| c.role == Role::Primary)
        .collect();
    for p in &primaries {
        let f = p.score.file;
        // At most the dense and keyword weights together (3 + 2).
        assert!((0.0..=5.0 + 1e-4).contains(&f), "{f}");
        let prev = *per_file.entry(chunk(p.chunk).path.as_str()).or_insert(f);
        assert_eq!(prev, f, "{}", chunk(p.chunk).path);
    }
    assert!(primaries.iter().any(|p| p.score.file > 0.0), "{per_file:?}");
    let m = ask("Give an overview of the Solver module");
    assert_eq!(m.route.entity_target, Some(EntityTarget::Module));
    assert!(m.chunks.iter().all(|c| c.score.file == 0.0));
}

#[test]
fn query_snapshots_one_per_intent() {
    let questions = [
        (
            "api_usage",
            "How do I call Kokkos::parallel_for in this code?",
        ),
        ("location_lookup", "Where is accumulateHalo defined?"),
        (
            "data_flow",
            "How is charge transferred from particles to the grid?",
        ),
        (
            "comparison",
            "What is the difference between BareField and HaloCells?",
        ),
        ("symbol_explanation", "What does launchPush do?"),
        ("file_purpose", "What is the purpose of Picsim.cpp?"),
        ("module_overview", "Give an overview of the Solver module"),
        (
            "workflow_explanation",
            "What happens when a simulation step runs?",
        ),
        ("default", "halo ghost cells"),
    ];
    for (name, q) in questions {
        let v = view(q);
        assert_eq!(v.intent, name, "{q}");
        insta::assert_yaml_snapshot!(format!("query_{name}"), v);
    }
}

/// A question that spells out an acronym the index's names use, and that
/// the index itself spells out beside it (a doc comment "Cloud-in-cell
/// weights" on `CIC`), searches for the acronym too; initials that merely
/// coincide with a name (`PSD`, never spelled out) do not.
#[test]
fn spelled_out_acronyms_join_the_keyword_query() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/CIC.h"),
        "#pragma once\n/// Cloud-in-cell weights for depositing particle charge on the grid.\nstruct CIC {\n  double weight(double x) const { return 1.0 - x; }\n};\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/Spectrum.h"),
        "#pragma once\n/// Estimates a spectrum.\nstruct PSD {\n  double value(double k) const { return k * k; }\n};\n",
    )
    .unwrap();
    let out = build::build_index(dir.path(), &Config::default(), &ProgressBar::hidden()).unwrap();
    let corpus = keyword_corpus(out.data);
    assert!(corpus.acronyms.contains("cic") && corpus.acronyms.contains("psd"));
    let q = "How are cloud-in-cell weights computed?";
    let mut s = codegloss_core::retrieve::QuerySignals::extract(q, &corpus);
    assert!(!s.tokens.contains(&"cic".to_string()));
    s.expand_acronyms(q, &corpus);
    assert!(s.tokens.contains(&"cic".to_string()), "{:?}", s.tokens);
    let q = "What does the particle spectrum density say?";
    let mut s = codegloss_core::retrieve::QuerySignals::extract(q, &corpus);
    s.expand_acronyms(q, &corpus);
    assert!(!s.tokens.contains(&"psd".to_string()), "{:?}", s.tokens);
    // With the acronym the CIC header ranks first.
    let q = "How are cloud-in-cell weights computed?";
    let r = retrieve(&corpus, q, None, &RetrievalSettings::default()).unwrap();
    assert_eq!(
        corpus.data.chunks[r.chunks[0].chunk as usize].path,
        "src/CIC.h"
    );
}

#[test]
fn semantic_distances_carry_each_chunks_hubness_correction() {
    // Every chunk has a radius; a chunk's corrected distance is its raw
    // distance plus weight × (mean radius - its radius), whatever the
    // weight, and weight 0 leaves the raw distances.
    let f = fixture();
    let ivf = &f.corpus.vectors.as_ref().unwrap().ivf;
    let n = f.corpus.data.chunks.len();
    assert_eq!(ivf.radius.len(), n);
    assert!(
        ivf.radius.iter().any(|&r| r != ivf.radius[0]),
        "the fixture's chunks all have one radius"
    );
    let mean = codegloss_core::hubness::mean_radius(&ivf.radius);
    let q = f
        .embedder
        .lock()
        .unwrap()
        .embed_query("how are particles pushed?")
        .unwrap();
    // Every chunk, by id.
    let at = |w: f32| {
        let settings = RetrievalSettings {
            hubness_weight: w,
            ..RetrievalSettings::default()
        };
        let mut hits = codegloss_core::retrieve::semantic_search(&f.corpus, &q, &settings, n)
            .unwrap()
            .hits;
        hits.sort_by_key(|h| h.0);
        hits
    };
    let raw = at(0.0);
    assert_eq!(raw.len(), n);
    for w in [1.0, 2.5] {
        let corrected = at(w);
        assert_eq!(corrected.len(), n);
        for ((chunk, d), (same, raw_d)) in corrected.iter().zip(&raw) {
            assert_eq!(chunk, same);
            let want =
                raw_d + codegloss_core::hubness::correction(ivf.radius[*chunk as usize], mean, w);
            assert!((d - want).abs() < 1e-5, "chunk {chunk}: {d} vs {want}");
        }
    }
}
