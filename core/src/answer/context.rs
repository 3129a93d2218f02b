//! The numbered, budgeted context of an answer: each retrieved chunk as
//! its completed unit (the rest of a split class or function, a section
//! with its subsections, a file's text), every excerpt fenced so that it
//! cannot close its fence, nothing shown twice, and every location the
//! file's own lines.

use serde::{Deserialize, Serialize};

use super::unit::{
    file_text_chunks, is_shown, leading_lines_that_fit, line_range, unit_lines, unit_text, UnitLine,
};
use crate::model::{EdgeKind, EntityKind};
use crate::retrieve::{Corpus, Retrieval, Role};
use crate::text::{estimate_tokens, reveal_bidi};

/// One chunk as numbered in the context.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ContextChunk {
    /// Citation number (1-based).
    pub n: u32,
    /// Chunk id.
    pub chunk: u32,
    /// Repository path.
    pub path: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Qualified symbol or section name.
    pub symbol: String,
    /// `primary`, `structural_expansion` or `supplementary`.
    pub role: String,
}

impl ContextChunk {
    /// `path:start-end` (just the path when the chunk has no lines).
    pub fn location(&self) -> String {
        if self.start_line == 0 {
            self.path.clone()
        } else {
            format!("{}:{}-{}", self.path, self.start_line, self.end_line)
        }
    }
}

/// The context sent to the answer model.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The formatted text.
    pub text: String,
    /// The chunks in it, numbered.
    pub chunks: Vec<ContextChunk>,
    /// Tokens of `text` by the counter used.
    pub tokens: usize,
    /// Chunks left out for the budget.
    pub dropped_for_budget: usize,
}

impl Context {
    /// A context with nothing in it yet.
    fn empty() -> Context {
        Context {
            text: String::new(),
            chunks: Vec::new(),
            tokens: 0,
            dropped_for_budget: 0,
        }
    }

    /// The number the next block gets.
    fn next_n(&self) -> u32 {
        self.chunks.len() as u32 + 1
    }

    /// Add one numbered block of `tokens` tokens.
    fn push(&mut self, block: &str, tokens: usize, chunk: ContextChunk) {
        self.text.push_str(block);
        self.text.push('\n');
        self.tokens += tokens;
        self.chunks.push(chunk);
    }
}

/// A code fence that text cannot close from inside: one backtick longer
/// than the longest run of backticks in `text`, and at least three
/// (CommonMark closes a fence only with a run at least as long).
pub fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in text.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// The fence language for a chunk's code.
pub fn fence_language(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "md" | "markdown" => "markdown",
        "rst" => "rst",
        "txt" => "text",
        "cmake" => "cmake",
        _ if path.ends_with("CMakeLists.txt") => "cmake",
        _ => "cpp",
    }
}

/// Format one chunk block (without its number line's budget check);
/// `lines` are the first and last line that `code` shows.
fn block(corpus: &Corpus, n: u32, chunk: u32, role: Role, code: &str, lines: (u32, u32)) -> String {
    let data = &corpus.data;
    let c = &data.chunks[chunk as usize];
    let e = &data.entities[c.entity as usize];
    let level = e.kind.level().context_name();
    let location = if c.start_line == 0 {
        c.path.clone()
    } else {
        format!("{}:{}-{}", c.path, lines.0, lines.1)
    };
    let mut s = format!(
        "[{n}] {} ({}, {level}) {}\nlocation: {location}\n",
        e.qualified_name,
        e.kind.as_str(),
        role.as_str()
    );
    if !c.parent_symbol.is_empty() {
        s.push_str(&format!("namespace: {}\n", c.parent_symbol));
    }
    if !e.gloss.text.is_empty() {
        // The whole gloss: cutting structural glosses to 160 characters
        // raised the nuggets present in the context (0.644 -> 0.680 on the
        // IPPL dev split) but lowered the nuggets in Qwen2.5-Coder-1.5B's
        // answers on 33 of those questions (0.236 -> 0.158), so it stays.
        // The whole gloss. A file's facts composed from the graph instead
        // (declarations, member functions, includes, the number of
        // includers, no line count or includer list) lowered Qwen2.5-Coder
        // 1.5B's nugget recall on 11 IPPL dev questions (0.273 -> 0.145),
        // so the gloss stays as written.
        let g = e.gloss.text.trim();
        s.push_str(&format!("explanation: {}\n", g));
    }
    let refs: Vec<String> = corpus.out_edges[c.entity as usize]
        .iter()
        .filter(|(k, _)| matches!(k, EdgeKind::Calls | EdgeKind::Includes | EdgeKind::Inherits))
        .take(8)
        .map(|(k, t)| {
            format!(
                "{} {}",
                k.as_str(),
                data.entities[*t as usize].qualified_name
            )
        })
        .collect();
    if !refs.is_empty() {
        s.push_str(&format!("references: {}\n", refs.join("; ")));
    }
    if !code.trim().is_empty() && e.kind != EntityKind::Module {
        let fence = fence_for(code);
        s.push_str(&format!(
            "{fence}{}\n{}\n{fence}\n",
            fence_language(&c.path),
            code.trim_end()
        ));
    }
    // Bidirectional control characters are written out: the model reads
    // the excerpt in stored order anyway, but one copied into an answer
    // would reorder the text a reader sees ("Trojan Source"), and written
    // out the model can say that they are there.
    reveal_bidi(&s).into_owned()
}

