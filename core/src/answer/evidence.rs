//! Query-focused evidence: which lines of a retrieved unit an answer
//! model sees.
//!
//! A small answer model states only a part of what it is shown, and a
//! long excerpt buries the few lines that answer the question. So inside
//! each unit the context keeps what answers it: the head (the signature
//! and the doc comment above it), the lines that declare the unit's
//! members, and the statements that the question's terms and the other
//! retrieved entities' names point at, each with a line of surrounding
//! context (and, scored by the context, the lines of the unit's parts
//! nearest the question by meaning). The rest is replaced by a marker
//! (`// ...`), so a reader (and the model) knows the text is cut; a gap
//! of a line or two that costs about what the marker does is shown
//! instead. The kept lines lose the indentation they share and aligned
//! continuations go one step in: the budget is counted in characters, and
//! eight columns of a namespace's indentation on every line buy nothing.
//!
//! Scoring uses the keyword index's tokenizer and inverse document
//! frequencies (the same terms and weights BM25 ranks chunks by), on
//! lines instead of chunks. Only the question's own terms are weighted by
//! the index (their posting lists are the ones the browser has loaded, so
//! it weighs them the same); the other entities' names count by a fixed
//! weight.

use std::collections::{BTreeMap, BTreeSet};

use super::unit::UnitLine;
use crate::lexical::tokenize;
use crate::retrieve::Corpus;
use crate::sort::sort_by;
use crate::text::indent_width;

/// Weight of a line that names another retrieved entity (a whole
/// identifier, lower case), against an index term's inverse document
/// frequency (about 2 to 9 on a real repository).
const NEIGHBOUR_WEIGHT: f32 = 2.0;

/// Extra weight of a line of the retrieved chunk itself, within a unit
/// that was completed around it.
const OWN_CHUNK_BONUS: f32 = 0.5;

/// Lines of context kept on each side of a scored line.
const WINDOW: usize = 1;

/// Head lines (signature and what precedes it) kept at most.
const HEAD_LINES: usize = 8;

/// A gap whose lines take at most this many characters without their
/// indentation (a newline each counted) is shown instead of a marker: a
/// closing brace, a `return x;`, a `b; c;` cost about what the marker
/// line costs with its own newline and indentation, and say more.
const SHORT_GAP: usize = 25;

/// Indentation a line may have beyond the line before it, in columns,
/// once the excerpt's common indentation is removed: a continuation
/// aligned under an opening parenthesis 60 columns to the right costs a
/// token per three columns of the estimate and tells a reader nothing
/// that 8 columns do not.
const CONTINUATION: usize = 8;

/// Lines a declaration's head may take after a `template <...>` line.
const TEMPLATE_HEAD: usize = 2;

/// The terms that make a line evidence for a question.
pub(super) struct Focus {
    /// Index terms of the question, by weight (inverse document frequency).
    terms: BTreeMap<String, f32>,
    /// Lower-case names of the other retrieved entities.
    neighbours: BTreeSet<String>,
}

impl Focus {
    /// The focus of a question: its index terms weighted by the index,
    /// and the names of the entities retrieval found for it.
    pub(super) fn new(corpus: &Corpus, question: &str, neighbours: &[&str]) -> Focus {
        let mut terms = BTreeMap::new();
        for t in tokenize(question) {
            let w = corpus.lexical.idf(&t);
            if w > 0.0 {
                terms.insert(t, w);
            }
        }
        let neighbours = neighbours
            .iter()
            .map(|n| n.to_lowercase())
            .filter(|n| n.len() >= 3 && !terms.contains_key(n))
            .collect();
        Focus { terms, neighbours }
    }

    /// How strongly a line answers the question: the weights of the
    /// distinct question terms it holds, plus the fixed weight of each
    /// other entity it names.
    pub(super) fn score(&self, line: &str) -> f32 {
        let toks: BTreeSet<String> = tokenize(line).into_iter().collect();
        let mut s = 0.0;
        for t in &toks {
            if let Some(w) = self.terms.get(t) {
                s += w;
            } else if self.neighbours.contains(t) {
                s += NEIGHBOUR_WEIGHT;
            }
        }
        s
    }
}

