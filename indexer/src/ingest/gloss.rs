//! Structural glosses: deterministic explanations built from facts.
//!
//! Until a model writes explanations (a later stage), every entity gets a
//! gloss assembled from what the parser and the structure graph know:
//! signature, doc comment, members, bases, callers and callees, includes,
//! and the files and top symbols of a module. It is stored in the field a
//! model explanation will later fill, with `gloss_source = structural`.

use std::collections::HashMap;

use codegloss_core::{EdgeKind, Entity, EntityKind, GlossSource, IndexData};

/// Most items named in one list of a gloss.
const LIST_MAX: usize = 12;

/// The structure graph as adjacency lists (shared with `explain`).
pub(crate) struct Adjacency {
    out: HashMap<(u32, EdgeKind), Vec<u32>>,
    inc: HashMap<(u32, EdgeKind), Vec<u32>>,
    /// Entity ids of each file, in id order (built once, not per gloss).
    pub(crate) by_file: Vec<Vec<u32>>,
}

impl Adjacency {
    pub(crate) fn new(data: &IndexData) -> Self {
        let mut out: HashMap<(u32, EdgeKind), Vec<u32>> = HashMap::new();
        let mut inc: HashMap<(u32, EdgeKind), Vec<u32>> = HashMap::new();
        for e in &data.edges {
            out.entry((e.from, e.kind)).or_default().push(e.to);
            inc.entry((e.to, e.kind)).or_default().push(e.from);
        }
        let mut by_file: Vec<Vec<u32>> = vec![Vec::new(); data.files.len()];
        for e in &data.entities {
            if let Some(f) = e.file {
                by_file[f as usize].push(e.id);
            }
        }
        Adjacency { out, inc, by_file }
    }
    pub(crate) fn out(&self, id: u32, kind: EdgeKind) -> &[u32] {
        self.out.get(&(id, kind)).map_or(&[], Vec::as_slice)
    }
    pub(crate) fn inc(&self, id: u32, kind: EdgeKind) -> &[u32] {
        self.inc.get(&(id, kind)).map_or(&[], Vec::as_slice)
    }
}

fn list(names: impl IntoIterator<Item = String>) -> String {
    let all: Vec<String> = names.into_iter().collect();
    let total = all.len();
    let mut shown: Vec<String> = all.into_iter().take(LIST_MAX).collect();
    if total > LIST_MAX {
        shown.push(format!("and {} more", total - LIST_MAX));
    }
    shown.join(", ")
}

