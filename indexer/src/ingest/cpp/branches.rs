//! Preprocessor conditionals that split a declaration or a statement.
//!
//! tree-sitter parses `#if … #else … #endif` as a node that must hold
//! whole declarations. Scientific C++ often puts the branches *inside* one
//! declaration instead (two template heads before one `struct`, two
//! qualifier lists before one constructor), and the whole enclosing
//! namespace, often the whole file, becomes an ERROR node.
//!
//! This pass reads the conditional groups of a file and, for a group near
//! an ERROR node, keeps its first branch inline and blanks its directives
//! and other branches (spaces, newlines kept, so byte offsets and line
//! numbers stay exact). A rewrite is kept only when it keeps more function
//! bodies out of ERROR nodes, or as many with fewer ERROR nodes, so
//! well-formed conditionals, and the entities in their other branches,
//! stay as they are, and no branch is chosen for holding less code.
//!
//! Groups that split something are tried first, each kind all at once:
//! an `if` whose `else if` arms each sit in their own `#ifdef` (one per
//! backend, say), loops opened in `#if DIM >= 2` and closed after it, or
//! a class whose hundred methods each choose their template head in a
//! conditional parse only when every one of them is flattened, and one at
//! a time the search would stop long before.

use tree_sitter::{Parser, Tree};

use super::quality;
use crate::ingest::macros::blank;

/// One `#if`/`#ifdef`/`#ifndef` … `#endif` group.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Group {
    /// Byte range of the `#if…` directive line.
    open: (usize, usize),
    /// Start of every `#elif`/`#else` line, in order.
    alternatives: Vec<usize>,
    /// Byte range of the `#endif` line.
    close: (usize, usize),
}

impl Group {
    /// From the `#if` line to the end of the `#endif` line.
    fn span(&self) -> (usize, usize) {
        (self.open.0, self.close.1)
    }

    /// The ranges to blank so that only the first branch stays (its
    /// directive lines go too), and, for a group with alternatives, so
    /// that only the last branch stays.
    fn keeping(&self, text: &str) -> Vec<Vec<(usize, usize)>> {
        let line_end = |s: usize| text[s..].find('\n').map_or(text.len(), |k| s + k);
        let mut out = Vec::new();
        match self.alternatives.first() {
            None => out.push(vec![self.open, self.close]),
            Some(&first) => {
                out.push(vec![self.open, (first, self.close.1)]);
                let last = *self.alternatives.last().unwrap_or(&first);
                out.push(vec![(self.open.0, line_end(last)), self.close]);
            }
        }
        out
    }

    /// The code lines of the first branch: comments after `//` cut,
    /// blank lines and directives left out.
    fn first_branch_code<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let end = self.alternatives.first().copied().unwrap_or(self.close.0);
        text.get(self.open.1..end)
            .unwrap_or("")
            .lines()
            .map(|l| l.split("//").next().unwrap_or("").trim())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    }

    /// Whether the first branch is part of a statement outside the group:
    /// its first code is the keyword `else`, or it opens more blocks than
    /// it closes, or the reverse (a loop per dimension, its `}` written
    /// after the `#endif`).
    fn first_branch_splits_a_statement(&self, text: &str) -> bool {
        let code = self.first_branch_code(text);
        let starts_with_else = code
            .first()
            .and_then(|l| l.strip_prefix("else"))
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'));
        let opened: i64 = code
            .iter()
            .flat_map(|l| l.bytes())
            .map(|c| match c {
                b'{' => 1,
                b'}' => -1,
                _ => 0,
            })
            .sum();
        starts_with_else || opened != 0
    }

    /// Whether the first branch ends inside a declaration that goes on
    /// after the group: a template head, qualifiers, a base list (its last
    /// code is not `;`, `{`, `}`, `:` or `)`).
    fn first_branch_splits_a_declaration(&self, text: &str) -> bool {
        let code = self.first_branch_code(text);
        code.last()
            .and_then(|l| l.bytes().last())
            .is_some_and(|c| !matches!(c, b';' | b'{' | b'}' | b':' | b')' | b'\\'))
    }
}

/// The directive a line starts with (`if`, `ifdef`, `else`, …), if any.
fn directive(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let n = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    Some(&rest[..n])
}

