//! The graph's edges in the web layout: what the entities imply in the
//! search shard, every other edge in edge shards by range of entities.
//!
//! It exists because most edges repeat a fact of the entity table: a
//! parent *contains* its child, and a call chain *summarizes* the callable
//! it hangs under (its parent). On a 44k-chunk codebase those were 39k of
//! 63k edges. Such *implied* edges are not stored; the search shard lists
//! the entities whose implied edge the graph lacks, and decoding puts the
//! others back. That gives the graph back exactly because the indexer
//! writes its edges sorted and without repeats; a graph that is not (an
//! index written otherwise) is stored whole, every edge explicit, in one
//! edge shard.
//!
//! The explicit edges (calls, includes, definitions, inheritance: 53 KB
//! of a 44k-chunk codebase's search shard) are not needed before a
//! question's primary chunks are chosen, and then only for those few
//! entities, so they live in *edge shards*: each holds every explicit edge
//! that starts or ends in its range of entities (an edge between two
//! ranges is in both), so one shard answers all lookups of its entities.
//! The indexer numbers entities file by file, in source order, and the
//! call chains after all the others (again file by file), so a range is a
//! run of files (on a 44k-chunk codebase, 38k entities in 2,259 runs of
//! one file for 1,321 files).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::error::CoreError;
use crate::model::{Edge, EdgeKind, Entity, EntityKind};

use super::columns::{step, unstep};
use super::shard::{decode_shard, Fetched};
use super::{ShardKind, WebIndex, WebManifest, WEB_MANIFEST};

/// The search shard's part of the graph: whether implied edges are left
/// out, and the entities whose implied edge the graph lacks.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeColumns {
    /// Whether the implied edges are left out (the graph was sorted).
    implied: bool,
    /// With `implied`: the entities whose implied edge the graph lacks, as
    /// steps from the one before.
    missing: Vec<u64>,
}

/// The explicit edges that start or end in a range of entities, sorted
/// (in the graph's own order when it was stored whole).
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeShard {
    /// First and last entity of the range.
    range: [u32; 2],
    /// Sources, as steps from the edge before's.
    from: Vec<u64>,
    /// Targets, as steps from their own source.
    to: Vec<u64>,
    kind: Vec<EdgeKind>,
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

/// The graph split for the web: the search shard's columns and the edge
/// shards, each covering a range of entities with about `per_shard`
/// explicit edge ends (one shard for a graph stored whole).
pub(super) fn split(
    entities: &[Entity],
    edges: &[Edge],
    per_shard: usize,
) -> (EdgeColumns, Vec<EdgeShard>) {
    let mut columns = EdgeColumns::default();
    let sorted = edges.windows(2).all(|w| w[0] < w[1]);
    columns.implied = sorted;
    if !sorted {
        let whole = EdgeShard::pack([0, entities.len().saturating_sub(1) as u32], edges.iter());
        return (columns, vec![whole]);
    }
    let implied: BTreeSet<Edge> = entities.iter().filter_map(implied_edge).collect();
    let mut last = 0u32;
    for e in entities {
        // `edges` is sorted: a binary search finds an implied edge.
        if implied_edge(e).is_some_and(|i| edges.binary_search(&i).is_err()) {
            columns.missing.push(step(last, e.id));
            last = e.id;
        }
    }
    let explicit: Vec<&Edge> = edges.iter().filter(|e| !implied.contains(e)).collect();
    if explicit.is_empty() || entities.is_empty() {
        return (columns, Vec::new());
    }
    // Ranges by explicit edge ends per entity.
    let mut ends = vec![0usize; entities.len()];
    for e in &explicit {
        for id in [e.from, e.to] {
            if let Some(n) = ends.get_mut(id as usize) {
                *n += 1;
            }
        }
    }
    let mut starts = vec![0u32];
    let mut count = 0usize;
    for (id, &n) in ends.iter().enumerate() {
        if count > 0 && count + n > per_shard {
            starts.push(id as u32);
            count = 0;
        }
        count += n;
    }
    let shards = starts
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let b = starts.get(i + 1).map_or(entities.len() as u32, |&s| s) - 1;
            EdgeShard::pack(
                [a, b],
                explicit
                    .iter()
                    .copied()
                    .filter(|e| (a..=b).contains(&e.from) || (a..=b).contains(&e.to)),
            )
        })
        .collect();
    (columns, shards)
}

impl EdgeColumns {
    /// Whether the implied edges are left out (else one edge shard holds
    /// the graph whole).
    pub(super) fn implied(&self) -> bool {
        self.implied
    }

