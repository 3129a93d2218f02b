//! Query intent routing (paper section 3.3.5, Table 4): the intent, its
//! structural expansion mode, the entity level the question targets, the
//! symbol-level chunk-type hints, and the reasons for each decision.

use serde::Serialize;

use super::signals::QuerySignals;
use crate::model::EntityKind;
use crate::query::{infer_intent, ChunkTypeHint, Intent};

/// Structural expansion profiles (section 3.3.4).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExpansionMode {
    /// `mode_api_usage`.
    ApiUsage,
    /// `mode_1_minimal`.
    Minimal,
    /// `mode_2_balanced`.
    Balanced,
    /// `mode_3_broad`.
    Broad,
}

/// The entity level a question asks for by name.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EntityTarget {
    /// A whole file.
    File,
    /// A module (folder).
    Module,
    /// A call chain.
    CallChain,
    /// A function or method.
    Function,
    /// A class or struct.
    Class,
    /// A documentation section.
    Documentation,
}

impl EntityTarget {
    /// Whether an entity kind is of this level.
    pub fn matches(self, kind: EntityKind) -> bool {
        match self {
            EntityTarget::File => kind == EntityKind::File,
            EntityTarget::Module => kind == EntityKind::Module,
            EntityTarget::CallChain => kind == EntityKind::CallChain,
            EntityTarget::Function => kind.is_callable(),
            EntityTarget::Class => kind.is_record(),
            EntityTarget::Documentation => kind == EntityKind::DocSection,
        }
    }
}

/// The router's decision.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Route {
    /// Intent (Table 4).
    pub intent: Intent,
    /// Expansion mode of that intent.
    pub mode: ExpansionMode,
    /// Entity level asked for, if any.
    pub entity_target: Option<EntityTarget>,
    /// Symbol-level chunk-type hints (only when the target is a symbol level).
    pub chunk_type_hints: Vec<ChunkTypeHint>,
    /// Why.
    pub reasons: Vec<String>,
}

impl serde::Serialize for Intent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl serde::Serialize for ChunkTypeHint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The expansion mode of an intent (Table 4).
pub fn mode_of(intent: Intent) -> ExpansionMode {
    match intent {
        Intent::ApiUsage => ExpansionMode::ApiUsage,
        Intent::LocationLookup => ExpansionMode::Minimal,
        Intent::DataFlow | Intent::WorkflowExplanation => ExpansionMode::Broad,
        Intent::Comparison
        | Intent::SymbolExplanation
        | Intent::FilePurpose
        | Intent::ModuleOverview
        | Intent::Default => ExpansionMode::Balanced,
    }
}

/// Route a question.
pub fn route(question: &str, signals: &QuerySignals) -> Route {
    let mut reasons = Vec::new();
    let mut intent = infer_intent(question);
    reasons.push(format!(
        "intent {} from the question wording",
        intent.as_str()
    ));
    if intent == Intent::Default && !signals.exact_filenames.is_empty() {
        intent = Intent::FilePurpose;
        reasons.push("a file is named: file_purpose".into());
    } else if intent == Intent::Default && !signals.exact_symbols.is_empty() {
        intent = Intent::SymbolExplanation;
        reasons.push("a symbol is named: symbol_explanation".into());
    }
    if intent == Intent::DataFlow && signals.data_flow_direction.is_some() {
        reasons.push("data-flow direction found".into());
    }
    let hints = ChunkTypeHint::detect(question);
    let lower = question.to_lowercase();
    let target = if hints.contains(&ChunkTypeHint::CallChain) {
        Some(EntityTarget::CallChain)
    } else if hints.contains(&ChunkTypeHint::Module) && signals.exact_filenames.is_empty() {
        Some(EntityTarget::Module)
    } else if intent == Intent::FilePurpose
        || (hints.contains(&ChunkTypeHint::File) && !signals.exact_filenames.is_empty())
    {
        Some(EntityTarget::File)
    } else if hints.contains(&ChunkTypeHint::DocSection) {
        Some(EntityTarget::Documentation)
    } else if hints.contains(&ChunkTypeHint::Function) && !lower.contains("functionality") {
        Some(EntityTarget::Function)
    } else if hints.contains(&ChunkTypeHint::Class) {
        Some(EntityTarget::Class)
    } else if intent == Intent::ModuleOverview {
        Some(EntityTarget::Module)
    } else {
        None
    };
    if let Some(t) = target {
        reasons.push(format!("entity target {t:?}"));
    }
    let symbol_level = matches!(
        target,
        Some(EntityTarget::Function) | Some(EntityTarget::Class) | None
    );
    let chunk_type_hints: Vec<ChunkTypeHint> = if symbol_level {
        hints
            .into_iter()
            .filter(|h| {
                matches!(
                    h,
                    ChunkTypeHint::Function | ChunkTypeHint::Class | ChunkTypeHint::Namespace
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    Route {
        intent,
        mode: mode_of(intent),
        entity_target: target,
        chunk_type_hints,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_4_modes() {
        assert_eq!(mode_of(Intent::ApiUsage), ExpansionMode::ApiUsage);
        assert_eq!(mode_of(Intent::LocationLookup), ExpansionMode::Minimal);
        assert_eq!(mode_of(Intent::DataFlow), ExpansionMode::Broad);
        assert_eq!(mode_of(Intent::WorkflowExplanation), ExpansionMode::Broad);
        for i in [
            Intent::Comparison,
            Intent::SymbolExplanation,
            Intent::FilePurpose,
            Intent::ModuleOverview,
            Intent::Default,
        ] {
            assert_eq!(mode_of(i), ExpansionMode::Balanced);
        }
    }

    #[test]
    fn entity_targets_and_reasons() {
        let s = QuerySignals::default();
        let r = route("Which call chain leads to the solver?", &s);
        assert_eq!(r.entity_target, Some(EntityTarget::CallChain));
        let r = route("Give an overview of the particle module", &s);
        assert_eq!(r.entity_target, Some(EntityTarget::Module));
        assert_eq!(r.intent, Intent::ModuleOverview);
        let r = route("Which function applies the boundary conditions?", &s);
        assert_eq!(r.entity_target, Some(EntityTarget::Function));
        assert_eq!(r.chunk_type_hints, vec![ChunkTypeHint::Function]);
        assert!(!r.reasons.is_empty());
        assert!(EntityTarget::Function.matches(EntityKind::Method));
        assert!(EntityTarget::Class.matches(EntityKind::Struct));
        assert!(!EntityTarget::File.matches(EntityKind::Module));
    }
}
