//! The numbered, budgeted context of an answer: a fact sheet composed by
//! code, then each retrieved chunk as its completed unit (the rest of a
//! split class or function, a section with its subsections, a file's
//! text) cut to the evidence for the question, under a heading with the
//! doc comment above its declaration, every excerpt fenced so that it
//! cannot close its fence, nothing shown twice, and every location the
//! file's own lines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::evidence::{choose, Focus, Offered};
use super::facts::fact_line;
use super::lead::{key_lines, Excerpt};
use super::unit::{declaration_column, is_shown, outside_runs, unit_chunks, unit_lines, UnitLine};
use crate::model::{EdgeKind, EntityKind, GlossSource};
use crate::retrieve::{Corpus, Retrieval, Role};
use crate::sort::{sort_by, sort_by_key};
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
        location(&self.path, self.start_line, self.end_line)
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
    /// What the answer model reads: the same fact sheet and excerpts cut
    /// to the prompt's budget, numbered as in `text` (a number `text`
    /// shows may be missing here, never renumbered). `text` is the
    /// evidence the answer is shown and checked against, and what its
    /// code-written `lead` quotes. Empty when both budgets are one: the
    /// model reads `text` ([`Context::prompt_text`]).
    #[serde(default)]
    pub prompt: String,
    /// Tokens of `prompt` by the counter used ([`Context::model_tokens`]).
    #[serde(default)]
    pub prompt_tokens: usize,
    /// The opening of the answer, written by code before the model's
    /// words: the fact sheet's lines of the primary excerpts (exact
    /// names, kinds, `path:lines`, signatures and relations), then the
    /// key lines the excerpts show ([`super::lead`]), each a bullet that
    /// opens with its `[n]`. Empty when the context has no fact sheet
    /// (the `bm25-files` baseline) or no primary excerpt.
    #[serde(default)]
    pub lead: String,
}

impl Context {
    /// A context with nothing in it yet.
    pub(super) fn empty() -> Context {
        Context {
            text: String::new(),
            chunks: Vec::new(),
            tokens: 0,
            dropped_for_budget: 0,
            prompt: String::new(),
            prompt_tokens: 0,
            lead: String::new(),
        }
    }

    /// The answer a reader gets: the code-written [`Context::lead`], then
    /// the model's text after a blank line (just the model's text when
    /// there is no lead). Citations, support and nuggets are checked on it.
    pub fn answer(&self, model_text: &str) -> String {
        if self.lead.is_empty() {
            return model_text.to_string();
        }
        format!("{}\n{}", self.lead, model_text.trim_start())
    }

    /// What the answer model reads: [`Context::prompt`], or the whole
    /// text when it has none (one budget for both).
    pub fn prompt_text(&self) -> &str {
        if self.prompt.is_empty() {
            &self.text
        } else {
            &self.prompt
        }
    }

    /// Tokens of [`Context::prompt_text`].
    pub fn model_tokens(&self) -> usize {
        if self.prompt.is_empty() {
            self.tokens
        } else {
            self.prompt_tokens
        }
    }

    /// The number the next block gets.
    pub(super) fn next_n(&self) -> u32 {
        self.chunks.len() as u32 + 1
    }

