//! The indexed repository's own macro definitions, read before any file is
//! parsed, so that macro neutralisation follows what the code defines
//! instead of a list of names grown on one project.
//!
//! Every `#define` of every C++ file is read (continuation lines joined,
//! comments dropped). A macro is rewritten where it is used only when
//! *every* definition of its name agrees on what it is:
//! - **attribute**: empty, or made only of declaration attributes and
//!   specifiers (`__host__ __device__`, `inline`, `static`,
//!   `__attribute__((…))`, `[[…]]`, `__declspec(…)`, visibility and export
//!   annotations, pragma operators `_Pragma(…)` and `__pragma(…)`) or of
//!   other attribute macros: blanked, a function-like one with its
//!   argument list (a warning push or pop written as a statement-like line
//!   between declarations is one);
//! - **lambda introducer**: a lambda capture (`[=]`, `[&]`, `[=, *this]`)
//!   followed only by attributes: replaced by the capture when it fits in
//!   the macro's name;
//! - **identity**: a function-like macro whose body is one of its
//!   parameters (or `__VA_ARGS__`): its name and parentheses blanked, the
//!   argument kept.
//!
//! Anything else (types, expressions, statements, template heads) is left
//! to the type-position rule and the ALL_CAPS fallback of the parser.
//!
//! Macros of libraries the repository uses but does not contain have no
//! definition here. Their *uses* say what they are: an ALL_CAPS word that
//! the repository never defines, written at least [`MIN_USES`] times, and
//! in at least [`MIN_SHARE`] of its uses as an attribute (at the start of a
//! declaration, before its type or name) or as a lambda introducer (an
//! argument written `WORD(params) {`), gets that rule too.

use std::collections::{BTreeMap, BTreeSet};

/// How the uses of one repository macro are rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MacroRule {
    /// Blanked; a function-like macro together with its argument list.
    Blank {
        /// The macro takes arguments (they are blanked with it).
        with_args: bool,
    },
    /// Replaced by this text (no longer than the name), padded with spaces.
    Replace(String),
    /// Name and parentheses blanked, the argument kept.
    Unwrap,
    /// The macro writes whole declarations (its body holds a `{` and ends
    /// in `}` or `;`): a use that stands alone on its lines, where a
    /// declaration would, is blanked with its arguments (the grammar reads
    /// it as a call with no `;`, which breaks what follows); any other use
    /// is left alone.
    Declarations {
        /// The macro takes arguments (they are blanked with it).
        with_args: bool,
    },
}

impl MacroRule {
    /// The rule's name in reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            MacroRule::Blank { .. } => "attribute",
            MacroRule::Replace(_) => "lambda introducer",
            MacroRule::Unwrap => "identity",
            MacroRule::Declarations { .. } => "declarations",
        }
    }
}

/// One `#define` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Define {
    name: String,
    /// `Some` for a function-like macro: its parameter names.
    params: Option<Vec<String>>,
    /// The replacement text, comments removed, whitespace collapsed.
    body: String,
}

/// Words that may stand alone in an attribute-like macro body.
const ATTRIBUTE_WORDS: &[&str] = &[
    "inline",
    "static",
    "extern",
    "constexpr",
    "consteval",
    "explicit",
    "virtual",
    "noexcept",
    "__inline",
    "__inline__",
    "__forceinline",
    "__forceinline__",
    "__noinline__",
    "__host__",
    "__device__",
    "__global__",
    "__restrict",
    "__restrict__",
    "__cdecl",
    "__stdcall",
];

/// Words that take one parenthesised argument list in an attribute body.
const ATTRIBUTE_CALLS: &[&str] = &[
    "__attribute__",
    "__attribute",
    "__declspec",
    "__launch_bounds__",
    "alignas",
    "_Pragma",
    "__pragma",
    "noexcept",
];

/// The macros of one repository that neutralisation rewrites.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoMacros {
    /// Name → rule.
    pub rules: BTreeMap<String, MacroRule>,
}

