//! C++ parsing with tree-sitter-cpp: entities, includes, calls and parse
//! quality for one file.
//!
//! The parser runs on the macro-neutralised text (see [`crate::ingest::macros`]),
//! whose byte offsets equal the original's, and slices every piece of text
//! it records (signatures, code, comments) from the *original* source, so
//! what users see is what is in their file.
//!
//! This module knows one file at a time. Resolving names across files
//! (is `A::f` a method of class `A`? which `f` does a call mean?) happens
//! in [`crate::ingest::build`].
//!
//! The work is cut by concern: [`walker`] walks the syntax tree and
//! records entities, includes and macro definitions; [`declarators`] reads
//! what a declaration's nodes say (names, return types, parameters, calls);
//! [`names`] works on the written text (scopes, template arguments, bases,
//! comments); [`quality`] counts ERROR nodes and retries with ALL_CAPS
//! macros blanked.

mod branches;
mod declarators;
mod names;
mod quality;
mod walker;

use codegloss_core::{EntityKind, Language, Param, ParseStats, Span};
use tree_sitter::Parser;

use crate::config::ParseConfig;
use crate::error::IndexError;
use crate::ingest::macros::{self, RepoMacros};

pub use names::{base_target, clean_comment, split_last_scope, strip_template_args};
pub use quality::{count_errors, function_error_counts};

/// A call expression found in a function body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRef {
    /// Called name, without scope or template arguments (`fillHalo`).
    pub name: String,
    /// Scope as written (`Kokkos`, `detail::HaloCells`), template arguments stripped.
    pub qualifier: Option<String>,
    /// Called on `this` or unqualified inside a class.
    pub on_this: bool,
    /// Called through `obj.` or `ptr->`.
    pub on_object: bool,
    /// 1-based line of the call.
    pub line: u32,
}

/// An entity as found in one file, before cross-file resolution.
#[derive(Debug, Clone)]
pub struct RawEntity {
    /// Kind (callables may be refined to methods in the build step).
    pub kind: EntityKind,
    /// Short name.
    pub name: String,
    /// Qualified name from the lexical scope and the written qualifier.
    pub qualified_name: String,
    /// Lexically enclosing entity in this file (index into the file's list).
    pub parent: Option<usize>,
    /// Qualifier of `qualified_name`.
    pub parent_symbol: String,
    /// Enclosing class for in-class members.
    pub class_name: Option<String>,
    /// For out-of-class definitions: the written scope (`BareField`, `ippl`), template args stripped.
    pub written_scope: Option<String>,
    /// Full span (template header included).
    pub span: Span,
    /// Declaration head, whitespace collapsed.
    pub signature: String,
    /// Return type.
    pub return_type: Option<String>,
    /// Parameters.
    pub params: Vec<Param>,
    /// Template parameter list.
    pub template_params: Option<String>,
    /// Base classes as written.
    pub bases: Vec<String>,
    /// Leading doc comment.
    pub doc_comment: Option<String>,
    /// Has a body.
    pub is_definition: bool,
    /// Byte offset where the body starts (`{` of a function or class), for splitting.
    pub body_start: Option<u32>,
    /// Spans of the body's top-level statements or members, for splitting.
    pub pieces: Vec<Span>,
    /// Calls made in the body.
    pub calls: Vec<CallRef>,
}

/// What one C++ file gives.
#[derive(Debug, Clone, Default)]
pub struct ParsedCpp {
    /// Entities in source order.
    pub entities: Vec<RawEntity>,
    /// `#include` directives: target, system, line.
    pub includes: Vec<(String, bool, u32)>,
    /// Function-like macros defined here: name → first identifier of the body.
    pub macro_types: Vec<(String, String)>,
    /// Parse quality.
    pub stats: ParseStats,
    /// Lines of ERROR nodes that hide function bodies (for warnings).
    pub error_lines: Vec<u32>,
}

/// A parser with the C++ grammar set.
///
/// Setting the grammar fails only when the `tree-sitter` and
/// `tree-sitter-cpp` crates were built for incompatible grammar versions: a
/// build problem, the same for every file, hence an [`IndexError::Grammar`]
/// rather than a warning.
pub fn cpp_parser() -> Result<Parser, IndexError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cpp::LANGUAGE.into())
        .map_err(|e| {
            IndexError::Grammar(format!(
                "{e} (the tree-sitter and tree-sitter-cpp crates this binary was built with do not match; rebuild with compatible versions)"
            ))
        })?;
    Ok(parser)
}