    /// Add one numbered block of `tokens` tokens.
    pub(super) fn push(&mut self, block: &str, tokens: usize, chunk: ContextChunk) {
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
    "`".repeat((longest_backtick_run(text) + 1).max(3))
}

/// The longest run of backticks in `text` (a code span or fence must be
/// delimited by a longer one).
pub(super) fn longest_backtick_run(text: &str) -> usize {
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
    longest
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

/// Share of the budget, in percent, that the fact sheet may take.
const FACT_SHARE: usize = 22;

/// Share of the budget, in percent, that the first excerpt may take.
const FIRST_SHARE: usize = 40;

/// Share of the budget, in percent, that any later excerpt may take.
const LATER_SHARE: usize = 22;

/// Tokens below which no further excerpt is tried.
const SMALLEST_BLOCK: usize = 40;

/// Member declarations offered as anchors of one unit, at most.
const ANCHORS: usize = 12;

/// Entities whose names make a line evidence for every excerpt.
const NEIGHBOURS: usize = 8;

/// Weight of a question term on a line of a file's text outside its
/// entities, against the same term on an entity's line: a file's leading
/// comment matches a question's words as well as the code does, and
/// would crowd it out.
const OUTSIDE_WEIGHT: f32 = 0.5;

/// Weight of every line of the part of a unit nearest the question by
/// meaning (the next part gets half), against a question term's inverse
/// document frequency (about 2 to 9): a long file or class shows the body
/// of the member the question is about even where the body does not use
/// the question's words. Measured by context nugget recall on the first
/// benchmark codebase's dev questions, named / reworded: 0.556 / 0.448
/// without; 4: 0.560 / 0.456; 6: 0.568 / 0.460; 8: 0.580 / 0.468; 12:
/// 0.580 / 0.464 (two parts; one part at 8: 0.580 / 0.452, three: 0.576 /
/// 0.472).
const SEMANTIC_WEIGHT: f32 = 8.0;

/// Parts of a unit that get a semantic weight, nearest first.
const SEMANTIC_PARTS: usize = 2;

/// Trimmed lines shorter than this get no semantic weight.
const MEANINGFUL: usize = 8;

/// Characters of a declaration's doc comment kept in its excerpt's heading.
const DOC_CHARS: usize = 320;

/// The doc comment above a code entity's declaration, for its excerpt's
/// heading: the repository's own words on what the code is for, which lie
/// outside the entity's lines and so outside its excerpt. None for
/// summaries and documentation, and when `earlier` (the excerpts before)
/// already shows the comment's first line.
fn doc_comment<'a>(corpus: &'a Corpus, chunk: u32, earlier: &[(String, usize)]) -> Option<&'a str> {
    let data = &corpus.data;
    let c = &data.chunks[chunk as usize];
    let kind = data.entities[c.entity as usize].kind;
    if kind.is_summary() || kind == EntityKind::DocSection || c.part > 1 {
        return None;
    }
    let doc = c.leading_comment.as_deref()?.trim();
    let first = doc.lines().next()?.trim();
    if first.is_empty() || earlier.iter().any(|(b, _)| b.contains(first)) {
        return None;
    }
    Some(doc)
}

/// The heading of an excerpt: number, name, kind and the lines it shows,
/// then the doc comment above the declaration ([`doc_comment`]), then a
/// model-written explanation when the entity has one (structural glosses
/// are summaries for search; their facts are in the fact sheet).
fn heading(corpus: &Corpus, n: u32, chunk: u32, location: &str, doc: Option<&str>) -> String {
    let data = &corpus.data;
    let c = &data.chunks[chunk as usize];
    let e = corpus.named(c.entity);
    let mut s = format!(
        "[{n}] {} ({}) {location}\n",
        e.qualified_name,
        e.kind.as_str()
    );
    if let Some(doc) = doc {
        // Doxygen's summary tags say nothing to a reader.
        let doc = doc
            .split_whitespace()
            .filter(|w| !matches!(*w, "@brief" | "\\brief" | "@details" | "\\details"))
            .collect::<Vec<_>>()
            .join(" ");
        s.push_str(&format!(
            "doc comment: {}\n",
            super::facts::cut(&doc, DOC_CHARS)
        ));
    }
    if e.gloss.source == GlossSource::Model && !e.gloss.text.trim().is_empty() {
        s.push_str(&format!("explanation: {}\n", e.gloss.text.trim()));
    }
    s
}

/// `path:a-b`, or the path alone when the excerpt has no lines.
fn location(path: &str, first: u32, last: u32) -> String {
    if first == 0 {
        path.to_string()
    } else {
        format!("{path}:{first}-{last}")
    }
}