/// One line offered to the selection.
pub(super) struct Offered<'a> {
    /// How strongly it answers the question ([`Focus::score`]).
    pub(super) score: f32,
    /// The line as shown.
    pub(super) line: UnitLine<'a>,
    /// Part of the retrieved chunk itself (not of its completion).
    pub(super) own: bool,
    /// Always kept when anything is: the head, a member's declaration.
    pub(super) anchor: bool,
    /// A line of the file's text outside its entities (includes, guards,
    /// the file's leading comment, globals): never the unit's head, so a
    /// license block does not take an excerpt's share.
    pub(super) outside: bool,
}

/// The evidence chosen from a unit: its text and the first and last file
/// line it shows.
pub(super) struct Chosen {
    pub(super) text: String,
    pub(super) first: u32,
    pub(super) last: u32,
    /// Every shown line that has a file line, in reading order, with its
    /// score (the answer's key lines are chosen from them).
    pub(super) shown: Vec<ShownLine>,
}

/// A line an excerpt shows, as the lead's key lines see it.
pub(super) struct ShownLine {
    /// The file line.
    pub(super) line: u32,
    /// How strongly it answers the question ([`Focus::score`]).
    pub(super) score: f32,
    /// The line as shown.
    pub(super) text: String,
    /// A declaration's own line (the unit's signature, a member's
    /// declaration, a template head): the fact sheet says it already.
    pub(super) declaration: bool,
    /// A comment line of code ([`is_comment`]); prose has none.
    pub(super) comment: bool,
}

/// Languages of prose, where no line is a comment: `# ` opens a heading,
/// `* ` a list item.
fn is_prose(language: &str) -> bool {
    matches!(language, "markdown" | "rst" | "text")
}

