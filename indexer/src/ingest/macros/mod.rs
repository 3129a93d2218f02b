//! Macro neutralisation before parsing.
//!
//! Scientific C++ puts attribute-like macros in front of declarations
//! (`LIB_INLINE_FUNCTION`, `__host__ __device__`, ...). tree-sitter does
//! not expand macros, so these turn into ERROR nodes and hide whole
//! function bodies. We rewrite them in a copy of the source *without
//! changing any byte offset*: a macro becomes spaces of the same length, or
//! a same-length-or-shorter piece of C++ padded with spaces (for macros
//! that stand for syntax, such as `LIB_LAMBDA` → `[=]`). Spans found in
//! the rewritten text are therefore exact in the original.
//!
//! Function-like macros used where a type is expected (a base class
//! written as `public BASE_MACRO(T, B)`, or `using Base = BASE_MACRO(T)`)
//! get their parentheses turned into angle brackets, which keeps the
//! length and makes them parse as a template type. Valid C++ that the
//! grammar cannot read is rewritten the same way ([`grammar`]).

use std::collections::{BTreeMap, BTreeSet};

mod caps;
pub mod defines;
mod grammar;

pub use caps::{blank_identifier, caps_use, is_all_caps, is_fallback_candidate, CapsUse};
pub use defines::{MacroRule, RepoMacros};
pub use grammar::{GrammarCounts, GrammarRewrite};

/// Is `b` a byte that can continue a C identifier?
fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte ranges of every whole-identifier occurrence of an identifier
/// matching `pattern` (exact, or prefix when `pattern` ends with `*`),
/// outside comments, string literals and preprocessor `#define` lines.
pub fn find_identifiers(src: &str, pattern: &str) -> Vec<(usize, usize)> {
    let (prefix, wildcard) = match pattern.strip_suffix('*') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut out = Vec::new();
    for (start, end) in code_identifiers(src) {
        let word = &src[start..end];
        let hit = if wildcard {
            word.starts_with(prefix)
        } else {
            word == prefix
        };
        if hit {
            out.push((start, end));
        }
    }
    out
}

/// Byte ranges of all identifiers in code (not in comments, strings or
/// preprocessor directive lines).
pub fn code_identifiers(src: &str) -> Vec<(usize, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if line_start && (c == b' ' || c == b'\t') {
            i += 1;
            continue;
        }
        if line_start && c == b'#' {
            // Skip the directive with its continuation lines.
            while i < b.len() {
                if b[i] == b'\n' && (i == 0 || b[i - 1] != b'\\') {
                    break;
                }
                i += 1;
            }
            continue;
        }
        line_start = false;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i = (i + 2).min(b.len());
            continue;
        }
        if c == b'"' || c == b'\'' {
            // Raw strings R"(...)" are rare in scientific code; treat them
            // as ordinary strings up to the closing quote.
            let quote = c;
            i += 1;
            while i < b.len() && b[i] != quote && b[i] != b'\n' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(b.len());
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && ident_byte(b[i]) {
                i += 1;
            }
            out.push((start, i));
            continue;
        }
        if c.is_ascii_digit() {
            while i < b.len() && (ident_byte(b[i]) || b[i] == b'.') {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    out
}

/// Replace `range` of `buf` with `replacement` padded with spaces to the
/// same length. The replacement must not be longer than the range.
fn overwrite(buf: &mut [u8], range: (usize, usize), replacement: &str) {
    let (s, e) = range;
    let r = replacement.as_bytes();
    debug_assert!(r.len() <= e - s);
    for (k, slot) in buf[s..e].iter_mut().enumerate() {
        *slot = r.get(k).copied().unwrap_or(b' ');
    }
}

/// Blank `range` of `buf`, keeping its newlines (so rows stay exact).
pub(crate) fn blank(buf: &mut [u8], range: (usize, usize)) {
    for slot in &mut buf[range.0..range.1] {
        if *slot != b'\n' {
            *slot = b' ';
        }
    }
}

/// Rewrite one use of a repository macro; false when the use does not
/// have the shape the rule needs (a function-like macro named without its
/// arguments, for example).
fn apply_rule(src: &str, buf: &mut [u8], (s, e): (usize, usize), rule: &MacroRule) -> bool {
    match rule {
        MacroRule::Blank { with_args: false } => blank(buf, (s, e)),
        MacroRule::Blank { with_args: true } => match argument_list_end(src, e) {
            Some((_, close)) => blank(buf, (s, close + 1)),
            None => return false,
        },
        MacroRule::Replace(text) => overwrite(buf, (s, e), text),
        MacroRule::Unwrap => match argument_list_end(src, e) {
            Some((open, close)) => {
                blank(buf, (s, open + 1));
                blank(buf, (close, close + 1));
            }
            None => return false,
        },
        MacroRule::Declarations { with_args } => {
            let end = if *with_args {
                match argument_list_end(src, e) {
                    Some((_, close)) => close + 1,
                    None => return false,
                }
            } else {
                e
            };
            if !stands_alone(src, s, end) {
                return false;
            }
            blank(buf, (s, end));
        }
    }
    true
}

/// Whether the text `s..end` stands alone on its lines as a declaration
/// would: nothing before it on its first line, nothing after it on its
/// last but a `;` or a comment, and no block opening after it (then it is
/// the head of a definition, `TEST(a, b) {`).
fn stands_alone(src: &str, s: usize, end: usize) -> bool {
    let line_start = src[..s].rfind('\n').map_or(0, |n| n + 1);
    if !src[line_start..s].trim().is_empty() {
        return false;
    }
    let rest = &src[end..];
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let tail = line.trim_start().trim_start_matches(';').trim_start();
    if !(tail.is_empty() || tail.starts_with("//") || tail.starts_with("/*")) {
        return false;
    }
    !rest.trim_start().starts_with('{')
}

/// The result of neutralising one file.
#[derive(Debug, Clone)]
pub struct Neutralised {
    /// Same length as the input; macros blanked or rewritten.
    pub text: String,
    /// Number of occurrences rewritten.
    pub count: u32,
    /// Of those, the grammar rewrites', one count per
    /// [`GrammarRewrite::ALL`].
    pub grammar: GrammarCounts,
}

/// Spaces, tabs and line ends at the start of `b`.
fn spaces(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_whitespace()).count()
}

