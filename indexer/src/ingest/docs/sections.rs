//! From headings to sections: the section tree (parents and `" > "`
//! paths) and the budget-sized parts, cut on blank lines outside the blocks
//! that must stay whole.

use codegloss_core::text::estimate_tokens;

use super::{Analysis, DocPart, DocSection, Lines};

pub(super) fn build_sections(
    file_name: &str,
    lines: &Lines<'_>,
    analysis: &Analysis,
    max_tokens: usize,
) -> Vec<DocSection> {
    let n = lines.len();
    let mut sections = Vec::new();
    let first_heading = analysis.headings.first().map_or(n, |h| h.first);

    if (0..first_heading).any(|i| !lines.is_blank(i)) {
        let parts = split_parts(lines, &analysis.atomic, 0, first_heading, None, max_tokens);
        if let Some(section) = make_section(
            lines,
            file_name.to_string(),
            file_name.to_string(),
            0,
            None,
            parts,
        ) {
            sections.push(section);
        }
    }

    // Enclosing headings: (level, section index, title).
    let mut stack: Vec<(u8, usize, String)> = Vec::new();
    for (k, h) in analysis.headings.iter().enumerate() {
        let end = analysis.headings.get(k + 1).map_or(n, |next| next.first);
        while stack.last().is_some_and(|(level, _, _)| *level >= h.level) {
            stack.pop();
        }
        let parent = stack.last().map(|(_, index, _)| *index);
        let mut path = vec![file_name];
        path.extend(stack.iter().map(|(_, _, title)| title.as_str()));
        path.push(&h.title);
        let section_path = path.join(" > ");

        let parts = split_parts(
            lines,
            &analysis.atomic,
            h.first,
            end,
            Some(h.last),
            max_tokens,
        );
        if let Some(section) =
            make_section(lines, h.title.clone(), section_path, h.level, parent, parts)
        {
            stack.push((h.level, sections.len(), h.title.clone()));
            sections.push(section);
        }
    }
    sections
}

fn make_section(
    lines: &Lines<'_>,
    title: String,
    section_path: String,
    level: u8,
    parent: Option<usize>,
    parts: Vec<(usize, usize)>,
) -> Option<DocSection> {
    let first = parts.first()?.0;
    let last = parts.last()?.1;
    Some(DocSection {
        title,
        section_path,
        level,
        parent,
        span: lines.span(first, last),
        parts: parts
            .into_iter()
            .map(|(a, b)| {
                let text = lines.slice(a, b);
                // The budget arithmetic works on prefix character counts;
                // it must agree with the shared estimate.
                debug_assert_eq!(estimate_tokens(&text), lines.tokens(a, b));
                DocPart {
                    text,
                    span: lines.span(a, b),
                }
            })
            .collect(),
    })
}

/// Trim blank lines off both ends of `a..=b`.
fn trim_blank(lines: &Lines<'_>, mut a: usize, mut b: usize) -> Option<(usize, usize)> {
    while a <= b && lines.is_blank(a) {
        a += 1;
    }
    while b > a && lines.is_blank(b) {
        b -= 1;
    }
    (a <= b && !lines.is_blank(a)).then_some((a, b))
}

/// Split lines `start..end` into parts (inclusive line ranges).
///
/// Units are runs of lines between blank lines; blank lines inside atomic
/// blocks do not separate. Units are packed greedily up to the budget. A
/// heading (ending at `heading_last`) is not left alone in a part when the
/// unit after it, with the heading, stays within four times the budget.
fn split_parts(
    lines: &Lines<'_>,
    atomic: &[bool],
    start: usize,
    end: usize,
    heading_last: Option<usize>,
    max_tokens: usize,
) -> Vec<(usize, usize)> {
    let mut units = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    for i in start..end {
        if lines.is_blank(i) && !atomic.get(i).copied().unwrap_or(false) {
            if let Some(u) = current.take() {
                units.push(u);
            }
            continue;
        }
        current = Some(match current {
            Some((a, _)) => (a, i),
            None => (i, i),
        });
    }
    if let Some(u) = current {
        units.push(u);
    }

    let hard_limit = max_tokens.saturating_mul(4);
    let mut parts = Vec::new();
    let mut cur: Option<(usize, usize)> = None;
    for (a, b) in units {
        let Some((a, b)) = trim_blank(lines, a, b) else {
            continue;
        };
        if let Some((ca, cb)) = cur.take() {
            let joined = lines.tokens(ca, b);
            if joined <= max_tokens {
                cur = Some((ca, b));
                continue;
            }
            if heading_last == Some(cb) && joined <= hard_limit {
                parts.push((ca, b));
                continue;
            }
            parts.push((ca, cb));
        }
        let tokens = lines.tokens(a, b);
        if tokens <= max_tokens {
            cur = Some((a, b));
        } else if tokens > hard_limit {
            split_lines(lines, a, b, max_tokens, &mut parts);
        } else {
            parts.push((a, b));
        }
    }
    if let Some(c) = cur {
        parts.push(c);
    }
    parts
}

/// Split `a..=b` on line boundaries into pieces of at most `max_tokens`
/// (a single longer line is a piece of its own).
fn split_lines(
    lines: &Lines<'_>,
    a: usize,
    b: usize,
    max_tokens: usize,
    parts: &mut Vec<(usize, usize)>,
) {
    let mut s = a;
    for j in a..=b {
        if j > s && lines.tokens(s, j) > max_tokens {
            if let Some(piece) = trim_blank(lines, s, j - 1) {
                parts.push(piece);
            }
            s = j;
        }
    }
    if let Some(piece) = trim_blank(lines, s, b) {
        parts.push(piece);
    }
}
