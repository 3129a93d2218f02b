//! What each macro rule is worth to the parse: for every rule that
//! neutralisation applies (a configured attribute or replacement, a rule
//! read from the repository's `#define`s or learned from its uses, the
//! ALL_CAPS fallback as one, and each rewrite of valid C++ that the
//! grammar cannot read), the files that use it are parsed again
//! without that one rule, and the function bodies that fall into ERROR
//! nodes and the ERROR nodes that appear are counted. That is the rule's
//! marginal worth, given every other rule; a rule that the ALL_CAPS
//! fallback would replace shows little.
//!
//! This costs one parse per file per rule that the file uses, so it is a
//! diagnostic (`codegloss macros`), never part of `index`.

use std::collections::BTreeMap;
use std::path::Path;

use codegloss_core::Language;
use indicatif::ProgressBar;
use rayon::prelude::*;
use serde::Serialize;

use crate::config::{Config, ParseConfig};
use crate::error::IndexError;
use crate::ingest::cpp::{count_errors, cpp_parser, function_error_counts, neutralised_tree};
use crate::ingest::macros::{
    code_identifiers, neutralise, GrammarCounts, GrammarRewrite, MacroRule, RepoMacros,
};
use crate::ingest::{file, walk};

/// Parse quality of one text or of a whole repository.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Quality {
    /// Function bodies.
    pub functions: usize,
    /// Function bodies inside ERROR nodes.
    pub functions_in_error: usize,
    /// ERROR and MISSING nodes.
    pub errors: usize,
}

impl std::ops::AddAssign for Quality {
    fn add_assign(&mut self, o: Quality) {
        self.functions += o.functions;
        self.functions_in_error += o.functions_in_error;
        self.errors += o.errors;
    }
}

/// Where a rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `[parse] attribute_macros` (a pattern may end in `*`).
    ConfiguredAttribute,
    /// `[parse] macro_replacements`.
    ConfiguredReplacement,
    /// The repository's `#define`s, or its uses for a macro it never defines.
    Repository,
    /// `[parse] generic_caps_rule`: ALL_CAPS words before a declaration.
    CapsFallback,
    /// Every rule of [`Origin::Repository`] at once.
    AllRepository,
    /// A rewrite of valid C++ that the grammar cannot read
    /// ([`GrammarRewrite`]).
    Grammar,
}

/// What one rule is worth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MacroEffect {
    /// Macro name or pattern (`ALL_CAPS` for the fallback).
    pub name: String,
    /// Where the rule comes from.
    pub origin: Origin,
    /// The rewrite: `blank`, `blank with arguments`, `replace by …`,
    /// `unwrap`.
    pub rule: String,
    /// Files whose code uses the name.
    pub files: usize,
    /// Uses in code.
    pub uses: usize,
    /// Function bodies that are in ERROR nodes without the rule and are
    /// not with it (negative: the rule breaks bodies).
    pub bodies_rescued: i64,
    /// ERROR nodes that the rule removes.
    pub errors_removed: i64,
}

/// The whole report: the repository's parse quality with every rule, and
/// each rule's worth, most rescued bodies first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MacroReport {
    /// C++ files parsed.
    pub files: usize,
    /// Quality with every rule.
    pub quality: Quality,
    /// Per rule.
    pub rules: Vec<MacroEffect>,
}

/// Parse quality of one text under these rules.
pub fn quality(
    parser: &mut tree_sitter::Parser,
    src: &str,
    cfg: &ParseConfig,
    repo: &RepoMacros,
) -> Result<Quality, IndexError> {
    let (_, tree, _) = neutralised_tree(parser, src, cfg, repo)?;
    let (functions, functions_in_error) = function_error_counts(tree.root_node());
    Ok(Quality {
        functions,
        functions_in_error,
        errors: count_errors(tree.root_node()),
    })
}

/// One rule to leave out, and how to leave it out.
struct Candidate {
    name: String,
    origin: Origin,
    rule: String,
    /// The grammar rewrite, for [`Origin::Grammar`].
    grammar: Option<GrammarRewrite>,
}

impl Candidate {
    /// Uses in code of the names this rule rewrites, from a file's
    /// identifier counts (a grammar rewrite's, from how often it applied
    /// in the file); None for the fallback and the group, which may act on
    /// any file.
    fn uses_in(&self, words: &BTreeMap<&str, usize>, grammar: &GrammarCounts) -> Option<usize> {
        if let Some(r) = self.grammar {
            let k = GrammarRewrite::ALL.iter().position(|g| *g == r)?;
            return Some(grammar[k] as usize);
        }
        match (self.origin, self.name.strip_suffix('*')) {
            (Origin::CapsFallback | Origin::AllRepository, _) => None,
            (Origin::ConfiguredAttribute, Some(prefix)) => Some(
                words
                    .range(prefix..)
                    .take_while(|(w, _)| w.starts_with(prefix))
                    .map(|(_, n)| n)
                    .sum(),
            ),
            _ => Some(words.get(self.name.as_str()).copied().unwrap_or(0)),
        }
    }

