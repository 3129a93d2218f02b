//! The data model of a codegloss index: files, entities, chunks and the
//! structure graph.
//!
//! These are the only types the index writer (indexer) and the readers (CLI,
//! browser) share. They serialise with serde; collections that end up on
//! disk are `Vec`s or `BTreeMap`s so that encoding is deterministic.

use serde::{Deserialize, Serialize};

/// Index of a [`SourceFile`] in [`crate::IndexData::files`].
pub type FileId = u32;
/// Index of an [`Entity`] in [`crate::IndexData::entities`].
pub type EntityId = u32;

/// Which parser family handles a file.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// C++ (and CUDA) source.
    Cpp,
    /// Markdown documentation.
    Markdown,
    /// reStructuredText documentation.
    Rst,
    /// Plain text documentation.
    Text,
    /// CMake build files.
    Cmake,
}

impl Language {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Cpp => "cpp",
            Language::Markdown => "markdown",
            Language::Rst => "rst",
            Language::Text => "text",
            Language::Cmake => "cmake",
        }
    }
}

/// The paper's `source_type`: what role a file plays.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    /// `.h`, `.hpp`, `.hh`, `.inl` and friends.
    Header,
    /// `.cpp`, `.cc`, `.cxx`.
    Implementation,
    /// `.cu`, `.cuh`.
    Cuda,
    /// Markdown, reStructuredText, plain text.
    Documentation,
    /// `CMakeLists.txt`, `*.cmake`.
    Build,
}

impl SourceType {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Header => "header",
            SourceType::Implementation => "implementation",
            SourceType::Cuda => "cuda",
            SourceType::Documentation => "documentation",
            SourceType::Build => "build",
        }
    }
}

/// Where in the project a file lives, from path conventions.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Library or application source.
    Source,
    /// Unit or integration tests.
    Test,
    /// Examples, tutorials and mini-apps.
    Example,
    /// Build system files.
    Build,
    /// Documentation.
    Docs,
}

impl Scope {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Source => "source",
            Scope::Test => "test",
            Scope::Example => "example",
            Scope::Build => "build",
            Scope::Docs => "docs",
        }
    }
}

/// One `#include` directive.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Include {
    /// The text between the quotes or angle brackets.
    pub target: String,
    /// `<...>` rather than `"..."`.
    pub system: bool,
    /// 1-based line of the directive.
    pub line: u32,
    /// The repository file it resolves to, when one does.
    pub resolved: Option<FileId>,
}

/// How well tree-sitter understood a C++ file.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// Function and method definitions with a body.
    pub functions: u32,
    /// Of those, how many lie inside an ERROR node after macro neutralisation.
    pub functions_in_error: u32,
    /// The same count when parsing the raw text (before neutralisation).
    pub functions_in_error_raw: u32,
    /// Function definitions found in the raw parse.
    pub functions_raw: u32,
    /// ERROR nodes in the final tree.
    pub error_nodes: u32,
    /// Macro occurrences blanked before parsing.
    pub neutralised_macros: u32,
}

/// A file of the repository that the index covers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// Position in `IndexData::files`.
    pub id: FileId,
    /// Repository-relative path with `/` separators.
    pub path: String,
    /// Parser family.
    pub language: Language,
    /// The paper's source type.
    pub source_type: SourceType,
    /// Project scope from path conventions.
    pub scope: Scope,
    /// Containing folder (`.` for the repository root).
    pub module: String,
    /// SHA-256 of the raw bytes (hex).
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Number of lines.
    pub lines: u32,
    /// `#include` directives (C++ only).
    pub includes: Vec<Include>,
    /// Parse quality (C++ only).
    pub parse: Option<ParseStats>,
    /// Problems met while reading or parsing this file.
    pub warnings: Vec<String>,
}

/// What an entity is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// `namespace x { ... }`.
    Namespace,
    /// `class X`.
    Class,
    /// `struct X`.
    Struct,
    /// `union X`.
    Union,
    /// `enum X` / `enum class X`.
    Enum,
    /// `using X = ...;` / `typedef ... X;`.
    TypeAlias,
    /// A free function.
    Function,
    /// A member function.
    Method,
    /// A constructor.
    Constructor,
    /// A destructor.
    Destructor,
    /// A section of a documentation or build file.
    DocSection,
    /// A whole file (higher-level entity).
    File,
    /// A folder (higher-level entity).
    Module,
    /// A callable with its direct callers and callees (higher-level entity).
    CallChain,
}

