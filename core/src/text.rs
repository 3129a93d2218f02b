//! Small text utilities shared by the indexer and the browser: token
//! estimates, the width of a line's indentation, identifier handling that must agree on both sides (the file
//! name, base name and folder of a repository path), and the
//! bidirectional control characters of "Trojan Source" (CVE-2021-42574),
//! found and made visible.

use std::borrow::Cow;

/// A conservative estimate of how many model tokens a text takes when no
/// tokenizer is at hand: one token per three characters, rounded up.
///
/// Subword tokenizers give roughly 3.5–4 characters per token on English
/// and 3–3.5 on C++; dividing by three over-counts slightly, so budgets
/// built on it are kept.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(3)
}

/// Columns of a line's leading spaces and tabs, a tab advancing to the
/// next multiple of four: how far in the line starts, for the indexer's
/// documentation parsers (an indented code block, a section's body) and
/// for the answer context's excerpts (the indentation their lines share).
pub fn indent_width(line: &str) -> usize {
    let mut width = 0;
    for c in line.chars() {
        match c {
            ' ' => width += 1,
            '\t' => width += 4 - width % 4,
            _ => break,
        }
    }
    width
}

/// Last `/`-separated component of a repository path (`src/Field.h`
/// gives `Field.h`).
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The folder a repository path lies in, `.` at the top (`src/Field.h`
/// gives `src`, `Field.h` gives `.`): a file's module.
pub fn folder_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(".", |(folder, _)| folder)
}

/// A file name without its extension (`Field.h` gives `Field`; a leading
/// dot is not an extension: `.clang-format` stays as it is).
pub fn base_name(name: &str) -> &str {
    match name.rfind('.') {
        Some(k) if k > 0 => &name[..k],
        _ => name,
    }
}

/// Whether `c` is a Unicode bidirectional control character: the
/// embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069,
/// and the implicit marks U+200E, U+200F and U+061C. A terminal or a
/// browser reorders the text around them, so that code can read
/// differently from what a compiler sees.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// The Unicode name of a bidirectional control character (empty for any
/// other character).
pub fn bidi_name(c: char) -> &'static str {
    match c {
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{061C}' => "ARABIC LETTER MARK",
        _ => "",
    }
}

/// The bidirectional control characters of `text` with their byte offsets,
/// in order.
pub fn bidi_controls(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    text.char_indices().filter(|&(_, c)| is_bidi_control(c))
}

/// `text` with every bidirectional control character written out as
/// `<U+XXXX>` (as rustc shows them), so that it cannot reorder the text
/// around it; borrowed when there is none.
pub fn reveal_bidi(text: &str) -> Cow<'_, str> {
    if bidi_controls(text).next().is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_bidi_control(c) {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_conservative_and_monotone() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 2);
        assert!(estimate_tokens("void f(int x);") >= 4);
    }

    #[test]
    fn indentation_width_counts_tabs_to_the_next_stop() {
        assert_eq!(indent_width("x"), 0);
        assert_eq!(indent_width("    x"), 4);
        assert_eq!(indent_width("\t\tx"), 8);
        assert_eq!(indent_width("  \tx"), 4);
        assert_eq!(indent_width("   "), 3);
    }

    #[test]
    fn file_and_base_names() {
        assert_eq!(file_name("src/core/Field.h"), "Field.h");
        assert_eq!(file_name("Field.h"), "Field.h");
        assert_eq!(file_name("src/"), "");
        assert_eq!(base_name("Field.h"), "Field");
        assert_eq!(base_name("a.tar.gz"), "a.tar");
        assert_eq!(base_name(".clang-format"), ".clang-format");
        assert_eq!(base_name("Makefile"), "Makefile");
        assert_eq!(folder_of("src/core/Field.h"), "src/core");
        assert_eq!(folder_of("Field.h"), ".");
    }

    #[test]
    fn bidi_controls_are_found_and_revealed() {
        let all = "\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{061C}";
        assert_eq!(bidi_controls(all).count(), 12);
        assert!(all.chars().all(|c| !bidi_name(c).is_empty()));
        let s = "abc\u{202E}fdp.exe\u{202C} é";
        assert_eq!(
            bidi_controls(s).collect::<Vec<_>>(),
            vec![(3, '\u{202E}'), (13, '\u{202C}')]
        );
        assert_eq!(reveal_bidi(s), "abc<U+202E>fdp.exe<U+202C> é");
        assert_eq!(
            reveal_bidi("src/rtl\u{202E}ppc.exe.hpp"),
            "src/rtl<U+202E>ppc.exe.hpp"
        );
        assert_eq!(reveal_bidi("\u{061C}\u{200F}"), "<U+061C><U+200F>");
        // Text without them is borrowed as is; neighbours are not controls.
        for plain in [
            "",
            "plain ascii",
            "עברית ومرحبا",
            "\u{200D}\u{2060}\u{202F}\u{2065}",
        ] {
            assert!(matches!(reveal_bidi(plain), Cow::Borrowed(p) if p == plain));
            assert_eq!(bidi_controls(plain).count(), 0);
        }
    }
}
