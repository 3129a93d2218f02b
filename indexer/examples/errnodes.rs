//! Print the innermost tree-sitter ERROR nodes of C++ files as the indexer
//! parses them (the repository's macros read from `<repo>`), with the
//! text around each: where to look when a file parses badly.
//!
//! `cargo run --release -p codegloss-indexer --example errnodes -- <repo> <file>...`

fn innermost(node: tree_sitter::Node, out: &mut Vec<(usize, usize, usize)>) {
    if !node.has_error() && !node.is_error() && !node.is_missing() {
        return;
    }
    let mut c = node.walk();
    let before = out.len();
    for ch in node.children(&mut c) {
        innermost(ch, out);
    }
    if out.len() == before && (node.is_error() || node.is_missing()) {
        out.push((
            node.start_byte(),
            node.end_byte(),
            node.start_position().row + 1,
        ));
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let repo = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: errnodes <repo> <file>..."))?;
    let cfg = codegloss_indexer::Config::default();
    let mut texts = Vec::new();
    for entry in ignore::WalkBuilder::new(&repo).build().flatten() {
        let rel = entry
            .path()
            .strip_prefix(&repo)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        if let Some((codegloss_core::Language::Cpp, _)) =
            codegloss_indexer::ingest::walk::classify(&rel, &cfg.files)
        {
            if let Ok(t) = std::fs::read_to_string(entry.path()) {
                texts.push(t);
            }
        }
    }
    let repo_macros = codegloss_indexer::ingest::macros::RepoMacros::from_sources(
        texts.iter().map(String::as_str),
    );
    if std::env::var_os("ERRNODES_RULES").is_some() {
        for (name, rule) in &repo_macros.rules {
            println!("rule {name}: {rule:?}");
        }
    }
    for file in args {
        let src = std::fs::read_to_string(&file)?;
        let mut parser = codegloss_indexer::ingest::cpp::cpp_parser()?;
        let (text, tree, _) = codegloss_indexer::ingest::cpp::neutralised_tree(
            &mut parser,
            &src,
            &cfg.parse,
            &repo_macros,
        )?;
        let mut out = Vec::new();
        innermost(tree.root_node(), &mut out);
        println!("== {file}: {} innermost ERROR/MISSING nodes", out.len());
        for (s, e, row) in out.iter().take(12) {
            let a = text[..*s].rfind('\n').map_or(0, |k| k + 1);
            let b = text[*e..].find('\n').map_or(text.len(), |k| e + k);
            let b = b.min(a + 240);
            println!("  line {row}: [{}] {:?}", e - s, &text[a..b.max(a)]);
        }
    }
    Ok(())
}
