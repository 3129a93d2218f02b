//! C++ parsing with tree-sitter-cpp: entities, includes, calls and parse
//! quality for one file.
//!
//! The parser runs on the macro-neutralised text (see [`crate::ingest::macros`]),
//! whose byte offsets equal the original's, and slices every piece of text
//! it records (signatures, code, comments) from the *original* source, so
//! what users see is what is in their file.
//!
//! This module knows one file at a time. Resolving names across files
//! (is `A::f` a method of class `A`? which `f` does a call mean?) happens
//! in [`crate::ingest::build`].

use codegloss_core::{EntityKind, Param, ParseStats, Span};
use tree_sitter::{Node, Parser, Tree};

use crate::config::ParseConfig;
use crate::ingest::macros;

/// A call expression found in a function body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRef {
    /// Called name, without scope or template arguments (`fillHalo`).
    pub name: String,
    /// Scope as written (`Kokkos`, `detail::HaloCells`), template arguments stripped.
    pub qualifier: Option<String>,
    /// Called on `this` or unqualified inside a class.
    pub on_this: bool,
    /// Called through `obj.` or `ptr->`.
    pub on_object: bool,
    /// 1-based line of the call.
    pub line: u32,
}

/// An entity as found in one file, before cross-file resolution.
#[derive(Debug, Clone)]
pub struct RawEntity {
    /// Kind (callables may be refined to methods in the build step).
    pub kind: EntityKind,
    /// Short name.
    pub name: String,
    /// Qualified name from the lexical scope and the written qualifier.
    pub qualified_name: String,
    /// Lexically enclosing entity in this file (index into the file's list).
    pub parent: Option<usize>,
    /// Qualifier of `qualified_name`.
    pub parent_symbol: String,
    /// Enclosing class for in-class members.
    pub class_name: Option<String>,
    /// For out-of-class definitions: the written scope (`BareField`, `ippl`), template args stripped.
    pub written_scope: Option<String>,
    /// Full span (template header included).
    pub span: Span,
    /// Declaration head, whitespace collapsed.
    pub signature: String,
    /// Return type.
    pub return_type: Option<String>,
    /// Parameters.
    pub params: Vec<Param>,
    /// Template parameter list.
    pub template_params: Option<String>,
    /// Base classes as written.
    pub bases: Vec<String>,
    /// Leading doc comment.
    pub doc_comment: Option<String>,
    /// Has a body.
    pub is_definition: bool,
    /// Byte offset where the body starts (`{` of a function or class), for splitting.
    pub body_start: Option<u32>,
    /// Spans of the body's top-level statements or members, for splitting.
    pub pieces: Vec<Span>,
    /// Calls made in the body.
    pub calls: Vec<CallRef>,
}

/// What one C++ file gives.
#[derive(Debug, Clone, Default)]
pub struct ParsedCpp {
    /// Entities in source order.
    pub entities: Vec<RawEntity>,
    /// `#include` directives: target, system, line.
    pub includes: Vec<(String, bool, u32)>,
    /// Function-like macros defined here: name → first identifier of the body.
    pub macro_types: Vec<(String, String)>,
    /// Parse quality.
    pub stats: ParseStats,
    /// Lines of ERROR nodes that hide function bodies (for warnings).
    pub error_lines: Vec<u32>,
}

/// Parse one C++ file.
pub fn parse_cpp(src: &str, cfg: &ParseConfig) -> Result<ParsedCpp, String> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cpp::LANGUAGE.into())
        .map_err(|e| e.to_string())?;
    // tree-sitter addresses bytes with u32; files over 4 GiB never get here
    // (the walker caps file size).
    let raw_tree = parser.parse(src, None).ok_or("parser returned no tree")?;
    let (raw_functions, raw_in_error) = function_error_counts(raw_tree.root_node());

    let n = macros::neutralise(src, &cfg.attribute_macros, &cfg.macro_replacements);
    let mut text = n.text;
    let mut count = n.count;
    let mut tree = parser.parse(&text, None).ok_or("parser returned no tree")?;
    if cfg.generic_caps_rule {
        (text, tree, count) = generic_caps_pass(&mut parser, text, tree, count);
    }
    let root = tree.root_node();
    let (functions, in_error) = function_error_counts(root);
    let mut error_lines = Vec::new();
    collect_error_lines(root, &mut error_lines);

    let mut out = ParsedCpp {
        stats: ParseStats {
            functions: functions as u32,
            functions_in_error: in_error as u32,
            functions_in_error_raw: raw_in_error as u32,
            functions_raw: raw_functions as u32,
            error_nodes: count_errors(root) as u32,
            neutralised_macros: count,
        },
        error_lines,
        ..ParsedCpp::default()
    };
    let mut walker = Walker {
        src,
        parsed: &text,
        out: &mut out,
        scope: Vec::new(),
    };
    walker.visit_children(root);
    Ok(out)
}

