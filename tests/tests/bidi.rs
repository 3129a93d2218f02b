//! Trojan Source in the answer prompt (issue 18 C): the index keeps
//! bidirectional control characters as they are, and the excerpts the
//! answer model gets show them written out as `<U+XXXX>`, so that a
//! control copied into an answer cannot reorder what a reader sees, and
//! the model can say that one is there.

use codegloss_core::answer::{answer_template, build_context_estimated, file_context};
use codegloss_core::retrieve::{retrieve, RetrievalSettings};
use codegloss_core::text::bidi_controls;
use codegloss_indexer::{ingest::build, Config};
use codegloss_tests::keyword_corpus;
use indicatif::ProgressBar;

const PATH: &str = "src/rtl\u{202E}ppc.exe.hpp";

#[test]
fn excerpts_in_the_prompt_show_bidi_controls_written_out() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(PATH);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        &p,
        "#pragma once\n\n/// Checks a \u{2067}name\u{2069}.\ninline bool is_allowed(const char* name) {\n    return name != \"abc\u{202E}fdp.exe\u{202C}\";\n}\n",
    )
    .unwrap();
    let out = build::build_index(dir.path(), &Config::default(), &ProgressBar::hidden()).unwrap();
    // Warned about, stored unchanged.
    let lines: Vec<Option<u32>> = out
        .warnings
        .iter()
        .filter(|w| w.message.contains("bidirectional control"))
        .map(|w| w.line)
        .collect();
    assert_eq!(lines, vec![None, Some(3), Some(5)], "{:?}", out.warnings);
    assert!(out
        .data
        .chunks
        .iter()
        .any(|c| c.code.contains("abc\u{202E}fdp.exe\u{202C}")));
    let corpus = keyword_corpus(out.data);

    let r = retrieve(
        &corpus,
        "What does is_allowed check?",
        None,
        &RetrievalSettings::default(),
    )
    .unwrap();
    let ctx = build_context_estimated(&corpus, &r, "What does is_allowed check?", 4000);
    assert!(!ctx.chunks.is_empty());
    assert_eq!(bidi_controls(&ctx.text).count(), 0, "{}", ctx.text);
    assert!(
        ctx.text.contains(" src/rtl<U+202E>ppc.exe.hpp:"),
        "{}",
        ctx.text
    );
    assert!(
        ctx.text.contains("\"abc<U+202E>fdp.exe<U+202C>\""),
        "{}",
        ctx.text
    );
    // Citations still map to the stored path.
    assert!(ctx.chunks.iter().any(|c| c.path == PATH));
    let messages =
        answer_template("What does is_allowed check?").render("What does is_allowed check?", &ctx);
    assert!(messages
        .iter()
        .all(|m| bidi_controls(&m.content).count() == 0));

    let files = file_context(
        &corpus,
        &[PATH],
        4000,
        &codegloss_core::text::estimate_tokens,
    );
    assert_eq!(bidi_controls(&files.text).count(), 0, "{}", files.text);
    assert!(
        files.text.contains("abc<U+202E>fdp.exe<U+202C>"),
        "{}",
        files.text
    );
}