impl EntityKind {
    /// All kinds, in display order.
    pub const ALL: [EntityKind; 14] = [
        EntityKind::Namespace,
        EntityKind::Class,
        EntityKind::Struct,
        EntityKind::Union,
        EntityKind::Enum,
        EntityKind::TypeAlias,
        EntityKind::Function,
        EntityKind::Method,
        EntityKind::Constructor,
        EntityKind::Destructor,
        EntityKind::DocSection,
        EntityKind::File,
        EntityKind::Module,
        EntityKind::CallChain,
    ];

    /// Stable lower-case name (the paper's `entity_type`).
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Namespace => "namespace",
            EntityKind::Class => "class",
            EntityKind::Struct => "struct",
            EntityKind::Union => "union",
            EntityKind::Enum => "enum",
            EntityKind::TypeAlias => "type_alias",
            EntityKind::Function => "function",
            EntityKind::Method => "method",
            EntityKind::Constructor => "constructor",
            EntityKind::Destructor => "destructor",
            EntityKind::DocSection => "doc_section",
            EntityKind::File => "file",
            EntityKind::Module => "module",
            EntityKind::CallChain => "call_chain",
        }
    }

    /// Functions, methods, constructors and destructors.
    pub fn is_callable(self) -> bool {
        matches!(
            self,
            EntityKind::Function
                | EntityKind::Method
                | EntityKind::Constructor
                | EntityKind::Destructor
        )
    }

    /// Classes, structs and unions.
    pub fn is_record(self) -> bool {
        matches!(
            self,
            EntityKind::Class | EntityKind::Struct | EntityKind::Union
        )
    }

    /// Kinds whose chunk summarises instead of holding the file's text at
    /// its lines: files, modules, call chains and namespace blocks (a
    /// namespace chunk holds only its head). Every other chunk's lines are
    /// its entity's own; a file's text is those chunks in line order.
    pub fn is_summary(self) -> bool {
        matches!(
            self,
            EntityKind::File | EntityKind::Module | EntityKind::CallChain | EntityKind::Namespace
        )
    }

    /// The paper's entity level for this kind.
    pub fn level(self) -> EntityLevel {
        match self {
            EntityKind::DocSection => EntityLevel::DocumentationSection,
            EntityKind::File => EntityLevel::File,
            EntityKind::Module => EntityLevel::Module,
            EntityKind::CallChain => EntityLevel::CallChain,
            _ => EntityLevel::Symbol,
        }
    }
}

/// The paper's `entity_level`: the one vocabulary of levels, used by the
/// answer context, retrieval and the explanation stage (`explain.levels`,
/// the gloss cache and the manifest's `glosses`). Every entity kind
/// belongs to exactly one ([`EntityKind::level`]). The variants are in
/// bottom-up order ([`EntityLevel::BOTTOM_UP`]): every level is explained
/// only from the glosses of earlier ones.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EntityLevel {
    /// A code symbol (functions, classes, aliases, ...).
    Symbol,
    /// A documentation section.
    #[serde(rename = "doc")]
    DocumentationSection,
    /// A call neighbourhood.
    CallChain,
    /// A whole file.
    File,
    /// A folder.
    Module,
}

impl EntityLevel {
    /// Every level, bottom-up.
    pub const BOTTOM_UP: [EntityLevel; 5] = [
        EntityLevel::Symbol,
        EntityLevel::DocumentationSection,
        EntityLevel::CallChain,
        EntityLevel::File,
        EntityLevel::Module,
    ];

