//! The prompts of a run: each selected entity's job (its mode, model,
//! cache key and rendered prompt, from its code, structural facts and the
//! glosses of lower levels, within the input budget), and the dry run
//! ([`plan`]) that lists them without a backend.

use std::path::Path;

use codegloss_core::format::sha256_hex;
use codegloss_core::{EdgeKind, EntityKind, GlossSource, IndexData};
use serde::Serialize;

use super::backend::Prompt;
use super::cache::GlossCache;
use super::prompts::{self, Mode};
use super::select::{batches, input_digests, low_information, select};
use super::{ExplainConfig, Level};
use crate::error::IndexError;
use crate::ingest::gloss::Adjacency;

/// One entity to explain.
pub(super) struct Job {
    pub(super) entity: u32,
    pub(super) level: Level,
    pub(super) mode: Mode,
    pub(super) model: String,
    pub(super) key: String,
    pub(super) prompt: Prompt,
}

/// One prompt of a dry run ([`plan`]).
#[derive(Debug, Clone, Serialize)]
pub struct PlannedPrompt {
    /// Explanation level.
    pub level: String,
    /// Prompt mode.
    pub mode: String,
    /// Qualified name of the entity.
    pub entity: String,
    /// Whether the cache already holds this exact prompt's gloss.
    pub cached: bool,
    /// Estimated prompt tokens (characters / 3, system message included).
    pub estimated_tokens: usize,
    /// System message.
    pub system: String,
    /// User message.
    pub user: String,
}

/// A dry run: the prompts `explain` would send, without a backend. Lower
/// levels are shown with the glosses they have now (structural ones, or
/// cached model glosses where the cache has them), so the higher-level
/// prompts of a first run are approximations.
pub fn plan(
    data: &IndexData,
    repo: &Path,
    cfg: &ExplainConfig,
    cache_path: &Path,
) -> Result<Vec<PlannedPrompt>, IndexError> {
    let cache = GlossCache::open(cache_path)?;
    let mut data = data.clone();
    let adj = Adjacency::new(&data);
    let structural: Vec<String> = data.entities.iter().map(|e| e.gloss.text.clone()).collect();
    let levels = cfg.run_levels();
    let (candidates, _) = select(&mut data, cfg, &levels, &structural, &adj);
    let digests = input_digests(&data, &adj);
    let mut out = Vec::new();
    for level in &levels {
        for batch in batches(&data, &candidates, *level) {
            let jobs: Vec<Job> = batch
                .iter()
                .map(|&id| Job::new(&data, &adj, &structural, &digests, repo, cfg, id, *level))
                .collect();
            for job in jobs {
                let hit = cache.get(&job.key).map(|h| h.text.clone());
                out.push(PlannedPrompt {
                    level: job.level.as_str().to_string(),
                    mode: job.mode.as_str().to_string(),
                    entity: data.entities[job.entity as usize].qualified_name.clone(),
                    cached: hit.is_some(),
                    estimated_tokens: codegloss_core::text::estimate_tokens(&job.prompt.system)
                        + codegloss_core::text::estimate_tokens(&job.prompt.user),
                    system: job.prompt.system,
                    user: job.prompt.user,
                });
                if let Some(text) = hit {
                    let e = &mut data.entities[job.entity as usize];
                    e.gloss.text = cfg.combined(text, &structural[job.entity as usize]);
                    e.gloss.source = GlossSource::Model;
                }
            }
        }
    }
    Ok(out)
}

/// Cut `text` to at most `max` characters at a line boundary.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for line in text.lines() {
        if out.chars().count() + line.chars().count() + 1 > max {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    if out.is_empty() {
        out = text.chars().take(max).collect();
    }
    out.push_str("[... cut ...]");
    out
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut s: String = flat.chars().take(max).collect();
        s.push('…');
        s
    }
}