fn first_paragraph(doc: &str) -> String {
    let para: Vec<&str> = doc.lines().take_while(|l| !l.trim().is_empty()).collect();
    let text = para.join(" ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > 400 {
        let cut: String = text.chars().take(400).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// Fill `gloss` of every entity with a structural explanation.
pub fn structural_glosses(data: &mut IndexData) {
    let adj = Adjacency::new(data);
    let texts: Vec<String> = data
        .entities
        .iter()
        .map(|e| gloss_for(data, &adj, e))
        .collect();
    for (e, text) in data.entities.iter_mut().zip(texts) {
        e.gloss.text = text;
        e.gloss.source = GlossSource::Structural;
        e.gloss.model = None;
    }
}

/// Where an entity lives, as a path without line numbers: glosses are
/// embedded, and line numbers would change the gloss (and so the vector)
/// of every entity that mentions a definition further down an edited file.
/// Each chunk carries its own exact line range.
fn location(data: &IndexData, e: &Entity) -> String {
    match e.file {
        Some(f) => data.files[f as usize].path.clone(),
        None => e.qualified_name.clone(),
    }
}

fn gloss_for(data: &IndexData, adj: &Adjacency, e: &Entity) -> String {
    let name_of = |id: &u32| data.entities[*id as usize].qualified_name.clone();
    let mut parts: Vec<String> = Vec::new();
    match e.kind {
        k if k.is_callable() => {
            let what = match k {
                EntityKind::Method => "Method",
                EntityKind::Constructor => "Constructor",
                EntityKind::Destructor => "Destructor",
                _ => "Function",
            };
            let state = if e.is_definition {
                "defined"
            } else {
                "declared"
            };
            parts.push(format!(
                "{what} `{}` {state} at {}.",
                e.qualified_name,
                location(data, e)
            ));
            if let Some(t) = &e.template_params {
                parts.push(format!("Template parameters {t}."));
            }
            if let Some(c) = &e.class_name {
                parts.push(format!("Member of `{c}`."));
            }
            if let Some(rt) = e.return_type.as_deref().filter(|r| !r.is_empty()) {
                parts.push(format!("Returns `{rt}`."));
            }
            if !e.params.is_empty() {
                parts.push(format!(
                    "Parameters: {}.",
                    list(e.params.iter().map(|p| if p.name.is_empty() {
                        format!("`{}`", p.ty)
                    } else {
                        format!("{} (`{}`)", p.name, p.ty)
                    }))
                ));
            }
            let defs = adj.out(e.id, EdgeKind::Defines);
            if let Some(d) = defs.first() {
                parts.push(format!(
                    "Declared at {}.",
                    location(data, &data.entities[*d as usize])
                ));
            }
            let impls = adj.inc(e.id, EdgeKind::Defines);
            if let Some(d) = impls.first() {
                parts.push(format!(
                    "Defined at {}.",
                    location(data, &data.entities[*d as usize])
                ));
            }
            let callees = adj.out(e.id, EdgeKind::Calls);
            if !callees.is_empty() {
                parts.push(format!("Calls {}.", list(callees.iter().map(name_of))));
            }
            let callers = adj.inc(e.id, EdgeKind::Calls);
            if !callers.is_empty() {
                parts.push(format!("Called by {}.", list(callers.iter().map(name_of))));
            }
        }
        k if k.is_record() => {
            let what = match k {
                EntityKind::Struct => "Struct",
                EntityKind::Union => "Union",
                _ => "Class",
            };
            let tmpl = e
                .template_params
                .as_deref()
                .map(|t| format!(" template {t}"))
                .unwrap_or_default();
            let state = if e.is_definition {
                "defined"
            } else {
                "forward-declared"
            };
            parts.push(format!(
                "{what}{tmpl} `{}` {state} at {}.",
                e.qualified_name,
                location(data, e)
            ));
            if !e.bases.is_empty() {
                parts.push(format!(
                    "Derives from {}.",
                    list(e.bases.iter().map(|b| format!("`{b}`")))
                ));
            }
            let derived = adj.inc(e.id, EdgeKind::Inherits);
            if !derived.is_empty() {
                parts.push(format!("Derived by {}.", list(derived.iter().map(name_of))));
            }
            let members: Vec<&Entity> = adj
                .out(e.id, EdgeKind::Contains)
                .iter()
                .map(|m| &data.entities[*m as usize])
                .collect();
            let methods: Vec<String> = members
                .iter()
                .filter(|m| m.kind.is_callable())
                .map(|m| m.name.clone())
                .collect();
            let types: Vec<String> = members
                .iter()
                .filter(|m| !m.kind.is_callable())
                .map(|m| m.name.clone())
                .collect();
            if !methods.is_empty() {
                let mut uniq = methods.clone();
                uniq.dedup();
                parts.push(format!("Member functions: {}.", list(uniq)));
            }
            if !types.is_empty() {
                parts.push(format!("Member types: {}.", list(types)));
            }
        }
        EntityKind::Namespace => {
            let members = adj.out(e.id, EdgeKind::Contains);
            parts.push(format!(
                "Namespace block `{}` at {} with {} declarations.",
                e.qualified_name,
                location(data, e),
                members.len()
            ));
            if !members.is_empty() {
                parts.push(format!(
                    "Declares {}.",
                    list(
                        members
                            .iter()
                            .map(|m| data.entities[*m as usize].name.clone())
                    )
                ));
            }
        }
        EntityKind::Enum => parts.push(format!(
            "Enumeration `{}` at {}: `{}`.",
            e.qualified_name,
            location(data, e),
            e.signature
        )),
        EntityKind::TypeAlias => parts.push(format!(
            "Type alias `{}` at {}: `{}`.",
            e.qualified_name,
            location(data, e),
            e.signature
        )),
        EntityKind::DocSection => {
            let f = e
                .file
                .map(|f| data.files[f as usize].path.clone())
                .unwrap_or_default();
            parts.push(format!(
                "Documentation section \"{}\" of {} ({}).",
                e.section_path.as_deref().unwrap_or(&e.name),
                f,
                location(data, e)
            ));
            let subs = adj.out(e.id, EdgeKind::Contains);
            if !subs.is_empty() {
                parts.push(format!(
                    "Subsections: {}.",
                    list(subs.iter().map(|s| data.entities[*s as usize].name.clone()))
                ));
            }
        }
        EntityKind::File => file_gloss(data, adj, e, &mut parts),
        EntityKind::Module => module_gloss(data, adj, e, &mut parts),
        EntityKind::CallChain => {
            let target = e.parent.map(|p| &data.entities[p as usize]);
            if let Some(t) = target {
                parts.push(format!(
                    "Call neighbourhood of `{}` ({}).",
                    t.qualified_name,
                    location(data, t)
                ));
                for (label, ids) in [
                    ("Called by", adj.inc(t.id, EdgeKind::Calls)),
                    ("Calls", adj.out(t.id, EdgeKind::Calls)),
                ] {
                    if !ids.is_empty() {
                        parts.push(format!(
                            "{label} {}.",
                            list(ids.iter().map(|c| format!(
                                "{} ({})",
                                name_of(c),
                                location(data, &data.entities[*c as usize])
                            )))
                        ));
                    }
                }
                if let Some(d) = &t.doc_comment {
                    parts.push(first_paragraph(d));
                }
            }
        }
        _ => parts.push(format!("`{}` at {}.", e.qualified_name, location(data, e))),
    }
    if !matches!(
        e.kind,
        EntityKind::CallChain | EntityKind::File | EntityKind::Module
    ) {
        if let Some(doc) = &e.doc_comment {
            parts.push(format!("Doc comment: {}", first_paragraph(doc)));
        }
    }
    parts.join(" ")
}

fn file_gloss(data: &IndexData, adj: &Adjacency, e: &Entity, parts: &mut Vec<String>) {
    let Some(fid) = e.file else { return };
    let f = &data.files[fid as usize];
    parts.push(format!(
        "File `{}`: {} {} file in module `{}` ({} scope), {} lines.",
        f.path,
        f.language.as_str(),
        f.source_type.as_str(),
        f.module,
        f.scope.as_str(),
        f.lines
    ));
    let top: Vec<&Entity> = adj.by_file[fid as usize]
        .iter()
        .map(|&id| &data.entities[id as usize])
        .filter(|x| x.kind != EntityKind::File && x.kind != EntityKind::CallChain)
        .collect();
    let mut by_kind: Vec<(EntityKind, Vec<String>)> = Vec::new();
    for k in [
        EntityKind::Class,
        EntityKind::Struct,
        EntityKind::Enum,
        EntityKind::Function,
        EntityKind::Method,
        EntityKind::DocSection,
    ] {
        let names: Vec<String> = top
            .iter()
            .filter(|x| x.kind == k && (x.is_definition || k == EntityKind::Method))
            .map(|x| {
                if k == EntityKind::DocSection {
                    x.name.clone()
                } else {
                    x.qualified_name.clone()
                }
            })
            .collect();
        if !names.is_empty() {
            by_kind.push((k, names));
        }
    }
    for (k, names) in by_kind {
        let label = match k {
            EntityKind::Class => "Classes",
            EntityKind::Struct => "Structs",
            EntityKind::Enum => "Enums",
            EntityKind::Function => "Functions",
            EntityKind::Method => "Methods",
            _ => "Sections",
        };
        let mut names = names;
        names.dedup();
        parts.push(format!("{label}: {}.", list(names)));
    }
    let includes: Vec<String> = f.includes.iter().map(|i| i.target.clone()).collect();
    if !includes.is_empty() {
        parts.push(format!("Includes {}.", list(includes)));
    }
    let by = adj.inc(e.id, EdgeKind::Includes);
    if !by.is_empty() {
        parts.push(format!(
            "Included by {}.",
            list(
                by.iter()
                    .map(|i| data.entities[*i as usize].qualified_name.clone())
            )
        ));
    }
    // The file's own leading comment, when it has one (first symbol's doc is not it).
    if let Some(first) = top
        .iter()
        .find(|x| x.kind == EntityKind::Namespace || x.kind.is_record())
    {
        if let Some(d) = &first.doc_comment {
            parts.push(format!("Leading documentation: {}", first_paragraph(d)));
        }
    }
}

fn module_gloss(data: &IndexData, adj: &Adjacency, e: &Entity, parts: &mut Vec<String>) {
    let children = adj.out(e.id, EdgeKind::Contains);
    let files: Vec<&Entity> = children
        .iter()
        .map(|c| &data.entities[*c as usize])
        .filter(|c| c.kind == EntityKind::File)
        .collect();
    let subs: Vec<&Entity> = children
        .iter()
        .map(|c| &data.entities[*c as usize])
        .filter(|c| c.kind == EntityKind::Module)
        .collect();
    parts.push(format!(
        "Module (folder) `{}` with {} files and {} submodules.",
        e.qualified_name,
        files.len(),
        subs.len()
    ));
    if !files.is_empty() {
        parts.push(format!(
            "Files: {}.",
            list(files.iter().map(|f| f.name.clone()))
        ));
    }
    if !subs.is_empty() {
        parts.push(format!(
            "Submodules: {}.",
            list(subs.iter().map(|s| s.qualified_name.clone()))
        ));
    }
    let mut file_ids: Vec<u32> = files.iter().filter_map(|f| f.file).collect();
    file_ids.sort_unstable();
    let mut top: Vec<String> = file_ids
        .iter()
        .flat_map(|f| adj.by_file[*f as usize].iter())
        .map(|&id| &data.entities[id as usize])
        .filter(|x| (x.kind.is_record() || x.kind == EntityKind::Function) && x.is_definition)
        .map(|x| x.qualified_name.clone())
        .collect();
    top.dedup();
    if !top.is_empty() {
        parts.push(format!("Top symbols: {}.", list(top)));
    }
}