    /// Stable name, as serialized (`explain.levels`, the gloss cache, the
    /// manifest).
    pub fn as_str(self) -> &'static str {
        match self {
            EntityLevel::Symbol => "symbol",
            EntityLevel::DocumentationSection => "doc",
            EntityLevel::CallChain => "call_chain",
            EntityLevel::File => "file",
            EntityLevel::Module => "module",
        }
    }

    /// The level named `name` ([`EntityLevel::as_str`]).
    pub fn parse(name: &str) -> Option<EntityLevel> {
        Self::BOTTOM_UP.into_iter().find(|l| l.as_str() == name)
    }

    /// The name an answer context shows for a chunk's level: the stable
    /// name, with a documentation section spelled out.
    pub fn context_name(self) -> &'static str {
        match self {
            EntityLevel::DocumentationSection => "documentation_section",
            other => other.as_str(),
        }
    }
}

#[cfg(test)]
mod level_tests {
    use super::EntityLevel;

    #[test]
    fn one_name_per_level_serialized_and_parsed_alike() {
        for l in EntityLevel::BOTTOM_UP {
            let json = serde_json::to_string(&l).unwrap();
            assert_eq!(json, format!("\"{}\"", l.as_str()));
            assert_eq!(EntityLevel::parse(l.as_str()), Some(l));
        }
        assert!(EntityLevel::BOTTOM_UP.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(EntityLevel::parse("documentation_section"), None);
        assert_eq!(
            EntityLevel::DocumentationSection.context_name(),
            "documentation_section"
        );
        assert_eq!(EntityLevel::CallChain.context_name(), "call_chain");
    }
}

/// A byte and line range inside one file. Lines are 1-based and inclusive;
/// bytes are 0-based and end-exclusive.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// First byte.
    pub start_byte: u32,
    /// One past the last byte.
    pub end_byte: u32,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
}

/// One function parameter.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Type as written (with `const`, `&`, `*`, array brackets).
    pub ty: String,
    /// Name, empty when unnamed.
    pub name: String,
    /// Default argument, when present.
    pub default: Option<String>,
}

/// Who wrote a gloss.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum GlossSource {
    /// Built deterministically from facts in the structure graph.
    Structural,
    /// Written by an explanation model.
    Model,
    /// Too small to be worth an explanation.
    SkippedLowInformation,
}

impl GlossSource {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            GlossSource::Structural => "structural",
            GlossSource::Model => "model",
            GlossSource::SkippedLowInformation => "skipped_low_information",
        }
    }
}

/// The explanation of an entity ("gloss").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Gloss {
    /// The explanation text.
    pub text: String,
    /// Who wrote it.
    pub source: GlossSource,
    /// Model id when `source` is `Model`.
    pub model: Option<String>,
}

/// A named thing in the repository: a code symbol, a documentation section
/// or a higher-level entity (file, module, call chain).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Entity {
    /// Position in `IndexData::entities`.
    pub id: EntityId,
    /// What it is.
    pub kind: EntityKind,
    /// Short name (`fillHalo`, `FFT<CCTransform, ComplexField>`, `INSTALLATION.md > Kokkos`).
    pub name: String,
    /// Fully qualified name (`ippl::BareField::fillHalo`).
    pub qualified_name: String,
    /// The enclosing entity (namespace, class, file for top-level symbols, module for files).
    pub parent: Option<EntityId>,
    /// The qualifier of `qualified_name` (`ippl::BareField`), empty at top level.
    pub parent_symbol: String,
    /// Enclosing class for members.
    pub class_name: Option<String>,
    /// File it lives in (none for modules).
    pub file: Option<FileId>,
    /// Exact range in that file (none for modules and call chains).
    pub span: Option<Span>,
    /// Declaration head as written, without body (one line, whitespace collapsed).
    pub signature: String,
    /// Return type for callables.
    pub return_type: Option<String>,
    /// Parameters for callables.
    pub params: Vec<Param>,
    /// Template parameter list (`<typename T, unsigned Dim>`), when templated.
    pub template_params: Option<String>,
    /// Base classes as written (`public FFTBase<...>`).
    pub bases: Vec<String>,
    /// Leading doc comment, comment markers stripped.
    pub doc_comment: Option<String>,
    /// Has a body (function) or member list (class).
    pub is_definition: bool,
    /// `Doc.md > Section > Sub` for documentation sections.
    pub section_path: Option<String>,
    /// Module (folder) the entity belongs to.
    pub module: String,
    /// The explanation.
    pub gloss: Gloss,
    /// What the repository's own words say the entity means: its file's
    /// header comment, its whole doc comment, comments in its body, the
    /// words of its name and its members' names, documentation sentences
    /// that mention it. Embedded before the gloss (not keyword-indexed, not
    /// shown as evidence: the code and docs it comes from are).
    pub concepts: String,
}

