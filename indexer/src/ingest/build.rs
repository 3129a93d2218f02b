//! The indexing pipeline: walk → load and parse (in parallel) → entities
//! → cross-file resolution → structure graph → higher-level entities →
//! glosses → chunks.
//!
//! Everything here is deterministic: files are processed in path order,
//! ids are assigned in that order, and every collection that reaches the
//! index is sorted. Parallelism (rayon) only changes how fast the
//! per-file work runs, never its result.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use codegloss_core::text::{file_name, folder_of};
use codegloss_core::{
    Edge, EdgeKind, Entity, EntityKind, FileId, Include, IndexData, Language, ParseStats,
    SourceFile, Span,
};
use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::config::Config;
use crate::error::{IndexError, Warning};
use crate::ingest::cpp::{self, RawEntity};
use crate::ingest::docs::DocSection;
use crate::ingest::file::{self, FileResult, Parsed};
use crate::ingest::macros::RepoMacros;
use crate::ingest::walk::{self, FileEntry, Loaded};
use crate::{ingest::chunk, ingest::gloss};

/// What a build produced.
#[derive(Debug)]
pub struct BuildOutput {
    /// The index content.
    pub data: IndexData,
    /// Every warning, in file order.
    pub warnings: Vec<Warning>,
}

/// Index a repository.
pub fn build_index(
    root: &Path,
    cfg: &Config,
    progress: &ProgressBar,
) -> Result<BuildOutput, IndexError> {
    let walked = walk::walk(root, cfg)?;
    cpp::check_grammar(walked.files.iter().map(|f| f.language))?;
    let mut warnings = walked.warnings;
    progress.set_length(walked.files.len() as u64);
    progress.set_message("reading");
    let loaded: Vec<Result<(FileEntry, Loaded), Warning>> = walked
        .files
        .into_par_iter()
        .map(|e| file::load(e, cfg))
        .collect();
    // The repository's own macros, from every C++ file, before any parse.
    let repo_macros = RepoMacros::from_sources(loaded.iter().filter_map(|r| match r {
        Ok((e, l)) if e.language == Language::Cpp => Some(l.text.as_str()),
        _ => None,
    }));
    progress.set_message("parsing");
    let results: Vec<Result<FileResult, Warning>> = loaded
        .into_par_iter()
        .map(|r| r.map(|(entry, l)| file::process(entry, l, cfg, &repo_macros)))
        .inspect(|_| progress.inc(1))
        .collect();
    // Each result: its place in `files`, or the warning that skipped it.
    let mut files = Vec::new();
    let mut order: Vec<Result<usize, Warning>> = Vec::new();
    for r in results {
        order.push(r.map(|f| {
            files.push(f);
            files.len() - 1
        }));
    }
    progress.set_message("building graph");
    let (data, chunk_warnings) = assemble(root, &files, cfg);
    for o in order {
        match o {
            Ok(i) => warnings.extend(files[i].warnings.iter().chain(&chunk_warnings[i]).cloned()),
            Err(w) => warnings.push(w),
        }
    }
    Ok(BuildOutput { data, warnings })
}

/// Ids and lookups while assembling.
struct Assembly {
    entities: Vec<Entity>,
    edges: BTreeSet<Edge>,
}

impl Assembly {
    fn add(&mut self, mut e: Entity) -> u32 {
        let id = self.entities.len() as u32;
        e.id = id;
        self.entities.push(e);
        id
    }
    fn edge(&mut self, from: u32, to: u32, kind: EdgeKind) {
        if from != to {
            self.edges.insert(Edge { from, to, kind });
        }
    }
}

fn blank_entity(kind: EntityKind, name: String, qualified_name: String, module: String) -> Entity {
    Entity {
        is_definition: true,
        module,
        ..Entity::new(0, kind, name, qualified_name)
    }
}

fn line_count(text: &str) -> u32 {
    if text.is_empty() {
        0
    } else {
        text.lines().count() as u32
    }
}

/// Resolve an include target to a repository file: relative to the
/// including file's folder first, then the unique (or shortest) path that
/// ends with the target.
fn resolve_include(
    target: &str,
    from: &str,
    paths: &[&str],
    by_path: &HashMap<&str, FileId>,
) -> Option<FileId> {
    let target = target.trim_start_matches("./");
    let dir = folder_of(from);
    let joined = if dir == "." {
        target.to_string()
    } else {
        normalise(&format!("{dir}/{target}"))
    };
    if let Some(&id) = by_path.get(joined.as_str()) {
        return Some(id);
    }
    if let Some(&id) = by_path.get(target) {
        return Some(id);
    }
    let suffix = format!("/{target}");
    paths
        .iter()
        .enumerate()
        .filter(|(_, p)| p.ends_with(&suffix))
        .min_by_key(|(_, p)| (p.matches('/').count(), **p))
        .map(|(i, _)| i as FileId)
}

fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// The index content, and the warnings of the chunk stage per file.
fn assemble(root: &Path, files: &[FileResult], cfg: &Config) -> (IndexData, Vec<Vec<Warning>>) {
    let paths: Vec<&str> = files.iter().map(|f| f.entry.rel_path.as_str()).collect();
    let by_path: HashMap<&str, FileId> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, i as FileId))
        .collect();

    // Source file records.
    let mut source_files: Vec<SourceFile> = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        let (includes, parse) = match &f.parsed {
            Parsed::Cpp(p) => (
                p.includes
                    .iter()
                    .map(|(t, system, line)| Include {
                        target: t.clone(),
                        system: *system,
                        line: *line,
                        resolved: resolve_include(t, &f.entry.rel_path, &paths, &by_path),
                    })
                    .collect(),
                Some(p.stats.clone()),
            ),
            Parsed::Doc(_) => (Vec::new(), None),
        };
        source_files.push(SourceFile {
            id: i as FileId,
            path: f.entry.rel_path.clone(),
            language: f.entry.language,
            source_type: f.entry.source_type,
            scope: f.entry.scope,
            module: f.entry.module.clone(),
            sha256: f.sha256.clone(),
            bytes: f.bytes,
            lines: line_count(&f.text),
            includes,
            parse,
            warnings: f.warnings.iter().map(|w| w.to_string()).collect(),
        });
    }

    let mut asm = Assembly {
        entities: Vec::new(),
        edges: BTreeSet::new(),
    };

    // Modules: every folder holding an indexed file, and its ancestors.
    let mut module_paths: BTreeSet<String> = BTreeSet::new();
    module_paths.insert(".".into());
    for f in files {
        let mut m = f.entry.module.clone();
        while m != "." && !m.is_empty() {
            module_paths.insert(m.clone());
            m = folder_of(&m).to_string();
        }
    }
    let repo_name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "repository".into());
    let mut module_ids: BTreeMap<String, u32> = BTreeMap::new();
    for m in &module_paths {
        let name = if m == "." {
            repo_name.clone()
        } else {
            file_name(m).to_string()
        };
        let mut e = blank_entity(EntityKind::Module, name, m.clone(), m.clone());
        e.signature = format!("module {m}");
        if m != "." {
            e.parent = module_ids.get(folder_of(m)).copied();
            e.parent_symbol = folder_of(m).to_string();
        }
        let id = asm.add(e);
        module_ids.insert(m.clone(), id);
    }
    for (m, &id) in &module_ids {
        if m != "." {
            if let Some(&p) = module_ids.get(folder_of(m)) {
                asm.edge(p, id, EdgeKind::Contains);
            }
        }
    }

    // Files and their entities.
    let mut file_entity: Vec<u32> = Vec::with_capacity(files.len());
    let mut macro_types: BTreeMap<String, String> = BTreeMap::new();
    // (global entity id, raw entity) for cross-file resolution.
    let mut raw_of: HashMap<u32, RawEntity> = HashMap::new();
    // Documentation section entity id → its sections as split.
    let mut doc_of: HashMap<u32, &DocSection> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        let path = &f.entry.rel_path;
        let module = f.entry.module.clone();
        let mut fe = blank_entity(
            EntityKind::File,
            file_name(path).to_string(),
            path.clone(),
            module.clone(),
        );
        fe.file = Some(i as FileId);
        fe.span = Some(Span {
            start_byte: 0,
            end_byte: f.text.len() as u32,
            start_line: 1,
            end_line: line_count(&f.text).max(1),
        });
        fe.parent = module_ids.get(&module).copied();
        fe.parent_symbol = module.clone();
        fe.signature = format!("file {path}");
        let fid = asm.add(fe);
        file_entity.push(fid);
        if let Some(&m) = module_ids.get(&module) {
            asm.edge(m, fid, EdgeKind::Contains);
        }
        match &f.parsed {
            Parsed::Cpp(p) => {
                for (name, first) in &p.macro_types {
                    macro_types
                        .entry(name.clone())
                        .or_insert_with(|| first.clone());
                }
                let base = asm.entities.len() as u32;
                for raw in &p.entities {
                    let mut e = blank_entity(
                        raw.kind,
                        raw.name.clone(),
                        raw.qualified_name.clone(),
                        module.clone(),
                    );
                    e.parent = Some(raw.parent.map_or(fid, |k| base + k as u32));
                    e.parent_symbol = raw.parent_symbol.clone();
                    e.class_name = raw.class_name.clone();
                    e.file = Some(i as FileId);
                    e.span = Some(raw.span);
                    e.signature = raw.signature.clone();
                    e.return_type = raw.return_type.clone();
                    e.params = raw.params.clone();
                    e.template_params = raw.template_params.clone();
                    e.bases = raw.bases.clone();
                    e.doc_comment = raw.doc_comment.clone();
                    e.is_definition = raw.is_definition;
                    let parent = e.parent;
                    let id = asm.add(e);
                    if let Some(p) = parent {
                        asm.edge(p, id, EdgeKind::Contains);
                    }
                    raw_of.insert(id, raw.clone());
                }
            }
            Parsed::Doc(sections) => {
                let base = asm.entities.len() as u32;
                for s in sections {
                    let mut e = blank_entity(
                        EntityKind::DocSection,
                        s.title.clone(),
                        s.section_path.clone(),
                        module.clone(),
                    );
                    e.parent = Some(s.parent.map_or(fid, |k| base + k as u32));
                    e.parent_symbol = match s.section_path.rfind(" > ") {
                        Some(k) => s.section_path[..k].to_string(),
                        None => String::new(),
                    };
                    e.file = Some(i as FileId);
                    e.span = Some(s.span);
                    e.signature = s.section_path.clone();
                    e.section_path = Some(s.section_path.clone());
                    let parent = e.parent;
                    let id = asm.add(e);
                    if let Some(p) = parent {
                        asm.edge(p, id, EdgeKind::Contains);
                    }
                    doc_of.insert(id, s);
                }
            }
        }
    }

    // Includes.
    for sf in &source_files {
        for inc in &sf.includes {
            if let Some(t) = inc.resolved {
                asm.edge(
                    file_entity[sf.id as usize],
                    file_entity[t as usize],
                    EdgeKind::Includes,
                );
            }
        }
    }

    resolve_members(&mut asm);
    resolve_inheritance(&mut asm, &macro_types);
    let defs = resolve_definitions(&mut asm);
    resolve_calls(&mut asm, &raw_of, &defs, &source_files);
    add_call_chains(&mut asm);

    let mut data = IndexData {
        files: source_files,
        entities: asm.entities,
        chunks: Vec::new(),
        edges: asm.edges.into_iter().collect(),
    };
    gloss::structural_glosses(&mut data);
    let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
    crate::ingest::concepts::fill_concepts(&mut data, &texts, &cfg.concepts);
    let chunked = chunk::build_chunks(&data, &texts, &doc_of, &raw_of, &cfg.chunk);
    data.chunks = chunked.chunks;
    let mut warnings: Vec<Vec<Warning>> = vec![Vec::new(); files.len()];
    for (fid, w) in chunked.warnings {
        data.files[fid as usize].warnings.push(w.to_string());
        warnings[fid as usize].push(w);
    }
    (data, warnings)
}

