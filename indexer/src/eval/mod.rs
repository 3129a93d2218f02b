//! Evaluation over a question file (the format of `bench/README.md`):
//! the questions and their nuggets here, the harness that retrieves,
//! builds answer contexts and asks the answer model in [`run`], and the
//! report it returns, [`EvalReport`] (defined in `codegloss_core::report`,
//! because the benches and the browser comparison read it too).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::IndexError;

pub mod run;

pub use codegloss_core::report::{
    answer_summary, metrics, nugget_summary, percentile, score, EvalReport, QuestionRow, Scores,
};
pub use run::{run, score_answers, AnswerContext, EvalObserver, EvalOptions};

/// One benchmark question (extra fields are ignored; nuggets are optional).
#[derive(Deserialize, Clone, Debug)]
pub struct Question {
    /// Identifier.
    pub id: String,
    /// Category.
    #[serde(default)]
    pub category: String,
    /// The question text.
    pub question: String,
    /// `dev` or `test`.
    #[serde(default)]
    pub split: Option<String>,
    /// Files with the primary evidence.
    #[serde(default)]
    pub gold_files: Vec<String>,
    /// Atomic facts a correct answer states (dev split).
    #[serde(default)]
    pub nuggets: Vec<Nugget>,
    /// Other fields, kept for `--field`.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// One fact of a reference answer, present when any pattern matches.
#[derive(Deserialize, Clone, Debug)]
pub struct Nugget {
    /// The fact in words.
    #[serde(default)]
    pub fact: String,
    /// Regular expressions (case-insensitive); any match counts.
    #[serde(default)]
    pub any: Vec<String>,
}

/// Whether one nugget is present in a text: any of its patterns matches,
/// case-insensitively. A pattern that does not compile is an error.
pub fn nugget_present(text: &str, nugget: &Nugget) -> Result<bool, IndexError> {
    for p in &nugget.any {
        let re = regex::RegexBuilder::new(p)
            .case_insensitive(true)
            .build()
            .map_err(|e| IndexError::Eval {
                message: format!("nugget pattern {p:?}: {e}"),
            })?;
        if re.is_match(text) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Share of a question's nuggets present in an answer, or none when the
/// question has no nuggets. A pattern that does not compile is an error.
pub fn nugget_recall(answer: &str, nuggets: &[Nugget]) -> Result<Option<f64>, IndexError> {
    if nuggets.is_empty() {
        return Ok(None);
    }
    let mut present = 0;
    for n in nuggets {
        if nugget_present(answer, n)? {
            present += 1;
        }
    }
    Ok(Some(present as f64 / nuggets.len() as f64))
}

/// Read a JSON-lines question file (blank lines and `#` comments skipped).
pub fn read_questions(path: &std::path::Path) -> Result<Vec<Question>, IndexError> {
    let text = std::fs::read_to_string(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let q: Question = serde_json::from_str(line).map_err(|e| IndexError::Config {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", i + 1),
        })?;
        out.push(q);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nuggets_match_any_pattern_case_insensitively() {
        let nuggets = vec![
            Nugget {
                fact: "a".into(),
                any: vec!["mpi::Environment".into(), r"\bEnv\b".into()],
            },
            Nugget {
                fact: "b".into(),
                any: vec!["--(help|info)".into()],
            },
        ];
        assert_eq!(
            nugget_recall("it creates an MPI::environment", &nuggets).unwrap(),
            Some(0.5)
        );
        assert_eq!(
            nugget_recall("Env and --info", &nuggets).unwrap(),
            Some(1.0)
        );
        assert_eq!(nugget_recall("x", &[]).unwrap(), None);
        let bad = nugget_recall(
            "x",
            &[Nugget {
                fact: String::new(),
                any: vec!["(".into()],
            }],
        );
        assert!(matches!(bad, Err(IndexError::Eval { .. })));
    }
}
