//! Same-length rewrites of valid C++ that the tree-sitter grammar cannot
//! read, applied with the macro rewrites before the parse: a CUDA or HIP
//! launch configuration, `__has_include(<…>)`, an unnamed defaulted
//! pointer or reference parameter, a functional cast to a dependent or a
//! sized integer type, an attribute before `friend`, the underlying type
//! of an unnamed enumeration, the default of an array parameter, an
//! unnamed pointer to member (`void (C::*)(int) const`). Like
//! every rewrite they keep each byte's offset and line, so spans stay
//! exact.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{blank, paren_after, spaces};

/// One same-length rewrite of valid C++ that the grammar cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrammarRewrite {
    /// A CUDA or HIP launch configuration, `<<<grid, block>>>`.
    KernelLaunch,
    /// An unnamed defaulted pointer or reference parameter.
    UnnamedDefaultedParameter,
    /// `__has_include(<header>)` in a directive.
    HasInclude,
    /// A functional cast to a dependent or sized integer type.
    FunctionalCast,
    /// An attribute before `friend`.
    AttributeBeforeFriend,
    /// The underlying type of an unnamed enumeration.
    UnnamedEnumBase,
    /// The default of an array parameter.
    ArrayParameterDefault,
    /// An unnamed pointer to member.
    UnnamedMemberPointer,
}

/// How often each grammar rewrite applied, one count per
/// [`GrammarRewrite::ALL`].
pub type GrammarCounts = [u32; GrammarRewrite::ALL.len()];

impl GrammarRewrite {
    /// Every rewrite, in the order they run.
    pub const ALL: [GrammarRewrite; 8] = [
        GrammarRewrite::KernelLaunch,
        GrammarRewrite::UnnamedDefaultedParameter,
        GrammarRewrite::HasInclude,
        GrammarRewrite::FunctionalCast,
        GrammarRewrite::AttributeBeforeFriend,
        GrammarRewrite::UnnamedEnumBase,
        GrammarRewrite::ArrayParameterDefault,
        GrammarRewrite::UnnamedMemberPointer,
    ];

    /// The rewrite's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            GrammarRewrite::KernelLaunch => "kernel launch configuration",
            GrammarRewrite::UnnamedDefaultedParameter => "unnamed defaulted parameter",
            GrammarRewrite::HasInclude => "__has_include(<header>)",
            GrammarRewrite::FunctionalCast => "functional cast",
            GrammarRewrite::AttributeBeforeFriend => "attribute before friend",
            GrammarRewrite::UnnamedEnumBase => "unnamed enum's underlying type",
            GrammarRewrite::ArrayParameterDefault => "array parameter default",
            GrammarRewrite::UnnamedMemberPointer => "unnamed pointer to member",
        }
    }
}

/// Run every rewrite but those in `off`, in [`GrammarRewrite::ALL`]'s
/// order, on `buf` (the text after the macro rewrites); how often each
/// applied, in the same order.
pub(super) fn rewrite(
    src: &str,
    idents: &[(usize, usize)],
    buf: &mut [u8],
    off: &BTreeSet<GrammarRewrite>,
) -> GrammarCounts {
    let mut counts = GrammarCounts::default();
    for (k, r) in GrammarRewrite::ALL.into_iter().enumerate() {
        if off.contains(&r) {
            continue;
        }
        counts[k] = match r {
            GrammarRewrite::KernelLaunch => kernel_launches_blanked(src, buf),
            GrammarRewrite::UnnamedDefaultedParameter => {
                unnamed_defaulted_parameters_named(src, buf)
            }
            GrammarRewrite::HasInclude => has_include_quoted(src, buf),
            GrammarRewrite::FunctionalCast => functional_casts_called(src, idents, buf),
            GrammarRewrite::AttributeBeforeFriend => attributes_before_friend_blanked(buf),
            GrammarRewrite::UnnamedEnumBase => unnamed_enum_bases_blanked(src, idents, buf),
            GrammarRewrite::ArrayParameterDefault => array_parameter_defaults_blanked(buf),
            GrammarRewrite::UnnamedMemberPointer => abstract_member_pointers_blanked(buf),
        };
    }
    counts
}

