//! Line numbers are the file's own wherever a chunk's code is shown, and a
//! line cut between chunks is reported (issue 18, A and B).
//!
//! A part of a split function repeats the signature and carries part
//! markers; the chunk's `CodeFrame` says which lines those are, and the
//! rest must be exactly the file's lines `start_line..=end_line`: in the
//! chunk model, and in the answer context built from it.

use std::path::Path;

use codegloss_core::answer::{build_context, build_context_estimated};
use codegloss_core::lines::{code_lines, source_lines, LineKind};
use codegloss_core::retrieve::{retrieve, Corpus, Retrieval, RetrievalSettings};
use codegloss_core::{Chunk, EntityKind, IndexData};
use codegloss_indexer::{ingest::build, Config};
use codegloss_tests::{fixture_repo, keyword_corpus};
use indicatif::ProgressBar;

const PATH: &str = "src/Long.hpp";

/// A header with one long function: a signature over two lines, a blank
/// line after the brace, blank lines and comments between statements, and
/// comments after statements.
fn long_header() -> String {
    let mut s = String::from(
        "// Long.hpp: one long function.\n#pragma once\n\nnamespace demo {\n\n/// Weighted sum in many steps.\ntemplate <typename T>\nT weighted_steps(const T* values,\n                 int n) {\n\n    T total = 0;  // running sum\n",
    );
    for i in 0..48 {
        s.push_str(&format!(
            "    total += values[{i} % n] * weight_{i} + offset_{i};  // step {i}\n"
        ));
        if i % 9 == 4 {
            s.push_str("\n    // The next steps weigh the tail.\n\n");
        }
    }
    s.push_str("    return total;\n}\n\n}  // namespace demo\n");
    s
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn index(root: &Path) -> build::BuildOutput {
    build::build_index(root, &Config::default(), &ProgressBar::hidden()).unwrap()
}

/// Check that every line of the file's text in `c` is the file's line at
/// its number: whole, except that the first may start and the last end
/// inside the line, where the entity does.
fn assert_own_lines(c: &Chunk, file: &[&str]) {
    let own: Vec<_> = source_lines(c).collect();
    assert_eq!(
        own.len() as u32,
        c.end_line - c.start_line + 1,
        "chunk {} {}:{}-{} shows {} lines of its file:\n{}",
        c.id,
        c.path,
        c.start_line,
        c.end_line,
        own.len(),
        c.code
    );
    for (k, l) in own.iter().enumerate() {
        let n = l.line().expect("numbered");
        assert_eq!(n, c.start_line + k as u32);
        let at = file[n as usize - 1];
        let ok = if own.len() == 1 {
            at.contains(l.text.trim_end())
        } else if k == 0 {
            at.ends_with(l.text)
        } else if k + 1 == own.len() {
            at.starts_with(l.text.trim_end())
        } else {
            at == l.text
        };
        assert!(
            ok,
            "chunk {} ({} part {}) shows {:?} as line {n}, which is {:?}",
            c.id, c.symbol_name, c.part, l.text, at
        );
    }
}

fn parts_of(data: &IndexData, name: &str) -> Vec<Chunk> {
    data.chunks
        .iter()
        .filter(|c| c.symbol_name == name && c.entity_type == EntityKind::Function)
        .cloned()
        .collect()
}

#[test]
fn split_parts_number_the_files_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = long_header();
    write(dir.path(), PATH, &text);
    let out = index(dir.path());
    let file: Vec<&str> = text.lines().collect();
    let parts = parts_of(&out.data, "weighted_steps");
    assert!(parts.len() >= 3, "{} parts", parts.len());
    let entity = &out.data.entities[parts[0].entity as usize];
    let head_line = entity.span.unwrap().start_line;
    assert_eq!(head_line, 7);
    for (i, p) in parts.iter().enumerate() {
        assert_own_lines(p, &file);
        let lines = code_lines(p);
        let prelude: Vec<&str> = lines
            .iter()
            .filter(|l| l.kind == LineKind::Prelude)
            .map(|l| l.text)
            .collect();
        let trailer: Vec<&str> = lines
            .iter()
            .filter(|l| l.kind == LineKind::Trailer)
            .map(|l| l.text)
            .collect();
        if i == 0 {
            // The first part is the file's text from the signature on.
            assert!(prelude.is_empty());
            assert_eq!(p.start_line, head_line);
        } else {
            // Later parts: the signature as written at `prelude_from`, then
            // the part marker; never numbered.
            assert_eq!(p.frame.prelude_from, head_line);
            assert_eq!(prelude.len(), 4, "{}", p.code);
            assert_eq!(&prelude[..3], &file[6..9]);
            assert_eq!(
                prelude[3].trim(),
                format!("// [part {}/{}]", i + 1, parts.len())
            );
            // A part starts with a line of text, not a blank line.
            assert!(!file[p.start_line as usize - 1].trim().is_empty());
        }
        if i + 1 < parts.len() {
            assert_eq!(
                trailer,
                vec![format!(
                    "    // [continues in part {}/{}]",
                    i + 2,
                    parts.len()
                )]
            );
            // Only blank lines lie between two parts.
            for line in &file[p.end_line as usize..parts[i + 1].start_line as usize - 1] {
                assert!(line.trim().is_empty(), "{line:?} is in no part");
            }
        } else {
            assert!(trailer.is_empty());
            assert_eq!(p.end_line, entity.span.unwrap().end_line);
        }
    }
}

