//! What the syntax nodes of a declaration say: the function declarator
//! inside pointer and reference declarators, the return type's `*`/`&`,
//! parameter types, names and defaults, and the calls in a body.

use codegloss_core::{Param, Span};
use tree_sitter::Node;

use super::names::{
    collapse_ws, split_last_scope, strip_template_args, strip_template_args_keep_operator,
};
use super::CallRef;

pub(super) fn span_of(node: Node) -> Span {
    Span {
        start_byte: node.start_byte() as u32,
        end_byte: node.end_byte() as u32,
        start_line: node.start_position().row as u32 + 1,
        end_line: node.end_position().row as u32 + 1,
    }
}

/// Spans of a body's top-level statements or members (comments left
/// out), where a long body may be split.
pub(super) fn body_pieces(body: Node) -> Vec<Span> {
    let mut c = body.walk();
    body.named_children(&mut c)
        .filter(|ch| ch.kind() != "comment")
        .map(span_of)
        .collect()
}

pub(super) fn find_function_declarator(node: Node) -> Option<Node> {
    let mut cur = node;
    for _ in 0..16 {
        if cur.kind() == "function_declarator" {
            return Some(cur);
        }
        cur = inner_declarator(cur)?;
    }
    None
}

/// The declarator wrapped by a pointer/reference/array/... declarator.
/// `reference_declarator` has no field name for it, so fall back to its
/// last named child.
fn inner_declarator(node: Node) -> Option<Node> {
    node.child_by_field_name("declarator").or_else(|| {
        if node.kind() == "reference_declarator" {
            node.named_child(node.named_child_count().checked_sub(1)?)
        } else {
            None
        }
    })
}

/// `*`, `&`, `&&` of the declarators wrapping the function declarator.
pub(super) fn declarator_suffix(outer: Node, fd: Node) -> String {
    let mut s = String::new();
    let mut cur = outer;
    for _ in 0..16 {
        if cur.id() == fd.id() {
            break;
        }
        match cur.kind() {
            "pointer_declarator" => s.push('*'),
            "reference_declarator" => {
                let mut c = cur.walk();
                let amp = cur.children(&mut c).next().map(|n| n.kind()).unwrap_or("&");
                s.push_str(if amp == "&&" { "&&" } else { "&" });
            }
            _ => {}
        }
        match inner_declarator(cur) {
            Some(n) => cur = n,
            None => break,
        }
    }
    s
}

pub(super) fn innermost_name(node: Node, src: &str) -> String {
    let mut cur = node;
    for _ in 0..16 {
        match cur.kind() {
            "identifier" | "type_identifier" | "field_identifier" | "primitive_type" => {
                return src.get(cur.byte_range()).unwrap_or("").to_string();
            }
            _ => {}
        }
        match cur.child_by_field_name("declarator").or_else(|| {
            let mut c = cur.walk();
            let found = cur.named_children(&mut c).find(|ch| {
                matches!(
                    ch.kind(),
                    "identifier" | "type_identifier" | "field_identifier"
                )
            });
            found
        }) {
            Some(n) => cur = n,
            None => break,
        }
    }
    String::new()
}

pub(super) fn param_of(p: Node, src: &str) -> Param {
    let text = src.get(p.byte_range()).unwrap_or("");
    let default = p
        .child_by_field_name("default_value")
        .map(|d| collapse_ws(src.get(d.byte_range()).unwrap_or("")));
    let decl_end = match p.child_by_field_name("default_value") {
        Some(d) => {
            // Cut at the `=` before the default value.
            let upto = d.start_byte() - p.start_byte();
            text[..upto].trim_end().trim_end_matches('=').to_string()
        }
        None => text.to_string(),
    };
    // A name the parse text has but the source has not (the `_` that
    // neutralisation gives an unnamed defaulted parameter) reads as
    // blank: the parameter is unnamed.
    let name = p
        .child_by_field_name("declarator")
        .map(|d| innermost_name(d, src).trim().to_string())
        .unwrap_or_default();
    let ty = if name.is_empty() {
        collapse_ws(&decl_end)
    } else {
        match decl_end.rfind(name.as_str()) {
            Some(k) => collapse_ws(&format!(
                "{}{}",
                &decl_end[..k],
                &decl_end[k + name.len()..]
            )),
            None => collapse_ws(&decl_end),
        }
    };
    let ty = ty.replace(" &", "&").replace(" *", "*").replace(" [", "[");
    Param { ty, name, default }
}

pub(super) fn collect_calls(node: Node, src: &str, out: &mut Vec<CallRef>) {
    if node.kind() == "call_expression" {
        if let Some(f) = node.child_by_field_name("function") {
            if let Some(call) = call_ref(f, src) {
                out.push(call);
            }
        }
    }
    let mut c = node.walk();
    for ch in node.children(&mut c) {
        collect_calls(ch, src, out);
    }
}

fn call_ref(f: Node, src: &str) -> Option<CallRef> {
    let line = f.start_position().row as u32 + 1;
    let text = |n: Node| src.get(n.byte_range()).unwrap_or("").to_string();
    let mk = |name: String, qualifier: Option<String>, on_this: bool, on_object: bool| {
        let name = strip_template_args_keep_operator(&name);
        (!name.is_empty()
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_'))
        .then_some(CallRef {
            name,
            qualifier,
            on_this,
            on_object,
            line,
        })
    };
    match f.kind() {
        "identifier" => mk(text(f), None, false, false),
        "template_function" => mk(text(f.child_by_field_name("name")?), None, false, false),
        "qualified_identifier" => {
            let written = strip_template_args(&text(f));
            let (scope, name) = split_last_scope(&written);
            mk(name, scope, false, false)
        }
        "field_expression" => {
            let field = f.child_by_field_name("field")?;
            let arg = f.child_by_field_name("argument");
            let on_this = arg.is_some_and(|a| a.kind() == "this");
            let name = match field.kind() {
                "template_method" => text(field.child_by_field_name("name")?),
                _ => text(field),
            };
            mk(name, None, on_this, !on_this)
        }
        _ => None,
    }
}
