//! The written text of declarations: qualified names split at their last
//! scope, template arguments stripped, base clauses split, comment markers
//! removed. Pure string work, no syntax tree.

pub(super) fn collapse_ws(s: &str) -> String {
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

pub(super) fn join_scope(a: &str, b: &str) -> String {
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
pub(super) fn strip_template_args_keep_operator(name: &str) -> String {
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
pub(super) fn strip_template_args_keep_specialisation(written: &str) -> String {
    let (_, last) = split_last_scope(written);
    last
}

/// Split a base clause (`: public A<T>, private B`) into bases as written.
pub(super) fn split_bases(clause: &str) -> Vec<String> {
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
