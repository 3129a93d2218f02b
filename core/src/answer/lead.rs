//! The key lines of an answer's lead: the few shown statements that the
//! question points at most, quoted with their file line and excerpt.
//!
//! A small answer model states about half of what its context holds, and
//! what it drops first is the code itself: the call that initialises a
//! runtime, the option a command line accepts, the statement that scales
//! a transform. Evidence selection ([`super::evidence`]) has already
//! scored every shown line by the question's terms (weighted as retrieval
//! weighs them) and by the names of the other retrieved entities, so code
//! can quote the best of them before the model writes a word: exact,
//! cited, and true by construction. A quoted statement brings the whole
//! simple statements on the lines right before and after it (what the
//! code does around the matched call), a document's line the command it
//! continues (`\` at line ends); lines that say nothing whatever words
//! they match (a preprocessor line, a document's heading, a namespace's
//! opening, a closing brace and its comment) are never quoted.

use super::context::longest_backtick_run;
use super::evidence::ShownLine;
use super::facts::cut;
use crate::sort::{sort_by, sort_by_key};
use crate::text::reveal_bidi;

/// Key lines quoted in a lead, at most.
const KEY_LINES: usize = 5;

/// Key lines quoted from one excerpt, at most: the lead spreads over the
/// evidence instead of quoting one long function.
const PER_EXCERPT: usize = 2;

/// Characters of a quoted line kept.
const LINE_CHARS: usize = 160;

/// Characters of a quoted comment block kept.
const COMMENT_CHARS: usize = 240;

/// Trimmed lines shorter than this say nothing alone (`}`, `else {`).
const SHORTEST: usize = 8;

/// Lines a quoted statement reaches back over, at most, to its start.
const STATEMENT_LINES: usize = 4;

/// Whether `line` continues the statement of the line before it, `before`:
/// it opens with an operator or a closing bracket (`: 0;`, `&& ok`, `);`),
/// or `before` ends in the middle of an expression (`f(a,`, `x =`).
fn continues(before: &str, line: &str) -> bool {
    let (before, line) = (before.trim_end(), line.trim_start());
    let opens = [
        ":", "?", ".", "->", "&&", "||", ",", ")", "+", "<<", ">>", "=", "|",
    ];
    let ends = ["(", ",", "=", "&&", "||", "+", "<<", ">>", "?"];
    (opens.iter().any(|o| line.starts_with(o)) && !line.starts_with("::"))
        || ends.iter().any(|e| before.ends_with(e))
}

/// The statement that shown line `i` belongs to, as far as the excerpt
/// shows it: its first and last file lines and its trimmed lines joined by
/// spaces. `None` when line `i` continues a statement whose start is not
/// shown (a fragment such as `: 0;` says nothing alone), or a declaration
/// (the fact lines say those).
fn statement(lines: &[ShownLine], i: usize) -> Option<(u32, u32, String)> {
    let mut first = i;
    while first > 0
        && i - first + 1 < STATEMENT_LINES
        && !lines[first - 1].comment
        && !lines[first - 1].text.trim_start().starts_with('#')
        && lines[first - 1].line + 1 == lines[first].line
        && continues(&lines[first - 1].text, &lines[first].text)
    {
        first -= 1;
    }
    let opens_mid_statement = first == 0 || lines[first - 1].line + 1 != lines[first].line;
    if continues("", &lines[first].text) && opens_mid_statement
        || first > 0
            && lines[first - 1].line + 1 == lines[first].line
            && !lines[first - 1].comment
            && continues(&lines[first - 1].text, &lines[first].text)
    {
        return None;
    }
    if lines[first..=i].iter().any(|l| l.declaration) {
        return None;
    }
    let text = lines[first..=i]
        .iter()
        .map(|l| l.text.trim())
        .collect::<Vec<_>>()
        .join(" ");
    Some((lines[first].line, lines[i].line, text))
}

/// Lines of a continued command (`\` at the end of a line) a quote
/// takes, at most.
const COMMAND_LINES: usize = 8;

