//! The check every model output passes before it becomes a gloss: a
//! reasoning block dropped, fences trimmed, and empty, too short,
//! refusing or degenerate outputs rejected with a typed cause (recorded
//! in the manifest's fallbacks).

use std::collections::HashMap;

use super::GlossError;

/// Longest accepted gloss, in characters.
const MAX_GLOSS_CHARS: usize = 2400;

/// Clean a model output and reject empty, refusing or degenerate ones.
pub fn check_output(raw: &str) -> Result<String, GlossError> {
    let mut text = raw.to_string();
    // Reasoning models: drop a <think> block.
    if let Some(end) = text.find("</think>") {
        text = text[end + "</think>".len()..].to_string();
    }
    let text = text.trim().trim_matches('`').trim();
    if text.is_empty() {
        return Err(GlossError::Empty);
    }
    let chars = text.chars().count();
    if chars < 30 {
        return Err(GlossError::TooShort {
            chars,
            text: text.to_string(),
        });
    }
    let lower: String = text.chars().take(80).collect::<String>().to_lowercase();
    const REFUSALS: [&str; 8] = [
        "i'm sorry",
        "i am sorry",
        "i cannot",
        "i can't",
        "i can not",
        "as an ai",
        "i'm unable",
        "i am unable",
    ];
    if REFUSALS.iter().any(|r| lower.starts_with(r)) {
        let head: String = text.chars().take(60).collect();
        return Err(GlossError::Refusal { head });
    }
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    if letters * 2 < chars {
        return Err(GlossError::FewLetters);
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for line in text.lines().map(str::trim).filter(|l| l.len() > 12) {
        let n = seen.entry(line).or_default();
        *n += 1;
        if *n >= 3 {
            return Err(GlossError::RepeatedLine);
        }
    }
    let mut out: String = text.chars().take(MAX_GLOSS_CHARS).collect();
    if chars > MAX_GLOSS_CHARS {
        out.push('…');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked() {
        assert_eq!(check_output("  ").unwrap_err().to_string(), "empty output");
        assert!(check_output("ok")
            .unwrap_err()
            .to_string()
            .starts_with("output too short"));
        assert!(
            check_output("I'm sorry, but I cannot help with explaining this code.")
                .unwrap_err()
                .to_string()
                .starts_with("refusal")
        );
        assert!(check_output("{{{{ ;;;; 1234 5678 }}}} ---- ==== 0000 ))))")
            .unwrap_err()
            .to_string()
            .starts_with("garbage"));
        let rep = "The same line again and again.\n".repeat(4);
        assert!(check_output(&rep)
            .unwrap_err()
            .to_string()
            .contains("repeats"));
        let ok = check_output(
            "<think>hmm</think>\nRole: fills the halo cells of a field before a stencil.",
        )
        .unwrap();
        assert!(ok.starts_with("Role:"), "{ok}");
        let long = "word ".repeat(1000);
        assert!(check_output(&long).unwrap().chars().count() <= MAX_GLOSS_CHARS + 1);
    }
}
