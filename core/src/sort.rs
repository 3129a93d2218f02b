//! One stable sort for the crate's rankings, compiled once.
//!
//! It exists because the standard library's stable sort is generic over
//! its comparison: every `sort_by` call with a closure of its own compiles
//! a whole copy of it (about 4 KB of WebAssembly each). The browser's
//! search module held 22 copies, 97 KB of its 866 KB. Here a call sorts a
//! permutation of positions through one comparison object, so the sort
//! itself is compiled once, and the permutation is then applied to the
//! elements in place, which takes a few lines per element type.
//!
//! The result is exactly `slice::sort_by`'s: the sort is stable and
//! compares the same elements, so equal elements keep their order.
//!
//! It is for the short lists of the rankings and the answer. Native-only
//! sorts (the indexer's neighbour radii, the `bm25-files` baseline) and
//! the sorts over every hit of a question (keyword hits, vector distances,
//! the chunks of the files expansion reaches) keep the standard sort: through the
//! permutation, `cargo xtask bench site` measured the native retrieval on
//! a 51k-chunk corpus at 3.1-3.5 / 8.1-8.4 ms (p50 / p95) against 2.6 /
//! 5.2-5.5 with them on the standard sort, for 2.3 KB less of the module.

use std::cmp::Ordering;

/// Sort `v` stably by `compare`, as `v.sort_by(compare)` does.
pub fn sort_by<T>(v: &mut [T], compare: impl Fn(&T, &T) -> Ordering) {
    let order = permutation(v.len(), &|a, b| compare(&v[a], &v[b]));
    apply(v, &order);
}

/// Sort `v` stably by `key`, as `v.sort_by_key(key)` does.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Positions `0..n` sorted stably by `compare`: the one instance of the
/// standard library's sort.
#[inline(never)]
fn permutation(n: usize, compare: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

/// Rearrange `v` so that `v[i]` becomes the old `v[order[i]]`, following
/// each cycle of the permutation with swaps.
fn apply<T>(v: &mut [T], order: &[usize]) {
    let mut done = vec![false; v.len()];
    for start in 0..v.len() {
        if done[start] {
            continue;
        }
        let mut i = start;
        loop {
            done[i] = true;
            let from = order[i];
            if from == start {
                break;
            }
            v.swap(i, from);
            i = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_exactly_as_the_standard_stable_sort() {
        // Pairs with many equal keys, in a scrambled order.
        let mut seed = 7u64;
        let mut v: Vec<(u32, u32)> = (0..500)
            .map(|i| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((seed >> 59) as u32, i)
            })
            .collect();
        let mut want = v.clone();
        want.sort_by_key(|x| std::cmp::Reverse(x.0));
        sort_by(&mut v, |a, b| b.0.cmp(&a.0));
        assert_eq!(v, want);
        let mut by_key = v.clone();
        sort_by_key(&mut by_key, |x| x.1);
        want.sort_by_key(|x| x.1);
        assert_eq!(by_key, want);
        let mut empty: Vec<u8> = Vec::new();
        sort_by(&mut empty, u8::cmp);
        assert!(empty.is_empty());
    }
}