/// `__has_include(<header>)` in a directive becomes
/// `__has_include("header")`, same length, which the grammar's
/// preprocessor expressions read.
pub(super) fn has_include_quoted(src: &str, buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = src[from..].find("__has_include") {
        let at = from + k + "__has_include".len();
        from = at;
        let rest = &src[at..];
        let ws = rest.len() - rest.trim_start().len();
        let Some(inner) = rest[ws..].strip_prefix('(') else {
            continue;
        };
        let iws = inner.len() - inner.trim_start().len();
        if !inner[iws..].starts_with('<') {
            continue;
        }
        let open = at + ws + 1 + iws;
        let Some(len) = src[open..].find('>') else {
            continue;
        };
        let close = open + len;
        if src[open..close].contains(['\n', ')']) {
            continue;
        }
        buf[open] = b'"';
        buf[close] = b'"';
        count += 1;
    }
    count
}

/// CUDA and HIP kernel launches, `kernel<<<grid, block>>>(args)`: the
/// launch configuration is blanked, leaving an ordinary call.
pub(super) fn kernel_launches_blanked(src: &str, buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = src[from..].find("<<<") {
        let open = from + k;
        let Some(len) = src[open..].find(">>>") else {
            break;
        };
        let close = open + len + 3;
        // One launch configuration: no statement or block inside.
        if !src[open..close].contains([';', '{', '}']) {
            blank(buf, (open, close));
            count += 1;
        }
        from = close;
    }
    count
}

/// An unnamed pointer or reference parameter with a default value,
/// `std::enable_if_t<C>* = nullptr` (the usual way to constrain a template
/// before concepts), is valid C++ that the grammar cannot read: the whole
/// declaration becomes an ERROR node. The first space between the `*` or
/// `&` and the `=` becomes the name `_`, same length. Nowhere else in C++
/// does a `*` or `&` stand before a lone `=` with only spaces between
/// (`*=` and `&=` are written together), and in a comment or string the
/// rewrite changes nothing the parser keeps.
pub(super) fn unnamed_defaulted_parameters_named(src: &str, buf: &mut [u8]) -> u32 {
    let b = src.as_bytes();
    let mut count = 0;
    for (k, &c) in b.iter().enumerate() {
        if c != b'*' && c != b'&' {
            continue;
        }
        let spaces = b[k + 1..]
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
        let eq = k + 1 + spaces;
        if spaces > 0 && b.get(eq) == Some(&b'=') && b.get(eq + 1) != Some(&b'=') {
            buf[k + 1] = b'_';
            count += 1;
        }
    }
    count
}

/// An attribute before a friend declaration, `[[nodiscard]] friend T
/// operator<(…)`, is valid C++ that the grammar cannot read: the
/// declaration, and often the class around it, becomes an ERROR node. The
/// attribute is blanked (the signature shown is the text as written).
/// Runs on the text after the macro rewrites, so that an attribute macro
/// blanked between the two (`[[nodiscard]] INLINE friend`) does not hide
/// the pattern.
pub(super) fn attributes_before_friend_blanked(buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = find(&buf[from..], b"[[") {
        let open = from + k;
        let Some(len) = find(&buf[open..], b"]]") else {
            break;
        };
        let close = open + len + 2;
        from = close;
        if buf[open..close]
            .iter()
            .any(|c| matches!(c, b';' | b'{' | b'}'))
        {
            continue;
        }
        let rest = &buf[close..];
        let ws = spaces(rest);
        let word = &rest[ws..];
        let friend = word.starts_with(b"friend")
            && word
                .get(6)
                .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_');
        if ws > 0 && friend {
            buf[open..close].fill(b' ');
            count += 1;
        }
    }
    count
}

/// The first position of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// An unnamed enumeration with an underlying type, `enum : bool { value
/// = true };` (the usual way to hold a constant in a traits class), is
/// valid C++ that the grammar cannot read; in a class template the whole
/// file can become one ERROR node. The `: type` is blanked, leaving an
/// unnamed enumeration, which the grammar reads and the index keeps no
/// entity for either way.
pub(super) fn unnamed_enum_bases_blanked(
    src: &str,
    idents: &[(usize, usize)],
    buf: &mut [u8],
) -> u32 {
    let b = src.as_bytes();
    let mut count = 0;
    for &(s, e) in idents {
        if &src[s..e] != "enum" {
            continue;
        }
        let colon = e + spaces(&b[e..]);
        if b.get(colon) != Some(&b':') || b.get(colon + 1) == Some(&b':') {
            continue;
        }
        let Some(len) = b[colon..].iter().take(200).position(|&c| c == b'{') else {
            continue;
        };
        let open = colon + len;
        let base = &src[colon + 1..open];
        let typed = base
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':' || c.is_ascii_whitespace());
        if typed && !base.trim().is_empty() {
            buf[colon..open].fill(b' ');
            count += 1;
        }
    }
    count
}