/// The command that shown line `i` of a document belongs to: the lines
/// continued by a trailing backslash around it (a shell or CMake command
/// over several lines, `cmake .. \` then `-DOPTION=ON`), joined by spaces, or
/// the line alone.
fn command(lines: &[ShownLine], i: usize) -> (u32, u32, String) {
    let continued = |j: usize| !lines[j].comment && lines[j].text.trim_end().ends_with('\\');
    let next = |j: usize| j + 1 < lines.len() && lines[j].line + 1 == lines[j + 1].line;
    let (mut a, mut b) = (i, i);
    while a > 0 && next(a - 1) && continued(a - 1) && b - a + 1 < COMMAND_LINES {
        a -= 1;
    }
    while continued(b) && next(b) && !lines[b + 1].comment && b - a + 1 < COMMAND_LINES {
        b += 1;
    }
    let text = lines[a..=b]
        .iter()
        .map(|l| l.text.trim().trim_end_matches('\\').trim_end())
        .collect::<Vec<_>>()
        .join(" ");
    (lines[a].line, lines[b].line, text)
}

/// Whether shown line `j` is a whole simple statement on its own line:
/// code that ends with `;`, neither continues the line before nor is
/// continued, and is not a declaration, a comment or a closing line.
fn simple_statement(lines: &[ShownLine], j: usize) -> bool {
    let l = &lines[j];
    let t = l.text.trim();
    let joined = |a: usize, b: usize| lines[a].line + 1 == lines[b].line;
    !l.comment
        && !l.declaration
        && t.ends_with(';')
        && !says_nothing(t)
        && !continues("", t)
        && !(j > 0 && joined(j - 1, j) && continues(&lines[j - 1].text, t))
}

/// A quoted statement with the whole simple statements right before and
/// after it on the next file lines (the window the excerpt shows around a
/// scored line), while the quote stays within [`LINE_CHARS`]: the call
/// before a matched one and the call after it are what it does with it
/// (`buffers.clear(); runtime::stop(); comm.reset();`).
fn with_neighbours(
    lines: &[ShownLine],
    (first, last, text): (u32, u32, String),
) -> (u32, u32, String) {
    let at = |n: u32| lines.iter().position(|l| l.line == n);
    let (mut first, mut last, mut text) = (first, last, text);
    if let Some(j) = at(first).filter(|&j| j > 0).map(|j| j - 1) {
        let t = lines[j].text.trim();
        if lines[j].line + 1 == first
            && simple_statement(lines, j)
            && t.chars().count() + 1 + text.chars().count() <= LINE_CHARS
        {
            text = format!("{t} {text}");
            first = lines[j].line;
        }
    }
    if let Some(j) = at(last).map(|j| j + 1).filter(|&j| j < lines.len()) {
        let t = lines[j].text.trim();
        if lines[j].line == last + 1
            && text.ends_with(';')
            && simple_statement(lines, j)
            && text.chars().count() + 1 + t.chars().count() <= LINE_CHARS
        {
            text = format!("{text} {t}");
            last = lines[j].line;
        }
    }
    (first, last, text)
}

/// Whether a code line says nothing of what the code does, whatever
/// words it matches: a preprocessor line (a guard, a conditional, which
/// match a file's name) or a document's heading (`## Overview`, which
/// the excerpt's heading names), a namespace's opening line, or a line
/// that only closes brackets (`}  // namespace x`).
fn says_nothing(line: &str) -> bool {
    let t = line.trim();
    let opens_namespace = {
        let words = t.strip_prefix("inline ").unwrap_or(t).trim_start();
        (words.starts_with("namespace ") || words.starts_with("namespace{")) && t.ends_with('{')
    };
    t.starts_with('#') || opens_namespace || only_closes(t)
}

/// Whether a code line only closes brackets, before any trailing comment
/// (`}  // namespace x`, `};`, `});`).
fn only_closes(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or(line);
    let code = code.split("/*").next().unwrap_or(code).trim();
    !code.is_empty()
        && code
            .chars()
            .all(|c| matches!(c, '}' | ')' | ']' | ';' | ',' | ' '))
}

