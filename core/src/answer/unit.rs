//! The completed unit of a retrieved chunk: the chunks a reader needs
//! with it (every part of a split class or function, a section with its
//! subsections, a file's text), which of them an earlier excerpt already
//! shows, and their lines joined and numbered with the file's own lines.
//! The browser fetches the text of these chunks before it builds a
//! context ([`context_chunks`]); [`super::context`] lays them out.

use crate::lines::LineKind;
use crate::model::EntityKind;
use crate::retrieve::{Corpus, Retrieval};
use crate::sort::sort_by_key;
use crate::text::indent_width;

/// The most leading lines (out of `total`) for which `fits(k)` holds, by
/// binary search; `fits` must be monotone (true up to some k, then false).
pub(super) fn leading_lines_that_fit(total: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, total);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// A file's text as chunks: its outermost code and documentation chunks
/// in line order (members sit inside their class, subsections follow their
/// section). File, module, call-chain and namespace chunks are summaries,
/// not text.
pub(super) fn file_text_chunks<'a>(
    data: &'a crate::IndexData,
    path: &str,
) -> Vec<&'a crate::model::Chunk> {
    let mut parts: Vec<&crate::model::Chunk> = data
        .chunks
        .iter()
        .filter(|c| c.path == path && !data.entities[c.entity as usize].kind.is_summary())
        .collect();
    sort_by_key(&mut parts, |c| {
        (c.start_line, std::cmp::Reverse(c.end_line))
    });
    let mut out = Vec::new();
    let mut covered = 0u32;
    for c in parts {
        if c.start_line > covered || c.start_line == 0 {
            out.push(c);
            covered = covered.max(c.end_line);
        }
    }
    out
}

/// The file's text outside entities, as a file chunk holds it
/// ([`crate::model::Chunk::code`]): the runs of its lines that no text
/// chunk of the file holds and that `keep` accepts, each run in line order,
/// to be laid out among the file's text chunks by line.
pub(super) fn outside_runs<'a>(
    data: &crate::IndexData,
    file_chunk: &'a crate::model::Chunk,
    keep: &dyn Fn(u32) -> bool,
) -> Vec<Vec<UnitLine<'a>>> {
    let held: Vec<(u32, u32)> = file_text_chunks(data, &file_chunk.path)
        .iter()
        .map(|c| (c.start_line, c.end_line))
        .collect();
    let mut runs: Vec<Vec<UnitLine<'a>>> = Vec::new();
    let mut last = 0u32;
    for l in unit_lines(file_chunk, false, Some(0)) {
        let Some(n) = l.line else { continue };
        if held.iter().any(|&(a, b)| a <= n && n <= b) || !keep(n) {
            continue;
        }
        match runs.last_mut() {
            Some(run) if n == last + 1 => run.push(l),
            _ => runs.push(vec![l]),
        }
        last = n;
    }
    // A run of blank lines alone says nothing.
    runs.retain(|r| r.iter().any(|l| !l.text.trim().is_empty()));
    runs
}

/// Whether an earlier block already shows all of a chunk's lines.
pub(super) fn is_shown(shown: &[(&str, u32, u32)], c: &crate::model::Chunk) -> bool {
    shown
        .iter()
        .any(|&(p, a, b)| p == c.path && a <= c.start_line && c.end_line <= b)
}

/// One line of a completed unit, with its line number in the file (none
/// for the repeated signature and part marker of a split part).
#[derive(Clone)]
pub(super) struct UnitLine<'a> {
    pub(super) text: &'a str,
    pub(super) line: Option<u32>,
    /// Columns of indentation the text lacks: 0 for a line as the file
    /// has it; a chunk's first line starts where its declaration starts,
    /// so it lacks the declaration's column, known when the chunk ends
    /// with the declaration's closing brace (at that column); `None` when
    /// unknown (that first line otherwise, the first line of a split
    /// entity's earlier part, and a split part's repeated signature).
    pub(super) lost: Option<usize>,
}

/// Lines of one chunk's code as shown in a unit. A later part of a split
/// code entity drops its prelude (the signature it repeats and its
/// `// [part i/n]` marker) unless it opens the unit, where the marker
/// says where the text starts; every part drops its trailing `// [continues
/// in part ...]` marker, so the parts join into the source. The rest is
/// numbered with the file's own lines ([`crate::lines::code_lines`]).
pub(super) fn unit_lines(
    c: &crate::model::Chunk,
    drop_header: bool,
    column: Option<usize>,
) -> Vec<UnitLine<'_>> {
    let lines = crate::lines::code_lines(c);
    let source = |l: &crate::lines::CodeLine<'_>| matches!(l.kind, LineKind::Source { .. });
    let first = lines.iter().position(source);
    lines
        .into_iter()
        .enumerate()
        .filter(|(_, l)| match l.kind {
            LineKind::Prelude => !drop_header,
            LineKind::Trailer => false,
            LineKind::Source { .. } => true,
        })
        .map(|(i, l)| {
            let lost = if !source(&l) {
                None
            } else if Some(i) == first && !l.text.starts_with([' ', '\t']) {
                column
            } else {
                Some(0)
            };
            UnitLine {
                text: l.text,
                line: l.line(),
                lost,
            }
        })
        .collect()
}