/// Where the `(` that follows `end` (after blanks) is, if one does.
fn paren_after(b: &[u8], end: usize) -> Option<usize> {
    let ws = spaces(&b[end..]);
    (b.get(end + ws) == Some(&b'(')).then_some(end + ws)
}

/// The end of the balanced argument list that follows `end` (after
/// blanks), if there is one.
fn argument_list_end(src: &str, end: usize) -> Option<(usize, usize)> {
    let open = paren_after(src.as_bytes(), end)?;
    matching_paren(src, open).map(|close| (open, close))
}

/// Apply the configured attribute macros and replacements, then the
/// repository's own macros ([`RepoMacros`]), and turn function-like macros
/// in type positions into template syntax.
pub fn neutralise(
    src: &str,
    attribute_macros: &[String],
    replacements: &BTreeMap<String, String>,
    repo: &RepoMacros,
    grammar_off: &BTreeSet<GrammarRewrite>,
) -> Neutralised {
    let mut buf = src.as_bytes().to_vec();
    let mut count = 0u32;
    let idents = code_identifiers(src);
    for &(s, e) in &idents {
        let word = &src[s..e];
        if let Some(rep) = replacements.get(word) {
            if rep.len() <= e - s {
                overwrite(&mut buf, (s, e), rep);
                count += 1;
            }
            continue;
        }
        let configured = attribute_macros.iter().any(|m| match m.strip_suffix('*') {
            Some(prefix) => word.starts_with(prefix),
            None => m == word,
        });
        if !configured {
            if let Some(rule) = repo.rules.get(word) {
                count += u32::from(apply_rule(src, &mut buf, (s, e), rule));
                continue;
            }
        }
        if configured {
            // `__launch_bounds__(256)` style: blank the argument list too.
            let mut end = e;
            let rest = &src.as_bytes()[e..];
            let ws = rest
                .iter()
                .take_while(|c| **c == b' ' || **c == b'\t')
                .count();
            if rest.get(ws) == Some(&b'(') && word.starts_with("__") {
                if let Some(close) = matching_paren(src, e + ws) {
                    end = close + 1;
                }
            }
            overwrite(&mut buf, (s, end), "");
            count += 1;
        }
    }
    count += macro_types_to_templates(src, &idents, &mut buf);
    count += code_arguments_to_blocks(src, &idents, &mut buf);
    count += brace_arguments_kept(src, &idents, &mut buf);
    let grammar = grammar::rewrite(src, &idents, &mut buf, grammar_off);
    Neutralised {
        text: String::from_utf8(buf).unwrap_or_else(|_| src.to_string()),
        count: count + grammar.iter().sum::<u32>(),
        grammar,
    }
}

