//! What a file is, from its path alone: the parser family ([`Language`])
//! and role ([`SourceType`]) from its name, and the project [`Scope`] from
//! folder and file-name conventions. Pure string work over the configured
//! tables; the walk calls it for every file it finds.

use codegloss_core::{Language, Scope, SourceType};

use crate::config::{FilesConfig, ScopeConfig};

/// Classify a file by its repository-relative path: the parser family and
/// the role, or `None` when the file is not indexed.
///
/// Exact build file names (`CMakeLists.txt`) come first, then extensions:
/// a case-sensitive match first, then a case-insensitive one (`FOO.H`).
/// When several configured extensions match (`cmake` and `in.cmake`), the
/// longest wins.
pub fn classify(rel_path: &str, cfg: &FilesConfig) -> Option<(Language, SourceType)> {
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    if cfg.build_file_names.iter().any(|n| n == name) {
        return Some((Language::Cmake, SourceType::Build));
    }
    let tables: [(&[String], Language, SourceType); 7] = [
        (&cfg.header_extensions, Language::Cpp, SourceType::Header),
        (
            &cfg.implementation_extensions,
            Language::Cpp,
            SourceType::Implementation,
        ),
        (&cfg.cuda_extensions, Language::Cpp, SourceType::Cuda),
        (
            &cfg.markdown_extensions,
            Language::Markdown,
            SourceType::Documentation,
        ),
        (
            &cfg.rst_extensions,
            Language::Rst,
            SourceType::Documentation,
        ),
        (
            &cfg.text_extensions,
            Language::Text,
            SourceType::Documentation,
        ),
        (&cfg.build_extensions, Language::Cmake, SourceType::Build),
    ];
    let lower_name = name.to_lowercase();
    for case_insensitive in [false, true] {
        let mut best: Option<(usize, Language, SourceType)> = None;
        for (exts, language, source_type) in &tables {
            for ext in exts.iter() {
                let ext = ext.trim_start_matches('.');
                let matched = if case_insensitive {
                    has_extension(&lower_name, &ext.to_lowercase())
                } else {
                    has_extension(name, ext)
                };
                if matched && best.is_none_or(|(len, _, _)| ext.len() > len) {
                    best = Some((ext.len(), *language, *source_type));
                }
            }
        }
        if let Some((_, language, source_type)) = best {
            return Some((language, source_type));
        }
    }
    None
}

/// `name` is `stem.ext` with a non-empty stem (so `.md` alone is a hidden
/// file, not a Markdown file).
fn has_extension(name: &str, ext: &str) -> bool {
    if ext.is_empty() || name.len() < ext.len() + 2 || !name.ends_with(ext) {
        return false;
    }
    let stem_dot = &name[..name.len() - ext.len()];
    stem_dot.ends_with('.') && stem_dot.len() > 1
}

/// The project scope of a file from path conventions.
///
/// Build files are always [`Scope::Build`]. Otherwise the folders of the
/// path are checked from the root: the first whose lower-case name is a
/// test, example, docs or build folder decides. Failing that, a C++ file
/// whose name marks it as a test (`test_halo.cpp`, `halo_test.cpp`,
/// `HaloTest.cpp`, `TestHalo.cpp`) is [`Scope::Test`]; documentation is
/// [`Scope::Docs`] and everything else [`Scope::Source`].
pub fn scope_of(rel_path: &str, source_type: SourceType, cfg: &ScopeConfig) -> Scope {
    if source_type == SourceType::Build {
        return Scope::Build;
    }
    let mut components: Vec<&str> = rel_path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let file_name = components.pop().unwrap_or_default();
    let in_list = |list: &[String], folder: &str| list.iter().any(|d| d.to_lowercase() == folder);
    for folder in components {
        let folder = folder.to_lowercase();
        if in_list(&cfg.test_dirs, &folder) {
            return Scope::Test;
        }
        if in_list(&cfg.example_dirs, &folder) {
            return Scope::Example;
        }
        if in_list(&cfg.docs_dirs, &folder) {
            return Scope::Docs;
        }
        if in_list(&cfg.build_dirs, &folder) {
            return Scope::Build;
        }
    }
    match source_type {
        SourceType::Documentation => Scope::Docs,
        _ if is_test_file_name(file_name) => Scope::Test,
        _ => Scope::Source,
    }
}

