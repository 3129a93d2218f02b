//! The answering stage against a real OpenAI-compatible server: SmolLM2-135M
//! served by llama-cpp-python, which `cargo xtask ci` starts on loopback
//! and passes in `CODEGLOSS_TEST_LLM_URL` (`cargo xtask llm-server` starts
//! one by hand). These tests check structure and plumbing (streaming,
//! non-streaming, citations, errors) and the rendered prompt, never wording;
//! the context itself is tested without a server in `context.rs`.
//!
//! Timeouts and malformed streams cannot be provoked on a healthy server,
//! so two tiny socket servers in this file produce exactly those failures.

use std::io::{Read, Write};
use std::net::TcpListener;

use codegloss_core::answer::{answer_template, build_context_estimated, check_citations};
use codegloss_core::retrieve::{retrieve, RetrievalSettings};
use codegloss_indexer::llm::{chat, AnswerConfig};
use codegloss_indexer::IndexError;
use codegloss_tests::{fixture_corpus as corpus, test_llm_url, ANSWER_QUESTION as QUESTION};

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