/// The lines one excerpt shows, for its key lines.
pub(super) struct Excerpt {
    /// The excerpt's citation number.
    pub(super) n: u32,
    /// Its repository path.
    pub(super) path: String,
    /// Whether it is C++, whose statements run over lines (a line of
    /// documentation stands alone).
    pub(super) cpp: bool,
    /// Its shown lines, in reading order.
    pub(super) lines: Vec<ShownLine>,
}

/// `text` as one inline code span that its own backticks cannot close
/// (CommonMark: a longer run of backticks as the delimiter, and a space
/// inside it when the text has backticks).
fn inline_code(text: &str) -> String {
    let longest = longest_backtick_run(text);
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{text}{fence}")
    } else {
        format!("{fence} {text} {fence}")
    }
}

/// A comment line's words, without its markers (`//`, `///`, `/*`, `*`,
/// `*/`, a script's `# `) and Doxygen's summary tags.
fn comment_words(line: &str) -> String {
    let mut t = line.trim();
    for p in ["/**", "/*!", "/*", "///", "//!", "//", "*/", "*", "# "] {
        if let Some(rest) = t.strip_prefix(p) {
            t = rest;
            break;
        }
    }
    let t = t.trim_end().trim_end_matches("*/");
    t.split_whitespace()
        .filter(|w| !matches!(*w, "@brief" | "\\brief" | "@details" | "\\details"))
        // A rule of dashes or stars frames a comment and says nothing.
        .filter(|w| w.chars().count() < 4 || w.chars().any(|c| c.is_alphanumeric()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One quotable piece: a code line, or the comment block a scored
/// comment line belongs to.
struct Quote<'a> {
    excerpt: &'a Excerpt,
    first: u32,
    last: u32,
    score: f32,
    text: String,
    comment: bool,
}

/// The comment block around `lines[i]`: the run of shown comment lines
/// on consecutive file lines, as its first and last line and its words.
fn comment_block(lines: &[ShownLine], i: usize) -> (u32, u32, String) {
    let mut a = i;
    while a > 0 && lines[a - 1].comment && lines[a - 1].line + 1 == lines[a].line {
        a -= 1;
    }
    let mut b = i;
    while b + 1 < lines.len() && lines[b + 1].comment && lines[b].line + 1 == lines[b + 1].line {
        b += 1;
    }
    let words: Vec<String> = lines[a..=b]
        .iter()
        .map(|l| comment_words(&l.text))
        .filter(|w| !w.is_empty())
        .collect();
    (lines[a].line, lines[b].line, words.join(" "))
}

/// The key-line bullets of a lead, one per line: the best-scored shown
/// lines (ties by excerpt and line), at most [`PER_EXCERPT`] from one
/// excerpt, none that is a declaration's own line (the fact lines say
/// those) or repeats or overlaps another; a code line brings the shown
/// start of its statement, and a comment line its whole block, as prose.
/// Listed in excerpt and line order, each citing its excerpt:
/// `- [n] line L of `path`: `code``, `- [n] lines a-b of `path`: `code``
/// or `- [n] the comment at lines a-b of `path`: "words"`.
pub(super) fn key_lines(excerpts: &[Excerpt]) -> String {
    let mut quotes: Vec<Quote<'_>> = Vec::new();
    for e in excerpts {
        for (i, l) in e.lines.iter().enumerate() {
            if l.score <= 0.0 || l.declaration || (!l.comment && says_nothing(&l.text)) {
                continue;
            }
            let q = if l.comment {
                let (first, last, text) = comment_block(&e.lines, i);
                Quote {
                    excerpt: e,
                    first,
                    last,
                    score: l.score,
                    text,
                    comment: true,
                }
            } else {
                let quoted = if e.cpp {
                    statement(&e.lines, i).map(|q| with_neighbours(&e.lines, q))
                } else {
                    Some(command(&e.lines, i))
                };
                let Some((first, last, text)) = quoted else {
                    continue;
                };
                Quote {
                    excerpt: e,
                    first,
                    last,
                    score: l.score,
                    text,
                    comment: false,
                }
            };
            if q.text.chars().count() >= SHORTEST {
                quotes.push(q);
            }
        }
    }
    sort_by(&mut quotes, |a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.excerpt.n.cmp(&b.excerpt.n))
            .then(a.first.cmp(&b.first))
    });
    let mut chosen: Vec<Quote<'_>> = Vec::new();
    for q in quotes {
        if chosen.len() == KEY_LINES {
            break;
        }
        let overlaps =
            |c: &Quote<'_>| c.excerpt.n == q.excerpt.n && c.first <= q.last && q.first <= c.last;
        if chosen.iter().any(|c| c.text == q.text || overlaps(c))
            || chosen.iter().filter(|c| c.excerpt.n == q.excerpt.n).count() == PER_EXCERPT
        {
            continue;
        }
        chosen.push(q);
    }
    sort_by_key(&mut chosen, |q| (q.excerpt.n, q.first));
    let mut out = String::new();
    for q in chosen {
        let (n, path) = (q.excerpt.n, &q.excerpt.path);
        let line = if !q.comment && q.first == q.last {
            format!(
                "- [{n}] line {} of `{path}`: {}\n",
                q.first,
                inline_code(&cut(&q.text, LINE_CHARS))
            )
        } else if !q.comment {
            format!(
                "- [{n}] lines {}-{} of `{path}`: {}\n",
                q.first,
                q.last,
                inline_code(&cut(&q.text, LINE_CHARS))
            )
        } else if q.first == q.last {
            format!(
                "- [{n}] the comment at line {} of `{path}`: \"{}\"\n",
                q.first,
                cut(&q.text, COMMENT_CHARS)
            )
        } else {
            format!(
                "- [{n}] the comment at lines {}-{} of `{path}`: \"{}\"\n",
                q.first,
                q.last,
                cut(&q.text, COMMENT_CHARS)
            )
        };
        out.push_str(&reveal_bidi(&line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(line: u32, score: f32, text: &str) -> ShownLine {
        let t = text.trim_start();
        ShownLine {
            line,
            score,
            text: text.to_string(),
            declaration: t.starts_with("void ") || t.starts_with("class "),
            comment: t.starts_with("//") || t.starts_with("/*") || t.starts_with('*'),
        }
    }

    fn e(n: u32, lines: Vec<ShownLine>) -> Excerpt {
        Excerpt {
            n,
            path: format!("src/f{n}.cpp"),
            cpp: true,
            lines,
        }
    }

    #[test]
    fn the_best_lines_are_quoted_in_reading_order_spread_over_excerpts() {
        let ex = [
            e(
                1,
                vec![
                    l(10, 9.5, "void start() {"),
                    l(12, 8.0, "    buffers.clear();"),
                    l(40, 9.0, "    runtime::start(argc, argv);"),
                    l(50, 7.0, "    runtime::stop(); // third of excerpt 1"),
                ],
            ),
            e(
                2,
                vec![
                    l(7, 3.0, "  int exchange(int rank);"),
                    l(8, 0.0, "  int other(int rank);"),
                ],
            ),
            // A closing line says nothing, whatever its comment matches.
            e(
                3,
                vec![l(9, 1.0, "}"), l(12, 6.0, "}  // namespace runtime")],
            ),
        ];
        assert_eq!(
            key_lines(&ex),
            "- [1] line 12 of `src/f1.cpp`: `buffers.clear();`\n\
             - [1] line 40 of `src/f1.cpp`: `runtime::start(argc, argv);`\n\
             - [2] lines 7-8 of `src/f2.cpp`: `int exchange(int rank); int other(int rank);`\n"
        );
    }

    #[test]
    fn a_comment_line_brings_its_block_as_prose_once() {
        let ex = [e(
            1,
            vec![
                l(3, 0.0, "/**"),
                l(4, 2.0, " * @brief Sends the halo"),
                l(5, 3.0, " * to every neighbour rank."),
                l(6, 0.0, " */"),
                l(7, 0.0, "void send();"),
                l(9, 1.0, "send(rank, buffer);"),
            ],
        )];
        assert_eq!(
            key_lines(&ex),
            "- [1] the comment at lines 3-6 of `src/f1.cpp`: \"Sends the halo to every neighbour rank.\"\n\
             - [1] line 9 of `src/f1.cpp`: `send(rank, buffer);`\n"
        );
    }

    #[test]
    fn a_continued_statement_is_quoted_from_its_shown_start_or_not_at_all() {
        let ex = [e(
            1,
            vec![
                l(20, 0.0, "    int mode = absorbing"),
                l(21, 0.0, "        ? 1"),
                l(22, 4.0, "        : 0;  // 1 if absorbing"),
                l(30, 5.0, "        : fallback;"),
                l(40, 0.0, "    exchange(halo,"),
                l(41, 3.0, "             rank);"),
            ],
        )];
        assert_eq!(
            key_lines(&ex),
            "- [1] lines 20-22 of `src/f1.cpp`: `int mode = absorbing ? 1 : 0;  // 1 if absorbing`\n\
             - [1] lines 40-41 of `src/f1.cpp`: `exchange(halo, rank);`\n"
        );
        // Documentation lines stand alone.
        let doc = [Excerpt {
            cpp: false,
            ..e(
                2,
                vec![l(5, 0.0, "```"), l(6, 2.0, "./scripts/build.sh --all")],
            )
        }];
        assert_eq!(
            key_lines(&doc),
            "- [2] line 6 of `src/f2.cpp`: `./scripts/build.sh --all`\n"
        );
    }

    #[test]
    fn a_matched_statement_brings_the_whole_statements_beside_it() {
        let ex = [e(
            1,
            vec![
                l(102, 0.0, "void finalize() {"),
                l(103, 0.0, "    buffers.clear();"),
                l(104, 5.0, "    runtime::stop();"),
                l(105, 0.0, "    comm.reset();"),
                l(106, 0.0, "}"),
                // Not beside a statement that opens a block or goes on.
                l(110, 0.0, "    if (ok) {"),
                l(111, 4.0, "        runtime::fence();"),
                l(112, 0.0, "        exchange(halo,"),
                l(113, 0.0, "                 rank);"),
            ],
        )];
        assert_eq!(
            key_lines(&ex),
            "- [1] lines 103-105 of `src/f1.cpp`: `buffers.clear(); runtime::stop(); comm.reset();`\n\
             - [1] line 111 of `src/f1.cpp`: `runtime::fence();`\n"
        );
    }

    #[test]
    fn lines_that_say_nothing_are_not_quoted() {
        let ex = [e(
            1,
            vec![
                l(1, 9.0, "namespace runtime {"),
                l(2, 9.0, "inline namespace v2 {"),
                l(3, 9.0, "#ifdef RUNTIME_THREADS"),
                l(4, 9.0, "    , runtime::Threads"),
                l(5, 9.0, "#endif"),
                l(6, 9.0, "}  // namespace runtime"),
            ],
        )];
        assert_eq!(key_lines(&ex), "");
        // An identifier that starts with the word is code like any other.
        assert!(!says_nothing("namespaced_call(a) {"));
        assert_eq!(
            comment_words("// ------- Primary options -------- -- x"),
            "Primary options -- x"
        );
    }

    #[test]
    fn a_continued_command_of_a_document_is_quoted_whole() {
        let doc = [Excerpt {
            cpp: false,
            ..e(
                2,
                vec![
                    l(10, 0.0, "cmake .. \\"),
                    l(11, 3.0, "  -DOPTION_A=ON \\"),
                    l(12, 0.0, "  -DOPTION_B=ON"),
                    l(13, 0.0, "make -j 4"),
                ],
            )
        }];
        assert_eq!(
            key_lines(&doc),
            "- [2] lines 10-12 of `src/f2.cpp`: `cmake .. -DOPTION_A=ON -DOPTION_B=ON`\n"
        );
    }

    #[test]
    fn backticks_and_bidirectional_controls_cannot_escape_the_code_span() {
        assert_eq!(inline_code("a `b` c"), "`` a `b` c ``");
        let out = key_lines(&[e(1, vec![l(2, 1.0, "s = \"\u{202E}abc\"; // `x`")])]);
        assert!(!out.chars().any(crate::text::is_bidi_control), "{out}");
        assert!(out.contains("`` s = "), "{out}");
    }
}
