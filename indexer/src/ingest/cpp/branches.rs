//! Preprocessor conditionals that split a declaration.
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
//! numbers stay exact). A rewrite is kept only when it lowers the number
//! of ERROR nodes, so well-formed conditionals, and the entities in their
//! other branches, stay as they are.

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

/// Keep the first branch of conditional groups near ERROR nodes, one at a
/// time, while that lowers the number of ERROR nodes. Returns the text,
/// its tree and how many groups were flattened.
pub(super) fn first_branch_pass(
    parser: &mut Parser,
    mut text: String,
    mut tree: Tree,
) -> (String, Tree, u32) {
    let mut flattened = 0;
    let mut errors = quality::count_errors(tree.root_node());
    if errors == 0 {
        return (text, tree, 0);
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
            let mut buf = text.clone().into_bytes();
            for r in ranges {
                blank(&mut buf, r);
            }
            let Ok(candidate_text) = String::from_utf8(buf) else {
                continue;
            };
            if let Some(new_tree) = parser.parse(&candidate_text, None) {
                let n = quality::count_errors(new_tree.root_node());
                if n < errors {
                    errors = n;
                    text = candidate_text;
                    tree = new_tree;
                    flattened += 1;
                    break;
                }
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
    fn well_formed_conditionals_are_left_alone() {
        let src =
            "#ifdef FAST\nint f() { return 1; }\n#else\nint f() { return 2; }\n#endif\nint g(;\n";
        let (mut parser, tree) = parse(src);
        let (text, _, n) = first_branch_pass(&mut parser, src.to_string(), tree);
        assert_eq!(n, 0, "flattening does not remove the unrelated error");
        assert_eq!(text, src);
    }
}
