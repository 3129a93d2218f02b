//! Small text utilities shared by the indexer and the browser: token
//! estimates and identifier handling that must agree on both sides.

/// A conservative estimate of how many model tokens a text takes when no
/// tokenizer is at hand: one token per three characters, rounded up.
///
/// Subword tokenizers give roughly 3.5–4 characters per token on English
/// and 3–3.5 on C++; dividing by three over-counts slightly, so budgets
/// built on it are kept.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_conservative_and_monotone() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 2);
        assert!(estimate_tokens("void f(int x);") >= 4);
    }
}
