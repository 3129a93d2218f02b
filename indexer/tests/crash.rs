//! A crash during `codegloss index`: the real binary, killed with SIGKILL
//! at spread-out points of a run that rewrites an existing index. The
//! previous index must stay loadable and whole after every kill (or the
//! new one be complete), and two runs into one folder must not interleave.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codegloss_indexer::{store, IndexError};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codegloss"))
}

/// A synthetic repository large enough that writing its index takes a
/// noticeable part of the run: `files` headers of `functions` functions.
fn repo(dir: &Path, files: usize, functions: usize, generation: usize) {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for f in 0..files {
        let mut text =
            format!("/// Module {f}, generation {generation}.\n#pragma once\nnamespace m{f} {{\n");
        for g in 0..functions {
            text.push_str(&format!(
                "/// Adds the weights of stage {g} to the field (generation {generation}).\n\
                 inline double stage_{g}_{generation}(const double* w, int n) {{\n\
                 \x20   double s = 0;\n    for (int i = 0; i < n; ++i) {{ s += w[i] * {g}; }}\n    return s;\n}}\n"
            ));
        }
        text.push_str("}\n");
        std::fs::write(src.join(format!("module_{f}.hpp")), text).unwrap();
    }
}

fn index(repo: &Path, out: &Path) -> Command {
    let mut c = bin();
    c.arg("index")
        .arg(repo)
        .arg("--out")
        .arg(out)
        .args(["--no-embed", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// The names in a folder.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The source hashes of the index in `out`, after checking that everything
/// in it loads and verifies.
fn whole_index(out: &Path) -> Vec<(String, String)> {
    let (manifest, _) = store::load_corpus(out)
        .unwrap_or_else(|e| panic!("the index in {} is not whole: {e}", out.display()));
    manifest.source_files.into_iter().collect()
}

/// Kill points from a fixed seed (a small LCG), spread over the run
/// (even runs kill at that time; odd ones that fraction of it after the
/// first file of the new index appears).
fn kill_points(n: usize, run: Duration) -> Vec<Duration> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let _ = i;
            run.mul_f64(u * 1.05)
        })
        .collect()
}

#[test]
fn a_killed_index_run_leaves_a_whole_index() {
    let work = tempfile::tempdir().unwrap();
    let (old_repo, new_repo): (PathBuf, PathBuf) = (work.path().join("a"), work.path().join("b"));
    repo(&old_repo, 40, 30, 1);
    repo(&new_repo, 40, 30, 2);
    let out = work.path().join("index");
    assert!(index(&old_repo, &out).status().unwrap().success());
    let old = whole_index(&out);
    // How long a rewrite takes here.
    let t = Instant::now();
    assert!(index(&new_repo, &out).status().unwrap().success());
    let run = t.elapsed();
    let new = whole_index(&out);
    assert_ne!(old, new);

    let mut outcomes = (0, 0);
    for (i, at) in kill_points(20, run).into_iter().enumerate() {
        // Start each run from the old index, then rewrite it with the new.
        let (from, to) = if i % 2 == 0 {
            (&old_repo, &new_repo)
        } else {
            (&new_repo, &old_repo)
        };
        assert!(index(from, &out).status().unwrap().success());
        let before = whole_index(&out);
        let names_before = listing(&out);
        let mut child = index(to, &out).spawn().unwrap();
        if i % 2 == 0 {
            std::thread::sleep(at);
        } else {
            // Wait for the run to start writing files, then kill it a
            // little later: inside the write phase.
            let t = Instant::now();
            while listing(&out) == names_before && t.elapsed() < run * 4 {
                std::thread::sleep(Duration::from_micros(200));
            }
            std::thread::sleep(at.mul_f64(0.02));
        }
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let after = whole_index(&out);
        if after == before {
            outcomes.0 += 1;
        } else {
            assert_eq!(
                after,
                if to == &new_repo {
                    new.clone()
                } else {
                    old.clone()
                },
                "run {i} (killed at {at:?}, {status}): neither the old index nor the new one"
            );
            outcomes.1 += 1;
        }
    }
    eprintln!(
        "20 kills over a {run:?} run: {} left the previous index, {} the new one",
        outcomes.0, outcomes.1
    );
    // Nothing left over from the interrupted runs after a clean one.
    assert!(index(&new_repo, &out).status().unwrap().success());
    let mut names = listing(&out);
    names.retain(|n| n != store::LOCK);
    assert_eq!(names.len(), 6, "stale files left: {names:?}");
}

#[test]
fn two_index_runs_into_one_folder_do_not_interleave() {
    let work = tempfile::tempdir().unwrap();
    let r = work.path().join("repo");
    repo(&r, 2, 3, 1);
    let out = work.path().join("index");
    // Another writer holds the folder (this test, as a second process would).
    let lock = store::lock_index_dir(&out).unwrap();
    assert!(matches!(
        store::lock_index_dir(&out),
        Err(IndexError::Locked { .. })
    ));
    let o = index(&r, &out).stderr(Stdio::piped()).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("another `codegloss index` is writing"),
        "{err}"
    );
    assert!(!out.join("manifest.json").exists());
    drop(lock);
    assert!(index(&r, &out).status().unwrap().success());
    whole_index(&out);
}