/// Try blanking ALL_CAPS identifiers near ERROR nodes, keeping each one
/// that lowers the number of ERROR nodes.
fn generic_caps_pass(
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
            if !macros::is_all_caps(word) {
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

fn count_errors(node: Node) -> usize {
    let mut n = usize::from(node.is_error() || node.is_missing());
    if node.has_error() {
        let mut c = node.walk();
        for ch in node.children(&mut c) {
            n += count_errors(ch);
        }
    }
    n
}

fn collect_error_ranges(node: Node, out: &mut Vec<(usize, usize)>) {
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

fn collect_error_lines(node: Node, out: &mut Vec<u32>) {
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

struct Walker<'a> {
    src: &'a str,
    /// The neutralised text the tree was parsed from (same length as `src`).
    parsed: &'a str,
    out: &'a mut ParsedCpp,
    scope: Vec<Frame>,
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Remove template argument lists: `BareField<T, Dim>::Inner<X>` → `BareField::Inner`.
pub fn strip_template_args(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    out
}

fn span_of(node: Node) -> Span {
    Span {
        start_byte: node.start_byte() as u32,
        end_byte: node.end_byte() as u32,
        start_line: node.start_position().row as u32 + 1,
        end_line: node.end_position().row as u32 + 1,
    }
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
            let ws = strip_template_args(ws);
            e.qualified_name = join_scope(&e.parent_symbol, &format!("{ws}::{name}"));
            e.parent_symbol = join_scope(&e.parent_symbol, &ws);
            e.written_scope = Some(ws);
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
            let mut c = b.walk();
            e.pieces = b
                .named_children(&mut c)
                .filter(|ch| ch.kind() != "comment")
                .map(span_of)
                .collect();
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
            let sp = sp.trim_start_matches("::").to_string();
            e.qualified_name = join_scope(&e.parent_symbol, &format!("{sp}::{name}"));
            e.parent_symbol = join_scope(&e.parent_symbol, &sp);
            e.written_scope = Some(sp);
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
                let mut c = b.walk();
                e.pieces = b
                    .named_children(&mut c)
                    .filter(|ch| ch.kind() != "comment")
                    .map(span_of)
                    .collect();
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

fn join_scope(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

/// Split `A<X>::B::f` into (`Some("A<X>::B")`, `f`), at the last `::`
/// outside template brackets.
pub fn split_last_scope(written: &str) -> (Option<String>, String) {
    let mut depth = 0i32;
    let mut last = None;
    let b = written.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                last = Some(i);
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    // `operator<<` and `operator()` contain brackets; find `operator` first.
    if let Some(op) = written.find("operator") {
        let before = &written[..op];
        return match before.rfind("::") {
            Some(k) if k + 2 == before.len() => {
                (Some(before[..k].to_string()), written[op..].to_string())
            }
            _ => (None, written.to_string()),
        };
    }
    match last {
        Some(k) if k > 0 => (Some(written[..k].to_string()), written[k + 2..].to_string()),
        Some(_) => (None, written[2..].to_string()),
        None => (None, written.to_string()),
    }
}

/// `f<int>` → `f`, but `operator<<` stays.
fn strip_template_args_keep_operator(name: &str) -> String {
    if name.starts_with("operator") {
        return name.to_string();
    }
    match name.find('<') {
        Some(k) if k > 0 => name[..k].to_string(),
        _ => name.to_string(),
    }
}

/// For a class frame, the scope segment: `FFT<CCTransform, F>` stays a
/// specialisation, a plain name stays plain.
fn strip_template_args_keep_specialisation(written: &str) -> String {
    let (_, last) = split_last_scope(written);
    last
}

fn find_function_declarator(node: Node) -> Option<Node> {
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
fn declarator_suffix(outer: Node, fd: Node) -> String {
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

fn innermost_name(node: Node, src: &str) -> String {
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

fn param_of(p: Node, src: &str) -> Param {
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
    let name = p
        .child_by_field_name("declarator")
        .map(|d| innermost_name(d, src))
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

fn collect_calls(node: Node, src: &str, out: &mut Vec<CallRef>) {
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

/// Split a base clause (`: public A<T>, private B`) into bases as written.
fn split_bases(clause: &str) -> Vec<String> {
    let body = clause.trim_start().trim_start_matches(':');
    let mut out = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in body.chars() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(collapse_ws(&cur));
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(collapse_ws(&cur));
    }
    out.retain(|b| !b.is_empty());
    out
}

/// The class name a written base refers to: `public ippl::Base<T>` →
/// `ippl::Base`; `public MACRO(A, B)` → `MACRO`.
pub fn base_target(written: &str) -> String {
    let mut s = written.trim();
    for kw in ["public", "protected", "private", "virtual"] {
        for _ in 0..2 {
            if let Some(rest) = s.strip_prefix(kw) {
                if rest.starts_with(char::is_whitespace) {
                    s = rest.trim_start();
                }
            }
        }
    }
    let s = s.trim_start_matches("typename ").trim();
    let cut = s.find(['<', '(']).unwrap_or(s.len());
    s[..cut].trim().trim_start_matches("::").to_string()
}

/// Strip comment markers: `///`, `//!`, `//`, `/** */`, `/*! */`, leading `*`.
pub fn clean_comment(raw: &str) -> String {
    let mut lines = Vec::new();
    for line in raw.lines() {
        let mut l = line.trim();
        for p in ["///<", "//!<", "///", "//!", "//", "/**", "/*!", "/*"] {
            if let Some(rest) = l.strip_prefix(p) {
                l = rest;
                break;
            }
        }
        let l = l.strip_suffix("*/").unwrap_or(l).trim_end();
        let l = l.trim_start();
        let l = if l == "*" {
            ""
        } else {
            l.strip_prefix("* ").unwrap_or(l)
        };
        lines.push(l.to_string());
    }
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> ParsedCpp {
        parse_cpp(src, &ParseConfig::default()).unwrap()
    }

    #[test]
    fn out_of_class_template_method() {
        let p = parse(
            "namespace ippl {\ntemplate <typename T, unsigned Dim>\nvoid BareField<T, Dim>::fillHalo() {\n  halo_m.fillHalo(dview_m);\n}\n}\n",
        );
        let f = p.entities.iter().find(|e| e.name == "fillHalo").unwrap();
        assert_eq!(f.qualified_name, "ippl::BareField::fillHalo");
        assert_eq!(f.parent_symbol, "ippl::BareField");
        assert_eq!(f.written_scope.as_deref(), Some("BareField"));
        assert_eq!(
            f.template_params.as_deref(),
            Some("<typename T, unsigned Dim>")
        );
        assert_eq!(f.span.start_line, 2);
        assert_eq!(f.span.end_line, 5);
        assert!(f.is_definition);
        assert_eq!(f.calls[0].name, "fillHalo");
        assert!(f.calls[0].on_object);
    }

    #[test]
    fn qualified_free_function_and_params() {
        let p = parse("/// Start everything.\nvoid ippl::initialize(int& argc, char* argv[], MPI_Comm comm = MPI_COMM_WORLD) {\n  Kokkos::initialize(argc, argv);\n}\n");
        let f = &p.entities[0];
        assert_eq!(f.name, "initialize");
        assert_eq!(f.parent_symbol, "ippl");
        assert_eq!(f.return_type.as_deref(), Some("void"));
        assert_eq!(f.doc_comment.as_deref(), Some("Start everything."));
        assert_eq!(f.params.len(), 3);
        assert_eq!(f.params[0].ty, "int&");
        assert_eq!(f.params[0].name, "argc");
        assert_eq!(f.params[1].ty, "char*[]");
        assert_eq!(f.params[2].default.as_deref(), Some("MPI_COMM_WORLD"));
        assert_eq!(f.calls[0].qualifier.as_deref(), Some("Kokkos"));
        assert_eq!(
            f.signature,
            "void ippl::initialize(int& argc, char* argv[], MPI_Comm comm = MPI_COMM_WORLD)"
        );
    }

    #[test]
    fn kokkos_macros_do_not_break_methods() {
        let src = "template <typename T>\nclass V {\npublic:\n  KOKKOS_INLINE_FUNCTION T& operator()(int i) const { return d[i]; }\n  KOKKOS_FUNCTION void g() { h(); }\n};\n";
        let p = parse(src);
        assert_eq!(p.stats.functions, 2);
        assert_eq!(p.stats.functions_in_error, 0);
        assert!(p.stats.functions_in_error_raw >= 1);
        let op = p.entities.iter().find(|e| e.name == "operator()").unwrap();
        assert_eq!(op.kind, EntityKind::Method);
        assert_eq!(op.qualified_name, "V::operator()");
        assert_eq!(op.return_type.as_deref(), Some("T&"));
        assert!(
            op.signature
                .starts_with("KOKKOS_INLINE_FUNCTION T& operator()"),
            "{}",
            op.signature
        );
    }

    #[test]
    fn generic_caps_rule_fixes_unknown_attribute() {
        let src = "class A {\n  MY_EXPORT_ATTR void f() { g(); }\n  MY_EXPORT_ATTR int h() { return 1; }\n};\n";
        let p = parse(src);
        assert_eq!(p.stats.functions_in_error, 0, "{:?}", p.stats);
    }

    #[test]
    fn macro_base_class_specialisation() {
        let src = "namespace ippl {\n#define BASE(F, B) FFTBase<F, B>\n/** cc */\ntemplate <typename CF>\nclass FFT<CCTransform, CF> : public BASE(CF, backend) {\n  void transform(int d, CF& f);\n};\n}\n";
        let p = parse(src);
        let c = p
            .entities
            .iter()
            .find(|e| e.kind == EntityKind::Class)
            .unwrap();
        assert_eq!(c.name, "FFT<CCTransform, CF>");
        assert_eq!(c.qualified_name, "ippl::FFT<CCTransform, CF>");
        assert_eq!(c.bases, vec!["public BASE(CF, backend)".to_string()]);
        assert_eq!(c.doc_comment.as_deref(), Some("cc"));
        assert_eq!(c.span.start_line, 4);
        assert_eq!(
            p.macro_types,
            vec![("BASE".to_string(), "FFTBase".to_string())]
        );
        let m = p.entities.iter().find(|e| e.name == "transform").unwrap();
        assert_eq!(m.parent_symbol, "ippl::FFT<CCTransform, CF>");
        assert_eq!(m.kind, EntityKind::Method);
        assert!(!m.is_definition);
    }

    #[test]
    fn constructors_destructors_aliases() {
        let src = "struct S : Base {\n  S(int a) : x(a) {}\n  ~S();\n  using T = int;\n  typedef double R;\n  int x;\n};\nS::~S() {}\nenum class Dir { A, B };\nunion U { int i; float f; };\nclass Fwd;\n";
        let p = parse(src);
        let kinds: Vec<(EntityKind, &str)> = p
            .entities
            .iter()
            .map(|e| (e.kind, e.name.as_str()))
            .collect();
        assert!(kinds.contains(&(EntityKind::Struct, "S")));
        assert!(kinds.contains(&(EntityKind::Constructor, "S")));
        assert!(kinds.contains(&(EntityKind::Destructor, "~S")));
        assert!(kinds.contains(&(EntityKind::TypeAlias, "T")));
        assert!(kinds.contains(&(EntityKind::TypeAlias, "R")));
        assert!(kinds.contains(&(EntityKind::Enum, "Dir")));
        assert!(kinds.contains(&(EntityKind::Union, "U")));
        assert!(kinds.contains(&(EntityKind::Class, "Fwd")));
        let ctor = p
            .entities
            .iter()
            .find(|e| e.kind == EntityKind::Constructor)
            .unwrap();
        assert_eq!(ctor.signature, "S(int a)");
        let s = p
            .entities
            .iter()
            .find(|e| e.name == "S" && e.kind == EntityKind::Struct)
            .unwrap();
        assert_eq!(s.bases, vec!["Base".to_string()]);
    }

    #[test]
    fn comments_trailing_code_are_not_doc() {
        let src =
            "int a; // about a\nvoid f();\n\n// detached\n\nvoid g();\n// one\n// two\nvoid h();\n";
        let p = parse(src);
        let doc = |n: &str| {
            p.entities
                .iter()
                .find(|e| e.name == n)
                .unwrap()
                .doc_comment
                .clone()
        };
        assert_eq!(doc("f"), None);
        assert_eq!(doc("g"), None);
        assert_eq!(doc("h").as_deref(), Some("one\ntwo"));
    }

    #[test]
    fn includes_recorded() {
        let p = parse("#include \"Field/BareField.h\"\n#include <vector>\n");
        assert_eq!(
            p.includes,
            vec![
                ("Field/BareField.h".into(), false, 1),
                ("vector".into(), true, 2)
            ]
        );
    }

    #[test]
    fn broken_code_never_panics() {
        for src in [
            "{{{{",
            "}}}}",
            "class {",
            "template <",
            "void f(",
            "namespace { int",
            "\0\0",
            "operator",
        ] {
            let _ = parse(src);
        }
    }

    #[test]
    fn base_targets() {
        assert_eq!(base_target("public ippl::Base<T, 3>"), "ippl::Base");
        assert_eq!(base_target("public virtual Foo"), "Foo");
        assert_eq!(base_target("public IN_PLACE(F, b)"), "IN_PLACE");
        assert_eq!(base_target("Bar"), "Bar");
    }

    #[test]
    fn split_scopes() {
        assert_eq!(
            split_last_scope("A<X::Y>::f"),
            (Some("A<X::Y>".into()), "f".into())
        );
        assert_eq!(
            split_last_scope("Inform::operator<<"),
            (Some("Inform".into()), "operator<<".into())
        );
        assert_eq!(split_last_scope("operator()"), (None, "operator()".into()));
        assert_eq!(split_last_scope("::f"), (None, "f".into()));
    }
}