/// `test_x`, `test-x`, `x_test`, `x_tests`, `xTest`, `xTests`, `TestX`,
/// `Test_X` and `test` itself (extension ignored).
fn is_test_file_name(file_name: &str) -> bool {
    let stem = match file_name.find('.') {
        Some(0) | None => file_name,
        Some(dot) => &file_name[..dot],
    };
    let lower = stem.to_lowercase();
    if matches!(lower.as_str(), "test" | "tests") {
        return true;
    }
    if lower.starts_with("test_") || lower.starts_with("test-") {
        return true;
    }
    if lower.ends_with("_test") || lower.ends_with("_tests") || lower.ends_with("-test") {
        return true;
    }
    if stem.ends_with("Test") || stem.ends_with("Tests") {
        return true;
    }
    // CamelCase `TestHalo`, `Test_Halo`, `Test2D`: not `Testing`.
    stem.strip_prefix("Test")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_table() {
        use Language::{Cmake, Cpp, Markdown, Rst, Text};
        use SourceType::{Build, Cuda, Documentation, Header, Implementation};
        let cfg = FilesConfig::default();
        let cases: [(&str, Option<(Language, SourceType)>); 16] = [
            ("CMakeLists.txt", Some((Cmake, Build))),
            ("src/CMakeLists.txt", Some((Cmake, Build))),
            ("cmake/FindFFTW.cmake", Some((Cmake, Build))),
            ("src/Field/BareField.h", Some((Cpp, Header))),
            ("src/Field/BareField.hpp", Some((Cpp, Header))),
            ("src/a.inl", Some((Cpp, Header))),
            ("src/a.cpp", Some((Cpp, Implementation))),
            ("src/A.CPP", Some((Cpp, Implementation))),
            ("src/k.cu", Some((Cpp, Cuda))),
            ("README.md", Some((Markdown, Documentation))),
            ("doc/index.rst", Some((Rst, Documentation))),
            ("NOTES.txt", Some((Text, Documentation))),
            ("cmakelists.txt", Some((Text, Documentation))),
            ("src/a.py", None),
            (".md", None),
            ("Makefile", None),
        ];
        for (path, want) in cases {
            assert_eq!(classify(path, &cfg), want, "{path}");
        }
        // The longest configured extension wins.
        let mut cfg = FilesConfig::default();
        cfg.header_extensions.push("h.cmake".to_string());
        assert_eq!(classify("x.h.cmake", &cfg), Some((Cpp, Header)));
    }

    #[test]
    fn scope_conventions() {
        use SourceType::{Build, Documentation, Header, Implementation};
        let cfg = ScopeConfig::default();
        let cases = [
            ("unit_tests/Field/TestHalo.cpp", Implementation, Scope::Test),
            ("examples/x.cpp", Implementation, Scope::Example),
            ("doc/a.md", Documentation, Scope::Docs),
            ("src/a.h", Header, Scope::Source),
            ("CMakeLists.txt", Build, Scope::Build),
            ("cmake/FindX.cmake", Build, Scope::Build),
            ("cmake/helper.h", Header, Scope::Build),
            ("README.md", Documentation, Scope::Docs),
            ("src/TestField.cpp", Implementation, Scope::Test),
            ("src/field_test.cpp", Implementation, Scope::Test),
            ("src/FieldTest.cpp", Implementation, Scope::Test),
            ("src/Testing.cpp", Implementation, Scope::Source),
            ("src/Contest.cpp", Implementation, Scope::Source),
            ("Examples/Tests/a.cpp", Implementation, Scope::Example),
            ("src/Tests/a.cpp", Implementation, Scope::Test),
        ];
        for (path, st, want) in cases {
            assert_eq!(scope_of(path, st, &cfg), want, "{path}");
        }
    }
}