/// Index of the `)` matching the `(` at `open`, when on reasonable
/// distance and not crossing a `;` or `{`.
fn matching_paren(src: &str, open: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut depth = 0usize;
    for (k, &c) in b.iter().enumerate().skip(open).take(2000) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            b';' | b'{' | b'}' => return None,
            _ => {}
        }
    }
    None
}

/// `public MACRO(A, B)` and `= MACRO(A, B);` after `using X` become
/// `public MACRO<A, B>`, when `MACRO` is ALL_CAPS and its arguments hold
/// no parentheses.
fn macro_types_to_templates(src: &str, idents: &[(usize, usize)], buf: &mut [u8]) -> u32 {
    let b = src.as_bytes();
    let mut count = 0;
    for (k, &(s, e)) in idents.iter().enumerate() {
        let word = &src[s..e];
        if !is_all_caps(word) {
            continue;
        }
        let in_base = k > 0 && {
            let prev = &src[idents[k - 1].0..idents[k - 1].1];
            matches!(prev, "public" | "protected" | "private" | "virtual")
                && src[idents[k - 1].1..s].trim().is_empty()
        };
        let in_alias = k >= 2 && {
            let between = src[idents[k - 1].1..s].trim();
            between == "=" && &src[idents[k - 2].0..idents[k - 2].1] == "using"
        };
        if !(in_base || in_alias) {
            continue;
        }
        let Some(open) = paren_after(b, e) else {
            continue;
        };
        let Some(close) = matching_paren(src, open) else {
            continue;
        };
        if src[open + 1..close].contains('(') {
            continue;
        }
        buf[open] = b'<';
        buf[close] = b'>';
        count += 1;
    }
    count
}

/// Keywords that no type can stand before in a declaration: an ALL_CAPS
/// word right before one of them, at the start of a declaration, can only
/// be an attribute macro (`LIB_INLINE long size() const`).
const DECLARATION_KEYWORDS: &[&str] = &[
    "void",
    "bool",
    "char",
    "short",
    "int",
    "long",
    "float",
    "double",
    "signed",
    "unsigned",
    "auto",
    "static",
    "inline",
    "constexpr",
    "consteval",
    "virtual",
    "explicit",
    "friend",
    "extern",
    "template",
];

/// Blank the ALL_CAPS words that stand before a [`DECLARATION_KEYWORDS`]
/// word at the start of a declaration. Run last, on the text the other
/// rules left: these words broke nothing (the ALL_CAPS rule would have
/// blanked them) but would read as part of a return type.
pub fn attributes_before_keywords(src: &str) -> Neutralised {
    let idents = code_identifiers(src);
    let mut buf = src.as_bytes().to_vec();
    let mut count = 0;
    for (k, &(s, e)) in idents.iter().enumerate() {
        let word = &src[s..e];
        if !is_all_caps(word) {
            continue;
        }
        let Some(&(ns, ne)) = idents.get(k + 1) else {
            continue;
        };
        if !src[e..ns].trim().is_empty() || !DECLARATION_KEYWORDS.contains(&&src[ns..ne]) {
            continue;
        }
        let before = src[..s].trim_end();
        let at_start = before.is_empty()
            || before.ends_with([';', '{', '}'])
            || (before.ends_with(':') && !before.ends_with("::"))
            || before.ends_with('>')
                && before
                    .trim_end_matches('>')
                    .ends_with(|c: char| c.is_alphanumeric() || c == ' ');
        if at_start {
            blank(&mut buf, (s, e));
            count += 1;
        }
    }
    Neutralised {
        text: String::from_utf8(buf).unwrap_or_else(|_| src.to_string()),
        count,
        grammar: GrammarCounts::default(),
    }
}

