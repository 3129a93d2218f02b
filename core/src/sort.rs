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
//! sorts (the indexer's neighbour radii, the `bm25-files` baseline) keep
//! the standard sort. The sorts over every hit of a question (keyword
//! hits, vector distances, the chunks of the files expansion reaches) and
//! of plain values (ids, names, edges) go through [`sort_long_by`] and
//! [`sort_values`]: the standard sort natively, where through the
//! permutation `cargo xtask bench site` measured the native retrieval on
//! a 51k-chunk corpus at 3.1-3.5 / 8.1-8.4 ms (p50 / p95) against 2.6 /
//! 5.2-5.5, and the permutation in the browser, where the standard
//! sort's 16 copies were about 53 KB of the search module.

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

/// Sort a long list (a question's every hit: thousands of elements)
/// stably by `compare`. Natively the standard sort, faster on long lists
/// (see the module doc); in the browser through [`sort_by`], whose one
/// compiled copy serves every call. Both are stable sorts by the same
/// comparison, so the order is the same.
pub fn sort_long_by<T>(v: &mut [T], compare: impl Fn(&T, &T) -> Ordering) {
    #[cfg(target_arch = "wasm32")]
    sort_by(v, compare);
    #[cfg(not(target_arch = "wasm32"))]
    v.sort_by(compare);
}

/// Sort values whose equal ones are indistinguishable (ids, names,
/// edges: a derived or total order), as `v.sort_unstable()` does: the
/// standard unstable sort natively, [`sort_by`] in the browser. Which
/// equal value comes first cannot be told, so the order is the same.
pub fn sort_values<T: Ord>(v: &mut [T]) {
    #[cfg(target_arch = "wasm32")]
    sort_by(v, T::cmp);
    #[cfg(not(target_arch = "wasm32"))]
    v.sort_unstable();
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

    #[test]
    fn the_browsers_sorts_order_as_the_native_ones() {
        // What `sort_values` and `sort_long_by` do in the browser, against
        // what they do natively.
        let mut values: Vec<(u32, String)> = (0..300u32)
            .map(|i| ((i * 7919) % 13, format!("{}", (i * 31) % 17)))
            .collect();
        let mut native = values.clone();
        native.sort_unstable();
        sort_by(&mut values, Ord::cmp);
        assert_eq!(values, native);
        let mut hits: Vec<(u32, f32)> = (0..300u32)
            .map(|i| (i, ((i * 7919) % 11) as f32 / 3.0))
            .collect();
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let mut native = hits.clone();
        sort_long_by(&mut native, order);
        sort_by(&mut hits, order);
        assert_eq!(hits, native);
    }
}