/// A default for a parameter declared as an array or a reference to one,
/// `const T (&lower)[N] = {}`, is valid C++ that the grammar cannot read.
/// The `= {…}` is blanked when a `,` or `)` follows it (a variable's
/// initializer ends in `;` and is left alone).
pub(super) fn array_parameter_defaults_blanked(buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut k = 0;
    while k < buf.len() {
        if buf[k] != b']' {
            k += 1;
            continue;
        }
        let eq = k + 1 + spaces(&buf[k + 1..]);
        if buf.get(eq) != Some(&b'=') || buf.get(eq + 1) == Some(&b'=') {
            k += 1;
            continue;
        }
        let open = eq + 1 + spaces(&buf[eq + 1..]);
        if buf.get(open) != Some(&b'{') {
            k += 1;
            continue;
        }
        let Some(len) = buf[open..].iter().take(200).position(|&c| c == b'}') else {
            k += 1;
            continue;
        };
        let close = open + len;
        let inner = &buf[open + 1..close];
        let after = close + 1 + spaces(&buf[close + 1..]);
        if !inner.iter().any(|c| matches!(c, b'{' | b';'))
            && matches!(buf.get(after), Some(b',' | b')'))
        {
            buf[eq..=close].fill(b' ');
            count += 1;
        }
        k = close + 1;
    }
    count
}

/// An unnamed pointer to member, `void (Functor::*)(int, T&) const` (how
/// a traits class deduces a call operator's argument types), is valid C++
/// that the grammar cannot read; a class of such declarations can take
/// the whole file into one ERROR node. The class name and its `::` are
/// blanked, leaving an unnamed pointer to function, `void (*)(int, T&)
/// const`, which the grammar reads. A named one (`(C::*f)`) is read as
/// written and left alone.
pub(super) fn abstract_member_pointers_blanked(buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = find(&buf[from..], b"::*") {
        let star = from + k + 2;
        from = star + 1;
        let close = star + 1 + spaces(&buf[star + 1..]);
        if buf.get(close) != Some(&b')') {
            continue;
        }
        // Back over the qualified name to the opening parenthesis (a name
        // of reasonable length: a long line of them stays linear).
        let mut open = star - 2;
        while open > 0
            && star - open < 200
            && (buf[open - 1].is_ascii_alphanumeric()
                || matches!(buf[open - 1], b'_' | b':' | b' ' | b'\t'))
        {
            open -= 1;
        }
        if open > 0 && buf[open - 1] == b'(' && open < star - 2 {
            buf[open..star].fill(b' ');
            count += 1;
        }
    }
    count
}

/// Integer types written with a size or sign keyword, which the grammar
/// reads as a functional cast only outside template arguments.
const SIZED_INTEGERS: [&str; 4] = ["unsigned", "signed", "long", "short"];

/// Words that start a type: an argument list opening with one is a
/// function type's parameters (`unsigned(int)`), not a cast's operand.
const TYPE_WORDS: [&str; 13] = [
    "void", "bool", "char", "int", "float", "double", "long", "short", "unsigned", "signed",
    "const", "volatile", "auto",
];

