//! Parse quality: ERROR nodes counted and located, function bodies that
//! lie inside them, and the retry that blanks ALL_CAPS (and reserved,
//! `__x`) macros while it lowers the number of ERROR nodes.
//!
//! These numbers become the file's [`codegloss_core::ParseStats`] and the
//! build's warnings, so that a reader can see how much of a file the parser
//! understood.

use tree_sitter::{Node, Parser, Tree};

use crate::ingest::macros;

/// Try blanking ALL_CAPS and reserved (`__x`) identifiers near ERROR
/// nodes, keeping each one that lowers the number of ERROR nodes.
pub(super) fn generic_caps_pass(
    parser: &mut Parser,
    mut text: String,
    mut tree: Tree,
    mut count: u32,
) -> (String, Tree, u32) {
    let mut tried = std::collections::BTreeSet::new();
    // Each try costs one re-parse; the bound keeps pathological files cheap.
    for _try in 0..48 {
        let root = tree.root_node();
        let errors = count_errors(root);
        if errors == 0 {
            break;
        }
        let mut ranges = Vec::new();
        collect_error_ranges(root, &mut ranges);
        let idents = macros::code_identifiers(&text);
        let candidate = idents.iter().find_map(|&(s, e)| {
            let word = &text[s..e];
            if !macros::is_fallback_candidate(word) {
                return None;
            }
            let near = ranges.iter().any(|&(rs, re)| s + 80 >= rs && s <= re);
            if !near {
                return None;
            }
            let how = macros::caps_use(&text, (s, e))?;
            (!tried.contains(&(word.to_string(), how))).then(|| (word.to_string(), how))
        });
        let Some((word, how)) = candidate else { break };
        tried.insert((word.clone(), how));
        let (candidate_text, n) = macros::blank_identifier(&text, &word, how);
        if n == 0 {
            continue;
        }
        if let Some(new_tree) = parser.parse(&candidate_text, None) {
            if count_errors(new_tree.root_node()) < errors {
                text = candidate_text;
                tree = new_tree;
                count += n;
            }
        }
    }
    (text, tree, count)
}

/// ERROR and MISSING nodes under `node`.
pub fn count_errors(node: Node) -> usize {
    let mut n = usize::from(node.is_error() || node.is_missing());
    if node.has_error() {
        let mut c = node.walk();
        for ch in node.children(&mut c) {
            n += count_errors(ch);
        }
    }
    n
}

pub(super) fn collect_error_ranges(node: Node, out: &mut Vec<(usize, usize)>) {
    if node.is_error() {
        out.push((node.start_byte(), node.end_byte()));
    }
    if node.has_error() {
        let mut c = node.walk();
        for ch in node.children(&mut c) {
            collect_error_ranges(ch, out);
        }
    }
}

pub(super) fn collect_error_lines(node: Node, out: &mut Vec<u32>) {
    if node.is_error() || node.is_missing() {
        out.push(node.start_position().row as u32 + 1);
        return;
    }
    if node.has_error() {
        let mut c = node.walk();
        for ch in node.children(&mut c) {
            collect_error_lines(ch, out);
        }
    }
}

/// Function bodies outside ERROR nodes: what a rewrite of the text is
/// judged by.
pub(super) fn sound_bodies(tree: &Tree) -> usize {
    let (functions, in_error) = function_error_counts(tree.root_node());
    functions - in_error
}

/// (function bodies, function bodies inside or mangled by ERROR nodes).
///
/// A function counts as "in error" when its definition lies below an
/// ERROR node, when its head (before the body) holds an ERROR node, or
/// when its body lies directly in an ERROR node without any function
/// definition around it (a body tree-sitter lost the function of).
pub fn function_error_counts(root: Node) -> (usize, usize) {
    fn go(node: Node, under_error: bool, acc: &mut (usize, usize)) {
        let kind = node.kind();
        if kind == "function_definition" {
            acc.0 += 1;
            let head_error = node
                .child_by_field_name("body")
                .map(|body| {
                    let mut c = node.walk();
                    let bad = node
                        .children(&mut c)
                        .take_while(|ch| ch.id() != body.id())
                        .any(|ch| ch.is_error() || ch.has_error());
                    bad
                })
                .unwrap_or(false);
            if under_error || head_error {
                acc.1 += 1;
            }
        } else if kind == "compound_statement" && node.parent().is_some_and(|p| p.is_error()) {
            acc.0 += 1;
            acc.1 += 1;
            return;
        }
        let err = under_error || node.is_error();
        let mut c = node.walk();
        for ch in node.children(&mut c) {
            if kind == "function_definition" && ch.kind() == "compound_statement" {
                // Statements inside a body are not function definitions.
                visit_local_classes(ch, err, acc);
                continue;
            }
            go(ch, err, acc);
        }
    }
    // Bodies hold no nested function definitions, except local classes;
    // walk them only for those.
    fn visit_local_classes(body: Node, under_error: bool, acc: &mut (usize, usize)) {
        let mut c = body.walk();
        for ch in body.children(&mut c) {
            if matches!(
                ch.kind(),
                "class_specifier" | "struct_specifier" | "declaration" | "ERROR"
            ) {
                go(ch, under_error, acc);
            }
        }
    }
    let mut acc = (0, 0);
    go(root, false, &mut acc);
    acc
}
