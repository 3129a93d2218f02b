//! What retrieval needs to know about the *text* of each chunk (its code
//! and its entity's gloss), computed once from that text.
//!
//! It exists so that retrieval never reads chunk text directly: the browser
//! loads a search shard without any text (text is fetched later, only for
//! the chunks shown or sent to the model), and ranks exactly as the native
//! CLI does because both rank from these features. Natively they are
//! computed in [`crate::retrieve::Corpus::new`]; for the web they are
//! computed by the site writer and shipped in the search shard, except the
//! qualified names, which only questions that write a `::` name read: they
//! travel in a shard of their own, fetched when a lookup first needs them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::format::IndexData;
use crate::text::estimate_tokens;

/// Marks a qualified name that the code follows directly with `(`.
const CALLED: u32 = 1 << 31;

/// A chunk with at least this many non-blank code lines has substance
/// (it ranks a little higher, [`crate::retrieve`]'s quality filter).
pub const SUBSTANTIAL_LINES: usize = 3;

/// Text facts of one chunk.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkFeatures {
    /// At least [`SUBSTANTIAL_LINES`] of its code lines are not blank
    /// (the only use of its line count that ranking makes).
    pub substantial: bool,
    /// A one-line declaration without a body (`class X;`, a prototype).
    pub trivial_declaration: bool,
    /// Its entity has a non-empty gloss.
    pub has_gloss: bool,
    /// Its entity has a doc comment.
    pub documented: bool,
    /// Estimated tokens of code plus gloss (the `context_tokens` of a
    /// retrieval). 0 in the web layout, which does not ship it: nothing
    /// that ranks or builds an answer reads it.
    pub tokens: u32,
    /// Qualified names in the code (maximal runs of `[A-Za-z0-9_:]` that
    /// contain `::`), as indices into [`TextFeatures::names`], sorted; the
    /// high bit is set on a second entry when the code calls the name
    /// (writes it directly followed by `(`).
    pub qualified: Vec<u32>,
    /// Where its keyword length lies within its coarse band,
    /// [`crate::lexical::length_step`]: the scores re-ranking reads use
    /// the fine length ([`crate::retrieve::Corpus::length_code_of`]). 0
    /// until [`TextFeatures::set_length_steps`].
    #[serde(default)]
    pub length_step: u8,
}

/// Text facts of every chunk, by chunk id.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct TextFeatures {
    /// Distinct qualified names, sorted.
    pub names: Vec<String>,
    /// Per chunk.
    pub chunks: Vec<ChunkFeatures>,
    /// Whether `names` and every chunk's `qualified` are still to come
    /// (the browser, until [`TextFeatures::load_qualified`]): lookups then
    /// match nothing and record that they needed them.
    #[serde(skip)]
    pub qualified_absent: bool,
    /// Whether a lookup needed them while absent (one entry, 0).
    #[serde(skip)]
    wanted: crate::lexical::Wanted,
}

impl ChunkFeatures {
    /// The facts ranking reads, as the web layout ships them: bit 0
    /// trivial declaration, bit 1 has a gloss, bit 2 documented, bit 3
    /// substantial, bits 4 to 7 the length step.
    pub fn bits(&self) -> u8 {
        u8::from(self.trivial_declaration)
            | (u8::from(self.has_gloss) << 1)
            | (u8::from(self.documented) << 2)
            | (u8::from(self.substantial) << 3)
            | (self.length_step.min(15) << 4)
    }