/// Functional casts in expressions that the grammar cannot read:
/// - to a dependent type, `typename Traits::size_type(n)` or
///   `typename Traits::reducer{f}`: the whole enclosing expression, often
///   a constructor's initializer list or a call's arguments, becomes an
///   ERROR node. `typename` is blanked, leaving a call (or a braced
///   initialisation) of the qualified name, which is how the grammar
///   reads `Traits::size_type(n)` anyway;
/// - to a sized integer type, `unsigned(rank) == 1`, inside template
///   arguments (`enable_if_t<(unsigned(rank) == 1)>`): the keyword is
///   written in capitals, same length, leaving a call.
///
/// Only where an expression stands: after an operator, an opening
/// bracket, a comma or `return` (a `<` only when a space follows it, as a
/// comparison or shift is written). A function type (`unsigned(int)`,
/// `unsigned(*)(int)`) or a declaration is left alone.
pub(super) fn functional_casts_called(src: &str, idents: &[(usize, usize)], buf: &mut [u8]) -> u32 {
    let b = src.as_bytes();
    let mut count = 0;
    for (k, &(s, e)) in idents.iter().enumerate() {
        let word = &src[s..e];
        let sized = SIZED_INTEGERS.contains(&word);
        if !sized && word != "typename" {
            continue;
        }
        let after_return = k > 0 && {
            let (ps, pe) = idents[k - 1];
            &src[ps..pe] == "return" && src[pe..s].trim().is_empty()
        };
        if !after_return && !in_expression(b, s) {
            continue;
        }
        if sized {
            let Some(open) = paren_after(b, e) else {
                continue;
            };
            if !operand_follows(src, open + 1) {
                continue;
            }
            buf[s..e].make_ascii_uppercase();
            count += 1;
        } else if qualified_call(b, e) {
            buf[s..e].fill(b' ');
            count += 1;
        }
    }
    count
}

/// Whether the word at `s` stands where an expression does, by the code
/// before it.
fn in_expression(b: &[u8], s: usize) -> bool {
    let before = &b[..s];
    let ws = before
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_whitespace())
        .count();
    let Some(at) = before.len().checked_sub(ws + 1) else {
        return false;
    };
    match b[at] {
        b'(' | b',' | b'=' | b'!' | b'&' | b'|' | b'?' | b'[' | b'{' | b'+' | b'-' | b'*'
        | b'/' | b'%' | b'^' | b'~' => true,
        b':' => at == 0 || b[at - 1] != b':',
        b'<' => ws > 0,
        _ => false,
    }
}

/// Whether the argument list opening before `from` holds an operand, not
/// a function type's parameters or declarator.
fn operand_follows(src: &str, from: usize) -> bool {
    let inner = src[from..].trim_start();
    let word: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    !inner.starts_with([')', '*', '&']) && !TYPE_WORDS.contains(&word.as_str())
}