/// Strip template arguments from every `::` segment.
fn key(qualified: &str) -> String {
    cpp::strip_template_args(qualified)
}

/// Out-of-class definitions (`void A::f() {}`): when the written scope
/// names a class, the entity is a method of it.
fn resolve_members(asm: &mut Assembly) {
    let mut records: HashMap<String, Vec<u32>> = HashMap::new();
    let mut records_by_name: HashMap<String, Vec<u32>> = HashMap::new();
    for e in &asm.entities {
        if e.kind.is_record() {
            records
                .entry(key(&e.qualified_name))
                .or_default()
                .push(e.id);
            records_by_name.entry(key(&e.name)).or_default().push(e.id);
        }
    }
    let mut updates = Vec::new();
    for e in &asm.entities {
        if !e.kind.is_callable() || e.class_name.is_some() && e.kind == EntityKind::Method {
            continue;
        }
        if e.parent_symbol.is_empty() {
            continue;
        }
        let scope_key = key(&e.parent_symbol);
        let last = scope_key
            .rsplit("::")
            .next()
            .unwrap_or(&scope_key)
            .to_string();
        let hit = records
            .get(&scope_key)
            .or_else(|| records_by_name.get(&last).filter(|v| !v.is_empty()))
            .and_then(|v| {
                // Prefer the primary template (no specialisation) and a definition.
                v.iter().copied().min_by_key(|&id| {
                    let r = &asm.entities[id as usize];
                    (r.name.contains('<'), !r.is_definition, id)
                })
            });
        if let Some(class) = hit {
            updates.push((e.id, class));
        }
    }
    for (id, class) in updates {
        let class_qn = asm.entities[class as usize].qualified_name.clone();
        let lexical_parent = asm.entities[id as usize].parent;
        let e = &mut asm.entities[id as usize];
        if e.kind == EntityKind::Function {
            e.kind = EntityKind::Method;
        }
        e.class_name = Some(class_qn);
        // The lexical parent is a file or namespace; the class owns it.
        let parent_is_class = lexical_parent.is_some_and(|p| p == class);
        if !parent_is_class {
            e.parent = Some(class);
        }
    }
}