/// Check once, before any file is parsed, that the C++ grammar loads when
/// there is C++ to parse (`languages`: those of the files to index), so
/// that a broken build stops the run with one [`IndexError::Grammar`]
/// instead of a warning per file.
pub fn check_grammar(languages: impl IntoIterator<Item = Language>) -> Result<(), IndexError> {
    if languages.into_iter().any(|l| l == Language::Cpp) {
        cpp_parser()?;
    }
    Ok(())
}

/// Parse one C++ file.
///
/// Fails with [`IndexError::Grammar`] when the grammar cannot be loaded (see
/// [`check_grammar`]) and with [`IndexError::NoSyntaxTree`] when tree-sitter
/// gives no tree for this text; the caller keeps the file, indexed as a
/// file only, with a warning.
pub fn parse_cpp(src: &str, cfg: &ParseConfig) -> Result<ParsedCpp, IndexError> {
    parse_cpp_with(src, cfg, &RepoMacros::default())
}

/// The text the parser reads (macros neutralised, conditionals that split
/// a declaration or a statement flattened, ALL_CAPS attributes blanked;
/// same length and lines as `src`, or `src` itself when that parses
/// better), its tree, and how many macro uses were rewritten.
pub fn neutralised_tree(
    parser: &mut Parser,
    src: &str,
    cfg: &ParseConfig,
    repo: &RepoMacros,
) -> Result<(String, tree_sitter::Tree, u32), IndexError> {
    let raw = parser.parse(src, None).ok_or(IndexError::NoSyntaxTree)?;
    let raw_sound = quality::sound_bodies(&raw);
    neutralised_or_raw(parser, src, (&raw, raw_sound), cfg, repo)
}

/// [`neutralised_tree`], unless the text as written (`raw`: its tree and
/// its function bodies outside ERROR nodes) keeps more function bodies out
/// of ERROR nodes: then the text as written and no rewrites. Neutralising a large file can tip tree-sitter's error
/// recovery the wrong way (a rewrite near the top, and the whole file
/// becomes one ERROR node), so no file parses worse than it would
/// without it.
fn neutralised_or_raw(
    parser: &mut Parser,
    src: &str,
    (raw, raw_sound): (&tree_sitter::Tree, usize),
    cfg: &ParseConfig,
    repo: &RepoMacros,
) -> Result<(String, tree_sitter::Tree, u32), IndexError> {
    let (text, tree, count) = rewritten_tree(parser, src, cfg, repo)?;
    if raw_sound > quality::sound_bodies(&tree) {
        return Ok((src.to_string(), raw.clone(), 0));
    }
    Ok((text, tree, count))
}

/// The rewrites of [`neutralised_tree`], whatever they do to the parse.
fn rewritten_tree(
    parser: &mut Parser,
    src: &str,
    cfg: &ParseConfig,
    repo: &RepoMacros,
) -> Result<(String, tree_sitter::Tree, u32), IndexError> {
    let n = macros::neutralise(
        src,
        &cfg.attribute_macros,
        &cfg.macro_replacements,
        repo,
        &cfg.grammar_rewrites_off,
    );
    let (mut text, mut count) = (n.text, n.count);
    let mut tree = parser.parse(&text, None).ok_or(IndexError::NoSyntaxTree)?;
    // Conditionals that split a declaration first: the macros near an
    // ERROR node are judged on the text that remains.
    (text, tree, _) = branches::first_branch_pass(parser, text, tree);
    if cfg.generic_caps_rule {
        (text, tree, count) = quality::generic_caps_pass(parser, text, tree, count);
        // What is left: attribute macros that broke nothing but would read
        // as part of a return type; kept unless the parse gets worse.
        let rest = macros::attributes_before_keywords(&text);
        if rest.count > 0 {
            if let Some(t) = parser.parse(&rest.text, None) {
                if quality::count_errors(t.root_node()) <= quality::count_errors(tree.root_node()) {
                    (text, tree, count) = (rest.text, t, count + rest.count);
                }
            }
        }
    }
    Ok((text, tree, count))
}