/// An excerpt block: its heading and its fenced text. Bidirectional
/// control characters are written out: the model reads the excerpt in
/// stored order anyway, but one copied into an answer would reorder the
/// text a reader sees ("Trojan Source"), and written out the model can
/// say that they are there.
fn block(heading: &str, code: &str, language: &str) -> String {
    let mut s = heading.to_string();
    if !code.trim().is_empty() {
        let fence = fence_for(code);
        s.push_str(&format!(
            "{fence}{language}\n{}\n{fence}\n",
            code.trim_end()
        ));
    }
    reveal_bidi(&s).into_owned()
}

/// The lines of a retrieved chunk's unit that no earlier excerpt shows,
/// in reading order, each with its score for the question's `focus`,
/// marked as part of the chunk itself or of its completion, and as an
/// anchor when it opens a declaration the unit holds (a member, or an
/// outer entity of a file).
fn offered<'a>(
    corpus: &'a Corpus,
    chunk: u32,
    shown: &[(&str, u32, u32)],
    focus: &Focus,
    distances: &BTreeMap<u32, f32>,
) -> Vec<Offered<'a>> {
    let data = &corpus.data;
    let c = &data.chunks[chunk as usize];
    let mut ids: Vec<u32> = unit_chunks(corpus, chunk)
        .into_iter()
        .filter(|&i| i == chunk || !is_shown(shown, &data.chunks[i as usize]))
        .filter(|&i| i == chunk || data.chunks[i as usize].path == c.path)
        .collect();
    ids.dedup();
    let mut pieces: Vec<&crate::model::Chunk> =
        ids.iter().map(|&i| &data.chunks[i as usize]).collect();
    sort_by_key(&mut pieces, |o| (o.start_line, o.part));
    // File and namespace chunks are summaries: their unit's text is the
    // outer chunks (see `unit_chunks`), and the file chunk's own lines
    // outside them.
    let outside = pieces
        .iter()
        .find(|o| data.entities[o.entity as usize].kind == EntityKind::File)
        .copied();
    pieces.retain(|o| {
        !matches!(
            data.entities[o.entity as usize].kind,
            EntityKind::File | EntityKind::Namespace
        ) && !o.code.trim().is_empty()
    });
    // Declarations the unit holds: where each piece's entity and its
    // members start.
    let mut anchors: Vec<u32> = Vec::new();
    for o in &pieces {
        let starts = std::iter::once(o.entity).chain(
            corpus
                .out_edges(o.entity)
                .iter()
                .filter(|(k, _)| *k == EdgeKind::Contains)
                .map(|(_, t)| *t),
        );
        for id in starts {
            if let Some(span) = &data.entities[id as usize].span {
                if !anchors.contains(&span.start_line) && anchors.len() < ANCHORS * 4 {
                    anchors.push(span.start_line);
                }
            }
        }
    }
    let first_part = pieces.first().map(|o| o.id);
    let part_ids: Vec<u32> = pieces.iter().map(|o| o.id).collect();
    let nearest = nearest_parts(&part_ids, distances);
    // Runs of lines in file order, each with the chunk it comes from.
    let mut runs: Vec<(u32, Vec<UnitLine<'a>>)> = pieces
        .iter()
        .map(|o| {
            let drop_header = o.part > 1 && Some(o.id) != first_part;
            (
                o.id,
                unit_lines(o, drop_header, declaration_column(corpus, o.id)),
            )
        })
        .collect();
    if let Some(f) = outside {
        // A namespace block's unit holds the lines inside the block only;
        // lines an earlier excerpt shows are not repeated.
        let block = (c.entity_type == EntityKind::Namespace).then_some((c.start_line, c.end_line));
        let keep = |n: u32| {
            block.is_none_or(|(a, b)| a <= n && n <= b)
                && !shown
                    .iter()
                    .any(|&(p, a, b)| p == f.path && a <= n && n <= b)
        };
        runs.extend(outside_runs(data, f, &keep).into_iter().map(|r| (f.id, r)));
        // Stable: the parts of a split entity keep their order.
        sort_by_key(&mut runs, |(_, r)| {
            r.iter().find_map(|l| l.line).unwrap_or(0)
        });
    }
    let mut out: Vec<Offered<'a>> = Vec::new();
    let mut anchored = 0;
    for (id, lines) in runs {
        let outside = outside.is_some_and(|f| f.id == id);
        for l in lines {
            let anchor = l.line.is_some_and(|n| anchors.contains(&n))
                && anchored < ANCHORS
                && !l.text.trim().is_empty();
            anchored += usize::from(anchor);
            // An include is in the fact sheet already; the rest of the
            // file's text outside entities (its leading comment, globals)
            // is context about the file, behind the entities' own lines.
            let score = if !outside {
                focus.score(l.text)
            } else if l.text.trim_start().starts_with("#include") {
                0.0
            } else {
                focus.score(l.text) * OUTSIDE_WEIGHT
            };
            // A line of a part nearest the question by meaning is
            // evidence even without the question's words (a trivial line,
            // a brace or `else {`, is not).
            let near = if !outside && l.text.trim().len() >= MEANINGFUL {
                nearest.get(&id).copied().unwrap_or(0.0)
            } else {
                0.0
            };
            out.push(Offered {
                score: score + near,
                line: l,
                own: id == chunk && !outside,
                anchor,
                outside,
            });
        }
    }
    out
}