    /// The rules without this one.
    fn without(&self, cfg: &ParseConfig, repo: &RepoMacros) -> (ParseConfig, RepoMacros) {
        let (mut cfg, mut repo) = (cfg.clone(), repo.clone());
        match self.origin {
            Origin::ConfiguredAttribute => cfg.attribute_macros.retain(|m| *m != self.name),
            Origin::ConfiguredReplacement => {
                cfg.macro_replacements.remove(&self.name);
            }
            Origin::Repository => {
                repo.rules.remove(&self.name);
            }
            Origin::CapsFallback => cfg.generic_caps_rule = false,
            Origin::AllRepository => repo.rules.clear(),
            Origin::Grammar => cfg.grammar_rewrites_off.extend(self.grammar),
        }
        (cfg, repo)
    }
}

fn describe(rule: &MacroRule) -> String {
    match rule {
        MacroRule::Blank { with_args: false } => "blank".into(),
        MacroRule::Blank { with_args: true } => "blank with arguments".into(),
        MacroRule::Replace(t) => format!("replace by {t}"),
        MacroRule::Unwrap => "unwrap".into(),
        MacroRule::Declarations { .. } => "blank where it stands alone".into(),
    }
}

/// The report of the repository at `root`, with its files and macros as
/// `index` reads them (the same walk, checks and `#define`s).
pub fn repository_report(
    root: &Path,
    cfg: &Config,
    progress: &ProgressBar,
) -> Result<MacroReport, IndexError> {
    let walked = walk::walk(root, cfg)?;
    let texts: Vec<String> = walked
        .files
        .into_par_iter()
        .filter(|e| e.language == Language::Cpp)
        .filter_map(|e| file::load(e, cfg).ok())
        .map(|(_, l)| l.text)
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let repo = RepoMacros::from_sources(texts.iter().copied());
    macro_report(&texts, &cfg.parse, &repo, progress)
}

