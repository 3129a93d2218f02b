//! The answering stage against a real OpenAI-compatible server: SmolLM2-135M
//! served by llama-cpp-python, which `cargo xtask ci` starts on loopback
//! and passes in `CODEGLOSS_TEST_LLM_URL` (`cargo xtask llm-server` starts
//! one by hand). These tests check structure and plumbing (streaming,
//! non-streaming, citations, context budget, errors), never wording.
//!
//! Timeouts and malformed streams cannot be provoked on a healthy server,
//! so two tiny socket servers in this file produce exactly those failures.

use std::io::{Read, Write};
use std::net::TcpListener;

use codegloss_core::answer::{
    answer_template, build_context, build_context_estimated, check_citations,
};
use codegloss_core::retrieve::{retrieve, RetrievalSettings};
use codegloss_indexer::llm::{chat, AnswerConfig};
use codegloss_indexer::IndexError;
use codegloss_tests::{fixture_corpus as corpus, fixture_repo, test_llm_url};

fn config(url: &str) -> AnswerConfig {
    AnswerConfig {
        base_url: url.to_string(),
        model: "smollm2".into(),
        max_tokens: 48,
        temperature: 0.0,
        // Generous: CI machines may be busy with other work.
        timeout_seconds: 300,
        ..AnswerConfig::default()
    }
}

const QUESTION: &str = "How does BareField fill its halo cells?";

#[test]
fn streamed_answer_with_citations_report() {
    let Some(url) = test_llm_url() else { return };
    let r = retrieve(corpus(), QUESTION, None, &RetrievalSettings::default()).unwrap();
    let ctx = build_context_estimated(corpus(), &r, QUESTION, 1500);
    assert!(!ctx.chunks.is_empty() && ctx.tokens <= 1500);
    let messages = answer_template(QUESTION).render(QUESTION, &ctx);
    let mut deltas = 0;
    let mut streamed_text = String::new();
    let res = chat(&config(&url), &messages, &mut |d| {
        deltas += 1;
        streamed_text.push_str(d);
    })
    .unwrap();
    assert!(res.streamed);
    assert!(deltas > 1, "{deltas} deltas");
    assert_eq!(streamed_text, res.text);
    assert!(!res.text.trim().is_empty());
    let report = check_citations(&res.text, &ctx);
    assert!(report.sentences > 0);
    assert!((0.0..=1.0).contains(&report.cited_share));
    for c in &report.citations {
        assert!(c.location.is_some());
    }
}

#[test]
fn non_streamed_answer_reports_usage() {
    let Some(url) = test_llm_url() else { return };
    let r = retrieve(corpus(), QUESTION, None, &RetrievalSettings::default()).unwrap();
    let ctx = build_context_estimated(corpus(), &r, QUESTION, 800);
    let cfg = AnswerConfig {
        stream: false,
        ..config(&url)
    };
    let mut calls = 0;
    let res = chat(
        &cfg,
        &answer_template(QUESTION).render(QUESTION, &ctx),
        &mut |_| calls += 1,
    )
    .unwrap();
    assert!(!res.streamed);
    assert_eq!(calls, 1);
    assert!(res.prompt_tokens.unwrap_or(0) > 0);
    assert!(res.completion_tokens.unwrap_or(0) > 0);
}

#[test]
fn context_respects_the_budget_and_whole_lines() {
    let r = retrieve(corpus(), QUESTION, None, &RetrievalSettings::default()).unwrap();
    let full = build_context_estimated(corpus(), &r, QUESTION, 100_000);
    let small = build_context_estimated(corpus(), &r, QUESTION, 400);
    assert!(
        small.tokens <= 400 || small.chunks.len() == 1,
        "{}",
        small.tokens
    );
    assert!(small.chunks.len() < full.chunks.len());
    // Every retrieved chunk is shown, dropped for the budget, or left out
    // because an earlier block already shows its lines.
    assert!(small.dropped_for_budget > 0);
    assert!(small.chunks.len() + small.dropped_for_budget <= r.chunks.len());
    assert_eq!(full.dropped_for_budget, 0);
    // Numbers are 1..n in rank order, and every block is in the text.
    for (i, c) in small.chunks.iter().enumerate() {
        assert_eq!(c.n as usize, i + 1);
        assert!(small.text.contains(&format!("[{}] ", c.n)));
    }
    // A budget too small for the first chunk keeps whole code lines only.
    let tiny = build_context(
        corpus(),
        &r,
        QUESTION,
        60,
        &codegloss_core::text::estimate_tokens,
    );
    assert_eq!(tiny.chunks.len(), 1);
    let code = &corpus().data.chunks[tiny.chunks[0].chunk as usize].code;
    let body = tiny.text.split("```").nth(1).unwrap_or("");
    for line in body.lines().skip(1) {
        assert!(
            line.is_empty() || code.lines().any(|l| l == line) || line.starts_with("// ..."),
            "{line:?} is not a whole line"
        );
    }
}