/// Build the numbered context of a retrieval within `budget` tokens, as
/// counted by `count` (the answer model's tokenizer when known, else
/// [`estimate_tokens`]).
///
/// Each retrieved chunk is shown as its completed unit
/// ([`super::unit_chunks`]):
/// the rest of a split class or function, a documentation section with
/// its subsections, the text of a documentation or build file. A unit
/// takes at most a third of the budget and is cut at a line end; when even
/// that does not fit, the chunk shows alone. A chunk whose lines an
/// earlier block already shows is left out, so the budget holds more
/// distinct evidence. Whole chunks are dropped from the lowest-ranked end;
/// a first chunk that alone exceeds the budget keeps its leading code
/// lines only, never part of a line.
pub fn build_context(
    corpus: &Corpus,
    retrieval: &Retrieval,
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> Context {
    let data = &corpus.data;
    let mut out = Context::empty();
    // Lines already shown, per path.
    let mut shown: Vec<(&str, u32, u32)> = Vec::new();
    let unit_cap = budget / 3;
    for rc in &retrieval.chunks {
        let n = out.next_n();
        let c = &data.chunks[rc.chunk as usize];
        let has_text = !c.code.trim().is_empty()
            && data.entities[c.entity as usize].kind != EntityKind::Module;
        if has_text && c.start_line > 0 && is_shown(&shown, c) {
            continue;
        }
        let left = budget.saturating_sub(out.tokens);
        let own = (c.start_line, c.end_line);
        let unit = unit_text(corpus, rc.chunk, &shown, &|code: &str| {
            let t = count(&block(corpus, n, rc.chunk, rc.role, code, own));
            t <= unit_cap.max(count(&block(corpus, n, rc.chunk, rc.role, &c.code, own)))
                && t <= left
        });
        let (code, mut start, mut end) = match &unit {
            Some((code, a, z)) => (code.as_str(), *a, *z),
            None => (c.code.as_str(), c.start_line, c.end_line),
        };
        let mut b = block(corpus, n, rc.chunk, rc.role, code, (start, end));
        let mut t = count(&b);
        if out.tokens + t > budget {
            if !out.chunks.is_empty() {
                out.dropped_for_budget += 1;
                continue;
            }
            // The first chunk alone is too long: keep whole leading lines,
            // and say which of the file's lines they are.
            let all = crate::lines::code_lines(c);
            let lines: Vec<&str> = all.iter().map(|l| l.text).collect();
            let lo = leading_lines_that_fit(lines.len(), |k| {
                count(&block(
                    corpus,
                    n,
                    rc.chunk,
                    rc.role,
                    &lines[..k].join("\n"),
                    own,
                )) <= budget
            });
            let kept: Vec<UnitLine<'_>> = all[..lo]
                .iter()
                .map(|l| UnitLine {
                    text: l.text,
                    line: l.line(),
                })
                .collect();
            (start, end) = match line_range(&kept) {
                Some(range) => range,
                None => (c.start_line, c.start_line),
            };
            b = block(
                corpus,
                n,
                rc.chunk,
                rc.role,
                &format!(
                    "{}\n// ... (cut to fit the context budget)",
                    lines[..lo].join("\n")
                ),
                (start, end),
            );
            t = count(&b);
        }
        if has_text || unit.is_some() {
            shown.push((c.path.as_str(), start, end));
        }
        out.push(
            &b,
            t,
            ContextChunk {
                n,
                chunk: rc.chunk,
                path: c.path.clone(),
                start_line: start,
                end_line: end,
                symbol: data.entities[c.entity as usize].qualified_name.clone(),
                role: rc.role.as_str().to_string(),
            },
        );
    }
    out
}

/// The context of the `bm25-files` answer baseline: whole files (their
/// indexed text, in line order, the parts of a split entity joined as in
/// a unit, located by the file lines it shows), numbered like chunks,
/// filling the same budget in rank order and cut at line ends. It shares
/// the prompt with the real pipeline so that only the retrieval differs.
pub fn file_context(
    corpus: &Corpus,
    paths: &[&str],
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> Context {
    let data = &corpus.data;
    let mut out = Context::empty();
    for path in paths {
        // The parts of a split entity join into the source, as in a unit.
        let numbered: Vec<UnitLine<'_>> = file_text_chunks(data, path)
            .into_iter()
            .flat_map(|c| unit_lines(c, c.part > 1))
            .collect();
        let lines: Vec<&str> = numbered.iter().map(|l| l.text).collect();
        let n = out.next_n();
        let fence = fence_for(&lines.concat());
        let head = format!(
            "[{n}] {path} (whole file)\n{fence}{}\n",
            fence_language(path)
        );
        let left = budget.saturating_sub(out.tokens);
        let lo = leading_lines_that_fit(lines.len(), |k| {
            count(&format!("{head}{}\n{fence}\n", lines[..k].join("\n"))) <= left
        });
        if lo == 0 {
            break;
        }
        let block =
            reveal_bidi(&format!("{head}{}\n{fence}\n", lines[..lo].join("\n"))).into_owned();
        let tokens = count(&block);
        let (first, last) = line_range(&numbered[..lo]).unwrap_or((1, lo as u32));
        let file_chunk = data
            .files
            .iter()
            .find(|f| f.path == *path)
            .and_then(|f| corpus.file_chunk(f.id))
            .unwrap_or(0);
        out.push(
            &block,
            tokens,
            ContextChunk {
                n,
                chunk: file_chunk,
                path: path.to_string(),
                start_line: first,
                end_line: last,
                symbol: path.to_string(),
                role: "baseline_file".into(),
            },
        );
    }
    out
}

/// Build the context with the conservative token estimate.
pub fn build_context_estimated(corpus: &Corpus, retrieval: &Retrieval, budget: usize) -> Context {
    build_context(corpus, retrieval, budget, &estimate_tokens)
}
