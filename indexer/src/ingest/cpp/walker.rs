//! The walk over one file's syntax tree: namespaces, records, enums,
//! aliases and functions become [`RawEntity`]s with their lexical scope;
//! `#include`s and function-like macro definitions are recorded too.
//!
//! Text is always sliced from the original source (`src`), never from the
//! macro-neutralised text the tree was parsed from.

use codegloss_core::{EntityKind, Span};
use tree_sitter::Node;

use super::declarators::{
    body_pieces, collect_calls, declarator_suffix, find_function_declarator, innermost_name,
    param_of, span_of,
};
use super::names::{
    clean_comment, collapse_ws, join_scope, split_bases, split_last_scope, strip_template_args,
    strip_template_args_keep_operator, strip_template_args_keep_specialisation,
};
use super::{ParsedCpp, RawEntity};

/// Lexical scope during the walk.
#[derive(Debug, Clone)]
struct Frame {
    /// Namespace or class name segment.
    name: String,
    /// Entity index when the frame is an entity of this file.
    entity: Option<usize>,
    /// Is this a class/struct/union?
    is_record: bool,
}

/// Record what the tree under `root` declares into `out`. `parsed` is the
/// neutralised text the tree was parsed from (same length as `src`).
pub(super) fn walk<'a>(src: &'a str, parsed: &'a str, root: Node<'a>, out: &'a mut ParsedCpp) {
    let mut walker = Walker {
        src,
        parsed,
        out,
        scope: Vec::new(),
    };
    walker.visit_children(root);
}

struct Walker<'a> {
    src: &'a str,
    /// The neutralised text the tree was parsed from (same length as `src`).
    parsed: &'a str,
    out: &'a mut ParsedCpp,
    scope: Vec<Frame>,
}