impl RepoMacros {
    /// Read the `#define`s of these C++ texts and keep the macros whose
    /// every definition agrees on a rule.
    pub fn from_sources<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut defines: BTreeMap<String, Vec<Define>> = BTreeMap::new();
        let mut uses = UseCounts::default();
        for text in texts {
            uses.count(text);
            for d in read_defines(text) {
                let same = defines.entry(d.name.clone()).or_default();
                if !same.contains(&d) {
                    same.push(d);
                }
            }
        }
        // Attribute macros may be made of other attribute macros: grow the
        // set until it stops changing.
        let mut attributes: BTreeSet<String> = BTreeSet::new();
        loop {
            let before = attributes.len();
            for (name, ds) in &defines {
                if !attributes.contains(name)
                    && ds.iter().all(|d| is_attribute_body(&d.body, &attributes))
                {
                    attributes.insert(name.clone());
                }
            }
            if attributes.len() == before {
                break;
            }
        }
        let mut rules = BTreeMap::new();
        for (name, ds) in &defines {
            let rule = if attributes.contains(name) {
                Some(MacroRule::Blank {
                    with_args: ds.iter().all(|d| d.params.is_some()),
                })
            } else {
                agreed(ds, |d| lambda_capture(&d.body, &attributes))
                    .filter(|capture| capture.len() <= name.len())
                    .map(MacroRule::Replace)
                    .or_else(|| ds.iter().all(is_identity).then_some(MacroRule::Unwrap))
                    .or_else(|| {
                        ds.iter().all(|d| writes_declarations(&d.body)).then_some(
                            MacroRule::Declarations {
                                with_args: ds.iter().all(|d| d.params.is_some()),
                            },
                        )
                    })
            };
            // An object-like and a function-like definition of one name
            // disagree on what follows a use: leave such a name alone.
            let mixed =
                ds.iter().any(|d| d.params.is_some()) && ds.iter().any(|d| d.params.is_none());
            if let (Some(rule), false) = (rule, mixed) {
                rules.insert(name.clone(), rule);
            }
        }
        // Undefined ALL_CAPS words, by how the repository writes them.
        for (word, (total, attribute, lambda)) in uses.0 {
            if defines.contains_key(&word) || total < MIN_USES {
                continue;
            }
            let share = |n: usize| n as f64 >= MIN_SHARE * total as f64;
            if share(attribute) {
                rules.insert(word, MacroRule::Blank { with_args: false });
            } else if share(lambda) && word.len() >= 3 {
                rules.insert(word, MacroRule::Replace("[=]".into()));
            }
        }
        RepoMacros { rules }
    }
}

/// An undefined word needs at least this many uses to get a rule.
pub const MIN_USES: usize = 3;

/// ... and this share of them in one role.
pub const MIN_SHARE: f64 = 0.9;

/// Per ALL_CAPS word: (uses, uses as an attribute, uses as a lambda
/// introducer).
#[derive(Default)]
struct UseCounts(BTreeMap<String, (usize, usize, usize)>);

impl UseCounts {
    fn count(&mut self, text: &str) {
        let idents = super::code_identifiers(text);
        for (k, &(s, e)) in idents.iter().enumerate() {
            let word = &text[s..e];
            if !super::is_all_caps(word) {
                continue;
            }
            let entry = self.0.entry(word.to_string()).or_default();
            entry.0 += 1;
            let line_start = text[..s].rfind('\n').map_or(0, |n| n + 1);
            let before = text[..s].trim_end();
            let at_declaration = text[line_start..s].trim().is_empty()
                || before.ends_with([';', '{', '}', '>'])
                || before.ends_with("*/")
                || (before.ends_with(':') && !before.ends_with("::"));
            // Followed by a name (its type or the declared name) or a
            // destructor, not by `(`, `::`, `,` or an operator.
            let next = idents
                .get(k + 1)
                .filter(|&&(ns, _)| text[e..ns].trim().is_empty());
            let before_name = next.is_some() || text[e..].trim_start().starts_with('~');
            if at_declaration && before_name {
                entry.1 += 1;
            } else if super::caps_use(text, (s, e)) == Some(super::CapsUse::LambdaIntro) {
                entry.2 += 1;
            }
        }
    }
}

/// The value every definition gives, when they all give the same one.
fn agreed<T: PartialEq>(ds: &[Define], f: impl Fn(&Define) -> Option<T>) -> Option<T> {
    let mut values = ds.iter().map(f);
    let first = values.next()??;
    values.all(|v| v.as_ref() == Some(&first)).then_some(first)
}

/// Every `#define` of a text.
fn read_defines(text: &str) -> Vec<Define> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let Some(rest) = trimmed.strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        // Join continuation lines.
        let mut full = rest.to_string();
        while full.ends_with('\\') {
            full.pop();
            match lines.next() {
                Some(next) => {
                    full.push(' ');
                    full.push_str(next);
                }
                None => break,
            }
        }
        if let Some(d) = parse_define(&strip_comments(&full)) {
            out.push(d);
        }
    }
    out
}

