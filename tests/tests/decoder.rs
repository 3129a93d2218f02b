//! The in-process ONNX decoder (`[explain] backend = "ort"`) on SmolLM2
//! converted from its GGUF file: real generation, greedy decoding that
//! repeats itself, batching that changes nothing beyond rounding, seeded
//! sampling, tokenizer parity with llama.cpp (the test answer server
//! serves the same GGUF), and the explanation stage run through it.
//!
//! No check compares whole generations across runs that differ in shape:
//! ONNX Runtime picks its CPU kernels by instruction set and by matrix
//! shape (one prompt or a padded batch), and their rounding differs, so
//! after a near tie two exact runs may take different tokens. The checks
//! compare the first tokens (where the runs seen so far parted at token 4
//! at the earliest, so a near tie there is rarer, not impossible), and
//! whole generations only between runs of the same shape.

use std::path::Path;

use codegloss_core::chat::Message;
use codegloss_core::GlossSource;
use codegloss_indexer::explain::{
    self, BackendKind, ExplainConfig, GlossBackend, Level, OrtBackend,
};
use codegloss_indexer::generate::{Finish, Sampling};
use codegloss_indexer::{ingest::build, Config};
use codegloss_tests::{fixture_repo, smollm2_decoder, test_llm_url};
use indicatif::ProgressBar;

fn chat(system: &str, user: &str) -> Vec<Message> {
    vec![
        Message {
            role: "system".into(),
            content: system.into(),
        },
        Message {
            role: "user".into(),
            content: user.into(),
        },
    ]
}

const SYSTEM: &str = "You explain C++ code to a newcomer in two sentences.";
const CODE: &str = "What does this function do?\n\n```cpp\ndouble total_heat(const double* u, int n, double dx) {\n    double sum = 0.5 * (u[0] + u[n - 1]);\n    for (int i = 1; i < n - 1; ++i) sum += u[i];\n    return sum * dx;\n}\n```";

#[test]
fn greedy_generation_repeats_itself() {
    let Some(mut d) = smollm2_decoder() else {
        return;
    };
    let ids = d.chat_ids(&chat(SYSTEM, CODE)).unwrap();
    let text = d.chat_text(&chat(SYSTEM, CODE)).unwrap();
    assert!(text.starts_with("<|im_start|>system\n") && text.ends_with("<|im_start|>assistant\n"));
    let out = d
        .generate_batch(std::slice::from_ref(&ids), &[48], Sampling::default(), &[0])
        .unwrap()
        .remove(0);
    assert_eq!(out.prompt_tokens, ids.len());
    assert!(out.ids.len() <= 48);
    assert!(out.finish == Finish::Stop || out.ids.len() == 48);
    assert!(
        out.text
            .trim()
            .chars()
            .next()
            .is_some_and(char::is_alphabetic),
        "{:?}",
        out.text
    );
    let again = d
        .generate_batch(std::slice::from_ref(&ids), &[48], Sampling::default(), &[0])
        .unwrap()
        .remove(0);
    assert_eq!(again.ids, out.ids, "greedy decoding repeats itself");
}

/// Tokens two runs of different shapes must agree on (see the module doc).
const SAME_FIRST: usize = 3;

/// The first [`SAME_FIRST`] tokens of `ids`.
fn first(ids: &[u32]) -> &[u32] {
    &ids[..ids.len().min(SAME_FIRST)]
}

#[test]
fn a_batch_generates_what_each_prompt_generates_alone() {
    let Some(mut d) = smollm2_decoder() else {
        return;
    };
    let prompts: Vec<Vec<u32>> = [
        chat(SYSTEM, CODE),
        chat("Answer briefly.", "What is a ghost cell?"),
        chat(
            "Answer briefly.",
            "Name two ways to exchange halo data between MPI ranks, and say when each pays.",
        ),
    ]
    .iter()
    .map(|m| d.chat_ids(m).unwrap())
    .collect();
    let lens: Vec<usize> = prompts.iter().map(Vec::len).collect();
    assert!(lens[0] != lens[1] && lens[1] != lens[2], "{lens:?}");
    let max = [24, 40, 16];
    let batch = d
        .generate_batch(&prompts, &max, Sampling::default(), &[0, 0, 0])
        .unwrap();
    for (i, p) in prompts.iter().enumerate() {
        let alone = d
            .generate_batch(
                std::slice::from_ref(p),
                &[max[i]],
                Sampling::default(),
                &[0],
            )
            .unwrap()
            .remove(0);
        assert_eq!(first(&batch[i].ids), first(&alone.ids), "prompt {i}");
        assert!(!batch[i].ids.is_empty(), "prompt {i}");
        assert!(batch[i].ids.len() <= max[i]);
    }
}

#[test]
fn sampling_is_seeded_and_batch_independent() {
    let Some(mut d) = smollm2_decoder() else {
        return;
    };
    let hot = Sampling {
        temperature: 0.9,
        top_p: 0.95,
    };
    let a = d
        .chat_ids(&chat("Answer briefly.", "Name a prime number."))
        .unwrap();
    let b = d.chat_ids(&chat(SYSTEM, CODE)).unwrap();
    let alone = d
        .generate_batch(std::slice::from_ref(&a), &[24], hot, &[11])
        .unwrap();
    let again = d
        .generate_batch(std::slice::from_ref(&a), &[24], hot, &[11])
        .unwrap();
    assert_eq!(alone[0].ids, again[0].ids);
    let paired = d
        .generate_batch(&[b, a.clone()], &[24, 24], hot, &[5, 11])
        .unwrap();
    assert_eq!(first(&paired[1].ids), first(&alone[0].ids));
    let other: Vec<Vec<u32>> = (0..4)
        .map(|s| {
            d.generate_batch(std::slice::from_ref(&a), &[24], hot, &[s])
                .unwrap()[0]
                .ids
                .clone()
        })
        .collect();
    assert!(
        other.iter().any(|o| o != &other[0]),
        "seeds change the draw"
    );
}