#[test]
fn every_fixture_chunk_numbers_the_files_own_lines() {
    let out = index(&fixture_repo());
    let mut checked = 0;
    for c in &out.data.chunks {
        if c.start_line == 0 || c.code.is_empty() || c.entity_type == EntityKind::Namespace {
            continue;
        }
        let text = std::fs::read_to_string(fixture_repo().join(&c.path)).unwrap();
        let file: Vec<&str> = text.lines().collect();
        if c.entity_type == EntityKind::File {
            assert_outside_lines(c, &file, &out.data);
        } else {
            assert_own_lines(c, &file);
        }
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}

/// A file chunk holds the file's lines that no entity chunk holds, each at
/// its own number, and nothing at the others.
fn assert_outside_lines(c: &Chunk, file: &[&str], data: &IndexData) {
    let held = |n: u32| {
        data.chunks.iter().any(|o| {
            o.path == c.path
                && !o.entity_type.is_summary()
                && o.start_line > 0
                && o.start_line <= n
                && n <= o.end_line
        })
    };
    let lines: Vec<&str> = c.code.lines().collect();
    assert!(
        lines.len() as u32 <= c.end_line - c.start_line + 1,
        "{}",
        c.path
    );
    for (k, l) in lines.iter().enumerate() {
        let n = c.start_line + k as u32;
        if held(n) {
            assert_eq!(*l, "", "{}:{n} is an entity's line", c.path);
        } else {
            assert_eq!(*l, file[n as usize - 1], "{}:{n}", c.path);
        }
    }
}

/// The one block of a context: the range its heading names (`[1] name
/// (kind) path:a-b`) and its fenced lines.
fn only_block(text: &str) -> ((u32, u32), Vec<&str>) {
    let heading = text
        .lines()
        .find(|l| l.starts_with("[1] "))
        .expect("a heading line");
    let range = heading.rsplit_once(':').unwrap().1;
    let (a, b) = range.split_once('-').unwrap();
    let body = text.split("```").nth(1).unwrap();
    let body = body.split_once('\n').unwrap().1;
    (
        (a.parse().unwrap(), b.parse().unwrap()),
        body.lines().collect(),
    )
}

fn retrieval_of(corpus: &Corpus, chunk: u32) -> Retrieval {
    let mut r = retrieve(
        corpus,
        "weighted_steps",
        None,
        &RetrievalSettings::default(),
    )
    .unwrap();
    let template = r.chunks[0].clone();
    r.chunks = vec![codegloss_core::retrieve::RetrievedChunk { chunk, ..template }];
    r
}

/// Whether an excerpt line is the marker of left-out lines.
fn is_marker(line: &str) -> bool {
    line.trim() == "// ..."
}

/// The first file line at or after `from` where `run` (excerpt lines,
/// their indentation the excerpt's own) stands as consecutive lines.
fn found_at(file: &[&str], run: &[&str], from: u32) -> Option<u32> {
    (from..=file.len() as u32).find(|&start| {
        run.iter().enumerate().all(|(k, line)| {
            file.get(start as usize - 1 + k)
                .is_some_and(|f| f.trim_start() == line.trim_start())
        })
    })
}

#[test]
fn the_answer_context_locates_the_lines_it_shows() {
    let dir = tempfile::tempdir().unwrap();
    let text = long_header();
    write(dir.path(), PATH, &text);
    let corpus = keyword_corpus(index(dir.path()).data);
    let file: Vec<&str> = text.lines().collect();
    let parts = parts_of(&corpus.data, "weighted_steps");
    let part2 = &parts[1];
    let question = "weighted_steps";
    let whole =
        build_context_estimated(&corpus, &retrieval_of(&corpus, part2.id), question, 100_000);
    // Whole unit, from a budget that holds it down to ones that cut it to
    // its evidence.
    let budgets = vec![100_000, whole.tokens * 2, whole.tokens, whole.tokens / 2];
    let mut cut = 0;
    for budget in budgets {
        let ctx = build_context(
            &corpus,
            &retrieval_of(&corpus, part2.id),
            question,
            budget,
            &codegloss_core::text::estimate_tokens,
        );
        assert_eq!(ctx.chunks.len(), 1, "budget {budget}");
        let ((a, b), body) = only_block(&ctx.text);
        let c = &ctx.chunks[0];
        assert_eq!((c.start_line, c.end_line), (a, b), "budget {budget}");
        // Every shown line is the file's line at its place: lines with no
        // marker between them are consecutive in the file, and a marker
        // stands for at least one line left out. A unit that opens with a
        // later part keeps its prelude (signature and marker), which is not
        // a line of the file at that place.
        let mut lines = body.as_slice();
        if lines.first() == Some(&file[6]) && a != 7 {
            lines = &lines[part2.frame.prelude_lines as usize..];
        }
        let mut at = a;
        let mut last_shown = 0;
        for (k, run) in lines.split(|l| is_marker(l)).enumerate() {
            if k > 0 {
                cut += 1;
                at += 1;
            }
            if run.is_empty() {
                continue;
            }
            let start = found_at(&file, run, at).unwrap_or_else(|| {
                panic!(
                    "budget {budget}: {run:?} is not the file's after line {at}:\n{}",
                    ctx.text
                )
            });
            if k == 0 {
                assert_eq!(
                    start, a,
                    "budget {budget}: the block opens at {a}:\n{}",
                    ctx.text
                );
            }
            at = start + run.len() as u32;
            last_shown = at - 1;
        }
        // The range is the lines shown; a marker after them stands for the rest.
        assert_eq!(
            last_shown, b,
            "budget {budget}: the block ends at {b}:\n{}",
            ctx.text
        );
    }
    // The whole function at the largest budget, cut ones at the smallest.
    let span = corpus.data.entities[part2.entity as usize].span.unwrap();
    assert_eq!(
        (whole.chunks[0].start_line, whole.chunks[0].end_line),
        (span.start_line, span.end_line)
    );
    assert!(cut > 0, "no budget cut the unit");
}

#[test]
fn a_line_cut_between_chunks_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let long: Vec<String> = (0..120)
        .map(|i| format!("r[{i}] = q[{i}] * w{i};"))
        .collect();
    let text = format!(
        "void minified(double* r, const double* q) {{\n    double s = 0;\n    {}\n    r[0] += s;\n}}\n",
        long.join(" ")
    );
    write(dir.path(), "src/min.cpp", &text);
    write(dir.path(), PATH, &long_header());
    let out = index(dir.path());
    let cut: Vec<_> = out
        .warnings
        .iter()
        .filter(|w| w.message.contains("longer than the chunk budget"))
        .collect();
    assert!(!cut.is_empty(), "{:?}", out.warnings);
    for w in &cut {
        assert_eq!((w.path.as_str(), w.line), ("src/min.cpp", Some(3)));
        assert!(w.message.contains("minified"), "{}", w.message);
        assert!(
            w.to_string().starts_with("src/min.cpp:3: line 3 is longer"),
            "{w}"
        );
    }
    // Stored with the file, like every warning.
    let f = out
        .data
        .files
        .iter()
        .find(|f| f.path == "src/min.cpp")
        .unwrap();
    assert!(f
        .warnings
        .iter()
        .any(|w| w.contains("longer than the chunk budget")));
    // The long function without long lines is split without a warning.
    assert!(
        out.warnings.iter().all(|w| w.path != PATH),
        "{:?}",
        out.warnings
    );
    let fixture = index(&fixture_repo());
    assert!(fixture
        .warnings
        .iter()
        .all(|w| !w.message.contains("chunk budget")));
}