/// The column a chunk's declaration starts at, which the chunk's text,
/// starting where the declaration starts, does not show: the column of the
/// declaration's closing brace, on the last line of its last part (a file
/// chunk starts at its file's first column). `None` when the declaration
/// does not end with a brace on a line of its own, or the last part's
/// text is not loaded.
pub(super) fn declaration_column(corpus: &Corpus, chunk: u32) -> Option<usize> {
    let data = &corpus.data;
    let c = data.chunks.get(chunk as usize)?;
    if c.entity_type == EntityKind::File {
        return Some(0);
    }
    let last = if c.parts > 1 {
        let id = *corpus.chunks_of_entity.get(c.entity as usize)?.last()?;
        data.chunks.get(id as usize)?
    } else {
        c
    };
    let line = crate::lines::source_lines(last)
        .map(|l| l.text)
        .filter(|t| !t.trim().is_empty())
        .last()?;
    line.trim_start()
        .starts_with('}')
        .then(|| indent_width(line))
}

/// The first and last file line among `lines`.
pub(super) fn line_range(lines: &[UnitLine<'_>]) -> Option<(u32, u32)> {
    let first = lines.iter().find_map(|l| l.line)?;
    let last = lines.iter().rev().find_map(|l| l.line)?;
    Some((first, last))
}

/// The chunks that complete a retrieved chunk into the unit a reader
/// needs, in reading order, the chunk itself first among them:
/// - a part of a split code entity: every part of it, the retrieved part
///   first (the context lays them out in reading order);
/// - a documentation section: its parts and every subsection under it;
/// - a file chunk: the file's text, as its outermost chunks in line order
///   (the file chunk itself holds the lines outside them);
/// - a namespace block (whose chunk holds only its head): the file's text
///   inside the block, likewise, with the file chunk for its lines outside
///   entities.
///
/// Any other chunk is a unit by itself. Only chunks of the same file are
/// ever added. The browser fetches the text of these chunks before it
/// builds an answer's context ([`context_chunks`]).
pub fn unit_chunks(corpus: &Corpus, chunk: u32) -> Vec<u32> {
    let data = &corpus.data;
    let Some(c) = data.chunks.get(chunk as usize) else {
        return Vec::new();
    };
    let e = &data.entities[c.entity as usize];
    if matches!(e.kind, EntityKind::File | EntityKind::Namespace) {
        let inside = |o: &&crate::model::Chunk| {
            e.kind == EntityKind::File || (o.start_line >= c.start_line && o.end_line <= c.end_line)
        };
        let mut ids = vec![chunk];
        if e.kind == EntityKind::Namespace {
            ids.extend(
                e.file
                    .and_then(|f| corpus.file_chunk(f))
                    .filter(|&f| f != chunk),
            );
        }
        ids.extend(
            file_text_chunks(data, &c.path)
                .into_iter()
                .filter(inside)
                .map(|o| o.id),
        );
        return ids;
    }
    if e.kind == EntityKind::DocSection {
        let prefix = format!("{} > ", corpus.named(c.entity).qualified_name);
        let mut ids: Vec<&crate::model::Chunk> = data
            .chunks
            .iter()
            .filter(|o| {
                o.path == c.path
                    && o.entity_type == EntityKind::DocSection
                    && (o.entity == c.entity
                        || corpus.named(o.entity).qualified_name.starts_with(&prefix))
            })
            .collect();
        sort_by_key(&mut ids, |o| (o.start_line, o.part));
        // The retrieved part of a split section comes first.
        let at = ids.iter().position(|o| o.id == chunk).unwrap_or(0);
        return ids[at..].iter().map(|o| o.id).collect();
    }
    if c.parts > 1 {
        let parts = &corpus.chunks_of_entity[c.entity as usize];
        let at = parts.iter().position(|&p| p == chunk).unwrap_or(0);
        let mut ids: Vec<u32> = parts.clone();
        // The retrieved part first; the context lays the parts out in
        // reading order.
        ids.rotate_left(at);
        return ids;
    }
    vec![chunk]
}

/// The chunks whose lines [`context_chunks`] reads: the retrieved chunks,
/// and for a retrieved file, namespace block or documentation section
/// (whose unit is chosen by lines) every text chunk of its file, and the
/// file chunk. In the browser a chunk's lines arrive with its text: load
/// these first, then ask [`context_chunks`] for the exact units.
pub fn line_chunks(corpus: &Corpus, retrieval: &Retrieval) -> Vec<u32> {
    let data = &corpus.data;
    let mut out: Vec<u32> = Vec::new();
    let add = |id: u32, out: &mut Vec<u32>| {
        if !out.contains(&id) {
            out.push(id);
        }
    };
    for rc in &retrieval.chunks {
        let Some(c) = data.chunks.get(rc.chunk as usize) else {
            continue;
        };
        add(c.id, &mut out);
        let e = &data.entities[c.entity as usize];
        if !matches!(
            e.kind,
            EntityKind::File | EntityKind::Namespace | EntityKind::DocSection
        ) {
            continue;
        }
        if let Some(f) = e.file.and_then(|f| corpus.file_chunk(f)) {
            add(f, &mut out);
        }
        for o in data
            .chunks
            .iter()
            .filter(|o| o.path == c.path && !data.entities[o.entity as usize].kind.is_summary())
        {
            add(o.id, &mut out);
        }
    }
    out
}

/// Every chunk whose text the context of a retrieval may show: the
/// retrieved chunks and the chunks that complete them ([`unit_chunks`]).
/// Its units are chosen by the lines of [`line_chunks`].
pub fn context_chunks(corpus: &Corpus, retrieval: &Retrieval) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for rc in &retrieval.chunks {
        for id in unit_chunks(corpus, rc.chunk) {
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}
