//! A chunk's code as lines, each one either the file's own line (with its
//! number in the file) or part of the chunk's frame: the signature that a
//! part of a split class or function repeats, its part marker, and the
//! marker that says where it continues ([`crate::model::CodeFrame`]).
//!
//! Every printer that numbers code (`codegloss query --code`, the answer
//! context, the browser widget, which reads the same frame from its cards)
//! numbers it from here, so that a line shown as `54` is line 54 of the
//! file, and the repeated signature is never numbered as if it were.

use crate::model::Chunk;

/// What a line of a chunk's code is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// Before the file's text: the repeated signature and the part marker.
    Prelude,
    /// The file's own text, at `line` (none when the chunk has no lines).
    Source {
        /// 1-based line in the file.
        line: Option<u32>,
    },
    /// After the file's text: the `// [continues in part j/n]` marker.
    Trailer,
}

/// One line of a chunk's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLine<'a> {
    /// The text, without its line break.
    pub text: &'a str,
    /// What it is.
    pub kind: LineKind,
}

impl CodeLine<'_> {
    /// The line of the file this is, for the file's own text.
    pub fn line(&self) -> Option<u32> {
        match self.kind {
            LineKind::Source { line } => line,
            _ => None,
        }
    }
}

/// The lines of a chunk's code, in order, each with what it is. A frame
/// longer than the code (bytes from a damaged index) is cut to it, so this
/// never panics.
pub fn code_lines(chunk: &Chunk) -> Vec<CodeLine<'_>> {
    let lines: Vec<&str> = chunk.code.lines().collect();
    let n = lines.len();
    let prelude = (chunk.frame.prelude_lines as usize).min(n);
    let trailer = (chunk.frame.trailer_lines as usize).min(n - prelude);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            let kind = if i < prelude {
                LineKind::Prelude
            } else if i >= n - trailer {
                LineKind::Trailer
            } else {
                let k = (i - prelude) as u32;
                LineKind::Source {
                    line: (chunk.start_line > 0).then(|| chunk.start_line.saturating_add(k)),
                }
            };
            CodeLine { text, kind }
        })
        .collect()
}

/// The file's own lines of a chunk's code (no prelude, no trailer), with
/// their line numbers.
pub fn source_lines(chunk: &Chunk) -> impl Iterator<Item = CodeLine<'_>> {
    code_lines(chunk)
        .into_iter()
        .filter(|l| matches!(l.kind, LineKind::Source { .. }))
}

/// A short note on a chunk's prelude for readers, `signature repeated from
/// line N`, when it has one.
pub fn prelude_note(chunk: &Chunk) -> Option<String> {
    (chunk.frame.prelude_lines > 0).then(|| match chunk.frame.prelude_from {
        0 => "signature repeated from the first part".to_string(),
        n => format!("signature repeated from line {n}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::chunk;
    use crate::model::CodeFrame;

    #[test]
    fn the_frame_is_not_numbered_and_the_rest_is_the_files_lines() {
        let frame = CodeFrame {
            prelude_lines: 2,
            prelude_from: 10,
            trailer_lines: 1,
        };
        let c = chunk(
            "void f() {\n    // [part 2/3]\n    a();\n    b();\n    // [continues in part 3/3]",
            54,
            frame,
        );
        let kinds: Vec<(LineKind, Option<u32>)> =
            code_lines(&c).iter().map(|l| (l.kind, l.line())).collect();
        assert_eq!(
            kinds,
            vec![
                (LineKind::Prelude, None),
                (LineKind::Prelude, None),
                (LineKind::Source { line: Some(54) }, Some(54)),
                (LineKind::Source { line: Some(55) }, Some(55)),
                (LineKind::Trailer, None),
            ]
        );
        let src: Vec<&str> = source_lines(&c).map(|l| l.text).collect();
        assert_eq!(src, vec!["    a();", "    b();"]);
        assert_eq!(
            prelude_note(&c).as_deref(),
            Some("signature repeated from line 10")
        );
        // No frame: every line is the file's, numbered from start_line.
        let plain = chunk("x\ny", 7, CodeFrame::default());
        assert_eq!(
            code_lines(&plain)
                .iter()
                .map(|l| l.line())
                .collect::<Vec<_>>(),
            vec![Some(7), Some(8)]
        );
        assert_eq!(prelude_note(&plain), None);
        // A frame larger than the code never panics.
        let bad = chunk(
            "x",
            1,
            CodeFrame {
                prelude_lines: 5,
                prelude_from: 1,
                trailer_lines: 9,
            },
        );
        assert_eq!(code_lines(&bad).len(), 1);
        assert_eq!(source_lines(&bad).count(), 0);
    }
}