/// The parts of a unit of several parts (the members of a file, the parts
/// of a long function) nearest the question by meaning, with the weight
/// their lines get: [`SEMANTIC_WEIGHT`] for the nearest, half of it for
/// the next, up to [`SEMANTIC_PARTS`]. None for a unit of one part (shown
/// whole or by its lines' words) or without distances.
fn nearest_parts(parts: &[u32], distances: &BTreeMap<u32, f32>) -> BTreeMap<u32, f32> {
    if parts.len() < 2 {
        return BTreeMap::new();
    }
    let mut by_distance: Vec<(f32, u32)> = parts
        .iter()
        .filter_map(|id| distances.get(id).map(|&d| (d, *id)))
        .collect();
    sort_by(&mut by_distance, |a, b| {
        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
    });
    by_distance
        .into_iter()
        .take(SEMANTIC_PARTS)
        .enumerate()
        .map(|(rank, (_, id))| (id, SEMANTIC_WEIGHT / (rank + 1) as f32))
        .collect()
}

/// Build the numbered context of a retrieval for `question` within
/// `budget` tokens, as counted by `count` (the answer model's tokenizer
/// when known, else [`estimate_tokens`]).
///
/// The context opens with a fact sheet ([`super::facts`]): one line per
/// excerpt with its entity's exact name, kind, location, signature and
/// relations. Then come the excerpts in rank order. Each retrieved chunk
/// is completed into its unit ([`super::unit_chunks`]: the rest of a split
/// class or function, a section with its subsections, a file's text), and
/// within the unit only the evidence for the question is kept when the
/// whole does not fit the excerpt's share of the budget
/// ([`super::evidence`]): the head, the declarations it holds and the
/// lines the question's terms point at, with markers for what is left
/// out. A chunk whose lines an earlier excerpt already shows is left out;
/// an excerpt that does not fit what is left of the budget is dropped.
pub fn build_context(
    corpus: &Corpus,
    retrieval: &Retrieval,
    question: &str,
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> Context {
    build_context_for(
        corpus,
        retrieval,
        question,
        Budget {
            prompt: budget,
            evidence: budget,
        },
        count,
    )
}

/// The two budgets of an answer, in tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// What the answer model reads (`[answer] context_tokens`): its prompt
    /// is most of its time on a CPU.
    pub prompt: usize,
    /// The evidence the answer shows and checks against, and that its
    /// code-written lead quotes (`[answer] evidence_tokens`; a smaller
    /// one counts as `prompt`): it costs no model time.
    pub evidence: usize,
}