/// `MACRO(for (…) {, for (…) {)` … `MACRO(},})`: a call whose arguments
/// open more blocks than they close, or the reverse, is no function call
/// (a call's arguments always balance their braces) but a macro that
/// writes code, one argument per dimension, say. Its name, parentheses
/// and the commas between its arguments are blanked and the arguments
/// stay, so the blocks they open are closed where the code closes them.
/// `f({})` and `g([&] { … })` balance their braces, and stay.
fn brace_arguments_kept(src: &str, idents: &[(usize, usize)], buf: &mut [u8]) -> u32 {
    /// How far an argument list may reach.
    const MAX_ARGUMENTS: usize = 4096;
    let b = src.as_bytes();
    let mut count = 0;
    'calls: for &(s, e) in idents {
        let Some(open) = paren_after(b, e) else {
            continue;
        };
        let (mut depth, mut opened, mut commas) = (0usize, 0i64, Vec::new());
        let mut close = None;
        for (k, &c) in b.iter().enumerate().skip(open).take(MAX_ARGUMENTS) {
            match c {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(k),
                b'{' => opened += 1,
                b'}' => opened -= 1,
                // Literals, comments and directives could hide or fake a
                // parenthesis: leave such calls alone.
                b'"' | b'\'' | b'#' => continue 'calls,
                b'/' if matches!(b.get(k + 1), Some(b'/' | b'*')) => continue 'calls,
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        if opened == 0 {
            continue;
        }
        blank(buf, (s, e));
        for k in [open, close].into_iter().chain(commas) {
            buf[k] = b' ';
        }
        count += 1;
    }
    count
}

/// `MACRO((statements;))` in statement position (a macro that takes code,
/// such as "run this on the host only") becomes `      {statements;} `: a
/// block, which is what the code is. Only when the inner group holds a
/// `;`, which no expression argument can.
fn code_arguments_to_blocks(src: &str, idents: &[(usize, usize)], buf: &mut [u8]) -> u32 {
    let b = src.as_bytes();
    let mut count = 0;
    for &(s, e) in idents {
        // Statement position: after `;`, `{`, `}`, `)` or at a line start.
        let before = src[..s].trim_end();
        if !(before.is_empty() || before.ends_with([';', '{', '}', ')', ':'])) {
            continue;
        }
        let Some(open) = paren_after(b, e) else {
            continue;
        };
        let Some(close) = code_group_close(src, open) else {
            continue;
        };
        let Some(inner_open) = paren_after(&b[..close], open + 1) else {
            continue;
        };
        let Some(inner_close) = code_group_close(src, inner_open) else {
            continue;
        };
        if !src[inner_close + 1..close].trim().is_empty()
            || !src[inner_open + 1..inner_close].contains(';')
        {
            continue;
        }
        blank(buf, (s, open + 1));
        buf[inner_open] = b'{';
        buf[inner_close] = b'}';
        blank(buf, (inner_close + 1, close + 1));
        count += 1;
    }
    count
}

/// Index of the `)` matching the `(` at `open` across statements and
/// balanced blocks (code passed to a macro), within a bounded distance.
fn code_group_close(src: &str, open: usize) -> Option<usize> {
    let (mut parens, mut braces) = (0usize, 0usize);
    for (k, &c) in src.as_bytes().iter().enumerate().skip(open).take(8000) {
        match c {
            b'(' => parens += 1,
            b')' => {
                parens = parens.checked_sub(1)?;
                if parens == 0 {
                    return (braces == 0).then_some(k);
                }
            }
            b'{' => braces += 1,
            b'}' => braces = braces.checked_sub(1)?,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`neutralise`] with the default macro settings; the text keeps its
    /// length (byte offsets stay valid) whatever is rewritten.
    pub(super) fn neutralise_default(src: &str) -> Neutralised {
        let c = crate::config::ParseConfig::default();
        let n = neutralise(
            src,
            &c.attribute_macros,
            &c.macro_replacements,
            &RepoMacros::default(),
            &BTreeSet::new(),
        );
        assert_eq!(n.text.len(), src.len(), "{}", n.text);
        n
    }

    /// [`neutralise`] with configured macros (a `codegloss.toml`'s
    /// `[parse]`), no repository macros.
    pub(super) fn neutralise_configured(
        src: &str,
        attributes: &[&str],
        replacements: &[(&str, &str)],
    ) -> Neutralised {
        let attributes: Vec<String> = attributes.iter().map(|s| s.to_string()).collect();
        let replacements = replacements
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let n = neutralise(
            src,
            &attributes,
            &replacements,
            &RepoMacros::default(),
            &BTreeSet::new(),
        );
        assert_eq!(n.text.len(), src.len(), "{}", n.text);
        n
    }

    #[test]
    fn blanks_attributes_keeping_offsets() {
        let src = "LIB_INLINE_FUNCTION T& f(int i) const { return v[i]; }\n";
        let n = neutralise_configured(src, &["LIB_INLINE_*"], &[]);
        assert!(n.text.starts_with("                    T& f"), "{}", n.text);
        assert_eq!(n.count, 1);
    }

    #[test]
    fn lambda_macro_becomes_capture() {
        let src = "parallel_for(p, LIB_LAMBDA(const int i) { x(i) = 0; });";
        let n = neutralise_configured(src, &[], &[("LIB_LAMBDA", "[=]")]);
        assert!(n.text.contains("[=]       (const int i)"), "{}", n.text);
    }

    #[test]
    fn the_repositorys_macros_are_rewritten_by_their_rules() {
        let defs = "#define LIB_HD __host__ __device__\n#define LIB_FN LIB_HD inline\n#define LIB_L [=] LIB_HD\n#define LIB_DEPR(m) [[deprecated(m)]]\n#define LIB_STRIP(x) x\n";
        let repo = RepoMacros::from_sources([defs]);
        let src = "LIB_FN int f();\nLIB_DEPR(\"old\") void g();\nvoid h() { run(LIB_L(int i) { k(LIB_STRIP(i)); }); }\n";
        let n = neutralise(src, &[], &BTreeMap::new(), &repo, &BTreeSet::new());
        assert_eq!(n.count, 4);
        let words: Vec<&str> = n.text.split_whitespace().collect();
        assert_eq!(
            words.join(" "),
            "int f(); void g(); void h() { run([=] (int i) { k( i ); }); }"
        );
        assert_eq!(n.text.lines().count(), src.lines().count());
    }

    #[test]
    fn statement_like_pragma_macros_leave_no_trace() {
        let defs = "#if defined(_MSC_VER)\n#define LIB_WARN_POP_() __pragma(warning(pop))\n#else\n#define LIB_WARN_POP_()\n#endif\n";
        let repo = RepoMacros::from_sources([defs]);
        let src = "LIB_WARN_POP_()\nint f() { return 1; }\n";
        let n = neutralise(src, &[], &BTreeMap::new(), &repo, &BTreeSet::new());
        assert_eq!(n.count, 1);
        assert_eq!(
            n.text.split_whitespace().collect::<Vec<_>>().join(" "),
            "int f() { return 1; }"
        );
        assert_eq!(n.text.len(), src.len());
    }

    #[test]
    fn declaration_macros_standing_alone_are_blanked() {
        let defs = "#define MAKE_NAME(T) template <> struct name_of<T> { static const char* get() { return #T; } };\n";
        let repo = RepoMacros::from_sources([defs]);
        let src = "MAKE_NAME(int)\n  MAKE_NAME(long long);  // two\nint f() { return 1; }\nMAKE_NAME(x) {\n}\nauto s = MAKE_NAME(y);\n";
        let n = neutralise(src, &[], &BTreeMap::new(), &repo, &BTreeSet::new());
        assert_eq!(n.count, 2, "{}", n.text);
        let lines: Vec<&str> = n.text.lines().map(str::trim).collect();
        assert_eq!(
            lines[..3],
            ["", ";  // two", "int f() { return 1; }"],
            "{}",
            n.text
        );
        // The head of a definition and a use inside an expression stay.
        assert!(
            n.text.contains("MAKE_NAME(x) {") && n.text.contains("= MAKE_NAME(y);"),
            "{}",
            n.text
        );
        assert_eq!(n.text.len(), src.len());
    }

    #[test]
    fn comments_strings_and_defines_untouched() {
        let src = "#define __host__ X\n// __host__ here\nconst char* s = \"__host__\";\n";
        let n = neutralise_default(src);
        assert_eq!(n.text, src);
        assert_eq!(n.count, 0);
    }

    #[test]
    fn base_class_macro_becomes_template() {
        let src = "class FFT<CC, F> : public BASE_CLASS(F, backend) { using Base = BASE_CLASS(F, backend); };";
        let n = neutralise_default(src);
        assert!(
            n.text.contains("public BASE_CLASS<F, backend>"),
            "{}",
            n.text
        );
        assert!(n.text.contains("= BASE_CLASS<F, backend>;"), "{}", n.text);
    }

    #[test]
    fn cuda_launch_bounds_blanked_with_arguments() {
        let src = "__global__ void __launch_bounds__(256) k(int* x) {}";
        let n = neutralise_default(src);
        assert!(n.text.trim_start().starts_with("void"), "{}", n.text);
        assert!(
            !n.text.contains("launch") && !n.text.contains("256"),
            "{}",
            n.text
        );
    }

    #[test]
    fn generic_blank_skips_calls_and_scopes() {
        let (t, n) = blank_identifier(
            "MY_ATTR void f(); MY_ATTR(x); MY_ATTR::y;",
            "MY_ATTR",
            CapsUse::Word,
        );
        assert_eq!(n, 1);
        assert_eq!(t, "        void f(); MY_ATTR(x); MY_ATTR::y;");
        let (t, n) = blank_identifier("namespace std VIS(default) {\n}", "VIS", CapsUse::WithArgs);
        assert_eq!(n, 1);
        assert_eq!(t, "namespace std              {\n}");
    }

    #[test]
    fn code_arguments_become_blocks_and_launches_calls() {
        let src = "void f() {\n  RUN_ON_HOST((g(); return;))\n  call((a), b);\n  k<<<dim3(1), 2>>>(x);\n}\n";
        let n = neutralise_default(src);
        assert!(n.text.contains("{g(); return;}"), "{}", n.text);
        assert!(
            n.text.contains("call((a), b);"),
            "an expression argument stays"
        );
        let launch = "<<<dim3(1), 2>>>";
        assert!(
            n.text
                .contains(&format!("k{}(x);", " ".repeat(launch.len()))),
            "{}",
            n.text
        );
        assert_eq!(n.text.lines().count(), src.lines().count());
    }

    #[test]
    fn brace_arguments_keep_their_braces_and_lists_stay() {
        let src = "void f() {\n  for (;;) {\n    for (;;) {\n  DIM_TERM(},})\n  v.push_back({});\n  g({}, {1});\n  run([&] { h(a, b); });\n}\n";
        let n = neutralise_default(src);
        let line = n.text.lines().nth(3).unwrap();
        assert_eq!(line.trim(), "} }", "{}", n.text);
        assert!(n.text.contains("v.push_back({});") && n.text.contains("g({}, {1});"));
        assert!(n.text.contains("run([&] { h(a, b); });"));
    }

    #[test]
    fn loop_heads_passed_to_a_macro_stay_as_loops() {
        let src = "void f() {\n  DIM_TERM(for (int i = 0; i < n; ++i) {,\n           for (int j = 0; j < n; ++j) {)\n    a(i, j);\n  DIM_TERM(},})\n}\n";
        let n = neutralise_default(src);
        assert!(
            n.text.contains("          for (int i = 0; i < n; ++i) { "),
            "{}",
            n.text
        );
        assert!(
            n.text.contains("for (int j = 0; j < n; ++j) { \n"),
            "{}",
            n.text
        );
        assert!(n.text.contains("a(i, j);"));
        let mut parser = crate::ingest::cpp::cpp_parser().unwrap();
        let tree = parser.parse(&n.text, None).unwrap();
        assert!(!tree.root_node().has_error(), "{}", n.text);
    }

    #[test]
    fn has_include_and_macro_lambdas() {
        let src = "#if __has_include(<any>) && X\n#endif\nvoid f() { run(n, MY_LAMBDA(int i) { g(i); }); }\n";
        let n = neutralise_default(src);
        assert!(
            n.text.starts_with("#if __has_include(\"any\")"),
            "{}",
            n.text
        );
        let range = find_identifiers(src, "MY_LAMBDA")[0];
        assert_eq!(caps_use(src, range), Some(CapsUse::LambdaIntro));
        let (text, k) = blank_identifier(src, "MY_LAMBDA", CapsUse::LambdaIntro);
        assert_eq!(k, 1);
        assert!(
            text.contains("run(n, [=]      (int i) { g(i); })"),
            "{text}"
        );
    }

    #[test]
    fn an_all_caps_word_before_a_declaration_keyword_is_an_attribute() {
        let src = "class A {\n public:\n  LIB_INLINE long size() const;\n  template <class T> LIB_FN static int g();\n  REAL const x = 1;\n};\nLIB_EXPORT void h();\n";
        let n = attributes_before_keywords(src);
        let words: Vec<&str> = n.text.split_whitespace().collect();
        assert_eq!(
            words.join(" "),
            "class A { public: long size() const; template <class T> static int g(); REAL const x = 1; }; void h();"
        );
        assert_eq!(n.count, 3);
    }

    #[test]
    fn all_caps_detection() {
        assert!(is_all_caps("LIB_FUNCTION"));
        assert!(is_all_caps("APP_EXPORT2"));
        assert!(!is_all_caps("Library"));
        assert!(!is_all_caps("T"));
        assert!(!is_all_caps("___"));
        assert!(is_fallback_candidate("__ATTRS_ai") && is_fallback_candidate("__forceinline"));
        assert!(is_fallback_candidate("LIB_FUNCTION"));
        assert!(
            !is_fallback_candidate("__")
                && !is_fallback_candidate("___x")
                && !is_fallback_candidate("_x")
        );
    }
}
