//! Parse every C++ file under a folder and print the share of function
//! bodies that lie inside tree-sitter ERROR nodes, before and after macro
//! neutralisation, with the worst files first.
//!
//! `cargo run --release -p codegloss-indexer --example errshare -- <dir>`

fn main() -> anyhow::Result<()> {
    let root = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: errshare <dir>"))?;
    let cfg = codegloss_indexer::Config::default();
    let (mut f, mut e, mut fr, mut er) = (0u64, 0u64, 0u64, 0u64);
    let mut worst = vec![];
    for entry in ignore::WalkBuilder::new(&root).build().flatten() {
        let p = entry.path();
        let rel = p
            .strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        match codegloss_indexer::ingest::walk::classify(&rel, &cfg.files) {
            Some((codegloss_core::Language::Cpp, _)) => {}
            _ => continue,
        }
        let Ok(src) = std::fs::read_to_string(p) else {
            continue;
        };
        let r = codegloss_indexer::ingest::cpp::parse_cpp(&src, &cfg.parse)?;
        f += u64::from(r.stats.functions);
        e += u64::from(r.stats.functions_in_error);
        fr += u64::from(r.stats.functions_raw);
        er += u64::from(r.stats.functions_in_error_raw);
        if r.stats.functions_in_error > 0 {
            worst.push((r.stats.functions_in_error, rel, r.error_lines.clone()));
        }
    }
    worst.sort();
    for w in worst.iter().rev().take(25) {
        println!("{} in error: {} (ERROR at lines {:?})", w.0, w.1, w.2);
    }
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "after neutralisation: {e}/{f} = {:.2}%; before: {er}/{fr} = {:.2}%",
        pct(e, f),
        pct(er, fr)
    );
    Ok(())
}
