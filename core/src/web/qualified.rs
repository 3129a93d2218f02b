//! The qualified-names shard: the distinct `a::b` names written in chunk
//! code, front-coded, and per chunk the sorted ids of those it writes (the
//! high bit marking a call), as steps.
//!
//! It exists apart from the search shard because only questions that write
//! a `::` name read it ([`crate::retrieve::features::TextFeatures::code_contains`]),
//! while it is one of the largest parts of what ranking reads (about a sixth
//! of a large codebase's search shard): a browser fetches it on the first
//! such question instead of before every first result.

use serde::Serialize;

use crate::error::CoreError;
use crate::retrieve::features::TextFeatures;

use super::columns::{Budget, DiffColumn};

/// What the qualified-names shard holds.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct QualifiedShard {
    /// Distinct qualified names, sorted, each as a difference from the one
    /// before.
    names: DiffColumn,
    /// Per chunk, its sorted name ids as gaps from the one before.
    gaps: Vec<Vec<u32>>,
}

impl QualifiedShard {
    /// Pack the names and per-chunk lists of complete features.
    pub fn pack(features: &TextFeatures) -> Self {
        let mut q = QualifiedShard {
            names: DiffColumn::front_code(&features.names),
            ..QualifiedShard::default()
        };
        for c in &features.chunks {
            let mut last = 0u32;
            q.gaps.push(
                c.qualified
                    .iter()
                    .map(|&id| {
                        let gap = id.wrapping_sub(last);
                        last = id;
                        gap
                    })
                    .collect(),
            );
        }
        q
    }

    /// The names and the per-chunk lists back (ids unchecked: see
    /// [`TextFeatures::load_qualified`]); string decoding is bounded like
    /// every front-coded column ([`Budget`]).
    pub fn unpack(&self) -> Result<(Vec<String>, Vec<Vec<u32>>), CoreError> {
        let names = self.names.front_coded(&Budget::new(self.names.weight()))?;
        let lists = self
            .gaps
            .iter()
            .map(|gaps| {
                let mut last = 0u32;
                gaps.iter()
                    .map(|&gap| {
                        last = last.wrapping_add(gap);
                        last
                    })
                    .collect()
            })
            .collect();
        Ok((names, lists))
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(QualifiedShard { names, gaps });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lists_round_trip() {
        let features = TextFeatures::from_texts(
            [
                ("a::b(x); c::d y;", "", false),
                ("", "gloss", true),
                ("c::d z; c::d(w);", "", false),
            ]
            .into_iter(),
        );
        assert_eq!(features.names, vec!["a::b", "c::d"]);
        let (names, lists) = QualifiedShard::pack(&features).unpack().unwrap();
        assert_eq!(names, features.names);
        let want: Vec<Vec<u32>> = features
            .chunks
            .iter()
            .map(|c| c.qualified.clone())
            .collect();
        assert_eq!(lists, want);
    }

    #[test]
    fn front_coded_names_cannot_multiply_past_the_budget() {
        // Each name is "the previous one, nothing cut, nothing added": 4 Ki
        // rows after a 64 KiB name cost 8 KiB of shard and would decode to
        // 256 MiB (a whole shard of them: without bound).
        let mut q = QualifiedShard::default();
        q.names.cut = vec![0; 4097];
        q.names.append = std::iter::once("x".repeat(64 << 10))
            .chain(std::iter::repeat_n(String::new(), 4096))
            .collect();
        let err = q.unpack().unwrap_err();
        assert!(err.to_string().contains("decode to more than"), "{err}");
    }
}