    /// The implied edges the graph has, sorted, given the decoded entities
    /// (ids equal to positions). Fails with [`CoreError::Malformed`] when
    /// an entity is listed out of range, or listed though nothing is
    /// implied.
    pub(super) fn unpack(&self, entities: &[Entity]) -> Result<Vec<Edge>, CoreError> {
        if !self.implied {
            if !self.missing.is_empty() {
                return Err(CoreError::malformed(
                    "the edges list missing implied edges but imply none",
                ));
            }
            return Ok(Vec::new());
        }
        let mut missing = BTreeSet::new();
        let mut last = 0u32;
        for &m in &self.missing {
            last = unstep(last, m, "entity without its implied edge")?;
            missing.insert(last);
        }
        let mut edges: Vec<Edge> = entities
            .iter()
            .filter(|e| !missing.contains(&e.id))
            .filter_map(implied_edge)
            .collect();
        crate::sort::sort_values(&mut edges);
        edges.dedup();
        Ok(edges)
    }
}

impl EdgeShard {
    fn pack<'a>(range: [u32; 2], edges: impl Iterator<Item = &'a Edge>) -> Self {
        let mut out = EdgeShard {
            range,
            ..EdgeShard::default()
        };
        let mut last_from = 0u32;
        for e in edges {
            out.from.push(step(last_from, e.from));
            out.to.push(step(e.from, e.to));
            out.kind.push(e.kind);
            last_from = e.from;
        }
        out
    }

    /// First and last entity of its range.
    pub(super) fn range(&self) -> [u32; 2] {
        self.range
    }

    /// Its edges, for a graph of `entities` entities. Fails with
    /// [`CoreError::Malformed`] when the columns differ in length, or an
    /// edge names an entity out of range or touches none of the shard's.
    pub(super) fn unpack(&self, entities: usize) -> Result<Vec<Edge>, CoreError> {
        if self.to.len() != self.from.len() || self.kind.len() != self.from.len() {
            return Err(CoreError::malformed("the edge columns differ in length"));
        }
        let [a, b] = self.range;
        let mut edges = Vec::with_capacity(self.from.len());
        let mut last_from = 0u32;
        for i in 0..self.from.len() {
            let from = unstep(last_from, self.from[i], "edge source")?;
            last_from = from;
            let e = Edge {
                from,
                to: unstep(from, self.to[i], "edge target")?,
                kind: self.kind[i],
            };
            if e.from as usize >= entities || e.to as usize >= entities {
                return Err(CoreError::malformed("an edge names an entity out of range"));
            }
            if !(a..=b).contains(&e.from) && !(a..=b).contains(&e.to) {
                return Err(CoreError::malformed(
                    "an edge touches no entity of its shard's range",
                ));
            }
            edges.push(e);
        }
        Ok(edges)
    }
}

/// The first entity of each edge shard's range, as the reader's list
/// holds them (from the search shard's directory): contiguous from entity
/// 0 to the last (none: no explicit edges).
/// A graph stored whole (`implied` false) is one shard.
pub(super) fn shard_starts(
    manifest: &WebManifest,
    entities: usize,
    implied: bool,
) -> Result<Vec<u32>, CoreError> {
    let bad = |what: &str| CoreError::Manifest {
        message: format!("{WEB_MANIFEST}: the edge shards {what}"),
    };
    let mut starts = Vec::new();
    let mut next = 0u64;
    for (_, s) in manifest.shards_of(ShardKind::Edges) {
        let [a, b] = s.entities.ok_or_else(|| bad("lack an entity range"))?;
        if u64::from(a) != next || b < a {
            return Err(bad("do not cover the entities in order"));
        }
        starts.push(a);
        next = u64::from(b) + 1;
    }
    if !starts.is_empty() && next != entities as u64 {
        return Err(bad("do not cover the entities in order"));
    }
    if !implied && starts.len() != 1 {
        return Err(bad("are not one shard for a graph stored whole"));
    }
    Ok(starts)
}

impl WebIndex {
    /// Positions of the edge shards whose entities the lookups since the
    /// last call needed but that are not loaded yet (the ranges are taken:
    /// a second call returns none).
    pub(super) fn missing_edge_shards(&self) -> Vec<usize> {
        let wanted = self.corpus.graph.take_wanted();
        let positions: Vec<usize> = self
            .manifest
            .shards_of(ShardKind::Edges)
            .map(|(i, _)| i)
            .collect();
        wanted
            .into_iter()
            .filter_map(|r| positions.get(r).copied())
            .collect()
    }

