//! "Trojan Source" (CVE-2021-42574) warnings for one file: the Unicode
//! bidirectional control characters in its path and text (code,
//! identifiers, comments, documentation), which make a terminal or a
//! browser show the text in a different order than a compiler or a model
//! reads it. The index keeps the text as it is; every warning names the
//! path, the line and each character with its column, and the CLI shows
//! the characters written out as `<U+XXXX>`
//! ([`codegloss_core::text::reveal_bidi`]).

use codegloss_core::text::{bidi_controls, bidi_name, is_bidi_control};

use crate::error::Warning;

fn warn(path: &str, line: Option<u32>, message: String) -> Warning {
    Warning {
        path: path.to_string(),
        line,
        message,
    }
}

/// Lines of one file reported one by one for bidirectional control
/// characters; the rest are counted in one more warning.
const BIDI_LINES_REPORTED: usize = 20;

/// "Trojan Source" warnings: every bidirectional control character in a
/// file's path and text (code, identifiers, comments, documentation),
/// with its line and column, which can make the text display in a
/// different order than a compiler or a model reads it. The index keeps
/// the text as it is; the CLI shows the characters as `<U+XXXX>`.
pub fn warnings(path: &str, text: &str) -> Vec<Warning> {
    let describe = |line: &str| {
        let mut found = Vec::new();
        for (col, c) in line.chars().enumerate() {
            if is_bidi_control(c) {
                found.push(format!(
                    "U+{:04X} ({}) at column {}",
                    u32::from(c),
                    bidi_name(c),
                    col + 1
                ));
            }
        }
        found
    };
    let mut out = Vec::new();
    let in_path = describe(path);
    if !in_path.is_empty() {
        out.push(warn(
            path,
            None,
            format!(
                "the path holds bidirectional control characters ({}): it may display in a different order than it is stored",
                in_path.join(", ")
            ),
        ));
    }
    let mut more = 0usize;
    for (i, line) in text.lines().enumerate() {
        if bidi_controls(line).next().is_none() {
            continue;
        }
        if out.len() >= BIDI_LINES_REPORTED + usize::from(!in_path.is_empty()) {
            more += 1;
            continue;
        }
        out.push(warn(
            path,
            Some(i as u32 + 1),
            format!(
                "bidirectional control characters ({}): the text may display in a different order than a compiler reads it (Trojan Source)",
                describe(line).join(", ")
            ),
        ));
    }
    if more > 0 {
        out.push(warn(
            path,
            None,
            format!("{more} more lines hold bidirectional control characters"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_and_lines_with_controls_are_reported_with_columns() {
        let w = warnings("a\u{202E}b.h", "int x;\n// é \u{2066}y\u{2069}\nint z;\n");
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(w[0].line, None);
        assert!(w[0]
            .message
            .contains("U+202E (RIGHT-TO-LEFT OVERRIDE) at column 2"));
        assert_eq!(w[1].line, Some(2));
        assert!(w[1]
            .message
            .contains("U+2066 (LEFT-TO-RIGHT ISOLATE) at column 6, U+2069 (POP DIRECTIONAL ISOLATE) at column 8"));
        assert!(warnings("plain.h", "int x; // עברית\n").is_empty());
        // Many lines: the first ones one by one, the rest counted.
        let many = "x\u{200F}\n".repeat(BIDI_LINES_REPORTED + 5);
        let w = warnings("m.h", &many);
        assert_eq!(w.len(), BIDI_LINES_REPORTED + 1);
        assert!(w.last().unwrap().message.starts_with("5 more lines"));
    }
}