fn resolve_inheritance(asm: &mut Assembly, macro_types: &BTreeMap<String, String>) {
    let mut by_key: HashMap<String, Vec<u32>> = HashMap::new();
    for e in &asm.entities {
        if e.kind.is_record() {
            let k = key(&e.qualified_name);
            let last = k.rsplit("::").next().unwrap_or(&k).to_string();
            by_key.entry(last).or_default().push(e.id);
        }
    }
    let mut new_edges = Vec::new();
    for e in &asm.entities {
        if !e.kind.is_record() {
            continue;
        }
        for b in &e.bases {
            let mut target = cpp::base_target(b);
            if let Some(expanded) = macro_types.get(&target) {
                target = expanded.clone();
            }
            let target = key(&target);
            let last = target.rsplit("::").next().unwrap_or(&target).to_string();
            let ns = key(&e.parent_symbol);
            let best = by_key.get(&last).and_then(|cands| {
                cands
                    .iter()
                    .copied()
                    .filter(|&c| c != e.id)
                    .filter(|&c| {
                        let ck = key(&asm.entities[c as usize].qualified_name);
                        ck == target
                            || ck.ends_with(&format!("::{target}"))
                            || !target.contains("::")
                    })
                    .min_by_key(|&c| {
                        let r = &asm.entities[c as usize];
                        let rk = key(&r.qualified_name);
                        let shared = common_prefix_segments(&rk, &ns);
                        (
                            usize::MAX - shared,
                            r.name.contains('<'),
                            !r.is_definition,
                            c,
                        )
                    })
            });
            if let Some(t) = best {
                new_edges.push((e.id, t));
            }
        }
    }
    for (a, b) in new_edges {
        asm.edge(a, b, EdgeKind::Inherits);
    }
}

fn common_prefix_segments(a: &str, b: &str) -> usize {
    a.split("::")
        .zip(b.split("::"))
        .take_while(|(x, y)| x == y)
        .count()
}

/// Link definitions to declarations (`Defines`). Returns declaration →
/// definition for call resolution.
fn resolve_definitions(asm: &mut Assembly) -> HashMap<u32, u32> {
    let mut decls: HashMap<String, Vec<u32>> = HashMap::new();
    for e in &asm.entities {
        if e.kind.is_callable() && !e.is_definition {
            decls.entry(key(&e.qualified_name)).or_default().push(e.id);
        }
    }
    let mut decl_to_def = HashMap::new();
    let mut new_edges = Vec::new();
    for e in &asm.entities {
        if !(e.kind.is_callable() && e.is_definition) {
            continue;
        }
        let Some(cands) = decls.get(&key(&e.qualified_name)) else {
            if let Some(class) = e
                .parent
                .filter(|&p| asm.entities[p as usize].kind.is_record())
            {
                new_edges.push((class, e.id, EdgeKind::Contains));
            }
            continue;
        };
        let best = cands.iter().copied().min_by_key(|&d| {
            let de = &asm.entities[d as usize];
            (de.params.len() != e.params.len(), d)
        });
        if let Some(d) = best {
            new_edges.push((e.id, d, EdgeKind::Defines));
            decl_to_def.entry(d).or_insert(e.id);
        }
    }
    for (a, b, k) in new_edges {
        asm.edge(a, b, k);
    }
    decl_to_def
}

