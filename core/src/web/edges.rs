//! The search shard's graph edges, stored as what the entities do not
//! already say.
//!
//! It exists because most edges repeat a fact of the entity table: a
//! parent *contains* its child, and a call chain *summarizes* the callable
//! it hangs under (its parent). On a 44k-chunk codebase those were 39k of
//! 63k edges. Here such *implied* edges are not stored; an entity whose
//! implied edge the graph lacks is listed instead, and every other edge is
//! stored as before (`from` as a step from the previous edge's, `to` as a
//! step from its own `from`). Decoding puts the implied edges back and
//! sorts, which gives the graph back exactly because the indexer writes
//! its edges sorted and without repeats; a graph that is not (an index
//! written otherwise) is stored whole, every edge explicit.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::model::{Edge, EdgeKind, Entity, EntityKind};

use super::columns::{step, unstep};

/// Graph edges: the explicit ones as columns, and the entities whose
/// implied edge is missing.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeColumns {
    from: Vec<u64>,
    to: Vec<u64>,
    kind: Vec<EdgeKind>,
    /// Whether the implied edges are left out (the graph was sorted).
    implied: bool,
    /// With `implied`: the entities whose implied edge the graph lacks, as
    /// steps from the one before.
    missing: Vec<u64>,
}

/// The edge an entity's parent implies, if any.
fn implied_edge(e: &Entity) -> Option<Edge> {
    let parent = e.parent.filter(|&p| p != e.id)?;
    Some(if e.kind == EntityKind::CallChain {
        Edge {
            from: e.id,
            to: parent,
            kind: EdgeKind::Summarizes,
        }
    } else {
        Edge {
            from: parent,
            to: e.id,
            kind: EdgeKind::Contains,
        }
    })
}

impl EdgeColumns {
    /// Store `edges` against `entities` (ids equal to positions).
    pub(super) fn pack(entities: &[Entity], edges: &[Edge]) -> Self {
        let mut out = EdgeColumns::default();
        let sorted = edges.windows(2).all(|w| w[0] < w[1]);
        let implied: BTreeSet<Edge> = if sorted {
            entities.iter().filter_map(implied_edge).collect()
        } else {
            BTreeSet::new()
        };
        out.implied = sorted;
        if sorted {
            let mut last = 0u32;
            for e in entities {
                // `edges` is sorted: a binary search finds an implied edge.
                if implied_edge(e).is_some_and(|i| edges.binary_search(&i).is_err()) {
                    out.missing.push(step(last, e.id));
                    last = e.id;
                }
            }
        }
        let mut last_from = 0u32;
        for e in edges.iter().filter(|e| !implied.contains(e)) {
            out.from.push(step(last_from, e.from));
            out.to.push(step(e.from, e.to));
            out.kind.push(e.kind);
            last_from = e.from;
        }
        out
    }

    /// The edges, given the decoded entities. Fails with
    /// [`CoreError::Malformed`] when the columns differ in length, an id
    /// is out of range, or an explicit edge repeats an implied one.
    pub(super) fn unpack(&self, entities: &[Entity]) -> Result<Vec<Edge>, CoreError> {
        if self.to.len() != self.from.len() || self.kind.len() != self.from.len() {
            return Err(CoreError::malformed("the edge columns differ in length"));
        }
        if !self.implied && !self.missing.is_empty() {
            return Err(CoreError::malformed(
                "the edges list missing implied edges but imply none",
            ));
        }
        let mut edges = Vec::with_capacity(self.from.len() + entities.len());
        let mut last_from = 0u32;
        for i in 0..self.from.len() {
            let from = unstep(last_from, self.from[i], "edge source")?;
            last_from = from;
            edges.push(Edge {
                from,
                to: unstep(from, self.to[i], "edge target")?,
                kind: self.kind[i],
            });
        }
        if !self.implied {
            return Ok(edges);
        }
        let mut missing = BTreeSet::new();
        let mut last = 0u32;
        for &m in &self.missing {
            last = unstep(last, m, "entity without its implied edge")?;
            missing.insert(last);
        }
        let implied: Vec<Edge> = entities
            .iter()
            .filter(|e| !missing.contains(&e.id))
            .filter_map(implied_edge)
            .collect();
        let expected = edges.len() + implied.len();
        edges.extend(implied);
        edges.sort_unstable();
        edges.dedup();
        if edges.len() != expected {
            return Err(CoreError::malformed(
                "an explicit edge repeats an implied one",
            ));
        }
        Ok(edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(id: u32, kind: EntityKind, parent: Option<u32>) -> Entity {
        let mut e = Entity::new(id, kind, format!("e{id}"), format!("e{id}"));
        e.parent = parent;
        e
    }

    fn edge(from: u32, to: u32, kind: EdgeKind) -> Edge {
        Edge { from, to, kind }
    }

    fn entities() -> Vec<Entity> {
        vec![
            entity(0, EntityKind::File, None),
            entity(1, EntityKind::Class, Some(0)),
            entity(2, EntityKind::Method, Some(1)),
            entity(3, EntityKind::CallChain, Some(2)),
            // Its parent's contains edge is missing from the graph.
            entity(4, EntityKind::Function, Some(0)),
        ]
    }

    #[test]
    fn implied_edges_are_left_out_and_come_back() {
        let entities = entities();
        let mut edges = vec![
            edge(0, 1, EdgeKind::Contains),
            edge(1, 2, EdgeKind::Contains),
            edge(3, 2, EdgeKind::Summarizes),
            edge(2, 4, EdgeKind::Calls),
            edge(0, 4, EdgeKind::Includes),
        ];
        edges.sort_unstable();
        let c = EdgeColumns::pack(&entities, &edges);
        assert!(c.implied);
        // Only the call and the include are stored; entity 4 is listed.
        assert_eq!(c.from.len(), 2);
        assert_eq!(c.missing, vec![step(0, 4)]);
        assert_eq!(c.unpack(&entities).unwrap(), edges);
    }

    #[test]
    fn an_unsorted_graph_is_stored_whole() {
        let entities = entities();
        let edges = vec![
            edge(1, 2, EdgeKind::Contains),
            edge(0, 1, EdgeKind::Contains),
        ];
        let c = EdgeColumns::pack(&entities, &edges);
        assert!(!c.implied && c.missing.is_empty());
        assert_eq!(c.unpack(&entities).unwrap(), edges);
    }

    #[test]
    fn damaged_edge_columns_are_typed_errors() {
        let entities = entities();
        let edges = vec![edge(0, 1, EdgeKind::Contains), edge(2, 4, EdgeKind::Calls)];
        let good = EdgeColumns::pack(&entities, &edges);
        // An explicit edge that repeats an implied one.
        let mut twice = good.clone();
        twice.from.push(step(2, 0));
        twice.to.push(step(0, 1));
        twice.kind.push(EdgeKind::Contains);
        assert!(twice.unpack(&entities).is_err());
        // Columns of different lengths, missing entities without implication.
        let mut short = good.clone();
        short.kind.pop();
        assert!(short.unpack(&entities).is_err());
        let mut plain = good.clone();
        plain.implied = false;
        assert!(plain.unpack(&entities).is_err());
        // A step out of range.
        let mut far = good;
        far.missing.push(u64::MAX);
        assert!(far.unpack(&entities).is_err());
    }
}