/// An excerpt shows its lines without the indentation they share: a
/// struct inside a namespace starts at the margin and its members one
/// step in (the chunk's first line, which starts at the declaration, gets
/// the column of the closing brace); a continuation aligned under an
/// opening parenthesis goes one step in from its line; and the parts of a
/// split function keep the body a step in from the signature.
#[test]
fn excerpts_keep_their_shape_without_the_shared_indentation() {
    let dir = tempfile::tempdir().unwrap();
    let header = "#pragma once\n\nnamespace demo {\n    namespace inner {\n        struct Grid {\n            int cells(int nx,\n                      int ny) const;\n            int ghosts = 1;\n        };\n    }  // namespace inner\n}  // namespace demo\n";
    write(dir.path(), "src/Grid.h", header);
    write(dir.path(), PATH, &long_header());
    let out = index(dir.path());
    let corpus = keyword_corpus(out.data.clone());
    let excerpt = |chunk: &Chunk| {
        let ctx =
            build_context_estimated(&corpus, &retrieval_of(&corpus, chunk.id), "grid", 100_000);
        only_block(&ctx.text)
            .1
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
    };
    let grid = out
        .data
        .chunks
        .iter()
        .find(|c| c.symbol_name == "Grid" && c.entity_type == EntityKind::Struct)
        .expect("the struct's chunk");
    assert_eq!(
        excerpt(grid),
        [
            "struct Grid {",
            "    int cells(int nx,",
            "            int ny) const;",
            "    int ghosts = 1;",
            // The declaration ends at its brace; the `;` is the file's.
            "}",
        ]
    );
    // A split function: every part's body a step in from the signature.
    let parts = parts_of(&out.data, "weighted_steps");
    assert!(parts.len() > 1, "the function is split");
    let lines = excerpt(&parts[0]);
    let signature = lines
        .iter()
        .position(|l| l.starts_with("T weighted_steps("))
        .expect("the signature at the margin");
    for l in &lines[signature + 2..] {
        if !l.is_empty() && !l.starts_with("// ... ") && *l != "}" {
            assert!(l.starts_with("    ") && !l.starts_with("     "), "{l:?}");
        }
    }
}