fn resolve_calls(
    asm: &mut Assembly,
    raw_of: &HashMap<u32, RawEntity>,
    decl_to_def: &HashMap<u32, u32>,
    files: &[SourceFile],
) {
    let mut by_name: HashMap<&str, Vec<u32>> = HashMap::new();
    for e in &asm.entities {
        if e.kind.is_callable() {
            by_name.entry(e.name.as_str()).or_default().push(e.id);
        }
    }
    // Files visible from each file: itself and its direct includes.
    let visible: Vec<BTreeSet<FileId>> = files
        .iter()
        .map(|f| {
            let mut s: BTreeSet<FileId> = f.includes.iter().filter_map(|i| i.resolved).collect();
            s.insert(f.id);
            s
        })
        .collect();
    let mut new_edges = BTreeSet::new();
    let mut ids: Vec<u32> = raw_of.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let raw = &raw_of[&id];
        if raw.calls.is_empty() {
            continue;
        }
        let caller = &asm.entities[id as usize];
        let caller_class = caller.class_name.as_deref().map(key);
        let caller_ns = key(&caller.parent_symbol);
        let caller_file = caller.file;
        for call in &raw.calls {
            let Some(cands) = by_name.get(call.name.as_str()) else {
                continue;
            };
            let cands: Vec<u32> = cands.iter().copied().filter(|&c| c != id).collect();
            if cands.is_empty() {
                continue;
            }
            let ent = |c: u32| &asm.entities[c as usize];
            let chosen: Vec<u32> = if let Some(q) = &call.qualifier {
                let q = key(q);
                cands
                    .iter()
                    .copied()
                    .filter(|&c| {
                        let ps = key(&ent(c).parent_symbol);
                        ps == q || ps.ends_with(&format!("::{q}"))
                    })
                    .collect()
            } else {
                let same_class: Vec<u32> = match (&caller_class, call.on_object) {
                    (Some(cc), false) => cands
                        .iter()
                        .copied()
                        .filter(|&c| {
                            ent(c).class_name.as_deref().map(key).as_deref() == Some(cc.as_str())
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                let visible_files: Vec<u32> = cands
                    .iter()
                    .copied()
                    .filter(|&c| match (ent(c).file, caller_file) {
                        (Some(cf), Some(f)) => visible[f as usize].contains(&cf),
                        _ => false,
                    })
                    .collect();
                let same_ns: Vec<u32> = if call.on_object {
                    Vec::new()
                } else {
                    cands
                        .iter()
                        .copied()
                        .filter(|&c| {
                            ent(c).class_name.is_none() && key(&ent(c).parent_symbol) == caller_ns
                        })
                        .collect()
                };
                [same_class, visible_files, same_ns, cands.clone()]
                    .into_iter()
                    .find(|t| !t.is_empty())
                    .unwrap_or_default()
            };
            // Too many equally good targets: the edge would be noise.
            let mut targets: BTreeSet<u32> = chosen
                .into_iter()
                .map(|c| decl_to_def.get(&c).copied().unwrap_or(c))
                .collect();
            targets.remove(&id);
            if targets.is_empty() || targets.len() > 3 {
                continue;
            }
            for t in targets {
                new_edges.insert((id, t));
            }
        }
    }
    for (a, b) in new_edges {
        asm.edge(a, b, EdgeKind::Calls);
    }
}

/// One call-chain entity per callable definition that calls or is called
/// by another known callable.
fn add_call_chains(asm: &mut Assembly) {
    let mut involved: BTreeSet<u32> = BTreeSet::new();
    for e in &asm.edges {
        if e.kind == EdgeKind::Calls {
            involved.insert(e.from);
            involved.insert(e.to);
        }
    }
    for id in involved {
        let c = asm.entities[id as usize].clone();
        if !(c.kind.is_callable() && c.is_definition) {
            continue;
        }
        let mut e = blank_entity(
            EntityKind::CallChain,
            c.name.clone(),
            format!("{} (call chain)", c.qualified_name),
            c.module.clone(),
        );
        e.parent = Some(id);
        e.parent_symbol = c.qualified_name.clone();
        e.class_name = c.class_name.clone();
        e.file = c.file;
        e.signature = c.signature.clone();
        let chain = asm.add(e);
        asm.edge(chain, id, EdgeKind::Summarizes);
    }
}

/// Stats summed over files, for the CLI summary.
pub fn total_parse_stats(data: &IndexData) -> ParseStats {
    let mut t = ParseStats::default();
    for p in data.files.iter().filter_map(|f| f.parse.as_ref()) {
        t.functions += p.functions;
        t.functions_in_error += p.functions_in_error;
        t.functions_raw += p.functions_raw;
        t.functions_in_error_raw += p.functions_in_error_raw;
        t.error_nodes += p.error_nodes;
        t.neutralised_macros += p.neutralised_macros;
    }
    t
}
