//! The `codegloss` binary as a user runs it: results on stdout, problems
//! on stderr, non-zero exit with a clear message on errors.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codegloss"))
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sci-demo")
}

#[test]
fn index_then_inspect() {
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args([
            "index",
            fixture().to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("indexed 20 files"), "{stdout}");
    assert!(
        stdout.contains("function bodies in tree-sitter ERROR nodes: 0/"),
        "{stdout}"
    );
    assert!(stdout.contains("calls"), "{stdout}");

    let o = bin()
        .args([
            "inspect",
            out.path().to_str().unwrap(),
            "--symbol",
            "BareField::fillHalo",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("src/Field/BareField.hpp"), "{s}");
    assert!(s.contains("gloss (structural)"), "{s}");
    assert!(
        s.contains("-> calls method picsim::detail::HaloCells::fillHalo"),
        "{s}"
    );

    let o = bin()
        .args([
            "inspect",
            out.path().to_str().unwrap(),
            "--file",
            "Field/HaloCells.h",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn errors_are_clear_and_non_zero() {
    let o = bin()
        .args(["index", "/nonexistent/repo", "--out", "/tmp/never"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("error:") && e.contains("/nonexistent/repo") && e.contains("not a directory"),
        "{e}"
    );

    let empty = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["inspect", empty.path().to_str().unwrap(), "--symbol", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("manifest.json"));
}

#[test]
fn help_everywhere() {
    for args in [
        vec!["--help"],
        vec!["index", "--help"],
        vec!["inspect", "--help"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("Usage"));
    }
}