impl<'a> Walker<'a> {
    fn text(&self, node: Node) -> &'a str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// The node's span, extended backwards over attribute macros that
    /// were blanked before parsing (`KOKKOS_INLINE_FUNCTION void f()`
    /// starts at the macro, not at `void`).
    fn entity_span(&self, node: Node) -> Span {
        let mut span = span_of(node);
        let start = node.start_byte();
        let parsed = self.parsed.as_bytes();
        let orig = self.src.as_bytes();
        let mut j = start;
        while j > 0 && parsed[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        if let Some(k) = (j..start).find(|&k| !orig[k].is_ascii_whitespace()) {
            span.start_line -= orig[k..start].iter().filter(|&&c| c == b'\n').count() as u32;
            span.start_byte = k as u32;
        }
        span
    }

    fn scope_path(&self) -> String {
        self.scope
            .iter()
            .map(|f| f.name.as_str())
            .filter(|n| !n.is_empty())
            .collect::<Vec<_>>()
            .join("::")
    }

    fn current_parent(&self) -> Option<usize> {
        self.scope.iter().rev().find_map(|f| f.entity)
    }

    fn current_class(&self) -> Option<String> {
        self.scope
            .last()
            .filter(|f| f.is_record)
            .map(|_| self.scope_path())
    }

    fn visit_children(&mut self, node: Node<'a>) {
        let mut c = node.walk();
        let children: Vec<Node<'a>> = node.children(&mut c).collect();
        for ch in children {
            self.visit(ch, None);
        }
    }

    /// `template`: the enclosing `template_declaration` and its parameter list.
    fn visit(&mut self, node: Node<'a>, template: Option<(Node<'a>, Node<'a>)>) {
        match node.kind() {
            "namespace_definition" => self.namespace(node),
            "template_declaration" => {
                let params = node.child_by_field_name("parameters");
                let mut c = node.walk();
                let inner: Vec<Node<'a>> = node
                    .named_children(&mut c)
                    .filter(|ch| Some(ch.id()) != params.map(|p| p.id()))
                    .collect();
                for ch in inner {
                    match params {
                        // Nested `template <> template <...>`: keep the outermost node.
                        Some(p) => self.visit(ch, Some((template.map_or(node, |t| t.0), p))),
                        None => self.visit(ch, template),
                    }
                }
            }
            "class_specifier" | "struct_specifier" | "union_specifier" => {
                self.record(node, template)
            }
            "enum_specifier" => self.enumeration(node, template),
            "function_definition" => self.function(node, template),
            "declaration" | "field_declaration" => self.declaration(node, template),
            "alias_declaration" | "type_definition" | "alias_template_declaration" => {
                self.alias(node, template)
            }
            "preproc_include" => self.include(node),
            "preproc_function_def" => self.macro_def(node),
            "linkage_specification"
            | "preproc_if"
            | "preproc_ifdef"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef"
            | "declaration_list"
            | "field_declaration_list"
            | "ERROR"
            | "translation_unit"
            | "export_declaration" => self.visit_children(node),
            _ => {}
        }
    }

    fn include(&mut self, node: Node<'a>) {
        let Some(path) = node.child_by_field_name("path") else {
            return;
        };
        let raw = self.text(path);
        let system = raw.starts_with('<');
        let target = raw
            .trim_matches(|c| c == '<' || c == '>' || c == '"')
            .to_string();
        if !target.is_empty() {
            self.out
                .includes
                .push((target, system, node.start_position().row as u32 + 1));
        }
    }

    fn macro_def(&mut self, node: Node<'a>) {
        let (Some(name), Some(value)) = (
            node.child_by_field_name("name"),
            node.child_by_field_name("value"),
        ) else {
            return;
        };
        let first = self
            .text(value)
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .find(|w| !w.is_empty() && w != &"typename");
        if let Some(first) = first {
            self.out
                .macro_types
                .push((self.text(name).to_string(), first.to_string()));
        }
    }

    /// Leading doc comment of `node`: comment siblings directly above, with
    /// no blank line between, not trailing a previous statement.
    fn doc_comment(&self, node: Node<'a>) -> Option<String> {
        let mut lines_rev: Vec<String> = Vec::new();
        let mut next_start_row = node.start_position().row;
        let mut cur = node.prev_sibling();
        while let Some(c) = cur {
            if c.kind() != "comment" {
                break;
            }
            let end_row = c.end_position().row;
            if end_row + 1 < next_start_row {
                break; // blank line between
            }
            // A trailing comment after code on the same line belongs to that code.
            if let Some(prev) = c.prev_sibling() {
                if prev.end_position().row == c.start_position().row
                    && prev.end_position().column > 0
                    && prev.kind() != "comment"
                {
                    break;
                }
            }
            lines_rev.push(self.text(c).to_string());
            next_start_row = c.start_position().row;
            cur = c.prev_sibling();
        }
        if lines_rev.is_empty() {
            return None;
        }
        lines_rev.reverse();
        let cleaned = clean_comment(&lines_rev.join("\n"));
        (!cleaned.is_empty()).then_some(cleaned)
    }

    fn push(&mut self, e: RawEntity) -> usize {
        self.out.entities.push(e);
        self.out.entities.len() - 1
    }

    fn base_entity(
        &self,
        kind: EntityKind,
        name: String,
        outer: Node<'a>,
        template: Option<(Node<'a>, Node<'a>)>,
    ) -> RawEntity {
        let scope = self.scope_path();
        let qualified_name = if scope.is_empty() {
            name.clone()
        } else {
            format!("{scope}::{name}")
        };
        RawEntity {
            kind,
            name,
            qualified_name,
            parent: self.current_parent(),
            parent_symbol: scope,
            class_name: self.current_class(),
            written_scope: None,
            span: self.entity_span(outer),
            signature: String::new(),
            return_type: None,
            params: Vec::new(),
            template_params: template.map(|(_, p)| collapse_ws(self.text(p))),
            bases: Vec::new(),
            doc_comment: self.doc_comment(outer),
            is_definition: false,
            body_start: None,
            pieces: Vec::new(),
            calls: Vec::new(),
        }
    }

    fn head_text(&self, outer: Node<'a>, body_start: usize) -> String {
        let start = self.entity_span(outer).start_byte as usize;
        collapse_ws(self.src.get(start..body_start).unwrap_or(""))
    }

    fn namespace(&mut self, node: Node<'a>) {
        let name = node
            .child_by_field_name("name")
            .map(|n| collapse_ws(self.text(n)))
            .unwrap_or_default();
        let body = node.child_by_field_name("body");
        let display = if name.is_empty() {
            "(anonymous)".to_string()
        } else {
            name.clone()
        };
        let mut e = self.base_entity(EntityKind::Namespace, display, node, None);
        e.is_definition = body.is_some();
        if let Some(b) = body {
            e.body_start = Some(b.start_byte() as u32);
            e.signature = self.head_text(node, b.start_byte());
        }
        let id = self.push(e);
        if let Some(b) = body {
            // `namespace a::b` pushes both segments as one frame.
            self.scope.push(Frame {
                name,
                entity: Some(id),
                is_record: false,
            });
            self.visit(b, None);
            self.scope.pop();
        }
    }

    fn record(&mut self, node: Node<'a>, template: Option<(Node<'a>, Node<'a>)>) {
        let kind = match node.kind() {
            "struct_specifier" => EntityKind::Struct,
            "union_specifier" => EntityKind::Union,
            _ => EntityKind::Class,
        };
        let Some(name_node) = node.child_by_field_name("name") else {
            // Anonymous struct/union: visit members in the current scope.
            if let Some(body) = node.child_by_field_name("body") {
                self.visit(body, None);
            }
            return;
        };
        let written = collapse_ws(self.text(name_node));
        let body = node.child_by_field_name("body");
        let outer = template.map_or(node, |t| t.0);
        // `class A::B { ... }` defines B inside A.
        let (written_scope, name) = split_last_scope(&written);
        let mut e = self.base_entity(kind, name.clone(), outer, template);
        if let Some(ws) = &written_scope {
            place_in_written_scope(&mut e, strip_template_args(ws));
        }
        let mut c = node.walk();
        for ch in node.children(&mut c) {
            if ch.kind() == "base_class_clause" {
                e.bases = split_bases(self.text(ch));
            }
        }
        e.is_definition = body.is_some();
        if let Some(b) = body {
            e.body_start = Some(b.start_byte() as u32);
            e.signature = self.head_text(outer, b.start_byte());
            e.pieces = body_pieces(b);
        } else {
            e.signature = collapse_ws(self.text(outer))
                .trim_end_matches(';')
                .to_string();
        }
        let id = self.push(e);
        if let Some(b) = body {
            let seg = strip_template_args_keep_specialisation(&written);
            self.scope.push(Frame {
                name: seg,
                entity: Some(id),
                is_record: true,
            });
            self.visit(b, None);
            self.scope.pop();
        }
    }

    fn enumeration(&mut self, node: Node<'a>, template: Option<(Node<'a>, Node<'a>)>) {
        let Some(name_node) = node.child_by_field_name("name") else {
            return;
        };
        let outer = template.map_or(node, |t| t.0);
        let name = collapse_ws(self.text(name_node));
        let mut e = self.base_entity(EntityKind::Enum, name, outer, template);
        let body = node.child_by_field_name("body");
        e.is_definition = body.is_some();
        e.signature = match body {
            Some(b) => self.head_text(outer, b.start_byte()),
            None => collapse_ws(self.text(outer)),
        };
        self.push(e);
    }

    fn alias(&mut self, node: Node<'a>, template: Option<(Node<'a>, Node<'a>)>) {
        let outer = template.map_or(node, |t| t.0);
        let name = match node.kind() {
            "type_definition" => {
                // typedef struct {...} X; → the struct is anonymous, X names it.
                let mut c = node.walk();
                let decls: Vec<Node<'a>> =
                    node.children_by_field_name("declarator", &mut c).collect();
                if let Some(ty) = node.child_by_field_name("type") {
                    if matches!(
                        ty.kind(),
                        "class_specifier"
                            | "struct_specifier"
                            | "union_specifier"
                            | "enum_specifier"
                    ) && ty.child_by_field_name("body").is_some()
                    {
                        self.visit(ty, None);
                    }
                }
                decls
                    .last()
                    .map(|d| innermost_name(*d, self.src))
                    .unwrap_or_default()
            }
            _ => node
                .child_by_field_name("name")
                .map(|n| collapse_ws(self.text(n)))
                .unwrap_or_default(),
        };
        if name.is_empty() {
            return;
        }
        let mut e = self.base_entity(EntityKind::TypeAlias, name, outer, template);
        e.is_definition = true;
        e.signature = collapse_ws(self.text(outer))
            .trim_end_matches(';')
            .to_string();
        self.push(e);
    }

    /// `declaration` / `field_declaration`: function declarations become
    /// entities; records defined inline (`struct X {...} x;`) are visited.
    fn declaration(&mut self, node: Node<'a>, template: Option<(Node<'a>, Node<'a>)>) {
        if let Some(ty) = node.child_by_field_name("type") {
            if matches!(
                ty.kind(),
                "class_specifier" | "struct_specifier" | "union_specifier" | "enum_specifier"
            ) {
                let has_body = ty.child_by_field_name("body").is_some();
                let has_declarator = node.child_by_field_name("declarator").is_some();
                if has_body || !has_declarator {
                    // `class X {...};` (inside templates this shape appears) or a forward declaration `class X;`.
                    self.visit(ty, if has_declarator { None } else { template });
                    if !has_declarator {
                        return;
                    }
                }
            }
        }
        let mut c = node.walk();
        let declarators: Vec<Node<'a>> =
            node.children_by_field_name("declarator", &mut c).collect();
        for d in declarators {
            if find_function_declarator(d).is_some() {
                self.function_like(node, d, template, false);
            }
        }
    }

    fn function(&mut self, node: Node<'a>, template: Option<(Node<'a>, Node<'a>)>) {
        let Some(d) = node.child_by_field_name("declarator") else {
            return;
        };
        self.function_like(
            node,
            d,
            template,
            node.child_by_field_name("body").is_some(),
        );
    }

    fn function_like(
        &mut self,
        node: Node<'a>,
        declarator: Node<'a>,
        template: Option<(Node<'a>, Node<'a>)>,
        has_body: bool,
    ) {
        let Some(fd) = find_function_declarator(declarator) else {
            return;
        };
        let Some(name_node) = fd.child_by_field_name("declarator") else {
            return;
        };
        let written = collapse_ws(self.text(name_node));
        if written.is_empty() {
            return;
        }
        let (scope_part, name) = split_last_scope(&written);
        let name = strip_template_args_keep_operator(&name);
        let in_class = self.current_class();
        let class_last = self
            .scope
            .last()
            .filter(|f| f.is_record)
            .map(|f| strip_template_args(&f.name));
        let base_name_for_ctor = |n: &str| n.trim_start_matches('~').to_string();
        let kind = if name.starts_with('~') {
            EntityKind::Destructor
        } else if let Some(sp) = &scope_part {
            let last = strip_template_args(sp.rsplit("::").next().unwrap_or(sp));
            if last == base_name_for_ctor(&name) {
                EntityKind::Constructor
            } else {
                EntityKind::Function // refined in the build step when the scope is a class
            }
        } else if class_last.as_deref() == Some(name.as_str()) {
            EntityKind::Constructor
        } else if in_class.is_some() {
            EntityKind::Method
        } else {
            EntityKind::Function
        };
        let outer = template.map_or(node, |t| t.0);
        let mut e = self.base_entity(kind, name.clone(), outer, template);
        if let Some(sp) = &scope_part {
            let sp = strip_template_args(sp);
            place_in_written_scope(&mut e, sp.trim_start_matches("::").to_string());
            if kind == EntityKind::Destructor || kind == EntityKind::Constructor {
                e.class_name = Some(e.parent_symbol.clone());
            }
        }
        // Return type: the `type` field plus pointer/reference declarators around the function declarator.
        if let Some(ty) = node.child_by_field_name("type") {
            let mut rt = collapse_ws(self.text(ty));
            // `const T&`: qualifiers before the type are children of the node.
            let mut c = node.walk();
            let quals: Vec<&str> = node
                .children(&mut c)
                .take_while(|ch| ch.id() != ty.id())
                .filter(|ch| ch.kind() == "type_qualifier")
                .map(|ch| self.text(ch))
                .collect();
            if !quals.is_empty() {
                rt = format!("{} {rt}", quals.join(" "));
            }
            rt.push_str(&declarator_suffix(declarator, fd));
            e.return_type = Some(rt);
        }
        if let Some(pl) = fd.child_by_field_name("parameters") {
            let mut c = pl.walk();
            e.params = pl
                .named_children(&mut c)
                .filter(|p| p.kind() != "comment")
                .map(|p| param_of(p, self.src))
                .collect();
        }
        let body = node.child_by_field_name("body");
        e.is_definition = has_body;
        match body {
            Some(b) if has_body => {
                // The head ends where the body or the constructor's initialiser list starts.
                let mut c = node.walk();
                let head_end = node
                    .children(&mut c)
                    .find(|ch| {
                        matches!(
                            ch.kind(),
                            "field_initializer_list" | "compound_statement" | "try_statement"
                        )
                    })
                    .map_or(b.start_byte(), |ch| ch.start_byte());
                e.signature = self.head_text(outer, head_end);
                e.body_start = Some(b.start_byte() as u32);
                e.pieces = body_pieces(b);
                let mut calls = Vec::new();
                collect_calls(b, self.src, &mut calls);
                e.calls = calls;
            }
            _ => {
                let end = if node.kind() == "function_definition" {
                    // `= default;` / `= delete;` definitions.
                    node.end_byte()
                } else {
                    declarator.end_byte()
                };
                e.signature =
                    collapse_ws(self.src.get(e.span.start_byte as usize..end).unwrap_or(""))
                        .trim_end_matches(';')
                        .to_string();
            }
        }
        self.push(e);
    }
}

/// An out-of-line or nested definition (`void A::f()`, `class A::B`): the
/// written scope `ws` (template arguments stripped) joins the lexical one.
fn place_in_written_scope(e: &mut RawEntity, ws: String) {
    e.qualified_name = join_scope(&e.parent_symbol, &format!("{ws}::{}", e.name));
    e.parent_symbol = join_scope(&e.parent_symbol, &ws);
    e.written_scope = Some(ws);
}