#[test]
fn prompts_longer_than_the_model_are_refused() {
    let Some(mut d) = smollm2_decoder() else {
        return;
    };
    let limit = d.config().max_positions;
    let err = d
        .generate_batch(&[vec![1; limit]], &[8], Sampling::default(), &[0])
        .unwrap_err()
        .to_string();
    assert!(err.contains("positions"), "{err}");
    assert!(d
        .generate_batch(&[Vec::new()], &[8], Sampling::default(), &[0])
        .is_err());
}

/// Texts of every kind the indexer sends: the fixture's code, build files
/// and docs, and prose with digits, apostrophes, accents, symbols and
/// chat markers.
fn parity_texts() -> Vec<String> {
    let mut texts = vec![
        "Don't use the 'old' API; it's gone. We'll see: THE CAT'S 12345 hats.".to_string(),
        "Résumé of Δt ≤ 0.5·Δx², naïve café — “quoted” 🚀 end.\r\n\tTabbed  line   spaces\n\n\n"
            .into(),
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n".into(),
        "x+=y*3.14159e-10;if(a<=b&&c!=d){return std::move(v);} // ok?\n".into(),
    ];
    let root = fixture_repo();
    for rel in [
        "README.md",
        "CMakeLists.txt",
        "docs/INSTALL.rst",
        "examples/landau.cpp",
    ] {
        texts.push(std::fs::read_to_string(root.join(rel)).unwrap());
    }
    texts
}

#[test]
fn the_tokenizer_matches_llama_cpp() {
    let Some(url) = test_llm_url() else { return };
    let Some(d) = smollm2_decoder() else {
        return;
    };
    let base = url.trim_end_matches('/').trim_end_matches("/v1");
    for text in parity_texts() {
        let body = serde_json::json!({ "input": text }).to_string();
        let reply = ureq::post(&format!("{base}/extras/tokenize"))
            .header("Content-Type", "application/json")
            .send(body)
            .unwrap_or_else(|e| panic!("tokenize request: {e}"))
            .body_mut()
            .read_to_string()
            .unwrap();
        let want: Vec<u32> = serde_json::from_str::<serde_json::Value>(&reply).unwrap()["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let got = d.encode(&text).unwrap();
        assert_eq!(
            got,
            want,
            "tokenisation differs for {:?}",
            &text[..text.len().min(60)]
        );
    }
}

fn write_repo(dir: &Path) {
    std::fs::write(
        dir.join("heat.cpp"),
        "// Explicit solver for the 1D heat equation.\n\n/// Total heat in the domain (trapezoidal rule).\ndouble total_heat(const double* u, int n, double dx) {\n    double sum = 0.5 * (u[0] + u[n - 1]);\n    for (int i = 1; i < n - 1; ++i) {\n        sum += u[i];\n    }\n    return sum * dx;\n}\n\n/// One explicit Euler step.\nvoid step(double* u, const double* u_old, int n, double alpha) {\n    for (int i = 1; i < n - 1; ++i) {\n        u[i] = u_old[i] + alpha * (u_old[i - 1] - 2.0 * u_old[i] + u_old[i + 1]);\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("README.md"),
        "# heat1d\n\nA tiny explicit solver for the one-dimensional heat equation.\n",
    )
    .unwrap();
}

#[test]
fn the_explanation_stage_runs_through_the_ort_backend() {
    if smollm2_decoder().is_none() {
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    write_repo(repo.path());
    let cfg = ExplainConfig {
        backend: BackendKind::Ort,
        levels: vec![Level::Symbol, Level::File],
        model: "smollm2".into(),
        max_tokens: 48,
        batch_size: 3,
        threads: 2,
        ..ExplainConfig::default()
    };
    let cache = cfg.cache_path(out.path());
    let backend = OrtBackend::new(&cfg).unwrap();
    let run = || {
        let mut data = build::build_index(repo.path(), &Config::default(), &ProgressBar::hidden())
            .unwrap()
            .data;
        let report = explain::explain(
            &mut data,
            repo.path(),
            &cfg,
            &backend,
            &cache,
            &ProgressBar::hidden(),
        )
        .unwrap();
        (data, report)
    };
    let (data, first) = run();
    assert_eq!(first.info.backend, "ort");
    assert_eq!(first.info.models["file"], "smollm2");
    assert!(first.generated.len() >= 3, "{:?}", first.info.fallbacks);
    assert!(first.completion_tokens > 0);
    let file = data
        .entities
        .iter()
        .find(|e| e.qualified_name == "heat.cpp")
        .unwrap();
    assert!(
        file.gloss.source == GlossSource::Model
            || first.info.fallbacks.iter().any(|f| f.name == "heat.cpp"),
        "{:?}",
        file.gloss
    );
    // A second run takes every gloss from the cache.
    let requests = backend.requests();
    let (_, second) = run();
    assert_eq!(second.cache_hits, first.generated.len());
    assert!(second.generated.is_empty());
    assert_eq!(
        backend.requests(),
        requests + second.info.fallbacks.len() as u64 * 2
    );
}
