//! The words the generic fallback may blank: ALL_CAPS identifiers and
//! reserved ones (`__x`) that stand where an attribute would, which a
//! repository uses without defining them (its dependencies' and its
//! compilers' macros). What the repository defines is read in
//! [`super::defines`]; this is for everything else, and
//! [`crate::ingest::cpp`] keeps a blanking only when the parse improves.

use super::{blank, find_identifiers, matching_paren, overwrite, paren_after};

/// `FOO_BAR2`: at least three characters, upper-case letters, digits and
/// underscores, starting with a letter or underscore.
pub fn is_all_caps(word: &str) -> bool {
    word.len() >= 3
        && word
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        && word.bytes().any(|c| c.is_ascii_uppercase())
        && !word.as_bytes()[0].is_ascii_digit()
}

/// Whether the generic fallback may try blanking `word`: an ALL_CAPS word,
/// or a reserved identifier (`__` and a letter: `__forceinline`,
/// `__ATTRS_ai`), the spelling of compiler and platform attribute macros
/// that a repository uses without defining them.
pub fn is_fallback_candidate(word: &str) -> bool {
    is_all_caps(word)
        || (word.len() >= 4 && word.starts_with("__") && word.as_bytes()[2].is_ascii_alphabetic())
}

/// How an ALL_CAPS candidate of the generic rule is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CapsUse {
    /// `MACRO void f()`: an attribute-like word.
    Word,
    /// `namespace std MACRO(default) {`: a function-like attribute whose
    /// argument list is blanked with it.
    WithArgs,
    /// `f(n, MACRO(int i) { … })`: a lambda introducer, written `[=]`.
    LambdaIntro,
}

/// How `word` at `range` is used, if it looks like an attribute macro:
/// followed by an identifier, or by a balanced argument list and then an
/// identifier, `{` or `:`.
pub fn caps_use(text: &str, range: (usize, usize)) -> Option<CapsUse> {
    let b = text.as_bytes();
    let after = |k: usize| {
        b[k..]
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .map(|p| k + p)
    };
    let next = after(range.1)?;
    let c = b[next];
    // Before a declaration: a name, or a destructor's `~`.
    if c.is_ascii_alphabetic() || c == b'_' || c == b'~' {
        return Some(CapsUse::Word);
    }
    if c == b'(' {
        let close = matching_paren(text, next)?;
        let k = after(close + 1)?;
        let d = b[k];
        // An argument that is a parameter list and a body: a lambda whose
        // introducer is a macro (it needs room for `[=]`).
        let in_arguments = text[..range.0].trim_end().ends_with([',', '(']);
        if in_arguments && d == b'{' && range.1 - range.0 >= 3 {
            return Some(CapsUse::LambdaIntro);
        }
        if d.is_ascii_alphabetic()
            || d == b'_'
            || d == b'{'
            || (d == b':' && b.get(k + 1) != Some(&b':'))
        {
            return Some(CapsUse::WithArgs);
        }
    }
    None
}

/// Blank every occurrence of `word` used the way `how` says (other uses,
/// such as calls and scopes, stay). Returns the new text and the count.
pub fn blank_identifier(text: &str, word: &str, how: CapsUse) -> (String, u32) {
    let mut buf = text.as_bytes().to_vec();
    let mut n = 0;
    for range in find_identifiers(text, word) {
        if caps_use(text, range) != Some(how) {
            continue;
        }
        if how == CapsUse::LambdaIntro {
            overwrite(&mut buf, range, "[=]");
            n += 1;
            continue;
        }
        let end = match how {
            CapsUse::Word | CapsUse::LambdaIntro => range.1,
            CapsUse::WithArgs => {
                match paren_after(text.as_bytes(), range.1)
                    .and_then(|open| matching_paren(text, open))
                {
                    Some(close) => close + 1,
                    None => continue,
                }
            }
        };
        // Keep newlines so that line numbers stay exact.
        blank(&mut buf, (range.0, end));
        n += 1;
    }
    (
        String::from_utf8(buf).unwrap_or_else(|_| text.to_string()),
        n,
    )
}