/// The kept lines that have a file line, `head` being the unit's head.
fn shown_lines(
    offered: &[Offered<'_>],
    keep: &[bool],
    head: &std::ops::Range<usize>,
    language: &str,
) -> Vec<ShownLine> {
    offered
        .iter()
        .enumerate()
        .filter(|&(i, _)| keep[i])
        .filter_map(|(i, o)| {
            let comment = !is_prose(language) && is_comment(o.line.text);
            o.line.line.map(|line| ShownLine {
                line,
                score: o.score,
                text: o.line.text.to_string(),
                declaration: !comment
                    && (o.anchor
                        || head.contains(&i)
                        || o.line.text.trim_start().starts_with("template")),
                comment,
            })
        })
        .collect()
}

/// Whether a line is a comment line (C and C++ styles, and the `#` of
/// build files and scripts).
fn is_comment(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') || t.starts_with("# ")
}

/// The unit's head: leading comment and blank lines, then the declaration
/// up to the line that opens its body or ends it, at most [`HEAD_LINES`].
pub(super) fn head_len(lines: &[UnitLine<'_>]) -> usize {
    let mut i = 0;
    while i < lines.len() && i < HEAD_LINES && {
        let t = lines[i].text.trim();
        t.is_empty() || is_comment(t)
    } {
        i += 1;
    }
    while i < lines.len() && i < HEAD_LINES {
        let t = lines[i].text.trim_end();
        i += 1;
        if t.ends_with('{') || t.ends_with(';') || t.ends_with('}') {
            break;
        }
    }
    i.max(1).min(lines.len())
}

/// The marker that stands for left-out lines, in the excerpt's language.
/// It does not number them: a code model's tokenizer spends a token on
/// every digit (`// ... lines 436-444 not shown` is 14 of Qwen2.5's
/// tokens, `// ...` 2), an answer cites excerpts, not lines, and the
/// excerpt's heading already gives the lines it spans. A prompt of the
/// benchmark carried about eleven markers.
fn marker(language: &str) -> &'static str {
    match language {
        l if is_prose(l) => "[...]",
        "cmake" => "# ...",
        _ => "// ...",
    }
}

/// Render the kept lines in order, with a marker for each run left out.
/// A run of the file's text outside entities before the first kept line
/// or after the last one needs none: the excerpt's heading says which
/// lines it shows, and the file around the unit is not part of it.
fn render(offered: &[Offered<'_>], keep: &[bool], language: &str) -> String {
    let mut out: Vec<Rendered> = Vec::new();
    let (mut lead, mut end) = (0, offered.len());
    if let (Some(first), Some(last)) = (keep.iter().position(|&k| k), keep.iter().rposition(|&k| k))
    {
        if offered[..first].iter().all(|o| o.outside) {
            lead = first;
        }
        if offered[last + 1..].iter().all(|o| o.outside) {
            end = last + 1;
        }
    }
    let mut i = lead;
    while i < end {
        if keep[i] {
            out.push(Rendered::line(&offered[i].line));
            i += 1;
            continue;
        }
        let start = i;
        while i < end && !keep[i] {
            i += 1;
        }
        let gap = &offered[start..i];
        let marker = marker(language);
        // A gap that costs about what its marker does is shown instead.
        let cost: usize = gap.iter().map(|o| o.line.text.trim().len() + 1).sum();
        if cost <= SHORT_GAP {
            out.extend(gap.iter().map(|o| Rendered::line(&o.line)));
            continue;
        }
        out.push(Rendered {
            text: marker.to_string(),
            lost: Some(0),
            marker: true,
        });
    }
    dedent(&out).join("\n")
}

/// A line of a rendered excerpt.
struct Rendered {
    text: String,
    /// Columns of indentation the text lacks ([`UnitLine::lost`]); for a
    /// marker, 0.
    lost: Option<usize>,
    /// A marker for left-out lines.
    marker: bool,
}

impl Rendered {
    fn line(l: &UnitLine<'_>) -> Rendered {
        Rendered {
            text: l.text.to_string(),
            lost: l.lost,
            marker: false,
        }
    }

    /// Its column in the file, when known.
    fn column(&self) -> Option<usize> {
        self.lost.map(|lost| indent_width(&self.text) + lost)
    }
}

/// The lines with the indentation they all share removed, and no line
/// indented more than [`CONTINUATION`] columns beyond the line before it:
/// a member of a class in a namespace starts one step in, not three, and
/// continuations aligned under an opening parenthesis far to the right
/// all go one step in from their line. A line whose column is unknown (a
/// declaration's first line that does not end with a closing brace of its
/// own, such as a prototype or a type alias) starts at the margin, the
/// level of the declarations around it. Markers and empty lines stay as
/// they are; neither they nor a line so moved count as the line before.
fn dedent(lines: &[Rendered]) -> Vec<String> {
    let common = lines
        .iter()
        .filter(|l| !l.marker && !l.text.trim().is_empty())
        .filter_map(Rendered::column)
        .min()
        .unwrap_or(0);
    let mut before: Option<usize> = None;
    lines
        .iter()
        .map(|l| {
            let body = l.text.trim_start_matches([' ', '\t']);
            if l.marker {
                // What follows a marker is not continued from it.
                before = None;
                return l.text.clone();
            }
            if body.is_empty() {
                return String::new();
            }
            // A line whose column is unknown starts at the margin.
            let mut w = l.column().map_or(0, |c| c.saturating_sub(common));
            match before {
                // Aligned continuations all go one step in from their line.
                Some(b) if w > b + CONTINUATION => w = b + CONTINUATION,
                _ => before = Some(w),
            }
            format!("{}{body}", " ".repeat(w))
        })
        .collect()
}

/// Choose the evidence of a unit within `fits` (a monotone test of the
/// rendered text): the whole unit when it fits; else the anchors, then
/// the best-scored lines with their context, in score order, as long as
/// the text still fits. `None` when not even the first line fits.
pub(super) fn choose(
    offered: &[Offered<'_>],
    language: &str,
    fits: &dyn Fn(&str) -> bool,
) -> Option<Chosen> {
    if offered.is_empty() {
        return None;
    }
    let range = |keep: &[bool]| {
        let first = offered
            .iter()
            .zip(keep)
            .find_map(|(o, &k)| if k { o.line.line } else { None });
        let last = offered
            .iter()
            .zip(keep)
            .rev()
            .find_map(|(o, &k)| if k { o.line.line } else { None });
        (first.unwrap_or(0), last.unwrap_or(0))
    };
    // The head is the first entity's: a file's text before it (its
    // leading comment, includes) competes by score like any other line.
    let h0 = offered.iter().position(|o| !o.outside).unwrap_or(0);
    let head = h0
        + head_len(
            &offered[h0..]
                .iter()
                .map(|o| o.line.clone())
                .collect::<Vec<_>>(),
        );
    let heads = h0..head;
    let all = vec![true; offered.len()];
    let whole = render(offered, &all, language);
    if fits(&whole) {
        let (first, last) = range(&all);
        return Some(Chosen {
            text: whole,
            first,
            last,
            shown: shown_lines(offered, &all, &heads, language),
        });
    }
    let mut keep = vec![false; offered.len()];
    // Groups in the order they are tried: the head first, then anchors in
    // line order, then scored lines by score (ties by position).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let in_head = |i: usize| heads.contains(&i);
    groups.push((h0..head).collect());
    let mut anchors: Vec<usize> = (0..offered.len())
        .filter(|&i| !in_head(i) && offered[i].anchor)
        .collect();
    crate::sort::sort_values(&mut anchors);
    let mut scored: Vec<(f32, usize)> = offered
        .iter()
        .enumerate()
        .filter(|&(i, _)| !in_head(i))
        .filter_map(|(i, o)| {
            let s = o.score;
            (s > 0.0).then_some((s + if o.own { OWN_CHUNK_BONUS } else { 0.0 }, i))
        })
        .collect();
    sort_by(&mut scored, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in scored {
        let lo = i.saturating_sub(WINDOW);
        let hi = (i + WINDOW).min(offered.len() - 1);
        // A comment block right above the line says what it does.
        let mut lo2 = lo;
        while lo2 > 0 && lo - lo2 < 3 && is_comment(offered[lo2 - 1].line.text) {
            lo2 -= 1;
        }
        // Blank lines around it carry nothing.
        groups.push(
            (lo2..=hi)
                .filter(|&k| k == i || !offered[k].line.text.trim().is_empty())
                .collect(),
        );
    }
    // Anchors (member declarations) come after the best-scored group, so
    // a long member list does not crowd out the answer's lines.
    let at = groups.len().min(2);
    for (k, a) in anchors.into_iter().enumerate() {
        // A template head alone says nothing: the declaration after it too.
        let mut g = vec![a];
        let mut j = a;
        while offered[j].line.text.trim_start().starts_with("template")
            && j + 1 < offered.len()
            && j < a + TEMPLATE_HEAD
        {
            j += 1;
            g.push(j);
        }
        groups.insert(at + k, g);
    }
    let mut any = false;
    for g in groups {
        if g.iter().all(|&i| keep[i]) {
            continue;
        }
        let mut trial = keep.clone();
        for &i in &g {
            trial[i] = true;
        }
        if fits(&render(offered, &trial, language)) {
            keep = trial;
            any = true;
        } else if !any {
            // Not even the head fits whole: its leading lines, one by one.
            for &i in &g {
                let mut t = keep.clone();
                t[i] = true;
                if !fits(&render(offered, &t, language)) {
                    break;
                }
                keep = t;
                any = true;
            }
            if !any {
                return None;
            }
        }
    }
    let (first, last) = range(&keep);
    Some(Chosen {
        text: render(offered, &keep, language),
        first,
        last,
        shown: shown_lines(offered, &keep, &heads, language),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered<'a>(lines: &[&'a str], focus: &Focus) -> Vec<Offered<'a>> {
        lines
            .iter()
            .enumerate()
            .map(|(i, t)| Offered {
                score: focus.score(t),
                line: UnitLine {
                    text: t,
                    line: Some(10 + i as u32),
                    lost: Some(0),
                },
                own: true,
                outside: false,
                anchor: false,
            })
            .collect()
    }

    fn focus(terms: &[(&str, f32)]) -> Focus {
        Focus {
            terms: terms.iter().map(|(t, w)| (t.to_string(), *w)).collect(),
            neighbours: BTreeSet::new(),
        }
    }

    #[test]
    fn a_unit_that_fits_is_shown_whole() {
        let o = offered(&["void f() {", "  g();", "}"], &focus(&[]));
        let c = choose(&o, "cpp", &|_| true).unwrap();
        assert_eq!(c.text, "void f() {\n  g();\n}");
        assert_eq!((c.first, c.last), (10, 12));
    }

    #[test]
    fn the_head_and_the_lines_the_question_names_are_kept() {
        let mut lines = vec!["/// Sends the halo.", "void send() {"];
        let filler: Vec<String> = (0..30).map(|i| format!("  step{i}();")).collect();
        lines.extend(filler.iter().map(String::as_str));
        lines.push("  exchange(buffer);");
        lines.extend(filler.iter().map(String::as_str));
        lines.push("}");
        let o = offered(&lines, &focus(&[("exchang", 3.0)]));
        let c = choose(&o, "cpp", &|t| t.len() < 200).unwrap();
        assert!(
            c.text.starts_with("/// Sends the halo.\nvoid send() {"),
            "{}",
            c.text
        );
        assert!(c.text.contains("  exchange(buffer);"), "{}", c.text);
        assert!(c.text.contains("\n// ...\n"), "{}", c.text);
        assert!(c.text.len() < 200);
        assert_eq!(c.first, 10);
    }

    #[test]
    fn markers_follow_the_language() {
        assert_eq!(marker("markdown"), "[...]");
        assert_eq!(marker("cpp"), "// ...");
        assert_eq!(marker("cmake"), "# ...");
    }

    #[test]
    fn excerpts_lose_the_indentation_their_lines_share_and_aligned_continuations() {
        let r = |text: &str, lost: Option<usize>| Rendered {
            text: text.into(),
            lost,
            marker: false,
        };
        let lines = [
            // A chunk's first line starts at its declaration, column 4.
            r("class A {", Some(4)),
            r("    public:", Some(0)),
            r("        void f(int a,", Some(0)),
            r("                   int b);", Some(0)),
            r("        ", Some(0)),
            Rendered {
                text: "// ...".into(),
                lost: Some(0),
                marker: true,
            },
            r("        int x;", Some(0)),
            // A declaration whose column is unknown.
            r("using T = int;", None),
            r("    };", Some(0)),
        ];
        assert_eq!(
            dedent(&lines),
            [
                "class A {",
                "public:",
                "    void f(int a,",
                "            int b);",
                "",
                "// ...",
                "    int x;",
                "using T = int;",
                "};",
            ]
        );
        // Where a first line's column is unknown, the rest keep theirs.
        let free = [
            r("void g() {", None),
            r("    h();", Some(0)),
            r("}", Some(0)),
        ];
        assert_eq!(dedent(&free), ["void g() {", "    h();", "}"]);
    }

    #[test]
    fn a_gap_of_about_a_markers_length_is_shown_instead() {
        let long = "  a_statement_far_longer_than_any_marker_of_left_out_lines();";
        let o = offered(
            &[
                "  alpha();",
                "  b;",
                "  c;",
                "  omega();",
                long,
                long,
                "  end();",
            ],
            &focus(&[]),
        );
        let keep = [true, false, false, true, false, false, true];
        assert_eq!(
            render(&o, &keep, "cpp"),
            "alpha();\nb;\nc;\nomega();\n// ...\nend();"
        );
    }

    #[test]
    fn prose_has_no_comment_lines() {
        let doc = ["# Build", "* Run the build script.", "./build.sh"];
        let comments = |language| -> Vec<bool> {
            let o = offered(&doc, &focus(&[("build", 3.0)]));
            let c = choose(&o, language, &|_| true).unwrap();
            c.shown.iter().map(|l| l.comment).collect()
        };
        assert_eq!(comments("markdown"), [false, false, false]);
        // A build file's `#` line is a comment.
        assert!(comments("cmake")[0]);
    }

    #[test]
    fn nothing_fits_gives_none() {
        let o = offered(&["a very long line that never fits"], &focus(&[]));
        assert!(choose(&o, "cpp", &|_| false).is_none());
    }

    #[test]
    fn head_stops_at_the_body() {
        let o = offered(
            &[
                "// doc",
                "template <class T>",
                "struct S {",
                "  int x;",
                "};",
            ],
            &focus(&[]),
        );
        let lines: Vec<UnitLine<'_>> = o.iter().map(|o| o.line.clone()).collect();
        assert_eq!(head_len(&lines), 3);
    }
}