impl Entity {
    /// An entity with only its id, kind and names: no parent, file, span,
    /// signature, parameters, bases, documentation, section or module, not
    /// a definition, and an empty structural gloss. Callers fill in the
    /// rest with struct update syntax (`Entity { file, ..Entity::new(..) }`).
    pub fn new(id: EntityId, kind: EntityKind, name: String, qualified_name: String) -> Self {
        Entity {
            id,
            kind,
            name,
            qualified_name,
            parent: None,
            parent_symbol: String::new(),
            class_name: None,
            file: None,
            span: None,
            signature: String::new(),
            return_type: None,
            params: Vec::new(),
            template_params: None,
            bases: Vec::new(),
            doc_comment: None,
            is_definition: false,
            section_path: None,
            module: String::new(),
            gloss: Gloss {
                text: String::new(),
                source: GlossSource::Structural,
                model: None,
            },
            concepts: String::new(),
        }
    }
}

/// One retrievable record. Every entity has at least one; long bodies and
/// long sections are split into parts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Position in `IndexData::chunks`.
    pub id: u32,
    /// The entity this chunk belongs to.
    pub entity: EntityId,
    /// 1-based part number.
    pub part: u16,
    /// Number of parts of the entity.
    pub parts: u16,
    /// Repository-relative path.
    pub path: String,
    /// File name with extension.
    pub file_name: String,
    /// File name without extension.
    pub base_name: String,
    /// The paper's `source_type` (none for module chunks).
    pub source_type: Option<SourceType>,
    /// Project scope.
    pub scope: Scope,
    /// Parser family (none for module chunks).
    pub language: Option<Language>,
    /// The paper's `entity_type`.
    pub entity_type: EntityKind,
    /// The paper's `chunk_type` (entity kind, with `_part` for split parts).
    pub chunk_type: String,
    /// Symbol or section name (parts of a split section get `_1`, `_2`, ...).
    pub symbol_name: String,
    /// Qualifier of the symbol.
    pub parent_symbol: String,
    /// Enclosing class for members.
    pub class_name: Option<String>,
    /// Return type for callables.
    pub return_type: Option<String>,
    /// Parameter list as written, comma-separated.
    pub parameters: String,
    /// Leading doc comment.
    pub leading_comment: Option<String>,
    /// Source text of this chunk. A part of a split class or function
    /// repeats the signature as a header and carries part markers; `frame`
    /// says which lines those are. A file chunk holds the file's lines that
    /// no entity chunk holds (head comment, includes, macros, globals), at
    /// their own lines with the others empty: answer context only, never
    /// searched ([`Chunk::searchable_code`]).
    pub code: String,
    /// Which lines of `code` are not the file's own text (see [`CodeFrame`]).
    pub frame: CodeFrame,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (1-based, inclusive).
    pub end_line: u32,
    /// Module (folder).
    pub module: String,
    /// Section path for documentation.
    pub section_path: Option<String>,
}

impl Chunk {
    /// The code that keyword search, embeddings and ranking features see:
    /// `code`, except for a file chunk, whose text outside entities is for
    /// the answer context only (it would add every file's includes to its
    /// terms and vector).
    pub fn searchable_code(&self) -> &str {
        if self.entity_type == EntityKind::File {
            ""
        } else {
            &self.code
        }
    }
}

/// Which lines of a chunk's `code` are not the file's own text.
///
/// `code` is `prelude_lines` lines of prelude, then the file's own lines
/// from `start_line` on (all of `start_line..=end_line`; the first may
/// begin and the last end inside the line, where the entity does; a
/// namespace chunk shows only its one-line head), then `trailer_lines`
/// lines of trailer. Only parts of a split class or function have them:
/// a later part opens with the signature repeated from line
/// `prelude_from` and a `// [part i/n]` marker, every part but the last
/// closes with `// [continues in part j/n]`. They are embedded and
/// keyword-indexed with the code (the signature says what the part
/// belongs to), but a reader must not take them for the file's lines.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeFrame {
    /// Leading lines of `code` that are not the file's text at these lines.
    pub prelude_lines: u32,
    /// The line of the file the repeated signature starts at (0 without a prelude).
    pub prelude_from: u32,
    /// Trailing lines of `code` that are not the file's text.
    pub trailer_lines: u32,
}