/// Measure every rule over `texts` (the repository's C++ files), in
/// parallel, counting parses on `progress`.
pub fn macro_report(
    texts: &[&str],
    cfg: &ParseConfig,
    repo: &RepoMacros,
    progress: &ProgressBar,
) -> Result<MacroReport, IndexError> {
    let mut candidates: Vec<Candidate> = Vec::new();
    for m in &cfg.attribute_macros {
        candidates.push(Candidate {
            name: m.clone(),
            origin: Origin::ConfiguredAttribute,
            rule: "blank".into(),
            grammar: None,
        });
    }
    for (m, r) in &cfg.macro_replacements {
        candidates.push(Candidate {
            name: m.clone(),
            origin: Origin::ConfiguredReplacement,
            rule: format!("replace by {r}"),
            grammar: None,
        });
    }
    for (m, r) in &repo.rules {
        candidates.push(Candidate {
            name: m.clone(),
            origin: Origin::Repository,
            rule: describe(r),
            grammar: None,
        });
    }
    if cfg.generic_caps_rule {
        candidates.push(Candidate {
            name: "ALL_CAPS".into(),
            origin: Origin::CapsFallback,
            rule: "blank (fallback)".into(),
            grammar: None,
        });
    }
    if !repo.rules.is_empty() {
        candidates.push(Candidate {
            name: format!("all {} repository rules", repo.rules.len()),
            origin: Origin::AllRepository,
            rule: "as each".into(),
            grammar: None,
        });
    }
    for r in GrammarRewrite::ALL {
        if !cfg.grammar_rewrites_off.contains(&r) {
            candidates.push(Candidate {
                name: r.as_str().into(),
                origin: Origin::Grammar,
                rule: "same-length rewrite".into(),
                grammar: Some(r),
            });
        }
    }
    // Uses of each candidate per file.
    let words: Vec<BTreeMap<&str, usize>> = texts
        .par_iter()
        .map(|t| {
            let mut m: BTreeMap<&str, usize> = BTreeMap::new();
            for (s, e) in code_identifiers(t) {
                *m.entry(&t[s..e]).or_default() += 1;
            }
            m
        })
        .collect();
    // How often each grammar rewrite applies per file.
    let grammar: Vec<GrammarCounts> = texts
        .par_iter()
        .map(|t| {
            let (attributes, replacements) = (&cfg.attribute_macros, &cfg.macro_replacements);
            neutralise(t, attributes, replacements, repo, &cfg.grammar_rewrites_off).grammar
        })
        .collect();
    // (rule, file, uses) for each file a rule may act on.
    let pairs: Vec<(usize, usize, usize)> = (0..candidates.len())
        .flat_map(|c| (0..texts.len()).map(move |f| (c, f)))
        .filter_map(
            |(c, f)| match candidates[c].uses_in(&words[f], &grammar[f]) {
                None => Some((c, f, 0)),
                Some(0) => None,
                Some(n) => Some((c, f, n)),
            },
        )
        .collect();
    // A grammar that does not load fails here, once, with its own error.
    cpp_parser()?;
    progress.set_length((texts.len() + pairs.len()) as u64);
    let tick = || progress.inc(1);
    let no_grammar = || IndexError::Grammar("the C++ grammar did not load".into());
    let base: Vec<Quality> = texts
        .par_iter()
        .map_init(
            || cpp_parser().ok(),
            |p, t| {
                tick();
                quality(p.as_mut().ok_or_else(no_grammar)?, t, cfg, repo)
            },
        )
        .collect::<Result<_, IndexError>>()?;
    let variants: Vec<(ParseConfig, RepoMacros)> =
        candidates.iter().map(|c| c.without(cfg, repo)).collect();
    let without: Vec<Quality> = pairs
        .par_iter()
        .map_init(
            || cpp_parser().ok(),
            |p, &(c, f, _)| {
                tick();
                let (cfg, repo) = &variants[c];
                quality(p.as_mut().ok_or_else(no_grammar)?, texts[f], cfg, repo)
            },
        )
        .collect::<Result<_, IndexError>>()?;
    let mut effects: Vec<MacroEffect> = candidates
        .iter()
        .map(|c| MacroEffect {
            name: c.name.clone(),
            origin: c.origin,
            rule: c.rule.clone(),
            files: 0,
            uses: 0,
            bodies_rescued: 0,
            errors_removed: 0,
        })
        .collect();
    for (&(c, f, n), q) in pairs.iter().zip(&without) {
        let e = &mut effects[c];
        e.files += 1;
        e.uses += n;
        e.bodies_rescued += q.functions_in_error as i64 - base[f].functions_in_error as i64;
        e.errors_removed += q.errors as i64 - base[f].errors as i64;
    }
    effects.sort_by(|a, b| {
        b.bodies_rescued
            .cmp(&a.bodies_rescued)
            .then(b.errors_removed.cmp(&a.errors_removed))
            .then(b.uses.cmp(&a.uses))
            .then(a.name.cmp(&b.name))
    });
    let mut total = Quality::default();
    for q in &base {
        total += *q;
    }
    Ok(MacroReport {
        files: texts.len(),
        quality: total,
        rules: effects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_that_carries_the_parse_is_credited_with_its_bodies() {
        let defs = "#define LIB_EXPORT __attribute__((visibility(\"default\")))\n";
        let src =
            "LIB_EXPORT int one(int a) { return a; }\nLIB_EXPORT int two(int b) { return b; }\n";
        let texts = [defs, src];
        let cfg = ParseConfig {
            generic_caps_rule: false,
            ..ParseConfig::default()
        };
        let repo = RepoMacros::from_sources(texts);
        let r = macro_report(&texts, &cfg, &repo, &ProgressBar::hidden()).unwrap();
        assert_eq!(r.quality.functions_in_error, 0, "{r:?}");
        let e = r.rules.iter().find(|e| e.name == "LIB_EXPORT").unwrap();
        assert_eq!((e.files, e.uses), (1, 2));
        assert!(e.bodies_rescued > 0 && e.errors_removed > 0, "{e:?}");
        // Each grammar rewrite is measured where it applies.
        let g = r
            .rules
            .iter()
            .find(|e| e.origin == Origin::Grammar && e.name == "functional cast")
            .unwrap();
        assert_eq!((g.files, g.uses, g.bodies_rescued), (0, 0, 0), "{g:?}");
        // The most useful rules come first.
        assert!(r
            .rules
            .windows(2)
            .all(|w| w[0].bodies_rescued >= w[1].bodies_rescued));
    }

    #[test]
    fn each_grammar_rewrite_is_credited_where_it_applies() {
        let src = "struct P {\n  P() : m_s(typename T::space()), m_n(0) {}\n  int n() const { return m_n; }\n};\nvoid after() {}\n";
        let texts = [src];
        let repo = RepoMacros::from_sources(texts);
        let cfg = ParseConfig::default();
        let r = macro_report(&texts, &cfg, &repo, &ProgressBar::hidden()).unwrap();
        assert_eq!(r.quality.functions_in_error, 0, "{r:?}");
        let g = r
            .rules
            .iter()
            .find(|e| e.name == "functional cast")
            .unwrap();
        assert_eq!((g.origin, g.files, g.uses), (Origin::Grammar, 1, 1));
        assert!(g.bodies_rescued > 0 && g.errors_removed > 0, "{g:?}");
        // Rewrites that never applied are listed, with no files.
        let k = r
            .rules
            .iter()
            .find(|e| e.name == "kernel launch configuration")
            .unwrap();
        assert_eq!((k.files, k.bodies_rescued), (0, 0));
    }
}
