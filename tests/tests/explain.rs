//! The explanation stage (model-written glosses) against a real
//! OpenAI-compatible server: SmolLM2-135M served by llama-cpp-python,
//! passed in `CODEGLOSS_TEST_LLM_URL` by `cargo xtask ci`. The tests check
//! plumbing (which glosses are generated, cached and regenerated, and what
//! the manifest records), never wording.
//!
//! A server that returns empty bodies or never answers cannot be a healthy
//! real server, so small socket servers in this file play those parts.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use codegloss_core::{EntityKind, GlossSource, IndexData};
use codegloss_indexer::explain::{
    self, BackendKind, ExplainConfig, ExplainReport, Level, OpenAiBackend,
};
use codegloss_indexer::{ingest::build, store, Config};
use codegloss_tests::test_llm_url;
use indicatif::ProgressBar;

const HEAT_H: &str = r#"#pragma once
// Explicit finite-difference solver for the 1D heat equation.

class Grid;

/// Advance the temperature field by one explicit Euler step.
void step(double* u, const double* u_old, int n, double alpha);

/// Total heat in the domain (trapezoidal rule).
double total_heat(const double* u, int n, double dx);
"#;

const HEAT_CPP: &str = r#"#include "heat.h"

// u_new[i] = u[i] + alpha * (u[i-1] - 2 u[i] + u[i+1]), boundaries fixed.
void step(double* u, const double* u_old, int n, double alpha) {
    for (int i = 1; i < n - 1; ++i) {
        u[i] = u_old[i] + alpha * (u_old[i - 1] - 2.0 * u_old[i] + u_old[i + 1]);
    }
}

double total_heat(const double* u, int n, double dx) {
    double sum = 0.5 * (u[0] + u[n - 1]);
    for (int i = 1; i < n - 1; ++i) {
        sum += u[i];
    }
    return sum * dx;
}
"#;

const README: &str = "# heat1d\n\nA tiny explicit solver for the one-dimensional heat equation, used to test codegloss.\n\n## Stability\n\nThe explicit scheme is stable for alpha = dt / dx^2 at most 0.5.\n";

fn write_repo(dir: &Path, cpp: &str) {
    std::fs::write(dir.join("heat.h"), HEAT_H).unwrap();
    std::fs::write(dir.join("heat.cpp"), cpp).unwrap();
    std::fs::write(dir.join("README.md"), README).unwrap();
}

fn build(repo: &Path) -> IndexData {
    build::build_index(repo, &Config::default(), &ProgressBar::hidden())
        .unwrap()
        .data
}

fn run(repo: &Path, cfg: &ExplainConfig, cache: &Path) -> (IndexData, ExplainReport) {
    let mut data = build(repo);
    let backend = OpenAiBackend::new(cfg);
    let report = explain::explain(
        &mut data,
        repo,
        cfg,
        &backend,
        cache,
        &ProgressBar::hidden(),
    )
    .unwrap();
    (data, report)
}

fn entity<'a>(data: &'a IndexData, kind: EntityKind, name: &str) -> &'a codegloss_core::Entity {
    data.entities
        .iter()
        .find(|e| e.kind == kind && e.qualified_name == name)
        .unwrap_or_else(|| panic!("no {kind:?} {name}"))
}

#[test]
fn model_glosses_are_cached_and_regenerated_only_where_inputs_changed() {
    let Some(url) = test_llm_url() else { return };
    let repo = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    write_repo(repo.path(), HEAT_CPP);
    let cfg = ExplainConfig {
        backend: BackendKind::Openai,
        levels: vec![Level::Symbol, Level::File, Level::Module],
        base_url: url,
        model: "smollm2".into(),
        max_tokens: 64,
        temperature: 0.0,
        timeout_seconds: 120,
        ..ExplainConfig::default()
    };
    let cache = cfg.cache_path(out.path());

    // First run: everything at the three levels is generated or skipped.
    let (data, first) = run(repo.path(), &cfg, &cache);
    assert!(
        first.info.fallbacks.is_empty(),
        "{:?}",
        first.info.fallbacks
    );
    assert_eq!(first.cache_hits, 0);
    assert_eq!(first.requests as usize, first.generated.len());
    let file = entity(&data, EntityKind::File, "heat.cpp");
    assert_eq!(file.gloss.source, GlossSource::Model, "{:?}", file.gloss);
    assert_eq!(file.gloss.model.as_deref(), Some("smollm2"));
    assert!(!file.gloss.text.is_empty());
    let module = data
        .entities
        .iter()
        .find(|e| e.kind == EntityKind::Module)
        .unwrap();
    assert_eq!(module.gloss.source, GlossSource::Model);
    // Tiny declarations are marked, not sent.
    let forward = entity(&data, EntityKind::Class, "Grid");
    assert_eq!(forward.gloss.source, GlossSource::SkippedLowInformation);
    assert!(first.skipped >= 1);
    assert!(!first.generated.iter().any(|(_, id, _)| *id == forward.id));
    // The manifest section.
    assert_eq!(first.info.backend, "openai");
    assert_eq!(first.info.levels, ["symbol", "file", "module"]);
    assert_eq!(first.info.models["file"], "smollm2");
    assert!(first.info.prompts.contains_key("general"));
    assert!(first.info.prompts.contains_key("module_level"));
    assert!(first.info.by_source["file"]["model"] >= 2);
    assert!(first.cache_bytes > 0);

    // Second run, same input: all from the cache, zero requests.
    let (again, second) = run(repo.path(), &cfg, &cache);
    assert_eq!(second.requests, 0);
    assert!(second.generated.is_empty());
    assert_eq!(second.cache_hits, first.generated.len());
    let texts = |d: &IndexData| -> Vec<(String, GlossSource)> {
        d.entities
            .iter()
            .map(|e| (e.gloss.text.clone(), e.gloss.source))
            .collect()
    };
    assert_eq!(texts(&again), texts(&data));

    // Edit one function body: exactly its gloss, its file's and its
    // module's are regenerated.
    write_repo(repo.path(), &HEAT_CPP.replace("sum * dx", "sum * dx * 1.0"));
    let (edited, third) = run(repo.path(), &cfg, &cache);
    let regenerated: BTreeSet<(Level, String)> = third
        .generated
        .iter()
        .map(|(l, _, n)| (*l, n.clone()))
        .collect();
    let module_name = edited
        .entities
        .iter()
        .find(|e| e.kind == EntityKind::Module)
        .unwrap()
        .qualified_name
        .clone();
    let expected: BTreeSet<(Level, String)> = [
        (Level::Symbol, "total_heat".to_string()),
        (Level::File, "heat.cpp".to_string()),
        (Level::Module, module_name),
    ]
    .into_iter()
    .collect();
    assert_eq!(regenerated, expected);
    assert_eq!(third.requests, 3);
    assert_eq!(third.cache_hits, first.generated.len() - 3);
}