/// `text` without `//` and `/* */` comments (string literals respected).
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' && i + 1 < b.len() {
                out.push_str(&text[i..i + 2]);
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
        } else if c == b'"' || c == b'\'' {
            quote = Some(c);
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            break;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match text[i + 2..].find("*/") {
                Some(end) => {
                    out.push(' ');
                    i += end + 4;
                    continue;
                }
                None => break,
            }
        }
        let ch = text[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A define's name, parameters and body from the text after `define`.
fn parse_define(rest: &str) -> Option<Define> {
    let rest = rest.trim_start();
    let name_len = rest
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
        .count();
    if name_len == 0 || rest.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let name = rest[..name_len].to_string();
    let after = &rest[name_len..];
    // A function-like macro has its `(` right after the name.
    let (params, body) = match after.strip_prefix('(') {
        Some(p) => {
            let close = p.find(')')?;
            let params = p[..close]
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            (Some(params), &p[close + 1..])
        }
        None => (None, after),
    };
    Some(Define {
        name,
        params,
        body: body.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

/// The length of the balanced group opening at `open` (`(`/`[`), or none.
fn group_len(s: &[u8], open: usize) -> Option<usize> {
    let (o, c) = match s.get(open)? {
        b'(' => (b'(', b')'),
        b'[' => (b'[', b']'),
        _ => return None,
    };
    let mut depth = 0usize;
    for (k, &ch) in s.iter().enumerate().skip(open) {
        if ch == o {
            depth += 1;
        } else if ch == c {
            depth -= 1;
            if depth == 0 {
                return Some(k + 1 - open);
            }
        }
    }
    None
}

/// Is `body` made only of attribute words, attribute calls, `[[…]]`
/// groups and macros already known to be attributes?
fn is_attribute_body(body: &str, attributes: &BTreeSet<String>) -> bool {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b' ' {
            i += 1;
            continue;
        }
        if c == b'[' && b.get(i + 1) == Some(&b'[') {
            match group_len(b, i) {
                Some(n) => {
                    i += n;
                    continue;
                }
                None => return false,
            }
        }
        if !(c.is_ascii_alphabetic() || c == b'_') {
            return false;
        }
        let n = b[i..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let word = &body[i..i + n];
        i += n;
        let ws = b[i..].iter().take_while(|c| **c == b' ').count();
        let call = b.get(i + ws) == Some(&b'(');
        if call && (ATTRIBUTE_CALLS.contains(&word) || attributes.contains(word)) {
            match group_len(b, i + ws) {
                Some(g) => i += ws + g,
                None => return false,
            }
        } else if !(ATTRIBUTE_WORDS.contains(&word) || attributes.contains(word)) {
            return false;
        }
    }
    true
}

/// The lambda capture a body starts with, spaces removed, when the rest
/// of the body is attributes.
fn lambda_capture(body: &str, attributes: &BTreeSet<String>) -> Option<String> {
    let b = body.as_bytes();
    if b.first() != Some(&b'[') || b.get(1) == Some(&b'[') {
        return None;
    }
    let n = group_len(b, 0)?;
    let capture: String = body[..n].chars().filter(|c| !c.is_whitespace()).collect();
    let inner = &capture[1..capture.len() - 1];
    let plausible = inner
        .split(',')
        .all(|p| matches!(p, "" | "=" | "&" | "this" | "*this") || p.starts_with('&'));
    (plausible && is_attribute_body(&body[n..], attributes)).then_some(capture)
}

/// A body that is whole declarations: it holds a block and ends one (a
/// class, a function, a specialisation, several of them).
fn writes_declarations(body: &str) -> bool {
    let body = body.trim();
    body.contains('{') && (body.ends_with('}') || body.ends_with(';'))
}

/// A function-like macro that expands to one of its own arguments.
fn is_identity(d: &Define) -> bool {
    match d.params.as_deref() {
        Some([param]) => {
            let body = d.body.trim();
            body == param || (param == "..." && body == "__VA_ARGS__")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(src: &str) -> BTreeMap<String, MacroRule> {
        RepoMacros::from_sources([src]).rules
    }

    #[test]
    fn attribute_macros_are_found_through_each_other_and_every_branch() {
        let src = "#ifdef GPU\n#define LIB_HOST_DEVICE __host__ __device__\n#else\n#define LIB_HOST_DEVICE\n#endif\n\
                   #define LIB_INLINE_FUNCTION LIB_HOST_DEVICE inline\n\
                   #define LIB_EXPORT __attribute__((visibility(\"default\")))\n\
                   #define LIB_DEPRECATED(msg) [[deprecated(msg)]]\n\
                   #define LIB_NODISCARD [[nodiscard]] /* since C++17 */\n\
                   #define LIB_CONSTANT 3\n\
                   #define LIB_TYPE std::vector<int>\n\
                   #define LIB_HPP\n";
        let r = rules(src);
        assert_eq!(r["LIB_HOST_DEVICE"], MacroRule::Blank { with_args: false });
        assert_eq!(
            r["LIB_INLINE_FUNCTION"],
            MacroRule::Blank { with_args: false }
        );
        assert_eq!(r["LIB_EXPORT"], MacroRule::Blank { with_args: false });
        assert_eq!(r["LIB_DEPRECATED"], MacroRule::Blank { with_args: true });
        assert_eq!(r["LIB_NODISCARD"], MacroRule::Blank { with_args: false });
        assert!(!r.contains_key("LIB_CONSTANT") && !r.contains_key("LIB_TYPE"));
        // An include guard is empty: blanking its (absent) uses is harmless.
        assert_eq!(r["LIB_HPP"], MacroRule::Blank { with_args: false });
    }

    #[test]
    fn pragma_operator_macros_are_attributes_in_every_branch() {
        // A compiler's pragma operator (`_Pragma`, MSVC's `__pragma`) makes
        // no tokens: a macro that is one in one branch and empty in the
        // other is blanked wherever it stands, arguments and all.
        let src = "#ifdef _MSC_VER\n#define LIB_WARN_PUSH_(w) __pragma(warning(push)) __pragma(warning(disable: w))\n\
                   #define LIB_WARN_POP_() __pragma(warning(pop))\n#else\n#define LIB_WARN_PUSH_(w)\n\
                   #define LIB_WARN_POP_()\n#endif\n#define LIB_NO_LOOP_WARN _Pragma(\"loop\")\n";
        let r = rules(src);
        assert_eq!(r["LIB_WARN_PUSH_"], MacroRule::Blank { with_args: true });
        assert_eq!(r["LIB_WARN_POP_"], MacroRule::Blank { with_args: true });
        assert_eq!(r["LIB_NO_LOOP_WARN"], MacroRule::Blank { with_args: false });
    }

    #[test]
    fn macros_that_write_declarations() {
        let src = "#define MAKE_NAME(T) \\\ntemplate <> struct name_of<T> { static const char* get() { return #T; } };\n\
                   #define MAKE_OP(f, op) template <class E> struct f { auto g(E e) { return op e; } }\n\
                   #define BEGIN_NS namespace lib {\n";
        let r = rules(src);
        assert_eq!(r["MAKE_NAME"], MacroRule::Declarations { with_args: true });
        assert_eq!(r["MAKE_OP"], MacroRule::Declarations { with_args: true });
        // Half a block is not a declaration.
        assert!(!r.contains_key("BEGIN_NS"));
    }

    #[test]
    fn a_macro_defined_differently_in_one_branch_is_left_alone() {
        let src = "#ifdef DEBUG\n#define CHECK(x) assert(x)\n#else\n#define CHECK(x)\n#endif\n";
        assert!(!rules(src).contains_key("CHECK"));
    }

    #[test]
    fn lambda_introducers_and_identity_macros() {
        let src = "#define MY_LAMBDA [=] __host__ __device__\n\
                   #define MY_CLASS_LAMBDA [ =, *this ] __host__ __device__\n\
                   #define MY_STRIP(...) __VA_ARGS__\n\
                   #define MY_ID(x) x\n\
                   #define L [=]\n\
                   #define MAKE_OP(name, op) template <class T> struct name { T f(T a) { return op a; } };\n";
        let r = rules(src);
        assert_eq!(r["MY_LAMBDA"], MacroRule::Replace("[=]".into()));
        assert_eq!(r["MY_CLASS_LAMBDA"], MacroRule::Replace("[=,*this]".into()));
        assert_eq!(r["MY_STRIP"], MacroRule::Unwrap);
        assert_eq!(r["MY_ID"], MacroRule::Unwrap);
        // `[=]` does not fit in a one-letter name.
        assert!(!r.contains_key("L"));
        // A macro that writes declarations gets the declarations rule.
        assert_eq!(r["MAKE_OP"], MacroRule::Declarations { with_args: true });
    }

    #[test]
    fn undefined_macros_get_the_rule_their_uses_show() {
        let src = "struct A {\n  EXT_FN void f();\n  EXT_FN int g();\n  EXT_FN ~A();\n};\n\
                   void h() { run(n, EXT_LAMBDA(int i) { f(i); }); run(n, EXT_LAMBDA(int j) {}); run(m, EXT_LAMBDA(int k) {}); }\n\
                   int x = MAX_N + 1; int y = MAX_N; int z = MAX_N * 2;\n\
                   EXT_TWICE void p(); EXT_TWICE void q();\n";
        let r = rules(src);
        assert_eq!(r["EXT_FN"], MacroRule::Blank { with_args: false });
        assert_eq!(r["EXT_LAMBDA"], MacroRule::Replace("[=]".into()));
        assert!(
            !r.contains_key("MAX_N"),
            "a constant is used in expressions"
        );
        assert!(!r.contains_key("EXT_TWICE"), "two uses are not enough");
    }

    #[test]
    fn continuation_lines_and_comments() {
        let src = "#  define SPLIT_ATTR \\\n   __host__ \\\n   __device__ // both\n#define NOT_ATTR /* x */ (1 + 2)\n";
        let r = rules(src);
        assert_eq!(r["SPLIT_ATTR"], MacroRule::Blank { with_args: false });
        assert!(!r.contains_key("NOT_ATTR"));
    }
}
