//! The run of a batched backend's jobs: prompts of similar length go
//! together (less padding), each batch is one call, a gloss that fails
//! its check gets one retry in a later batch, and every finished gloss is
//! appended to the cache at once, so an interrupted run loses at most the
//! batch in flight.

use std::time::Instant;

use indicatif::ProgressBar;

use super::backend::{entry_for, GlossBackend, GlossError};
use super::cache::{CacheEntry, GlossCache};
use super::check::check_output;
use super::plan::Job;
use crate::error::IndexError;

fn prompt_chars(job: &Job) -> usize {
    job.prompt.system.len() + job.prompt.user.len()
}

/// Run `jobs` in batches of the backend's size, one model per batch,
/// shortest prompts first.
pub(super) fn run_batched(
    jobs: &[&Job],
    backend: &dyn GlossBackend,
    progress: &ProgressBar,
    cache: &GlossCache,
) -> Result<Vec<Result<CacheEntry, GlossError>>, IndexError> {
    let size = backend.batch_size().max(1);
    let mut results: Vec<Option<Result<CacheEntry, GlossError>>> =
        (0..jobs.len()).map(|_| None).collect();
    // One model per call, and prompts of similar length together.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (&jobs[i].model, prompt_chars(jobs[i]), i));
    let started = Instant::now();
    let mut tokens = 0u64;
    for attempt in 0..2 {
        // The first pass runs every job; the second retries the failures.
        let todo: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| match &results[i] {
                None => attempt == 0,
                Some(Err(_)) => attempt == 1,
                Some(Ok(_)) => false,
            })
            .collect();
        let same_model = todo.chunk_by(|&a, &b| jobs[a].model == jobs[b].model);
        for group in same_model.flat_map(|g| g.chunks(size)) {
            let prompts: Vec<_> = group.iter().map(|&i| &jobs[i].prompt).collect();
            let t = Instant::now();
            let outs = backend.generate_batch(&jobs[group[0]].model, &prompts);
            let per_gloss = t.elapsed().as_secs_f64() / group.len() as f64;
            for (&i, out) in group.iter().zip(outs) {
                let job = jobs[i];
                let outcome = out.and_then(|g| {
                    let text = check_output(&g.text)?;
                    Ok(entry_for(job, text, g.completion_tokens, per_gloss))
                });
                match &outcome {
                    Ok(entry) => {
                        cache.append(entry)?;
                        tokens += entry.completion_tokens.unwrap_or(0);
                        progress.inc(1);
                    }
                    Err(e) if attempt == 1 => {
                        log::debug!("{}: {e}", job.key);
                        progress.inc(1);
                    }
                    Err(e) => log::debug!("{}: {e}; retrying once", job.key),
                }
                results[i] = Some(outcome);
            }
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            progress.set_message(format!(
                "explaining {} ({:.1} tok/s)",
                jobs[group[0]].level.as_str(),
                tokens as f64 / secs
            ));
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.unwrap_or(Err(GlossError::NotAttempted)))
        .collect())
}
