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
//! cited, and true by construction.

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
            // Preprocessor lines (guards, conditionals) match a file's
            // name and say nothing of what the code does.
            if l.score <= 0.0
                || l.declaration
                || (!l.comment && l.text.trim_start().starts_with('#'))
            {
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
                    statement(&e.lines, i)
                } else {
                    Some((l.line, l.line, l.text.trim().to_string()))
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
            e(3, vec![l(9, 1.0, "}")]),
        ];
        assert_eq!(
            key_lines(&ex),
            "- [1] line 12 of `src/f1.cpp`: `buffers.clear();`\n\
             - [1] line 40 of `src/f1.cpp`: `runtime::start(argc, argv);`\n\
             - [2] line 7 of `src/f2.cpp`: `int exchange(int rank);`\n"
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
    fn backticks_and_bidirectional_controls_cannot_escape_the_code_span() {
        assert_eq!(inline_code("a `b` c"), "`` a `b` c ``");
        let out = key_lines(&[e(1, vec![l(2, 1.0, "s = \"\u{202E}abc\"; // `x`")])]);
        assert!(!out.chars().any(crate::text::is_bidi_control), "{out}");
        assert!(out.contains("`` s = "), "{out}");
    }
}
