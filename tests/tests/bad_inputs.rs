//! Bad input never stops indexing and never loses the good files: each
//! problem gives a warning that names the file.

use std::path::Path;

use codegloss_core::{CoreError, DataKind};
use codegloss_indexer::{ingest::build, store, Config, IndexError};
use indicatif::ProgressBar;

const GOOD: &str = "namespace demo {\n/// Adds.\nint add(int a, int b) { return a + b; }\n}\n";

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn index(root: &Path) -> build::BuildOutput {
    build::build_index(root, &Config::default(), &ProgressBar::hidden())
        .expect("indexing never fails on bad files")
}

#[test]
fn bad_files_warn_and_lose_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/good.cpp", GOOD.as_bytes());
    let mut binary = b"int x;\n".to_vec();
    binary.extend_from_slice(&[0, 159, 146, 150, 0, 1, 2]);
    write(root, "src/blob.cpp", &binary);
    let huge = "// filler line to make the file big\n".repeat(5 * 1024 * 1024 / 36 + 1);
    write(root, "src/huge.h", huge.as_bytes());
    write(
        root,
        "src/latin1.cpp",
        b"// Gr\xfc\xdfe\nint latin(int a) { return a; }\n",
    );
    write(
        root,
        "src/broken.cpp",
        b"class A { void f() { if (x) { \n int g() { return 1; }\n",
    );
    std::os::unix::fs::symlink(root.join("src"), root.join("src/loop")).unwrap();

    let out = index(root);
    let warned = |path: &str, needle: &str| {
        out.warnings
            .iter()
            .any(|w| w.path.contains(path) && w.message.contains(needle))
    };
    assert!(warned("blob.cpp", "binary"), "{:#?}", out.warnings);
    assert!(warned("huge.h", "limit"), "{:#?}", out.warnings);
    assert!(warned("latin1.cpp", "UTF-8"), "{:#?}", out.warnings);
    assert!(
        out.warnings.iter().any(|w| w.path.contains("loop")),
        "{:#?}",
        out.warnings
    );

    let d = &out.data;
    let paths: Vec<&str> = d.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        vec!["src/broken.cpp", "src/good.cpp", "src/latin1.cpp"]
    );
    assert!(
        !d.find_symbol("demo::add").is_empty(),
        "the good file is fully indexed"
    );
    assert!(
        !d.find_symbol("latin").is_empty(),
        "lossy decoding keeps the code"
    );
    // Unbalanced braces: what tree-sitter can recover is kept, and the file is indexed.
    let broken = d.find_file("src/broken.cpp").unwrap();
    assert!(broken.parse.is_some());
    assert!(d.entities.iter().any(|e| e.file == Some(broken.id)));
    // The index still writes and reads back.
    let idx = tempfile::tempdir().unwrap();
    store::write_index(idx.path(), d, None, "test").unwrap();
    assert_eq!(&store::read_index(idx.path()).unwrap().1, d);
}

#[test]
fn empty_repository_gives_an_empty_index() {
    let dir = tempfile::tempdir().unwrap();
    let out = index(dir.path());
    assert!(out.data.files.is_empty());
    // Only the root module.
    assert_eq!(out.data.entities.len(), 1);
    let idx = tempfile::tempdir().unwrap();
    let m = store::write_index(idx.path(), &out.data, None, "x").unwrap();
    assert_eq!(m.counts.files, 0);
    store::read_index(idx.path()).unwrap();
}

#[test]
fn missing_root_is_a_clear_error() {
    let err = build::build_index(
        Path::new("/nonexistent/codegloss-repo"),
        &Config::default(),
        &ProgressBar::hidden(),
    )
    .unwrap_err();
    assert!(matches!(err, IndexError::NotADirectory { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/codegloss-repo"));
}

#[test]
fn corrupt_index_files_give_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.cpp", GOOD.as_bytes());
    let out = index(dir.path());
    let idx = tempfile::tempdir().unwrap();
    let manifest = store::write_index(idx.path(), &out.data, None, "x").unwrap();

    // A flipped byte in a data file.
    let p = store::data_path(idx.path(), &manifest, DataKind::Entities).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&p, &bytes).unwrap();
    match store::read_index(idx.path()).unwrap_err() {
        IndexError::Index {
            source: CoreError::ChecksumMismatch { file, .. },
            ..
        } => assert!(
            file.starts_with("entities-") && file.ends_with(".bin"),
            "{file}"
        ),
        other => panic!("expected a checksum error, got {other}"),
    }
    // A truncated manifest.
    std::fs::write(
        idx.path().join("manifest.json"),
        "{\"format\": \"codegloss-index\"",
    )
    .unwrap();
    assert!(matches!(
        store::read_index(idx.path()).unwrap_err(),
        IndexError::Index {
            source: CoreError::Manifest { .. },
            ..
        }
    ));
    // A missing data file.
    let manifest = store::write_index(idx.path(), &out.data, None, "x").unwrap();
    std::fs::remove_file(store::data_path(idx.path(), &manifest, DataKind::Graph).unwrap())
        .unwrap();
    let err = store::read_index(idx.path()).unwrap_err();
    assert!(matches!(err, IndexError::Io { .. }), "{err}");
    assert!(err.to_string().contains("graph-"), "{err}");
    // A manifest that names a data file outside the index folder.
    let text = std::fs::read_to_string(idx.path().join("manifest.json")).unwrap();
    let graph = &manifest
        .data_files
        .iter()
        .find(|d| d.kind == DataKind::Graph)
        .unwrap()
        .name;
    std::fs::write(
        idx.path().join("manifest.json"),
        text.replace(graph.as_str(), "../../etc/passwd.bin"),
    )
    .unwrap();
    match store::read_index(idx.path()).unwrap_err() {
        IndexError::Index {
            source: CoreError::Inconsistent { message, .. },
            ..
        } => assert!(message.contains("not a plain file name"), "{message}"),
        other => panic!("expected a refused name, got {other}"),
    }
}