/// With `[answer] tokenizer`, the budget is counted by a real tokenizer
/// (here the embedding model's `tokenizer.json`, installed by `cargo xtask
/// models`, standing in for an answer model's); a missing file is a clear error.
#[test]
fn context_budget_can_be_counted_with_a_real_tokenizer() {
    use codegloss_indexer::embed::ModelFiles;
    use codegloss_indexer::llm::token_counter;
    let files = ModelFiles::resolve(&codegloss_indexer::config::EmbeddingConfig::default())
        .unwrap_or_else(|e| panic!("needs `cargo xtask models`: {e}"));
    let cfg = AnswerConfig {
        tokenizer: Some(files.tokenizer.clone()),
        ..AnswerConfig::default()
    };
    let count = token_counter(&cfg).unwrap();
    let estimate = token_counter(&AnswerConfig::default()).unwrap();
    let text = "void fillHalo(BareField<double, 3>& field) { field.fillHalo(); }";
    let (real, est) = (count(text), estimate(text));
    assert!(real > 5 && real != est, "{real} vs {est}");
    let r = retrieve(corpus(), QUESTION, None, &RetrievalSettings::default()).unwrap();
    let ctx = build_context(corpus(), &r, QUESTION, 500, &*count);
    assert!(ctx.tokens <= 500 || ctx.chunks.len() == 1, "{}", ctx.tokens);
    let missing = AnswerConfig {
        tokenizer: Some("/nonexistent/tokenizer.json".into()),
        ..AnswerConfig::default()
    };
    let e = token_counter(&missing)
        .err()
        .expect("missing tokenizer is an error")
        .to_string();
    assert!(
        e.contains("/nonexistent/tokenizer.json") && e.contains("tokenizer"),
        "{e}"
    );
}

fn err_text(r: Result<codegloss_indexer::llm::ChatResult, IndexError>) -> String {
    match r {
        Ok(ok) => panic!("expected an error, got {ok:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unreachable_server_and_http_errors_are_clear() {
    let msgs = answer_template("q").render(
        "q",
        &build_context_estimated(
            corpus(),
            &retrieve(corpus(), "halo", None, &RetrievalSettings::default()).unwrap(),
            "halo",
            200,
        ),
    );
    // Nothing listens on a port we just closed.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = err_text(chat(
        &config(&format!("http://127.0.0.1:{port}/v1")),
        &msgs,
        &mut |_| {},
    ));
    assert!(
        e.contains("127.0.0.1") && (e.contains("refused") || e.contains("connect")),
        "{e}"
    );
    if let Some(url) = test_llm_url() {
        let e = err_text(chat(&config(&format!("{url}/nope")), &msgs, &mut |_| {}));
        assert!(e.contains("HTTP 404"), "{e}");
    }
}

/// A one-shot HTTP server that answers with `response` (or never answers).
fn one_shot(response: Option<&'static str>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            match response {
                Some(r) => {
                    let _ = s.write_all(r.as_bytes());
                }
                None => std::thread::sleep(std::time::Duration::from_secs(5)),
            }
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

#[test]
fn timeouts_and_malformed_streams_are_clear() {
    let msgs = vec![codegloss_core::answer::Message {
        role: "user".into(),
        content: "hi".into(),
    }];
    let cfg = AnswerConfig {
        timeout_seconds: 1,
        ..config(&one_shot(None))
    };
    let e = err_text(chat(&cfg, &msgs, &mut |_| {}));
    assert!(e.contains("timeout") || e.contains("within 1 s"), "{e}");

    let bad = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {broken json\n\n";
    let mut got = String::new();
    let e = err_text(chat(&config(&one_shot(Some(bad))), &msgs, &mut |d| {
        got.push_str(d)
    }));
    assert!(e.contains("malformed streaming data"), "{e}");
    assert_eq!(got, "Hel", "text before the fault was delivered");

    let empty = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
    let cfg = AnswerConfig {
        stream: false,
        ..config(&one_shot(Some(empty)))
    };
    let e = err_text(chat(&cfg, &msgs, &mut |_| {}));
    assert!(e.contains("no message content"), "{e}");
}

#[test]
fn baseline_file_context_fills_the_same_budget_with_whole_lines() {
    let paths = [
        "src/Field/BareField.hpp",
        "src/Field/HaloCells.hpp",
        "src/Picsim.cpp",
    ];
    let ctx = codegloss_core::answer::file_context(
        corpus(),
        &paths,
        600,
        &codegloss_core::text::estimate_tokens,
    );
    assert!(
        !ctx.chunks.is_empty() && ctx.tokens <= 600,
        "{}",
        ctx.tokens
    );
    assert_eq!(ctx.chunks[0].path, "src/Field/BareField.hpp");
    assert_eq!(ctx.chunks[0].n, 1);
    let file = std::fs::read_to_string(fixture_repo().join("src/Field/BareField.hpp")).unwrap();
    let body = ctx
        .text
        .split("```cpp\n")
        .nth(1)
        .unwrap()
        .split("\n```")
        .next()
        .unwrap();
    for line in body.lines() {
        assert!(
            file.lines().any(|l| l == line),
            "{line:?} is not a whole line of the file"
        );
    }
    let big = codegloss_core::answer::file_context(
        corpus(),
        &paths,
        100_000,
        &codegloss_core::text::estimate_tokens,
    );
    assert_eq!(big.chunks.len(), 3);
}

/// The rendered answer prompt (system and user messages with the numbered
/// context) for one fixture question: any change to the template, the
/// context blocks or the budget logic shows up here.
#[test]
fn rendered_answer_prompt_snapshot() {
    let r = retrieve(corpus(), QUESTION, None, &RetrievalSettings::default()).unwrap();
    let ctx = build_context_estimated(corpus(), &r, QUESTION, 1200);
    let messages = answer_template(QUESTION).render(QUESTION, &ctx);
    let rendered: String = messages
        .iter()
        .map(|m| format!("=== {} ===\n{}\n", m.role, m.content))
        .collect();
    let template = answer_template(QUESTION);
    insta::assert_snapshot!(format!(
        "{} {} {}\n{rendered}",
        template.id,
        template.version,
        template.signature()
    ));
}
