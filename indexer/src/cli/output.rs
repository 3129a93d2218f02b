//! Printing for the `codegloss` binary: results to stdout, logs, warnings
//! and errors to stderr, both with bidirectional control characters written
//! out, so that no path, name, code or answer text can reorder what the
//! terminal shows. The commands print their results and notes through
//! these (and `ask` its streamed answer through the same `reveal_bidi`).

use anyhow::Result;

/// Print a line of results to stdout. A closed stdout (`codegloss ... | head`)
/// ends the program quietly instead of panicking. Bidirectional control
/// characters are written out as `<U+XXXX>` (as rustc does), so that no
/// path, name, code or answer text can reorder what the terminal shows.
macro_rules! out {
    () => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout()).is_err() {
            std::process::exit(0);
        }
    }};
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($t)*);
        if writeln!(std::io::stdout(), "{}", codegloss_core::text::reveal_bidi(&line)).is_err() {
            std::process::exit(0);
        }
    }};
}

/// Print a line to stderr (logs, warnings, errors), with bidirectional
/// control characters written out like [`out!`].
macro_rules! note {
    ($($t:tt)*) => {{
        eprintln!("{}", codegloss_core::text::reveal_bidi(&format!($($t)*)));
    }};
}

pub(crate) use {note, out};

/// JSON for stdout: bidirectional control characters inside strings are
/// written as `\uXXXX` escapes, so the terminal shows them in order and a
/// JSON reader still gets the text as stored.
pub(crate) fn json_text(value: &impl serde::Serialize) -> Result<String> {
    Ok(escape_bidi_json(&serde_json::to_string_pretty(value)?))
}

/// `json` with every bidirectional control character written as a
/// `\uXXXX` escape (they only occur inside strings, where that is the
/// same text).
pub(crate) fn escape_bidi_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if codegloss_core::text::is_bidi_control(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
