//! The structure graph as retrieval and the answer read it: each entity's
//! edges both ways, the call chain that summarizes a callable, and which
//! of the graph is loaded.
//!
//! It exists because the browser does not load the whole graph before its
//! first results: the edges a parent implies (contains, summarizes) come
//! with the entities, and the others in edge shards, each covering a range
//! of entities (`web/edges.rs`). A lookup of an entity whose range is not
//! loaded records the range and sees only the implied edges; the caller
//! fetches what was recorded and asks again, until nothing is lacking: then
//! every lookup answered exactly as natively, where the graph is complete.

use std::collections::BTreeMap;

use crate::lexical::Wanted;
use crate::model::{Edge, EdgeKind, Entity, EntityKind};

/// Edges per entity and what of them is loaded.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Outgoing edges per entity: `(kind, to)`, in the graph's order.
    out: Vec<Vec<(EdgeKind, u32)>>,
    /// Incoming edges per entity: `(kind, from)`, in the graph's order.
    inc: Vec<Vec<(EdgeKind, u32)>>,
    /// Call chain entity per callable.
    call_chain_of: BTreeMap<u32, u32>,
    /// `None`: the graph is complete. Otherwise the first entity of each
    /// range of entities whose edges load together, and which are loaded.
    ranges: Option<Ranges>,
}

/// Ranges of entities whose edges load together.
#[derive(Clone, Debug, Default)]
struct Ranges {
    /// First entity of each range, increasing from 0.
    starts: Vec<u32>,
    loaded: Vec<bool>,
    /// Ranges a lookup needed since the last [`Graph::take_wanted`].
    wanted: Wanted,
}

impl Graph {
    /// The complete graph of `edges` over `entities` (ids equal to
    /// positions).
    pub fn complete(entities: &[Entity], edges: &[Edge]) -> Self {
        let mut g = Graph::default();
        g.rebuild(entities, edges);
        g
    }

    /// A graph whose edges load per range of entities: `starts` are the
    /// ranges' first entities (increasing from 0; none: nothing to load).
    /// `edges` are those known so far (the implied ones).
    pub fn partial(entities: &[Entity], edges: &[Edge], starts: Vec<u32>) -> Self {
        let mut g = Graph::complete(entities, edges);
        if !starts.is_empty() {
            g.ranges = Some(Ranges {
                loaded: vec![false; starts.len()],
                starts,
                wanted: Wanted::default(),
            });
        }
        g
    }

    /// Rebuild the lookups from every edge known now, in their order.
    pub fn rebuild(&mut self, entities: &[Entity], edges: &[Edge]) {
        let n = entities.len();
        self.out = vec![Vec::new(); n];
        self.inc = vec![Vec::new(); n];
        self.call_chain_of.clear();
        for e in edges {
            let (Some(out), Some(_)) = (
                self.out.get_mut(e.from as usize),
                entities.get(e.to as usize),
            ) else {
                continue;
            };
            out.push((e.kind, e.to));
            self.inc[e.to as usize].push((e.kind, e.from));
            if e.kind == EdgeKind::Summarizes
                && entities[e.from as usize].kind == EntityKind::CallChain
            {
                self.call_chain_of.insert(e.to, e.from);
            }
        }
    }

    /// Mark range `range` loaded (its edges must be in the next
    /// [`Graph::rebuild`]).
    pub fn set_loaded(&mut self, range: usize) {
        if let Some(l) = self.ranges.as_mut().and_then(|r| r.loaded.get_mut(range)) {
            *l = true;
        }
    }

    /// The range holding `entity`, when the graph loads per range.
    pub fn range_of(&self, entity: u32) -> Option<usize> {
        let r = self.ranges.as_ref()?;
        r.starts.partition_point(|&s| s <= entity).checked_sub(1)
    }

    /// Record `entity`'s range when it is not loaded.
    fn note(&self, entity: u32) {
        if let (Some(r), Some(i)) = (self.ranges.as_ref(), self.range_of(entity)) {
            if !r.loaded[i] {
                r.wanted.lock().insert(i);
            }
        }
    }

    /// What lookups found not loaded since the last call: the ranges, in
    /// order. None: every lookup since answered as on the complete graph.
    pub fn take_wanted(&self) -> Vec<usize> {
        self.ranges
            .as_ref()
            .map(|r| std::mem::take(&mut *r.wanted.lock()).into_iter().collect())
            .unwrap_or_default()
    }

    /// Outgoing edges of `entity`: `(kind, to)`.
    pub fn out_edges(&self, entity: u32) -> &[(EdgeKind, u32)] {
        self.note(entity);
        self.out.get(entity as usize).map_or(&[], Vec::as_slice)
    }

    /// Incoming edges of `entity`: `(kind, from)`.
    pub fn in_edges(&self, entity: u32) -> &[(EdgeKind, u32)] {
        self.note(entity);
        self.inc.get(entity as usize).map_or(&[], Vec::as_slice)
    }

    /// The call chain that summarizes `entity`, if any.
    pub fn call_chain(&self, entity: u32) -> Option<u32> {
        self.note(entity);
        self.call_chain_of.get(&entity).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: u32, to: u32, kind: EdgeKind) -> Edge {
        Edge { from, to, kind }
    }

    #[test]
    fn lookups_record_the_ranges_they_lack() {
        let entities: Vec<Entity> = [
            EntityKind::File,
            EntityKind::Function,
            EntityKind::CallChain,
            EntityKind::Function,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, k)| Entity::new(i as u32, k, format!("e{i}"), format!("e{i}")))
        .collect();
        let implied = vec![
            edge(0, 1, EdgeKind::Contains),
            edge(2, 1, EdgeKind::Summarizes),
        ];
        let mut g = Graph::partial(&entities, &implied, vec![0, 2]);
        assert_eq!(g.call_chain(1), Some(2));
        assert_eq!(g.out_edges(3), &[]);
        assert_eq!(g.take_wanted(), vec![0, 1]);
        assert!(g.take_wanted().is_empty());
        let mut all = implied.clone();
        all.push(edge(1, 3, EdgeKind::Calls));
        crate::sort::sort_values(&mut all);
        g.rebuild(&entities, &all);
        g.set_loaded(0);
        g.set_loaded(1);
        assert_eq!(g.out_edges(1), &[(EdgeKind::Calls, 3)]);
        assert_eq!(g.in_edges(3), &[(EdgeKind::Calls, 1)]);
        assert!(g.take_wanted().is_empty());
        // The complete graph never records.
        let c = Graph::complete(&entities, &all);
        assert_eq!(c.out_edges(1), g.out_edges(1));
        assert!(c.take_wanted().is_empty());
        assert_eq!(c.range_of(1), None);
    }
}