/// Kinds of edge in the structure graph.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// File includes file.
    Includes,
    /// Callable calls callable (approximate).
    Calls,
    /// Ownership: module → file / submodule, file → top-level entity,
    /// namespace or class → member, document → section.
    Contains,
    /// Class derives from class.
    Inherits,
    /// Out-of-class definition → its in-class declaration.
    Defines,
    /// Higher-level entity → the entity it summarises (call chain → callable).
    Summarizes,
}

impl EdgeKind {
    /// All kinds, in display order.
    pub const ALL: [EdgeKind; 6] = [
        EdgeKind::Includes,
        EdgeKind::Calls,
        EdgeKind::Contains,
        EdgeKind::Inherits,
        EdgeKind::Defines,
        EdgeKind::Summarizes,
    ];

    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Includes => "includes",
            EdgeKind::Calls => "calls",
            EdgeKind::Contains => "contains",
            EdgeKind::Inherits => "inherits",
            EdgeKind::Defines => "defines",
            EdgeKind::Summarizes => "summarizes",
        }
    }
}

/// A directed edge between two entities.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    /// Source entity.
    pub from: EntityId,
    /// Target entity.
    pub to: EntityId,
    /// Relation.
    pub kind: EdgeKind,
}

// How the web shards' reader decodes these types (`crate::wire`).
crate::wire::wire_enum!(Language {
    Cpp,
    Markdown,
    Rst,
    Text,
    Cmake
});
crate::wire::wire_enum!(SourceType {
    Header,
    Implementation,
    Cuda,
    Documentation,
    Build
});
crate::wire::wire_enum!(Scope {
    Source,
    Test,
    Example,
    Build,
    Docs
});
crate::wire::wire_enum!(EntityKind {
    Namespace,
    Class,
    Struct,
    Union,
    Enum,
    TypeAlias,
    Function,
    Method,
    Constructor,
    Destructor,
    DocSection,
    File,
    Module,
    CallChain
});
crate::wire::wire_enum!(GlossSource {
    Structural,
    Model,
    SkippedLowInformation
});
crate::wire::wire_enum!(EdgeKind {
    Includes,
    Calls,
    Contains,
    Inherits,
    Defines,
    Summarizes
});
crate::wire::wire_struct!(Span {
    start_byte,
    end_byte,
    start_line,
    end_line
});
crate::wire::wire_struct!(Param { ty, name, default });
crate::wire::wire_struct!(CodeFrame {
    prelude_lines,
    prelude_from,
    trailer_lines
});

/// Rows for unit tests elsewhere in the crate.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A C++ header at `path` in module `src`, with no text facts.
    pub(crate) fn header(id: u32, path: &str) -> SourceFile {
        SourceFile {
            id,
            path: path.into(),
            language: Language::Cpp,
            source_type: SourceType::Header,
            scope: Scope::Source,
            module: "src".into(),
            sha256: String::new(),
            bytes: 0,
            lines: 0,
            includes: Vec::new(),
            parse: None,
            warnings: Vec::new(),
        }
    }

    /// Part 2 of 3 of a function of entity 0 in `src/a.hpp`, with this
    /// code, first line and frame.
    pub(crate) fn chunk(code: &str, start_line: u32, frame: CodeFrame) -> Chunk {
        Chunk {
            id: 0,
            entity: 0,
            part: 2,
            parts: 3,
            path: "src/a.hpp".into(),
            file_name: "a.hpp".into(),
            base_name: "a".into(),
            source_type: None,
            scope: Scope::Source,
            language: None,
            entity_type: EntityKind::Function,
            chunk_type: "function_part".into(),
            symbol_name: "f".into(),
            parent_symbol: String::new(),
            class_name: None,
            return_type: None,
            parameters: String::new(),
            leading_comment: None,
            code: code.into(),
            frame,
            start_line,
            end_line: start_line + 1,
            module: "src".into(),
            section_path: None,
        }
    }
}
