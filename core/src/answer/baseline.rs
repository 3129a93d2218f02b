//! The context of the `bm25-files` answer baseline (paper section 4's
//! lexical baseline): whole files in rank order under the same numbered
//! layout and prompt as the pipeline's context, so that an answer
//! benchmark compares retrieval and nothing else.

use super::context::{fence_for, fence_language, Context, ContextChunk};
use super::unit::{
    file_text_chunks, leading_lines_that_fit, line_range, outside_runs, unit_lines, UnitLine,
};
use crate::retrieve::Corpus;
use crate::sort::sort_by_key;
use crate::text::reveal_bidi;

/// The context of the `bm25-files` answer baseline: whole files (their
/// indexed text, in line order, the parts of a split entity joined as in
/// a unit, located by the file lines it shows), numbered like chunks,
/// filling the same budget in rank order and cut at line ends. It shares
/// the prompt with the real pipeline so that only the retrieval differs.
pub fn file_context(
    corpus: &Corpus,
    paths: &[&str],
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> Context {
    let data = &corpus.data;
    let mut out = Context::empty();
    for path in paths {
        let file_chunk = data
            .files
            .iter()
            .find(|f| f.path == *path)
            .and_then(|f| corpus.file_chunk(f.id));
        // The parts of a split entity join into the source, as in a unit,
        // and the file's lines outside entities go in their places.
        let mut runs: Vec<Vec<UnitLine<'_>>> = file_text_chunks(data, path)
            .into_iter()
            .map(|c| unit_lines(c, c.part > 1, Some(0)))
            .collect();
        if let Some(f) = file_chunk {
            runs.extend(outside_runs(data, &data.chunks[f as usize], &|_| true));
            sort_by_key(&mut runs, |r| r.iter().find_map(|l| l.line).unwrap_or(0));
        }
        let numbered: Vec<UnitLine<'_>> = runs.concat();
        let lines: Vec<&str> = numbered.iter().map(|l| l.text).collect();
        let n = out.next_n();
        let fence = fence_for(&lines.concat());
        let head = format!(
            "[{n}] {path} (whole file)\n{fence}{}\n",
            fence_language(path)
        );
        let left = budget.saturating_sub(out.tokens);
        let lo = leading_lines_that_fit(lines.len(), |k| {
            count(&format!("{head}{}\n{fence}\n", lines[..k].join("\n"))) <= left
        });
        if lo == 0 {
            break;
        }
        let block =
            reveal_bidi(&format!("{head}{}\n{fence}\n", lines[..lo].join("\n"))).into_owned();
        let tokens = count(&block);
        let (first, last) = line_range(&numbered[..lo]).unwrap_or((1, lo as u32));
        let file_chunk = file_chunk.unwrap_or(0);
        out.push(
            &block,
            tokens,
            ContextChunk {
                n,
                chunk: file_chunk,
                path: path.to_string(),
                start_line: first,
                end_line: last,
                symbol: path.to_string(),
                role: "baseline_file".into(),
            },
        );
    }
    out
}