/// [`parse_cpp`] with the macros the repository defines ([`RepoMacros`])
/// neutralised too.
pub fn parse_cpp_with(
    src: &str,
    cfg: &ParseConfig,
    repo: &RepoMacros,
) -> Result<ParsedCpp, IndexError> {
    let mut parser = cpp_parser()?;
    // tree-sitter addresses bytes with u32; files over 4 GiB never get here
    // (the walker caps file size).
    let raw_tree = parser.parse(src, None).ok_or(IndexError::NoSyntaxTree)?;
    let (raw_functions, raw_in_error) = function_error_counts(raw_tree.root_node());

    let raw = (&raw_tree, raw_functions - raw_in_error);
    let (text, tree, count) = neutralised_or_raw(&mut parser, src, raw, cfg, repo)?;
    let root = tree.root_node();
    let (functions, in_error) = function_error_counts(root);
    let mut error_lines = Vec::new();
    quality::collect_error_lines(root, &mut error_lines);

    let mut out = ParsedCpp {
        stats: ParseStats {
            functions: functions as u32,
            functions_in_error: in_error as u32,
            functions_in_error_raw: raw_in_error as u32,
            functions_raw: raw_functions as u32,
            error_nodes: quality::count_errors(root) as u32,
            neutralised_macros: count,
        },
        error_lines,
        ..ParsedCpp::default()
    };
    walker::walk(src, &text, root, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> ParsedCpp {
        parse_cpp(src, &ParseConfig::default()).unwrap()
    }

    #[test]
    fn grammar_loads_and_a_lost_tree_keeps_its_warning_text() {
        check_grammar([Language::Markdown, Language::Cpp]).unwrap();
        check_grammar([]).unwrap();
        // The build warns "C++ parse failed, indexed as a file only: {e}".
        assert_eq!(
            IndexError::NoSyntaxTree.to_string(),
            "parser returned no tree"
        );
    }

    #[test]
    fn out_of_class_template_method() {
        let p = parse(
            "namespace ippl {\ntemplate <typename T, unsigned Dim>\nvoid BareField<T, Dim>::fillHalo() {\n  halo_m.fillHalo(dview_m);\n}\n}\n",
        );
        let f = p.entities.iter().find(|e| e.name == "fillHalo").unwrap();
        assert_eq!(f.qualified_name, "ippl::BareField::fillHalo");
        assert_eq!(f.parent_symbol, "ippl::BareField");
        assert_eq!(f.written_scope.as_deref(), Some("BareField"));
        assert_eq!(
            f.template_params.as_deref(),
            Some("<typename T, unsigned Dim>")
        );
        assert_eq!(f.span.start_line, 2);
        assert_eq!(f.span.end_line, 5);
        assert!(f.is_definition);
        assert_eq!(f.calls[0].name, "fillHalo");
        assert!(f.calls[0].on_object);
    }

    #[test]
    fn qualified_free_function_and_params() {
        let p = parse("/// Start everything.\nvoid ippl::initialize(int& argc, char* argv[], MPI_Comm comm = MPI_COMM_WORLD) {\n  Kokkos::initialize(argc, argv);\n}\n");
        let f = &p.entities[0];
        assert_eq!(f.name, "initialize");
        assert_eq!(f.parent_symbol, "ippl");
        assert_eq!(f.return_type.as_deref(), Some("void"));
        assert_eq!(f.doc_comment.as_deref(), Some("Start everything."));
        assert_eq!(f.params.len(), 3);
        assert_eq!(f.params[0].ty, "int&");
        assert_eq!(f.params[0].name, "argc");
        assert_eq!(f.params[1].ty, "char*[]");
        assert_eq!(f.params[2].default.as_deref(), Some("MPI_COMM_WORLD"));
        assert_eq!(f.calls[0].qualifier.as_deref(), Some("Kokkos"));
        assert_eq!(
            f.signature,
            "void ippl::initialize(int& argc, char* argv[], MPI_Comm comm = MPI_COMM_WORLD)"
        );
    }

    #[test]
    fn a_constrained_template_with_unnamed_defaulted_parameters_parses() {
        let p = parse("template <class T>\nT twice(const T& x, std::enable_if_t<std::is_arithmetic_v<T>>* = nullptr) {\n  return x + x;\n}\n");
        assert_eq!(p.stats.functions_in_error, 0, "{:?}", p.error_lines);
        let f = &p.entities[0];
        assert_eq!(f.name, "twice");
        assert_eq!(f.params.len(), 2);
        assert_eq!(f.params[1].name, "");
        assert_eq!(f.params[1].ty, "std::enable_if_t<std::is_arithmetic_v<T>>*");
        assert_eq!(f.params[1].default.as_deref(), Some("nullptr"));
    }

    #[test]
    fn attribute_macros_do_not_break_methods() {
        let src = "template <typename T>\nclass V {\npublic:\n  LIB_INLINE_FUNCTION T& operator()(int i) const { return d[i]; }\n  LIB_FUNCTION void g() { h(); }\n};\n";
        let p = parse(src);
        assert_eq!(p.stats.functions, 2);
        assert_eq!(p.stats.functions_in_error, 0);
        assert!(p.stats.functions_in_error_raw >= 1);
        let op = p.entities.iter().find(|e| e.name == "operator()").unwrap();
        assert_eq!(op.kind, EntityKind::Method);
        assert_eq!(op.qualified_name, "V::operator()");
        assert_eq!(op.return_type.as_deref(), Some("T&"));
        assert!(
            op.signature
                .starts_with("LIB_INLINE_FUNCTION T& operator()"),
            "{}",
            op.signature
        );
    }

    #[test]
    fn generic_caps_rule_fixes_unknown_attribute() {
        let src = "class A {\n  MY_EXPORT_ATTR void f() { g(); }\n  MY_EXPORT_ATTR int h() { return 1; }\n};\n";
        let p = parse(src);
        assert_eq!(p.stats.functions_in_error, 0, "{:?}", p.stats);
    }

    #[test]
    fn generic_rule_fixes_a_reserved_attribute_macro_from_a_system_header() {
        // `__ATTRS_x` comes from a compiler's header, defined nowhere in the
        // repository.
        let src = "struct V {\n  double v[4];\n  inline __ATTRS_x double &operator[](int i) { return v[i]; }\n  inline __ATTRS_x V &operator+=(const V &o) { return *this; }\n};\n";
        let p = parse(src);
        assert_eq!(
            (p.stats.functions, p.stats.functions_in_error),
            (2, 0),
            "{:?}",
            p.stats
        );
    }

    #[test]
    fn functional_casts_the_grammar_cannot_read_keep_their_functions() {
        // A dependent functional cast in an initializer list, and sized
        // integer casts in a constraint's template argument: as written,
        // each takes its function into an ERROR node.
        let src = "template <class Traits>\nstruct Policy {\n  Policy() : m_space(typename Traits::execution_space()), m_n(0) {}\n  Policy(int n) : Policy(typename Traits::execution_space(), n) {}\n  int size() const { return m_n; }\n};\ntemplate <class D, class S>\nvoid copy(const D& dst, const S& src,\n          std::enable_if_t<(unsigned(D::rank) == 1 &&\n                            unsigned(S::rank) == 1)>* = nullptr) {\n  dst(0) = src(0);\n}\nvoid after() {}\n";
        let raw = cpp_parser().unwrap().parse(src, None).unwrap();
        let (functions, in_error) = function_error_counts(raw.root_node());
        assert!(in_error > 0, "{functions} {in_error}");
        let p = parse(src);
        assert_eq!(
            (p.stats.functions, p.stats.functions_in_error),
            (5, 0),
            "{:?}",
            p.stats
        );
        let copy = p.entities.iter().find(|e| e.name == "copy").unwrap();
        assert!(
            copy.signature.contains("unsigned(D::rank)"),
            "{}",
            copy.signature
        );
    }

    #[test]
    fn macro_base_class_specialisation() {
        let src = "namespace lib {\n#define BASE(F, B) FFTBase<F, B>\n/** cc */\ntemplate <typename CF>\nclass FFT<CCTransform, CF> : public BASE(CF, backend) {\n  void transform(int d, CF& f);\n};\n}\n";
        let p = parse(src);
        let c = p
            .entities
            .iter()
            .find(|e| e.kind == EntityKind::Class)
            .unwrap();
        assert_eq!(c.name, "FFT<CCTransform, CF>");
        assert_eq!(c.qualified_name, "lib::FFT<CCTransform, CF>");
        assert_eq!(c.bases, vec!["public BASE(CF, backend)".to_string()]);
        assert_eq!(c.doc_comment.as_deref(), Some("cc"));
        assert_eq!(c.span.start_line, 4);
        assert_eq!(
            p.macro_types,
            vec![("BASE".to_string(), "FFTBase".to_string())]
        );
        let m = p.entities.iter().find(|e| e.name == "transform").unwrap();
        assert_eq!(m.parent_symbol, "lib::FFT<CCTransform, CF>");
        assert_eq!(m.kind, EntityKind::Method);
        assert!(!m.is_definition);
    }

    #[test]
    fn constructors_destructors_aliases() {
        let src = "struct S : Base {\n  S(int a) : x(a) {}\n  ~S();\n  using T = int;\n  typedef double R;\n  int x;\n};\nS::~S() {}\nenum class Dir { A, B };\nunion U { int i; float f; };\nclass Fwd;\n";
        let p = parse(src);
        let kinds: Vec<(EntityKind, &str)> = p
            .entities
            .iter()
            .map(|e| (e.kind, e.name.as_str()))
            .collect();
        assert!(kinds.contains(&(EntityKind::Struct, "S")));
        assert!(kinds.contains(&(EntityKind::Constructor, "S")));
        assert!(kinds.contains(&(EntityKind::Destructor, "~S")));
        assert!(kinds.contains(&(EntityKind::TypeAlias, "T")));
        assert!(kinds.contains(&(EntityKind::TypeAlias, "R")));
        assert!(kinds.contains(&(EntityKind::Enum, "Dir")));
        assert!(kinds.contains(&(EntityKind::Union, "U")));
        assert!(kinds.contains(&(EntityKind::Class, "Fwd")));
        let ctor = p
            .entities
            .iter()
            .find(|e| e.kind == EntityKind::Constructor)
            .unwrap();
        assert_eq!(ctor.signature, "S(int a)");
        let s = p
            .entities
            .iter()
            .find(|e| e.name == "S" && e.kind == EntityKind::Struct)
            .unwrap();
        assert_eq!(s.bases, vec!["Base".to_string()]);
    }

    #[test]
    fn comments_trailing_code_are_not_doc() {
        let src =
            "int a; // about a\nvoid f();\n\n// detached\n\nvoid g();\n// one\n// two\nvoid h();\n";
        let p = parse(src);
        let doc = |n: &str| {
            p.entities
                .iter()
                .find(|e| e.name == n)
                .unwrap()
                .doc_comment
                .clone()
        };
        assert_eq!(doc("f"), None);
        assert_eq!(doc("g"), None);
        assert_eq!(doc("h").as_deref(), Some("one\ntwo"));
    }

    #[test]
    fn includes_recorded() {
        let p = parse("#include \"Field/BareField.h\"\n#include <vector>\n");
        assert_eq!(
            p.includes,
            vec![
                ("Field/BareField.h".into(), false, 1),
                ("vector".into(), true, 2)
            ]
        );
    }

    #[test]
    fn a_rewrite_that_breaks_the_parse_gives_way_to_the_text_as_written() {
        // A setting that suits some other file: blanking `struct` as if it
        // were an attribute macro leaves a brace block where a declaration
        // was, and both methods inside an ERROR node.
        let cfg = ParseConfig {
            attribute_macros: vec!["struct".to_string()],
            ..ParseConfig::default()
        };
        let src = "struct A {\n  int f() { return 1; }\n  int g() { return 2; }\n};\n";
        let mut parser = cpp_parser().unwrap();
        let (rewritten, tree, _) =
            rewritten_tree(&mut parser, src, &cfg, &RepoMacros::default()).unwrap();
        assert!(!rewritten.contains("struct") && tree.root_node().has_error());
        let (text, tree, count) =
            neutralised_tree(&mut parser, src, &cfg, &RepoMacros::default()).unwrap();
        assert_eq!((text.as_str(), count), (src, 0));
        assert!(!tree.root_node().has_error());
        let p = parse_cpp_with(src, &cfg, &RepoMacros::default()).unwrap();
        assert_eq!((p.stats.functions, p.stats.functions_in_error), (2, 0));
        assert_eq!(p.stats.neutralised_macros, 0);
    }

    #[test]
    fn broken_code_never_panics() {
        for src in [
            "{{{{",
            "}}}}",
            "class {",
            "template <",
            "void f(",
            "namespace { int",
            "\0\0",
            "operator",
        ] {
            let _ = parse(src);
        }
    }
}