/// [`build_context`] with a prompt budget below the evidence's: the
/// evidence is built within `budget.evidence`, and the model's prompt
/// from the same excerpts, in the same order and with the same numbers,
/// each cut to the evidence for the question again within
/// `budget.prompt` ([`Context::prompt`]): the lead and the evidence a
/// reader is shown cost no model time, the prompt does (measurements at
/// [`crate::chat::ANSWER_CONTEXT_TOKENS`]).
pub fn build_context_for(
    corpus: &Corpus,
    retrieval: &Retrieval,
    question: &str,
    budget: Budget,
    count: &dyn Fn(&str) -> usize,
) -> Context {
    // The evidence is never smaller than the prompt.
    let evidence_budget = budget.evidence.max(budget.prompt);
    let evidence = assemble(corpus, retrieval, question, evidence_budget, count, None);
    if budget.prompt >= evidence_budget {
        return evidence;
    }
    let prompt = assemble(
        corpus,
        retrieval,
        question,
        budget.prompt,
        count,
        Some(&evidence.chunks),
    );
    Context {
        prompt: prompt.text,
        prompt_tokens: prompt.tokens,
        ..evidence
    }
}

/// The context within one `budget`; with `numbers`, only the chunks
/// numbered there, each under its number.
fn assemble(
    corpus: &Corpus,
    retrieval: &Retrieval,
    question: &str,
    budget: usize,
    count: &dyn Fn(&str) -> usize,
    numbers: Option<&[ContextChunk]>,
) -> Context {
    let data = &corpus.data;
    let mut out = Context::empty();
    let neighbours: Vec<&str> = retrieval
        .chunks
        .iter()
        .filter(|rc| rc.role == Role::Primary)
        .map(|rc| {
            corpus
                .named(data.chunks[rc.chunk as usize].entity)
                .name
                .as_str()
        })
        .take(NEIGHBOURS)
        .collect();
    let focus = Focus::new(corpus, question, &neighbours);
    let fact_budget = budget * FACT_SHARE / 100;
    let block_budget = budget - fact_budget;
    // Lines already shown, per path.
    let mut shown: Vec<(&str, u32, u32)> = Vec::new();
    let mut blocks: Vec<(String, usize)> = Vec::new();
    let mut excerpts: Vec<Excerpt> = Vec::new();
    let mut used = 0usize;
    for rc in &retrieval.chunks {
        let fixed = match numbers {
            Some(m) => match m.iter().find(|c| c.chunk == rc.chunk) {
                Some(c) => Some(c.n),
                None => continue,
            },
            None => None,
        };
        let c = &data.chunks[rc.chunk as usize];
        let e = corpus.named(c.entity);
        let has_text = !c.code.trim().is_empty() && e.kind != EntityKind::Module;
        if has_text && c.start_line > 0 && is_shown(&shown, c) {
            continue;
        }
        let left = if blocks.is_empty() {
            // The first excerpt may use the fact sheet's share too when it
            // needs it: a context is never empty for a small budget.
            budget
        } else {
            block_budget.saturating_sub(used)
        };
        if left < SMALLEST_BLOCK && !blocks.is_empty() {
            out.dropped_for_budget += 1;
            continue;
        }
        let n = fixed.unwrap_or_else(|| out.next_n());
        let share = if blocks.is_empty() {
            FIRST_SHARE
        } else {
            LATER_SHARE
        };
        let cap = (budget * share / 100).min(left);
        let language = fence_language(&c.path);
        let lines = if e.kind == EntityKind::Module {
            Vec::new()
        } else {
            offered(corpus, rc.chunk, &shown, &focus, &retrieval.file_distances)
        };
        if lines.is_empty()
            && matches!(e.kind, EntityKind::File | EntityKind::Namespace)
            && shown.iter().any(|&(p, _, _)| p == c.path)
        {
            // What the file or block holds is shown already.
            continue;
        }
        // A unit none of whose lines the question points at is context,
        // not evidence: it gets half the share.
        let cap = if !blocks.is_empty() && lines.iter().all(|l| l.score == 0.0) {
            cap / 2
        } else {
            cap
        };
        // The heading's location is not known before the lines are: it is
        // counted with the widest it can be.
        let doc = doc_comment(corpus, rc.chunk, &blocks);
        let wide = heading(corpus, n, rc.chunk, &location(&c.path, 99_999, 99_999), doc);
        let chosen = if lines.is_empty() {
            None
        } else {
            let fits = |code: &str| count(&block(&wide, code, language)) <= cap;
            let wider = |code: &str| count(&block(&wide, code, language)) <= left;
            match choose(&lines, language, &fits).or_else(|| {
                // A first excerpt whose head alone exceeds its share.
                if blocks.is_empty() {
                    choose(&lines, language, &wider)
                } else {
                    None
                }
            }) {
                Some(ch) => Some(ch),
                None => {
                    out.dropped_for_budget += 1;
                    continue;
                }
            }
        };
        // An excerpt with no text is located by its chunk's lines.
        let (code, first, last) = match &chosen {
            Some(ch) => (ch.text.as_str(), ch.first, ch.last),
            None => ("", c.start_line, c.end_line),
        };
        let b = block(
            &heading(corpus, n, rc.chunk, &location(&c.path, first, last), doc),
            code,
            language,
        );
        let t = count(&b);
        if t > left {
            out.dropped_for_budget += 1;
            continue;
        }
        if first > 0 {
            shown.push((c.path.as_str(), first, last));
        }
        if let Some(ch) = chosen {
            excerpts.push(Excerpt {
                n,
                path: c.path.clone(),
                cpp: language == "cpp",
                lines: ch.shown,
            });
        }
        used += t;
        blocks.push((b, t));
        out.chunks.push(ContextChunk {
            n,
            chunk: rc.chunk,
            path: c.path.clone(),
            start_line: first,
            end_line: last,
            symbol: e.qualified_name.clone(),
            role: rc.role.as_str().to_string(),
        });
    }
    // The fact sheet, within its share and whatever the excerpts left.
    let fact_room = budget.saturating_sub(used);
    let title = "Facts about the excerpts (exact names, kinds and locations):\n";
    let mut facts = String::new();
    let mut fact_tokens = count(title);
    for cc in &out.chunks {
        let entity = data.chunks[cc.chunk as usize].entity;
        let line = reveal_bidi(&fact_line(corpus, cc.n, entity, &cc.location())).into_owned();
        let t = count(&line) + 1;
        if fact_tokens + t > fact_room {
            break;
        }
        facts.push_str(&line);
        facts.push('\n');
        fact_tokens += t;
        if cc.role == Role::Primary.as_str() {
            out.lead.push_str(&line);
            out.lead.push('\n');
        }
    }
    if !out.lead.is_empty() {
        let keys = key_lines(&excerpts);
        out.lead.push_str(&keys);
    }
    if !facts.is_empty() {
        out.text.push_str(title);
        out.text.push_str(&facts);
        out.text.push('\n');
        out.tokens += fact_tokens;
    }
    for (b, t) in blocks {
        out.text.push_str(&b);
        out.text.push('\n');
        out.tokens += t;
    }
    out
}

/// Build the context with the conservative token estimate (what the
/// browser counts with, and the CLI unless `[answer] tokenizer` is set).
pub fn build_context_estimated(
    corpus: &Corpus,
    retrieval: &Retrieval,
    question: &str,
    budget: usize,
) -> Context {
    build_context(corpus, retrieval, question, budget, &estimate_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_two_parts_get_the_semantic_weight() {
        let d: BTreeMap<u32, f32> = [(1, 0.9), (2, 0.4), (3, 0.6), (4, 0.4)].into();
        let w = nearest_parts(&[1, 2, 3, 4], &d);
        // Ties by chunk id; the nearest gets the weight, the next half.
        assert_eq!(w, [(2, SEMANTIC_WEIGHT), (4, SEMANTIC_WEIGHT / 2.0)].into());
        // One part is shown whole or by its words; no vector, no weight.
        assert!(nearest_parts(&[2], &d).is_empty());
        assert!(nearest_parts(&[1, 2], &BTreeMap::new()).is_empty());
    }
}