/// A server that answers every request with `body` (HTTP 200, JSON), or
/// never answers when `body` is `None`; counts requests.
fn faulty_server(body: Option<&'static str>) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = s.read(&mut buf);
                match body {
                    Some(b) => {
                        let r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                            b.len()
                        );
                        let _ = s.write_all(r.as_bytes());
                    }
                    None => std::thread::sleep(std::time::Duration::from_secs(5)),
                }
            });
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), count)
}

fn failing_run(body: Option<&'static str>) -> (codegloss_core::Manifest, IndexData, usize) {
    let repo = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    write_repo(repo.path(), HEAT_CPP);
    let (url, count) = faulty_server(body);
    let cfg = ExplainConfig {
        backend: BackendKind::Openai,
        levels: vec![Level::File],
        base_url: url,
        timeout_seconds: 1,
        max_entities: Some(1),
        ..ExplainConfig::default()
    };
    let (data, report) = run(repo.path(), &cfg, &cfg.cache_path(out.path()));
    // The index is still written, and records the cause.
    store::write_index_with_glosses(out.path(), &data, None, Some(&report.info), "h", None)
        .unwrap();
    let (manifest, read) = store::read_index(out.path()).unwrap();
    (manifest, read, count.load(Ordering::SeqCst))
}

#[test]
fn empty_output_falls_back_to_structural_and_is_recorded() {
    let (manifest, data, requests) = failing_run(Some(
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#,
    ));
    let g = manifest
        .glosses
        .expect("manifest records the explanation stage");
    assert_eq!(g.fallbacks.len(), 1, "{:?}", g.fallbacks);
    assert_eq!(g.fallbacks[0].cause, "empty output");
    assert_eq!(g.fallbacks[0].level, "file");
    // One retry, then the structural gloss.
    assert_eq!(requests, 2);
    let e = &data.entities[g.fallbacks[0].entity as usize];
    assert_eq!(e.gloss.source, GlossSource::Structural);
    assert!(e.gloss.text.starts_with("File `"), "{}", e.gloss.text);
    assert_eq!(g.by_source["file"]["structural"], 3);
}

#[test]
fn a_server_that_never_answers_times_out_into_a_fallback() {
    let (manifest, data, requests) = failing_run(None);
    let g = manifest.glosses.unwrap();
    assert_eq!(g.fallbacks.len(), 1);
    assert!(
        g.fallbacks[0]
            .cause
            .contains("no complete answer within 1 s"),
        "{}",
        g.fallbacks[0].cause
    );
    assert_eq!(requests, 2);
    assert!(data
        .entities
        .iter()
        .all(|e| e.gloss.source != GlossSource::Model));
}

/// The explanation prompts of the fixture repository's `Field` folder, as
/// a dry run renders them: templates, facts and child lists are pinned.
#[test]
fn rendered_explanation_prompts_snapshot() {
    let data = build(&codegloss_tests::fixture_repo());
    let cfg = ExplainConfig {
        backend: BackendKind::Openai,
        levels: vec![Level::Symbol, Level::CallChain, Level::File, Level::Module],
        max_input_chars: 1200,
        ..ExplainConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = explain::plan(
        &data,
        &codegloss_tests::fixture_repo(),
        &cfg,
        &dir.path().join("none.jsonl"),
    )
    .unwrap();
    let pick = |entity: &str, level: &str| {
        let p = plan
            .iter()
            .find(|p| p.entity == entity && p.level == level)
            .unwrap_or_else(|| panic!("no {level} prompt for {entity}"));
        format!("=== {} {} {} ===\n{}\n", p.level, p.mode, p.entity, p.user)
    };
    let mut out = String::new();
    out.push_str(&pick("picsim::BareField::fillHalo", "symbol"));
    out.push_str(&pick("src/Field/HaloCells.h", "file"));
    out.push_str(&pick("src/Field", "module"));
    if let Some(chain) = plan.iter().find(|p| p.level == "call_chain") {
        out.push_str(&format!(
            "=== call_chain {} ===\n{}\n",
            chain.entity, chain.user
        ));
    }
    insta::assert_snapshot!(out);
}