    /// Add an edge shard (its position in the manifest's shard list).
    pub(super) fn add_edges(
        &mut self,
        position: usize,
        bytes: Fetched<'_>,
    ) -> Result<(), CoreError> {
        let info = self.shard_at(position, ShardKind::Edges)?;
        let shard: EdgeShard = decode_shard(&info, bytes)?;
        let data = &mut self.corpus.data;
        let bad = |message: &str| CoreError::Inconsistent {
            file: info.name.clone(),
            message: message.into(),
        };
        if Some(shard.range()) != info.entities {
            return Err(bad("its entity range differs from the manifest's"));
        }
        let edges = shard
            .unpack(data.entities.len())
            .map_err(|e| e.in_file(&info.name))?;
        let range = self
            .corpus
            .graph
            .range_of(shard.range()[0])
            .ok_or_else(|| bad("the index loads no edge shards"))?;
        if self.edges_implied {
            data.edges.extend(edges);
            crate::sort::sort_values(&mut data.edges);
            data.edges.dedup();
        } else {
            data.edges = edges;
        }
        self.corpus.graph.rebuild(&data.entities, &data.edges);
        self.corpus.graph.set_loaded(range);
        Ok(())
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(EdgeColumns { implied, missing });
crate::wire::wire_struct!(EdgeShard {
    range,
    from,
    to,
    kind
});

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

    /// The graph back from the columns and every shard.
    fn whole(c: &EdgeColumns, shards: &[EdgeShard], entities: &[Entity]) -> Vec<Edge> {
        let mut edges = c.unpack(entities).unwrap();
        for s in shards {
            edges.extend(s.unpack(entities.len()).unwrap());
        }
        if c.implied {
            crate::sort::sort_values(&mut edges);
            edges.dedup();
        }
        edges
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
        crate::sort::sort_values(&mut edges);
        let (c, shards) = split(&entities, &edges, 1_000);
        assert!(c.implied);
        // Only the call and the include are stored; entity 4 is listed.
        assert_eq!(shards.len(), 1);
        assert_eq!(shards[0].range(), [0, 4]);
        assert_eq!(shards[0].from.len(), 2);
        assert_eq!(c.missing, vec![step(0, 4)]);
        assert_eq!(whole(&c, &shards, &entities), edges);
    }

    #[test]
    fn shards_cover_ranges_and_hold_every_edge_that_touches_them() {
        let entities = entities();
        let edges = vec![
            edge(0, 1, EdgeKind::Contains),
            edge(0, 4, EdgeKind::Includes),
            edge(1, 2, EdgeKind::Contains),
            edge(2, 4, EdgeKind::Calls),
            edge(3, 2, EdgeKind::Summarizes),
        ];
        let (c, shards) = split(&entities, &edges, 1);
        let ranges: Vec<[u32; 2]> = shards.iter().map(EdgeShard::range).collect();
        assert_eq!(ranges, vec![[0, 1], [2, 3], [4, 4]]);
        // The call from 2 to 4 is in both ranges it touches.
        assert_eq!(
            shards[1].unpack(5).unwrap(),
            vec![edge(2, 4, EdgeKind::Calls)]
        );
        assert_eq!(shards[2].unpack(5).unwrap().len(), 2);
        assert_eq!(whole(&c, &shards, &entities), edges);
        // No explicit edges: no shards.
        let implied_only = vec![edge(0, 1, EdgeKind::Contains)];
        assert!(split(&entities, &implied_only, 1).1.is_empty());
    }

    #[test]
    fn an_unsorted_graph_is_stored_whole() {
        let entities = entities();
        let edges = vec![
            edge(1, 2, EdgeKind::Contains),
            edge(0, 1, EdgeKind::Contains),
        ];
        let (c, shards) = split(&entities, &edges, 1);
        assert!(!c.implied && c.missing.is_empty());
        assert_eq!(shards.len(), 1);
        assert_eq!(whole(&c, &shards, &entities), edges);
    }

    #[test]
    fn damaged_edge_columns_are_typed_errors() {
        let entities = entities();
        let edges = vec![edge(0, 1, EdgeKind::Contains), edge(2, 4, EdgeKind::Calls)];
        let (good, shards) = split(&entities, &edges, 1_000);
        let shard = &shards[0];
        // Columns of different lengths, missing entities without implication.
        let mut short = shard.clone();
        short.kind.pop();
        assert!(short.unpack(5).is_err());
        let mut plain = good.clone();
        plain.implied = false;
        assert!(plain.unpack(&entities).is_err());
        // A step out of range, an entity out of range, an edge outside the range.
        let mut far = good;
        far.missing.push(u64::MAX);
        assert!(far.unpack(&entities).is_err());
        assert!(shard.unpack(4).is_err());
        let mut elsewhere = shard.clone();
        elsewhere.range = [0, 1];
        assert!(elsewhere.unpack(5).is_err());
    }
}
