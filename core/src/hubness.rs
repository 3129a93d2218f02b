//! Hubness correction of semantic distances: each chunk's distance to a
//! question is corrected by how crowded the chunk's neighbourhood is.
//!
//! In a high-dimensional embedding space some points ("hubs") lie near
//! very many queries while others are nearly never retrieved (Radovanović
//! et al., JMLR 2010). In a codebase, the chunks of a crowded region (a
//! family of overloads, a file of near-identical specialisations, a hub
//! header whose every method speaks of fields, views and ranks) are each
//! close to the others and to any question on their broad subject, so a
//! question asked in concepts ranks one of them above the distinct chunk
//! that answers it. Cross-domain similarity local scaling (CSLS, Conneau
//! et al., ICLR 2018) corrects a similarity by the mean similarity of the
//! point to its nearest neighbours; here the same, on squared distances:
//!
//! `d'(q, x) = d(q, x) + w · (r̄ - r(x))`
//!
//! where `r(x)` is the mean squared distance from `x` to its
//! [`NEIGHBOURS`] nearest chunks (its radius: small in a crowded region),
//! `r̄` the mean radius over the corpus and `w` is `[retrieval]
//! hubness_weight`. A chunk in a crowded region moves away from every
//! question, an isolated one moves closer; the correction does not depend
//! on the question, so it is computed once, at index time, from the
//! repository's own vectors.
//!
//! Only exact distances are corrected: under `[retrieval] ivf_probe`, a
//! distance estimated from product codes or from the partitions'
//! directory stays as it is (its error is of the correction's size).
//!
//! The radius is stored with the vectors' partitions ([`crate::ivf`]), one
//! byte per chunk, so the browser has it in the vector directory it
//! fetches first and ranks exactly as `codegloss query`. The neighbours are
//! searched among the chunks of the [`NEIGHBOUR_PROBE`] partitions whose
//! centroids lie nearest to the chunk's own partition's: exact within
//! them, deterministic, and linear in the corpus.

use crate::ivf::squared_l2;

/// Neighbours whose mean squared distance is a chunk's radius.
pub const NEIGHBOURS: usize = 10;
/// Partitions (the chunk's own and those with the nearest centroids)
/// whose chunks are searched for its neighbours.
pub const NEIGHBOUR_PROBE: usize = 8;
/// Step of the stored radius: `r ≈ STEP * byte`, so radii up to 255/128
/// (cosine about 0 to every neighbour) are kept; larger ones are clamped.
pub const RADIUS_STEP: f32 = 1.0 / 128.0;

/// The radius byte of every chunk: the mean squared distance from its
/// vector to its [`NEIGHBOURS`] nearest other chunks among the members of
/// the [`NEIGHBOUR_PROBE`] partitions nearest to its own (by centroid
/// distance, ties by id). `vectors` is in chunk order, `centroids` and
/// `lists` (each partition's chunk ids) in partition order, and
/// `partition_of` gives each chunk's partition. A chunk with no other
/// chunk near it gets radius 0.
pub fn radii(
    vectors: &[Vec<f32>],
    centroids: &[Vec<f32>],
    lists: &[Vec<u32>],
    partition_of: &[u16],
) -> Vec<u8> {
    // The partitions searched for each partition's chunks.
    let searched: Vec<Vec<usize>> = centroids
        .iter()
        .map(|c| {
            let mut order: Vec<(f32, usize)> = centroids
                .iter()
                .enumerate()
                .map(|(j, o)| (squared_l2(c, o), j))
                .collect();
            order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            order
                .into_iter()
                .take(NEIGHBOUR_PROBE)
                .map(|(_, j)| j)
                .collect()
        })
        .collect();
    let mut out = Vec::with_capacity(vectors.len());
    let mut distances: Vec<f32> = Vec::new();
    for (i, v) in vectors.iter().enumerate() {
        distances.clear();
        let own = partition_of.get(i).map_or(usize::MAX, |&p| p as usize);
        for &p in searched.get(own).map_or(&[][..], Vec::as_slice) {
            for &c in &lists[p] {
                let other = &vectors[c as usize];
                if c as usize != i && other.len() == v.len() {
                    distances.push(squared_l2(v, other));
                }
            }
        }
        let k = NEIGHBOURS.min(distances.len());
        let radius = if k == 0 {
            0.0
        } else {
            distances.select_nth_unstable_by(k - 1, f32::total_cmp);
            distances[..k].iter().sum::<f32>() / k as f32
        };
        out.push((radius / RADIUS_STEP).round().clamp(0.0, 255.0) as u8);
    }
    out
}

/// The mean radius of a corpus (0 for none).
pub fn mean_radius(radius: &[u8]) -> f32 {
    if radius.is_empty() {
        return 0.0;
    }
    radius.iter().map(|&r| f32::from(r)).sum::<f32>() * RADIUS_STEP / radius.len() as f32
}

/// The correction added to a chunk's squared distance: `weight` times
/// how much smaller its radius is than the corpus mean.
pub fn correction(radius: u8, mean: f32, weight: f32) -> f32 {
    weight * (mean - f32::from(radius) * RADIUS_STEP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crowded_chunk_has_a_small_radius_and_moves_away() {
        // Three near-identical vectors and one far from them, one partition.
        let vectors = vec![
            vec![1.0, 0.0],
            vec![0.99, 0.141],
            vec![0.98, 0.199],
            vec![0.0, 1.0],
        ];
        let lists = vec![vec![0, 1, 2, 3]];
        let r = radii(&vectors, &[vec![0.5, 0.5]], &lists, &[0, 0, 0, 0]);
        assert!(r[0] < r[3] && r[1] < r[3] && r[2] < r[3], "{r:?}");
        let mean = mean_radius(&r);
        assert!(correction(r[0], mean, 1.0) > 0.0);
        assert!(correction(r[3], mean, 1.0) < 0.0);
        assert_eq!(correction(r[3], mean, 0.0), 0.0);
        // Deterministic.
        assert_eq!(r, radii(&vectors, &[vec![0.5, 0.5]], &lists, &[0, 0, 0, 0]));
    }

    #[test]
    fn a_lone_chunk_has_radius_zero_and_no_correction() {
        let r = radii(&[vec![1.0, 0.0]], &[vec![1.0, 0.0]], &[vec![0]], &[0]);
        assert_eq!(r, vec![0]);
        assert_eq!(correction(r[0], mean_radius(&r), 1.0), 0.0);
        assert_eq!(mean_radius(&[]), 0.0);
    }

    #[test]
    fn neighbours_come_from_the_nearest_partitions() {
        // Partition 1's chunks are far from partition 0's; with 2
        // partitions both are searched (NEIGHBOUR_PROBE >= 2), so chunk 0's
        // neighbours include the far ones only when its own run out.
        let vectors = vec![vec![1.0, 0.0], vec![1.0, 0.0], vec![-1.0, 0.0]];
        let lists = vec![vec![0, 1], vec![2]];
        let r = radii(
            &vectors,
            &[vec![1.0, 0.0], vec![-1.0, 0.0]],
            &lists,
            &[0, 0, 1],
        );
        // Chunk 0: neighbours 1 (distance 0) and 2 (distance 4), mean 2.
        assert_eq!(f32::from(r[0]) * RADIUS_STEP, 1.9921875);
        assert_eq!(r[0], 255);
    }
}