/// Every conditional group, innermost first.
fn groups(text: &str) -> Vec<Group> {
    // (line start, line end) of every line, continuation lines joined.
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i <= b.len() {
        if i == b.len() || (b[i] == b'\n' && (i == 0 || b[i - 1] != b'\\')) {
            lines.push((start, i));
            start = i + 1;
        }
        i += 1;
    }
    // Open groups: the `#if` line and the starts of its later branches.
    let mut stack: Vec<(usize, (usize, usize), Vec<usize>)> = Vec::new();
    let mut out = Vec::new();
    for &(s, e) in &lines {
        match directive(&text[s..e]) {
            Some("if" | "ifdef" | "ifndef") => stack.push((s, (s, e), Vec::new())),
            Some("elif" | "else" | "elifdef" | "elifndef") => {
                if let Some(top) = stack.last_mut() {
                    top.2.push(s);
                }
            }
            Some("endif") => {
                if let Some((_, open, alternatives)) = stack.pop() {
                    out.push(Group {
                        open,
                        alternatives,
                        close: (s, e),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether a rewrite with `new` (sound function bodies, ERROR nodes) is
/// better than `old`: more sound bodies, or as many with fewer errors. So
/// a branch is never kept for having less code in it: keeping an empty
/// `#else` removes every error inside the `#if` along with its functions.
fn better(new: (usize, usize), old: (usize, usize)) -> bool {
    new.0 > old.0 || (new.0 == old.0 && new.1 < old.1)
}

/// `text` with `ranges` blanked, its tree and its (sound bodies, ERROR
/// nodes), if that is [`better`] than `now`.
fn rewrite(
    parser: &mut Parser,
    text: &str,
    ranges: &[(usize, usize)],
    now: (usize, usize),
) -> Option<(String, Tree, (usize, usize))> {
    let mut buf = text.as_bytes().to_vec();
    for &r in ranges {
        blank(&mut buf, r);
    }
    let candidate = String::from_utf8(buf).ok()?;
    let tree = parser.parse(&candidate, None)?;
    let score = (
        quality::sound_bodies(&tree),
        quality::count_errors(tree.root_node()),
    );
    better(score, now).then_some((candidate, tree, score))
}

/// Keep the first branch of conditional groups near ERROR nodes, one at a
/// time, while that is [`better`]: more function bodies out of ERROR
/// nodes, or as many with fewer ERROR nodes. Groups that split a
/// statement, then groups that split a declaration, are tried first, each
/// kind all together. Returns the text, its tree and how many rewrites were
/// kept.
pub(super) fn first_branch_pass(
    parser: &mut Parser,
    mut text: String,
    mut tree: Tree,
) -> (String, Tree, u32) {
    let mut flattened = 0;
    let mut errors = quality::count_errors(tree.root_node());
    let mut sound = quality::sound_bodies(&tree);
    if errors == 0 {
        return (text, tree, 0);
    }
    // Groups whose first branch is part of a statement or declaration
    // outside them: an `if` that began before them (`}` `#ifdef X` `else
    // if (…) {…}` `#endif` `else {…}`), a block that closes after them
    // (`#if DIM >= 2` `for (…) {` `#endif` … `}}`), a template head before
    // the declaration it belongs to. No one of them parses alone, and a
    // file may hold a hundred, so each kind is tried all at once.
    for split in [
        Group::first_branch_splits_a_statement,
        Group::first_branch_splits_a_declaration,
    ] {
        let ranges: Vec<(usize, usize)> = groups(&text)
            .into_iter()
            .filter(|g| split(g, &text))
            .filter_map(|g| g.keeping(&text).into_iter().next())
            .flatten()
            .collect();
        if ranges.is_empty() {
            continue;
        }
        if let Some(better) = rewrite(parser, &text, &ranges, (sound, errors)) {
            (text, tree, (sound, errors)) = better;
            flattened += 1;
        }
    }
    let mut tried = 0;
    let mut skip: Vec<(usize, usize)> = Vec::new();
    // Each try costs one re-parse; the bound keeps pathological files cheap.
    while tried < 32 && errors > 0 {
        let mut ranges = Vec::new();
        quality::collect_error_ranges(tree.root_node(), &mut ranges);
        let candidate = groups(&text).into_iter().find(|g| {
            let (gs, ge) = g.span();
            !skip.contains(&g.span()) && ranges.iter().any(|&(rs, re)| rs <= ge && gs <= re)
        });
        let Some(group) = candidate else { break };
        skip.push(group.span());
        for ranges in group.keeping(&text) {
            tried += 1;
            if let Some(better) = rewrite(parser, &text, &ranges, (sound, errors)) {
                (text, tree, (sound, errors)) = better;
                flattened += 1;
                break;
            }
        }
    }
    (text, tree, flattened)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Parser, Tree) {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_cpp::LANGUAGE.into())
            .expect("grammar");
        let tree = parser.parse(text, None).expect("tree");
        (parser, tree)
    }

    #[test]
    fn groups_are_found_innermost_first_with_their_branches() {
        let src = "#ifndef GUARD\n#if A\nint a;\n#elif B\nint b;\n#else\nint c;\n#endif\n#endif\n";
        let g = groups(src);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(&src[g[0].open.0..g[0].open.1], "#if A");
        assert_eq!(g[0].alternatives.len(), 2);
        assert_eq!(&src[g[1].open.0..g[1].open.1], "#ifndef GUARD");
        let keep = g[0].keeping(src);
        let text = |ranges: &[(usize, usize)]| {
            let mut b = src.as_bytes().to_vec();
            for &r in ranges {
                blank(&mut b, r);
            }
            String::from_utf8(b)
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(text(&keep[0]), "#ifndef GUARD int a; #endif");
        assert_eq!(text(&keep[1]), "#ifndef GUARD int c; #endif");
    }

    #[test]
    fn a_conditional_inside_an_expression_keeps_its_branch() {
        let src = "int f() {\n  return g({1,\n#if WIDE\n  2,\n#endif\n  3}) / 2;\n}\n";
        let (mut parser, tree) = parse(src);
        let before = quality::count_errors(tree.root_node());
        assert!(before > 0);
        let (_, tree, n) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert_eq!((n, quality::count_errors(tree.root_node())), (1, 0));
    }

    #[test]
    fn a_declaration_split_by_a_conditional_parses_with_its_first_branch() {
        let src = "namespace lib {\n#ifdef OLD_API\ntemplate <class T = void, int N = 0>\n#else\ntemplate <class T, int N>\n#endif\nstruct Array {\n  T data[N];\n  int size() const { return N; }\n};\n}\n";
        let (mut parser, tree) = parse(src);
        assert!(
            quality::count_errors(tree.root_node()) > 0,
            "the split head breaks the parse"
        );
        let (text, tree, n) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert_eq!(n, 1);
        assert_eq!(quality::count_errors(tree.root_node()), 0, "{text}");
        assert_eq!(text.len(), src.len());
        assert_eq!(text.lines().count(), src.lines().count());
        assert!(text.contains("template <class T = void, int N = 0>"));
        assert!(!text.contains("#else") && !text.contains("template <class T, int N>"));
    }

    #[test]
    fn else_branches_split_across_conditionals_are_kept_together() {
        // Each `#ifdef` continues the `if` before it; flattening one alone
        // still leaves the other `else` dangling.
        let src = "void run(int n) {\n  if (n == 0) {\n    a();\n  }\n#ifdef USE_X\n  else if (n == 1) {\n    x();\n  }\n#endif\n#ifdef USE_Y\n  else if (n == 2) {\n    y();\n  }\n#endif\n  else {\n    b();\n  }\n}\nint after() { return 1; }\n";
        let (mut parser, tree) = parse(src);
        assert!(quality::count_errors(tree.root_node()) > 0);
        let (text, tree, n) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert_eq!(n, 1, "one rewrite, of both groups");
        assert_eq!(quality::count_errors(tree.root_node()), 0, "{text}");
        assert_eq!(text.len(), src.len());
        assert!(text.contains("else if (n == 1)") && !text.contains("#ifdef"));
        assert_eq!(quality::function_error_counts(tree.root_node()), (2, 0));
    }

    #[test]
    fn loops_opened_per_dimension_close_after_their_conditionals() {
        let src = "void fill(int* a) {\n  for (int i = 0; i < 4; ++i) {\n#if DIM >= 2\n  for (int j = 0; j < 4; ++j) {\n#endif\n#if DIM == 3\n  for (int k = 0; k < 4; ++k) {\n#endif\n    a[0] = 1;\n  }}}\n}\nint after() { return 1; }\n";
        let (mut parser, tree) = parse(src);
        assert!(quality::count_errors(tree.root_node()) > 0);
        let (text, tree, _) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert_eq!(quality::count_errors(tree.root_node()), 0, "{text}");
        assert_eq!(quality::function_error_counts(tree.root_node()), (2, 0));
    }

    #[test]
    fn many_split_template_heads_are_flattened_at_once() {
        // More groups than the one-at-a-time search would try.
        let mut src = String::from("struct Fab {\n");
        for i in 0..40 {
            src.push_str(&format!(
                "#if defined(GPU)\n  template <int R>\n#else\n  template <int R = 0>\n#endif\n  int get{i}() const {{ return R; }}\n"
            ));
        }
        src.push_str("};\n");
        let (mut parser, tree) = parse(&src);
        assert!(quality::count_errors(tree.root_node()) > 0);
        let (text, tree, _) = first_branch_pass(&mut parser, src.clone(), tree);
        assert_eq!(quality::count_errors(tree.root_node()), 0, "{text}");
        assert_eq!(quality::function_error_counts(tree.root_node()), (40, 0));
        assert_eq!(text.len(), src.len());
    }

    #[test]
    fn an_empty_other_branch_is_not_kept_for_its_lack_of_errors() {
        // Keeping the empty `#else` would remove the error, and both
        // functions with it.
        let src =
            "#if VERSION >= 2\nint f() { return 1 ) ; }\nint g() { return 2; }\n#else\n#endif\n";
        let (mut parser, tree) = parse(src);
        assert!(quality::count_errors(tree.root_node()) > 0);
        let (text, tree, _) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert!(text.contains("int g()"), "{text}");
        assert_eq!(quality::function_error_counts(tree.root_node()).0, 2);
    }

    #[test]
    fn well_formed_conditionals_are_left_alone() {
        let src =
            "#ifdef FAST\nint f() { return 1; }\n#else\nint f() { return 2; }\n#endif\nint g(;\n";
        let (mut parser, tree) = parse(src);
        let (text, _, n) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert_eq!(n, 0, "flattening does not remove the unrelated error");
        assert_eq!(text, src);
    }
}
