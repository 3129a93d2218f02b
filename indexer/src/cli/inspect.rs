//! `codegloss inspect`: what an index holds about a symbol (entities with
//! their signatures, glosses and edges) or a file (its includes, parse
//! quality, warnings and entities); the manifest when neither is given.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use codegloss_core::{Entity, EntityKind, IndexData};
use codegloss_indexer::store;

use super::output::{escape_bidi_json, json_text, out};

/// The options of `codegloss inspect`.
#[derive(Args)]
pub(crate) struct InspectArgs {
    /// Index directory written by `codegloss index`.
    index: PathBuf,
    /// Symbol name or (partly) qualified name, for example `BareField::fillHalo`.
    #[arg(long, conflicts_with = "file")]
    symbol: Option<String>,
    /// Repository-relative file path (or a unique suffix of one).
    #[arg(long)]
    file: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Print what the index holds about `--symbol` or `--file`.
pub(crate) fn run(args: InspectArgs) -> Result<()> {
    let InspectArgs {
        index,
        symbol,
        file,
        json,
    } = args;
    run_inspect(&index, symbol.as_deref(), file.as_deref(), json)
}

fn run_inspect(dir: &Path, symbol: Option<&str>, file: Option<&str>, json: bool) -> Result<()> {
    let (manifest, data) =
        store::read_index(dir).with_context(|| format!("reading index {}", dir.display()))?;
    let entities: Vec<&Entity> = match (symbol, file) {
        (Some(s), _) => {
            let hits = data.find_symbol(s);
            anyhow::ensure!(
                !hits.is_empty(),
                "no symbol matches {s:?} in {}",
                dir.display()
            );
            hits
        }
        (None, Some(f)) => {
            let sf = data.find_file(f).with_context(|| {
                format!("no indexed file matches {f:?} (or the suffix is ambiguous)")
            })?;
            if !json {
                out!(
                    "file {} ({} {}, {} scope, module {}, {} lines, sha256 {})",
                    sf.path,
                    sf.language.as_str(),
                    sf.source_type.as_str(),
                    sf.scope.as_str(),
                    sf.module,
                    sf.lines,
                    sf.sha256
                );
                for inc in &sf.includes {
                    let to = inc
                        .resolved
                        .map(|r| data.files[r as usize].path.clone())
                        .unwrap_or_else(|| "(outside the repository)".into());
                    out!("  include {} (line {}) -> {to}", inc.target, inc.line);
                }
                if let Some(p) = &sf.parse {
                    out!("  parse: {}/{} function bodies in ERROR nodes ({} before macro neutralisation)", p.functions_in_error, p.functions, p.functions_in_error_raw);
                }
                for w in &sf.warnings {
                    out!("  warning: {w}");
                }
                out!();
            }
            data.entities
                .iter()
                .filter(|e| e.file == Some(sf.id) && e.kind != EntityKind::CallChain)
                .collect()
        }
        (None, None) => {
            out!("{}", escape_bidi_json(&manifest.to_json()));
            return Ok(());
        }
    };
    if json {
        let items: Vec<serde_json::Value> = entities
            .iter()
            .map(|e| {
                let edges: Vec<serde_json::Value> = data
                    .edges_from(e.id)
                    .map(|x| serde_json::json!({"dir": "out", "kind": x.kind, "entity": data.entities[x.to as usize].qualified_name}))
                    .chain(data.edges_to(e.id).map(|x| serde_json::json!({"dir": "in", "kind": x.kind, "entity": data.entities[x.from as usize].qualified_name})))
                    .collect();
                serde_json::json!({"entity": e, "path": e.file.map(|f| data.files[f as usize].path.clone()), "edges": edges})
            })
            .collect();
        out!("{}", json_text(&items)?);
        return Ok(());
    }
    for e in entities {
        print_entity(&data, e);
    }
    Ok(())
}

fn print_entity(data: &IndexData, e: &Entity) {
    let loc = match (e.file, e.span) {
        (Some(f), Some(s)) => format!(
            "{}:{}-{}",
            data.files[f as usize].path, s.start_line, s.end_line
        ),
        (Some(f), None) => data.files[f as usize].path.clone(),
        _ => String::new(),
    };
    out!("{} {}  [{}]", e.kind.as_str(), e.qualified_name, loc);
    if let Some(p) = e.parent {
        out!(
            "  parent: {} {}",
            data.entities[p as usize].kind.as_str(),
            data.entities[p as usize].qualified_name
        );
    }
    if !e.signature.is_empty() {
        out!("  signature: {}", e.signature);
    }
    if let Some(t) = &e.template_params {
        out!("  template: {t}");
    }
    if let Some(r) = &e.return_type {
        out!("  returns: {r}");
    }
    for p in &e.params {
        out!(
            "  param: {} {}{}",
            p.ty,
            p.name,
            p.default
                .as_ref()
                .map(|d| format!(" = {d}"))
                .unwrap_or_default()
        );
    }
    for b in &e.bases {
        out!("  base: {b}");
    }
    if let Some(d) = &e.doc_comment {
        out!("  doc: {}", d.replace('\n', "\n       "));
    }
    out!("  gloss ({}): {}", e.gloss.source.as_str(), e.gloss.text);
    if !e.concepts.is_empty() {
        out!("  concepts: {}", e.concepts);
    }
    let outgoing = data.edges_from(e.id).map(|x| ("->", x, x.to));
    let incoming = data.edges_to(e.id).map(|x| ("<-", x, x.from));
    for (arrow, x, other) in outgoing.chain(incoming) {
        let other = &data.entities[other as usize];
        out!(
            "  {arrow} {} {} {}",
            x.kind.as_str(),
            other.kind.as_str(),
            other.qualified_name
        );
    }
    let chunks: Vec<_> = data.chunks_of(e.id).collect();
    if chunks.len() > 1 {
        out!("  chunks: {} parts", chunks.len());
    }
    out!();
}