    /// Set the facts from [`ChunkFeatures::bits`].
    pub fn set_bits(&mut self, bits: u8) {
        self.trivial_declaration = bits & 1 != 0;
        self.has_gloss = bits & 2 != 0;
        self.documented = bits & 4 != 0;
        self.substantial = bits & 8 != 0;
        self.length_step = bits >> 4;
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Maximal qualified-name runs of a text: `(run, followed_by_paren)`.
fn qualified_runs(code: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices().chain([(code.len(), ' ')]) {
        match (start, is_name_char(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                let run = &code[s..i];
                if run.contains("::") {
                    out.push((run, c == '('));
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Check that every chunk's qualified-name ids lie in a table of `names`.
fn names_in_table<'a>(
    names: usize,
    lists: impl IntoIterator<Item = &'a Vec<u32>>,
) -> Result<(), CoreError> {
    let n = names as u32;
    if lists.into_iter().flatten().any(|q| q & !CALLED >= n) {
        return Err(CoreError::malformed(
            "a chunk names a qualified name outside the table",
        ));
    }
    Ok(())
}

/// Whether a chunk's code is a one-line declaration without a body.
pub fn is_trivial_declaration(code: &str) -> bool {
    let code = code.trim();
    !code.contains('{') && code.lines().count() <= 1 && code.len() < 120
}

impl TextFeatures {
    /// Compute from an index whose chunks and entities still hold their text.
    pub fn compute(data: &IndexData) -> Self {
        Self::from_texts(data.chunks.iter().map(|c| {
            let e = data.entities.get(c.entity as usize);
            let gloss = e.map_or("", |e| e.gloss.text.as_str());
            let documented = e.is_some_and(|e| e.doc_comment.is_some());
            (c.searchable_code(), gloss, documented)
        }))
    }

    /// Set every chunk's [`ChunkFeatures::length_step`] from the lengths
    /// of `lexical`, which must hold every chunk's full length (natively,
    /// or where the web layout is written).
    pub fn set_length_steps(&mut self, lexical: &crate::lexical::LexicalIndex) {
        use crate::lexical::{length_code, length_step};
        for (f, &len) in self.chunks.iter_mut().zip(&lexical.doc_len) {
            f.length_step = length_step(length_code(len));
        }
    }

    /// Compute from `(code, gloss, entity has a doc comment)` per chunk,
    /// in chunk order.
    pub fn from_texts<'a>(texts: impl Iterator<Item = (&'a str, &'a str, bool)>) -> Self {
        let texts: Vec<(&str, &str, bool)> = texts.collect();
        let mut name_ids: BTreeMap<&str, u32> = BTreeMap::new();
        let runs: Vec<Vec<(&str, bool)>> = texts
            .iter()
            .map(|(code, _, _)| qualified_runs(code))
            .collect();
        for (run, _) in runs.iter().flatten() {
            name_ids.insert(run, 0);
        }
        for (i, v) in name_ids.values_mut().enumerate() {
            *v = i as u32;
        }
        let chunks = texts
            .iter()
            .zip(&runs)
            .map(|((code, gloss, documented), runs)| {
                let mut qualified: Vec<u32> = runs
                    .iter()
                    .flat_map(|(r, called)| {
                        let id = name_ids[r];
                        [Some(id), called.then_some(id | CALLED)]
                    })
                    .flatten()
                    .collect();
                crate::sort::sort_values(&mut qualified);
                qualified.dedup();
                ChunkFeatures {
                    substantial: code
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                        .nth(SUBSTANTIAL_LINES - 1)
                        .is_some(),
                    trivial_declaration: is_trivial_declaration(code),
                    has_gloss: !gloss.is_empty(),
                    documented: *documented,
                    tokens: (estimate_tokens(code) + estimate_tokens(gloss)) as u32,
                    qualified,
                    length_step: 0,
                }
            })
            .collect();
        TextFeatures {
            names: name_ids.into_keys().map(str::to_string).collect(),
            chunks,
            ..TextFeatures::default()
        }
    }

    /// Features whose qualified names are still to come
    /// ([`TextFeatures::load_qualified`]).
    pub fn without_qualified(chunks: Vec<ChunkFeatures>) -> Self {
        TextFeatures {
            chunks,
            qualified_absent: true,
            ..TextFeatures::default()
        }
    }

    /// Whether a lookup needed the absent qualified names since the last
    /// call.
    pub fn take_wanted(&self) -> bool {
        !std::mem::take(&mut *self.wanted.lock()).is_empty()
    }

    /// Load the qualified names and each chunk's list of them (as
    /// [`ChunkFeatures::qualified`]), checked like [`TextFeatures::check`].
    pub fn load_qualified(
        &mut self,
        names: Vec<String>,
        qualified: Vec<Vec<u32>>,
    ) -> Result<(), CoreError> {
        if qualified.len() != self.chunks.len() {
            return Err(CoreError::malformed(format!(
                "qualified names for {} chunks, index has {}",
                qualified.len(),
                self.chunks.len()
            )));
        }
        names_in_table(names.len(), &qualified)?;
        self.names = names;
        for (c, q) in self.chunks.iter_mut().zip(qualified) {
            c.qualified = q;
        }
        self.qualified_absent = false;
        Ok(())
    }

    /// Check that the features fit an index of `chunks` chunks.
    pub fn check(&self, chunks: usize) -> Result<(), CoreError> {
        if self.chunks.len() != chunks {
            return Err(CoreError::malformed(format!(
                "features for {} chunks, index has {chunks}",
                self.chunks.len()
            )));
        }
        names_in_table(self.names.len(), self.chunks.iter().map(|c| &c.qualified))
    }

    fn feature(&self, chunk: u32) -> Option<&ChunkFeatures> {
        self.chunks.get(chunk as usize)
    }

    /// Whether the chunk's code contains `term` (a name containing `::`);
    /// with `called`, directly followed by `(`. Equal to a substring test
    /// on the code for terms made of name characters; other terms never
    /// match.
    pub fn code_contains(&self, chunk: u32, term: &str, called: bool) -> bool {
        if term.is_empty() || !term.chars().all(is_name_char) {
            return false;
        }
        if self.qualified_absent {
            self.wanted.lock().insert(0);
            return false;
        }
        let Some(f) = self.feature(chunk) else {
            return false;
        };
        f.qualified.iter().any(|&q| {
            if called != (q & CALLED != 0) {
                return false;
            }
            let name = &self.names[(q & !CALLED) as usize];
            if called {
                name.ends_with(term)
            } else {
                name.contains(term)
            }
        })
    }

    /// Text facts of a chunk (defaults for an id outside the table). A
    /// corpus whose rows load apart reads them through
    /// [`crate::retrieve::Corpus::facts_of`].
    pub fn of(&self, chunk: u32) -> ChunkFeatures {
        self.feature(chunk).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_calls() {
        let r = qualified_runs("x = ippl::detail::f(a) + Kokkos::View<int> v; y::z");
        assert_eq!(
            r,
            vec![
                ("ippl::detail::f", true),
                ("Kokkos::View", false),
                ("y::z", false)
            ]
        );
    }

    #[test]
    fn contains_matches_substring_semantics() {
        let code = "auto v = ippl::detail::shift(x);\nKokkos::parallel_for(p);";
        let f = TextFeatures::from_texts([(code, "", false)].into_iter());
        for (term, called) in [
            ("detail::shift", true),
            ("ippl::detail::shift", true),
            ("ippl::detail", false),
            ("ippl::detail", true),
            ("Kokkos::parallel_for", true),
            ("s::parallel", false),
            ("Kokkos::View", false),
            ("Kokkos::parallel_for<", false),
        ] {
            let expected = if called {
                code.contains(&format!("{term}("))
            } else {
                code.contains(term)
            };
            let expected = expected && term.chars().all(is_name_char);
            assert_eq!(
                f.code_contains(0, term, called),
                expected,
                "{term} {called}"
            );
        }
        // Two non-blank lines.
        assert!(!f.of(0).substantial);
        assert!(!f.of(0).trivial_declaration);
    }
}