/// Whether a qualified name (`A::b`, `A<T>::template c<U>`) with at least
/// one `::` follows `from` and is called or brace-initialised. Two words with only space
/// between them outside template arguments are a declaration
/// (`typename T::type x`), not a name.
fn qualified_call(b: &[u8], from: usize) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = from;
    let mut scoped = false;
    let mut angle = 0usize;
    // The last character that was not a space, outside template arguments.
    let mut last = b' ';
    while i < b.len() && i < from + 400 {
        let c = b[i];
        match c {
            b'(' | b'{' if angle == 0 => return scoped,
            b':' if b.get(i + 1) == Some(&b':') => {
                scoped = true;
                i += 1;
            }
            b'<' => angle += 1,
            b'>' if angle > 0 => angle -= 1,
            c if word(c) => {
                let spaced = i > from && b[i - 1].is_ascii_whitespace();
                if angle == 0 && spaced && word(last) && !b[..i].ends_with(b"template ") {
                    return false;
                }
            }
            c if c.is_ascii_whitespace() => {}
            b',' | b'*' | b'&' if angle > 0 => {}
            _ => return false,
        }
        if angle == 0 && !c.is_ascii_whitespace() {
            last = c;
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::tests::neutralise_default;

    #[test]
    fn unnamed_defaulted_pointer_parameters_get_a_name() {
        let src = "template <class T>\nvoid f(T x, std::enable_if_t<is_big<T>>* = nullptr, const T& = T(), int&& = 0) {}\nx *= 2; y &= 1; if (a == b) {}\n";
        let n = neutralise_default(src);
        assert_eq!(n.count, 3, "{}", n.text);
        assert!(
            n.text.contains(">>*_= nullptr, const T&_= T(), int&&_= 0)"),
            "{}",
            n.text
        );
        assert!(n.text.contains("x *= 2; y &= 1; if (a == b)"), "{}", n.text);
        assert_eq!(n.text.len(), src.len());
    }

    #[test]
    fn functional_casts_in_expressions_become_calls() {
        let src = "X() : a(typename T::size_type(0)), b(f(typename T::template rebind<U>::type(1))), c(typename A::R{f}) {}\n\
template <class V> void g(std::enable_if_t<(unsigned(V::rank) == 1 &&\n    unsigned(V::dim) == 2)>* p = nullptr) {\n\
  for (unsigned i = 0; i < unsigned(n); ++i) return long(x);\n\
}\n\
using F = unsigned(int);\nvoid h(unsigned(*cb)(int), typename T::type t);\nstruct S { typename T::type m(int); };\nstd::function<unsigned(int)> k;\n\
template <typename T> unsigned(w);\n";
        let n = neutralise_default(src);
        let t = &n.text;
        assert!(t.contains("a(         T::size_type(0))"), "{t}");
        assert!(t.contains("c(         A::R{f})"), "{t}");
        assert!(
            t.contains("f(         T::template rebind<U>::type(1))"),
            "{t}"
        );
        assert!(
            t.contains("<(UNSIGNED(V::rank) == 1 &&\n    UNSIGNED(V::dim)"),
            "{t}"
        );
        assert!(t.contains("i < UNSIGNED(n); ++i) return LONG(x);"), "{t}");
        assert!(t.contains("for (unsigned i = 0"), "{t}");
        // Function types, declarations and template parameters stay.
        assert!(t.contains("using F = unsigned(int);"), "{t}");
        assert!(
            t.contains("void h(unsigned(*cb)(int), typename T::type t);"),
            "{t}"
        );
        assert!(t.contains("std::function<unsigned(int)> k;"), "{t}");
        assert!(t.contains("struct S { typename T::type m(int); };"), "{t}");
        assert!(t.contains("template <typename T> unsigned(w);"), "{t}");
    }

    #[test]
    fn attributes_before_friend_declarations_are_blanked() {
        let src = "class B {\n  [[nodiscard]] FORCE friend B operator*(B a, B b) { return a; }\n  [[nodiscard]]\n  friend bool operator<(B a, B b) { return true; }\n  [[nodiscard]] friendly f();\n  [[maybe_unused]] int x;\n};\n";
        let n = super::super::tests::neutralise_configured(src, &["FORCE"], &[]);
        let t = &n.text;
        assert!(t.contains("  friend B operator*"), "{t}");
        assert!(t.contains("}\n               \n  friend bool"), "{t}");
        assert!(t.contains("[[nodiscard]] friendly f();"), "{t}");
        assert!(t.contains("[[maybe_unused]] int x;"), "{t}");
    }

    #[test]
    fn unnamed_enum_bases_and_array_parameter_defaults_are_blanked() {
        let src = "template <class T>\nstruct H {\n  enum : bool { value = false };\n  enum E : int { A };\n  enum class F : std::uint8_t { B };\n  P(const T (&lower)[N], const T (&t)[N] = {}, int u[2] = {1, 2}) {}\n  int a[3] = {1, 2, 3};\n  bool b = x[0] == y;\n};\n";
        let n = neutralise_default(src);
        let t = &n.text;
        assert!(t.contains("  enum        { value = false };"), "{t}");
        assert!(t.contains("enum E : int { A };"), "{t}");
        assert!(t.contains("enum class F : std::uint8_t { B };"), "{t}");
        assert!(
            t.contains("const T (&t)[N]     , int u[2]         )"),
            "{t}"
        );
        assert!(t.contains("int a[3] = {1, 2, 3};"), "{t}");
        assert!(t.contains("bool b = x[0] == y;"), "{t}");
    }

    #[test]
    fn unnamed_pointers_to_members_lose_their_class() {
        let src = "struct S {\n  static A d(void (F::*)(M, A&) const);\n  static A e(void (ns::F<T>::*)(M));\n  static A g(void (F::*f)(M));\n  int F::*p;\n};\n";
        let n = neutralise_default(src);
        let t = &n.text;
        assert!(t.contains("static A d(void (   *)(M, A&) const);"), "{t}");
        // Template arguments stop the walk back: left as written.
        assert!(t.contains("static A e(void (ns::F<T>::*)(M));"), "{t}");
        assert!(t.contains("static A g(void (F::*f)(M));"), "{t}");
        assert!(t.contains("int F::*p;"), "{t}");
    }
}