/// Source text of an entity: its chunks' code, in part order.
fn entity_code(data: &IndexData, id: u32) -> String {
    let mut parts: Vec<&codegloss_core::Chunk> =
        data.chunks.iter().filter(|c| c.entity == id).collect();
    parts.sort_by_key(|c| c.part);
    parts
        .iter()
        .map(|c| c.searchable_code())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A list of `- name: gloss` lines from entity ids, within `budget` characters.
fn child_list(data: &IndexData, ids: &[u32], budget: usize, per_item: usize) -> String {
    let mut out = String::new();
    for (shown, &id) in ids.iter().enumerate() {
        let e = &data.entities[id as usize];
        let line = format!(
            "- {} ({}): {}\n",
            e.qualified_name,
            e.kind.as_str(),
            one_line(&e.gloss.text, per_item)
        );
        if out.len() + line.len() > budget && shown > 0 {
            out.push_str(&format!("- ... and {} more\n", ids.len() - shown));
            break;
        }
        out.push_str(&line);
    }
    if out.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

impl Job {
    /// The job of entity `id` at `level`: its prompt from the entity's code,
    /// structural facts (`structural`) and the glosses of lower levels, and
    /// its cache key (with the input digest of [`input_digests`]).
    #[allow(clippy::too_many_arguments)] // reason: two call sites; the pieces are unrelated borrows
    pub(super) fn new(
        data: &IndexData,
        adj: &Adjacency,
        structural: &[String],
        digests: &[String],
        repo: &Path,
        cfg: &ExplainConfig,
        id: u32,
        level: Level,
    ) -> Job {
        let e = &data.entities[id as usize];
        let facts = &structural[id as usize];
        let budget = cfg.max_input_chars.max(500);
        let path = e
            .file
            .map(|f| data.files[f as usize].path.clone())
            .unwrap_or_else(|| e.qualified_name.clone());
        let (mode, user) = match level {
            Level::Symbol | Level::DocumentationSection => {
                let code = cut(&entity_code(data, id), budget);
                let kind = if level == Level::DocumentationSection {
                    "documentation section".to_string()
                } else {
                    e.kind.as_str().replace('_', " ")
                };
                (
                    Mode::General,
                    prompts::GENERAL.fill(&[("kind", &kind), ("facts", facts), ("code", &code)]),
                )
            }
            Level::CallChain => {
                let target = e.parent.unwrap_or(id);
                let t = &data.entities[target as usize];
                let code = cut(&entity_code(data, target), budget / 2);
                let mut neighbours: Vec<u32> = adj.inc(target, EdgeKind::Calls).to_vec();
                neighbours.extend_from_slice(adj.out(target, EdgeKind::Calls));
                let children = child_list(data, &neighbours, budget / 2, 200);
                let facts = format!(
                    "{facts}\nWhat {} does: {}",
                    t.qualified_name,
                    one_line(&t.gloss.text, 400)
                );
                (
                    Mode::CallChain,
                    prompts::CALL_CHAIN.fill(&[
                        ("name", &t.qualified_name),
                        ("facts", &facts),
                        ("code", &code),
                        ("children", &children),
                    ]),
                )
            }
            Level::File => {
                let fid = e.file.unwrap_or(0) as usize;
                // The file's symbols, most telling first (types, free
                // functions, sections, then members); tiny declarations are
                // left out whatever the levels.
                let mut symbols: Vec<u32> = adj.by_file[fid]
                    .iter()
                    .copied()
                    .filter(|&c| {
                        let x = &data.entities[c as usize];
                        !matches!(
                            x.kind,
                            EntityKind::File | EntityKind::CallChain | EntityKind::Namespace
                        ) && x.gloss.source != GlossSource::SkippedLowInformation
                            && !low_information(x, &structural[c as usize])
                    })
                    .collect();
                symbols.sort_by_key(|&c| {
                    let k = data.entities[c as usize].kind;
                    let rank = if k.is_record() {
                        0
                    } else if k == EntityKind::Function || k == EntityKind::DocSection {
                        1
                    } else if k.is_callable() {
                        2
                    } else {
                        3
                    };
                    (rank, c)
                });
                if symbols.is_empty() {
                    let raw = read_source(repo, &data.files[fid]).unwrap_or_default();
                    let code = cut(&raw, budget);
                    (
                        Mode::FileLevelFallback,
                        prompts::FILE_LEVEL_FALLBACK.fill(&[
                            ("path", &path),
                            ("facts", facts),
                            ("code", &code),
                        ]),
                    )
                } else {
                    let children = child_list(data, &symbols, budget, 240);
                    (
                        Mode::FileLevel,
                        prompts::FILE_LEVEL.fill(&[
                            ("path", &path),
                            ("facts", facts),
                            ("children", &children),
                        ]),
                    )
                }
            }
            Level::Module => {
                let children: Vec<u32> = adj.out(id, EdgeKind::Contains).to_vec();
                let list = child_list(data, &children, budget, 300);
                (
                    Mode::ModuleLevel,
                    prompts::MODULE_LEVEL.fill(&[
                        ("path", &e.qualified_name),
                        ("facts", facts),
                        ("children", &list),
                    ]),
                )
            }
        };
        let template = mode.template();
        let model = cfg.model_for(level).to_string();
        let key_input = format!(
            "{}\0{}\0{}\0{}\0{}\0{}",
            template.version_id(),
            template.signature(),
            model,
            template.system,
            user,
            digests[id as usize]
        );
        Job {
            entity: id,
            level,
            mode,
            model,
            key: sha256_hex(key_input.as_bytes())[..32].to_string(),
            prompt: Prompt {
                system: template.system.to_string(),
                user,
                max_tokens: cfg.max_tokens,
            },
        }
    }
}

/// The file's text when it still matches the indexed bytes.
fn read_source(repo: &Path, f: &codegloss_core::SourceFile) -> Option<String> {
    let bytes = std::fs::read(repo.join(&f.path)).ok()?;
    if sha256_hex(&bytes) != f.sha256 {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_lines() {
        let text = "aaaa\nbbbb\ncccc\n";
        assert_eq!(cut(text, 100), text);
        assert_eq!(cut(text, 11), "aaaa\nbbbb\n[... cut ...]");
    }
}
