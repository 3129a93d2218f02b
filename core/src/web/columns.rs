//! The column codings of the search shard's tables: strings stored as
//! differences from a prediction (with a bound on what they may decode
//! to), integers stored as zigzag steps from the row before, parents
//! as places among the ancestors of the row before (in one byte with the
//! row's kind), and byte columns only
//! for the rows a known rule does not blank.
//!
//! Apart from `tables.rs` because they are the shard's byte-level coding,
//! which the tables only apply; the decode bound lives here because every
//! string column goes through it (found by `cargo xtask fuzz`: without it
//! a shard could decode to the square of its size).

use serde::Serialize;

use crate::error::CoreError;
use crate::model::EntityKind;

/// A string column stored as differences from a predicted string: per row,
/// how many bytes to cut from the end of the prediction and what to append.
/// A correct prediction costs `(0, "")`.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DiffColumn {
    pub(crate) cut: Vec<u32>,
    pub(crate) append: Vec<String>,
}

impl DiffColumn {
    pub(crate) fn push(&mut self, predicted: &str, value: &str) {
        let mut keep = predicted
            .bytes()
            .zip(value.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        while !value.is_char_boundary(keep) {
            keep -= 1;
        }
        self.cut.push((predicted.len() - keep) as u32);
        self.append.push(value[keep..].to_string());
    }

    pub(crate) fn get(
        &self,
        row: usize,
        predicted: &str,
        budget: &Budget,
    ) -> Result<String, CoreError> {
        let (Some(&cut), Some(append)) = (self.cut.get(row), self.append.get(row)) else {
            return Err(CoreError::malformed(format!(
                "string column has no row {row}"
            )));
        };
        let keep = predicted
            .len()
            .checked_sub(cut as usize)
            .filter(|&k| predicted.is_char_boundary(k))
            .ok_or_else(|| {
                CoreError::malformed(format!("row {row} cuts {cut} bytes from a shorter string"))
            })?;
        budget.spend(keep + append.len())?;
        Ok(format!("{}{append}", &predicted[..keep]))
    }

    pub(crate) fn len(&self) -> usize {
        self.cut.len()
    }

    /// A front-coded column of `rows`: each row stored as a difference from
    /// the one before it (the first from ""); [`DiffColumn::front_coded`]
    /// reads it back.
    pub(crate) fn front_code<'a>(rows: impl IntoIterator<Item = &'a String>) -> Self {
        let mut column = DiffColumn::default();
        let mut previous = "";
        for row in rows {
            column.push(previous, row);
            previous = row;
        }
        column
    }

    /// Every row of a front-coded column: each row predicted by the one
    /// before it (the first by "").
    pub(crate) fn front_coded(&self, budget: &Budget) -> Result<Vec<String>, CoreError> {
        let mut rows: Vec<String> = Vec::with_capacity(self.len());
        for i in 0..self.len() {
            let row = self.get(i, rows.last().map_or("", String::as_str), budget)?;
            rows.push(row);
        }
        Ok(rows)
    }

    /// What the column costs in the shard: a row, and its appended bytes.
    pub(crate) fn weight(&self) -> usize {
        self.cut.len() + self.append.iter().map(String::len).sum::<usize>()
    }
}

/// Bytes the string columns may still decode to. A prediction is copied
/// for free (a chunk repeats its file's path at the cost of two zeros), so
/// without a bound a shard could decode to the square of its size (each
/// row the row before it, or each entity the child of the last); with it,
/// decoding costs at most [`DECODED_BASE`] plus [`DECODED_PER_BYTE`] for
/// each byte of string columns (the sci-demo fixture's decode to 3.4 bytes
/// per byte).
pub(crate) struct Budget(std::cell::Cell<usize>);

/// Decoded string bytes any search shard may use.
pub(crate) const DECODED_BASE: usize = 16 << 20;
/// Decoded string bytes allowed per byte of string columns beyond the base.
pub(crate) const DECODED_PER_BYTE: usize = 64;

impl Budget {
    pub(crate) fn new(weight: usize) -> Self {
        Budget(std::cell::Cell::new(
            DECODED_BASE.saturating_add(weight.saturating_mul(DECODED_PER_BYTE)),
        ))
    }

    pub(crate) fn spend(&self, bytes: usize) -> Result<(), CoreError> {
        let left = self.0.get().checked_sub(bytes).ok_or_else(|| {
            CoreError::malformed(format!(
                "the string columns decode to more than {} MiB plus {DECODED_PER_BYTE} bytes per byte of them",
                DECODED_BASE >> 20
            ))
        })?;
        self.0.set(left);
        Ok(())
    }
}

/// An optional string column against an optional prediction: per row a tag
/// (0: as predicted, 1: none, 2: a string, stored as a difference from the
/// prediction or from "").
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OptDiffColumn {
    pub(crate) tag: Vec<u8>,
    pub(crate) values: DiffColumn,
}

impl OptDiffColumn {
    pub(crate) fn push(&mut self, predicted: Option<&str>, value: Option<&str>) {
        match value {
            v if v == predicted => self.tag.push(0),
            None => self.tag.push(1),
            Some(v) => {
                self.tag.push(2);
                self.values.push(predicted.unwrap_or(""), v);
            }
        }
    }

    /// Decode every row, given each row's prediction.
    pub(crate) fn decode<'a>(
        &self,
        predictions: impl Iterator<Item = Option<&'a str>>,
        budget: &Budget,
    ) -> Result<Vec<Option<String>>, CoreError> {
        let mut next = 0usize;
        self.tag
            .iter()
            .zip(predictions)
            .map(|(&tag, predicted)| match tag {
                0 => {
                    budget.spend(predicted.map_or(0, str::len))?;
                    Ok(predicted.map(str::to_string))
                }
                1 => Ok(None),
                2 => {
                    next += 1;
                    self.values
                        .get(next - 1, predicted.unwrap_or(""), budget)
                        .map(Some)
                }
                t => Err(CoreError::malformed(format!(
                    "optional string column has tag {t}"
                ))),
            })
            .collect()
    }
}

/// Zigzag code of a signed step, so small steps either way are small.
/// How far up the ancestors of the entity before a parent is looked for.
const MAX_UP: usize = 64;

/// Entities' parents, each stored as where it sits among the ancestors of
/// the entity before (itself, its parent, its parent's parent, ...): the
/// indexer writes entities in the order of their source, so a child, a
/// sibling or an uncle of the entity before is a small number. Parents
/// found nowhere up there (a call chain's callable, a file's module) are
/// stored apart, each as a step from the one before. On a 44k-chunk
/// codebase: 20.9 KB deflated as steps from the entity before's parent,
/// 10.9 KB this way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ParentColumn {
    /// Per entity: 0 for no parent, 1 for a parent in `far`, `k + 2` for
    /// the `k`-th ancestor of the entity before (the 0th is itself).
    up: Vec<u8>,
    /// The other parents, each a step from the one before.
    far: Vec<u64>,
}

/// The ancestors of the last of `parents` (the parents of the entities
/// before one), from that entity itself up, as far as they are known and
/// at most [`MAX_UP`].
fn ancestors(parents: &[Option<u32>]) -> impl Iterator<Item = u32> + '_ {
    let first = parents
        .len()
        .checked_sub(1)
        .and_then(|i| u32::try_from(i).ok());
    std::iter::successors(first, move |&c| {
        parents
            .get(c as usize)
            .copied()
            .flatten()
            .filter(|&p| p != c)
    })
    .take(MAX_UP)
}

impl ParentColumn {
    /// The column of these parents (by entity id).
    pub(crate) fn pack(parents: &[Option<u32>]) -> Self {
        let mut out = ParentColumn::default();
        let mut last_far = 0u32;
        for (i, &parent) in parents.iter().enumerate() {
            let Some(p) = parent else {
                out.up.push(0);
                continue;
            };
            match ancestors(&parents[..i]).position(|a| a == p) {
                Some(k) => out.up.push(k as u8 + 2),
                None => {
                    out.up.push(1);
                    out.far.push(step(last_far, p));
                    last_far = p;
                }
            }
        }
        out
    }
}

/// The parents back from a [`ParentColumn`]'s codes and far parents (read
/// in place from [`KindsAndParents`]). Fails with [`CoreError::Malformed`]
/// on an ancestor that is not there, or far parents that do not match.
fn unpack_parents(up: &[u8], far: &[u64]) -> Result<Vec<Option<u32>>, CoreError> {
    let mut parents = Vec::with_capacity(up.len());
    let mut far = far.iter();
    let mut last_far = 0u32;
    for &code in up {
        let parent = match code {
            0 => None,
            1 => {
                let v = far
                    .next()
                    .ok_or_else(|| CoreError::malformed("fewer far parents than listed"))?;
                last_far = unstep(last_far, *v, "entity parent")?;
                Some(last_far)
            }
            k => Some(
                ancestors(&parents)
                    .nth(usize::from(k - 2))
                    .ok_or_else(|| CoreError::malformed("an entity's parent is no ancestor"))?,
            ),
        };
        parents.push(parent);
    }
    if far.next().is_some() {
        return Err(CoreError::malformed("more far parents than listed"));
    }
    Ok(parents)
}

/// Entities' kinds and parents in one column: per entity, one byte of its
/// kind (its place in [`EntityKind::ALL`]) times 16 plus its parent's
/// [`ParentColumn`] code, capped at 15 (deeper codes, rare, in `deep`),
/// and the far parents.
///
/// It exists because a kind and a parent code repeat together (a method
/// after a method is its sibling, a class's first member its child), which
/// deflate sees only in one stream: on Kokkos + IPPL the kinds were 7.6 KB
/// and the parent codes 6.3 KB deflated apart, 9.9 KB together.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KindsAndParents {
    joint: Vec<u8>,
    /// The parent codes of 15 and more, in order.
    deep: Vec<u8>,
    /// [`ParentColumn`]'s far parents.
    far: Vec<u64>,
}

/// Parent codes from this one on are stored in [`KindsAndParents::deep`].
const DEEP_CODE: u8 = 15;
/// The place written for a kind missing from [`EntityKind::ALL`]: never a
/// kind's, so the column fails to decode rather than read another kind.
const NO_PLACE: u8 = 15;
// Every kind's place times 16 plus a code fits a byte, below `NO_PLACE`.
const _: () = assert!(EntityKind::ALL.len() <= NO_PLACE as usize);

impl KindsAndParents {
    /// The column of these kinds and parents (by entity id).
    pub(crate) fn pack(kinds: &[EntityKind], parents: &[Option<u32>]) -> Self {
        let ParentColumn { up, far } = ParentColumn::pack(parents);
        let mut out = KindsAndParents {
            far,
            ..KindsAndParents::default()
        };
        for (kind, code) in kinds.iter().zip(up) {
            let place = EntityKind::ALL
                .iter()
                .position(|k| k == kind)
                .map_or(NO_PLACE, |p| p as u8);
            out.joint.push(place * 16 + code.min(DEEP_CODE));
            if code >= DEEP_CODE {
                out.deep.push(code);
            }
        }
        out
    }

    /// Rows.
    pub(crate) fn len(&self) -> usize {
        self.joint.len()
    }

    /// The kinds and parents back; an error where a kind is out of range,
    /// the deep codes do not match, or the parents do not decode.
    pub(crate) fn unpack(&self) -> Result<(Vec<EntityKind>, Vec<Option<u32>>), CoreError> {
        let mut kinds = Vec::with_capacity(self.joint.len());
        let mut up = Vec::with_capacity(self.joint.len());
        let mut deep = self.deep.iter();
        for &b in &self.joint {
            let kind = EntityKind::ALL.get(usize::from(b / 16)).ok_or_else(|| {
                CoreError::malformed(format!("entity kind {} out of range", b / 16))
            })?;
            kinds.push(*kind);
            up.push(match b % 16 {
                DEEP_CODE => *deep.next().filter(|&&c| c >= DEEP_CODE).ok_or_else(|| {
                    CoreError::malformed("a deep parent code is missing or shallow")
                })?,
                code => code,
            });
        }
        if deep.next().is_some() {
            return Err(CoreError::malformed("more deep parent codes than listed"));
        }
        Ok((kinds, unpack_parents(&up, &self.far)?))
    }
}

pub(crate) fn zigzag(step: i64) -> u64 {
    ((step << 1) ^ (step >> 63)) as u64
}

pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// `value - previous` as a zigzag step.
pub(crate) fn step(previous: u32, value: u32) -> u64 {
    zigzag(i64::from(value) - i64::from(previous))
}

pub(crate) fn unstep(previous: u32, v: u64, what: &str) -> Result<u32, CoreError> {
    u32::try_from(i64::from(previous) + unzigzag(v))
        .map_err(|_| CoreError::malformed(format!("{what} out of range")))
}

/// An optional id as a step from a reference: 0 for none, else step + 1.
pub(crate) fn opt_step(reference: u32, value: Option<u32>) -> u64 {
    value.map_or(0, |v| step(reference, v) + 1)
}

pub(crate) fn unopt_step(reference: u32, v: u64, what: &str) -> Result<Option<u32>, CoreError> {
    match v {
        0 => Ok(None),
        v => unstep(reference, v - 1, what).map(Some),
    }
}

/// A byte column over rows that a rule both sides know splits in two: the
/// rows it *blanks* are 0 (the search shard blanks the facts that ride in
/// name shards, `names.rs`), so only the other rows' values are stored,
/// and the blanked rows that are not 0 are listed apart (none from the
/// indexer; listed so that packing stays lossless for any rows). On a
/// 46k-entity codebase, whether an entity is a definition cost 1.8 KB as
/// one byte per row and the chunks' feature flags 2.0 KB: nearly all of
/// it was telling where the few rows that are not blanked sit, which the
/// reader knows already.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SplitColumn {
    /// The values of the rows not blanked, in order.
    kept: Vec<u8>,
    /// The blanked rows that are not 0, as steps from the one before (the
    /// first from row 0) ...
    odd_rows: Vec<u64>,
    /// ... and their values.
    odd_values: Vec<u8>,
}

impl SplitColumn {
    /// The column of `rows`: per row, whether the rule blanks it, and its
    /// value.
    pub(crate) fn pack(rows: impl IntoIterator<Item = (bool, u8)>) -> Self {
        let mut c = SplitColumn::default();
        let mut last = 0u64;
        for (i, (blanked, value)) in rows.into_iter().enumerate() {
            if !blanked {
                c.kept.push(value);
            } else if value != 0 {
                c.odd_rows.push(i as u64 - last);
                c.odd_values.push(value);
                last = i as u64;
            }
        }
        c
    }

    /// The values back, given per row whether the rule blanks it; an error
    /// where the stored values do not fit those rows exactly. One copy for
    /// every column (not inlined: the browser's module carries it once).
    #[inline(never)]
    pub(crate) fn unpack(&self, blanked: &[bool], what: &str) -> Result<Vec<u8>, CoreError> {
        let bad = |why: &str| CoreError::malformed(format!("{what}: {why}"));
        if self.odd_rows.len() != self.odd_values.len() {
            return Err(bad("its odd rows and values differ in length"));
        }
        let mut out = vec![0u8; blanked.len()];
        let mut row = 0u64;
        for (k, (&step, &value)) in self.odd_rows.iter().zip(&self.odd_values).enumerate() {
            row = match row.checked_add(step) {
                Some(r) if k == 0 || step > 0 => r,
                _ => return Err(bad("odd rows out of order")),
            };
            match usize::try_from(row)
                .ok()
                .filter(|&i| blanked.get(i) == Some(&true))
            {
                Some(i) => out[i] = value,
                None => return Err(bad("an odd row is not a blanked row")),
            }
        }
        let mut kept = self.kept.iter();
        for (o, _) in out.iter_mut().zip(blanked).filter(|(_, &b)| !b) {
            *o = *kept.next().ok_or_else(|| bad("too few values"))?;
        }
        if kept.next().is_some() {
            return Err(bad("values left over"));
        }
        Ok(out)
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(DiffColumn { cut, append });
crate::wire::wire_struct!(OptDiffColumn { tag, values });
crate::wire::wire_struct!(KindsAndParents { joint, deep, far });
crate::wire::wire_struct!(SplitColumn {
    kept,
    odd_rows,
    odd_values
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_back_from_their_places_among_the_ancestors() {
        // A file, a class in it, two methods, a call chain of the first
        // method stored after them, a nested class, a parentless module, an
        // entity whose parent comes after it, and one that is its own parent.
        let parents = vec![
            None,
            Some(0),
            Some(1),
            Some(1),
            Some(2),
            Some(1),
            None,
            Some(9),
            Some(8),
            Some(9),
        ];
        let c = ParentColumn::pack(&parents);
        assert_eq!(c.up[..6], [0, 2, 2, 3, 1, 4]);
        assert_eq!(unpack_parents(&c.up, &c.far).unwrap(), parents);
        // Damage: an ancestor that is not there, far parents missing or left over.
        let mut deep = c.clone();
        deep.up[1] = 60;
        assert!(unpack_parents(&deep.up, &deep.far).is_err());
        let mut short = c.clone();
        short.far.clear();
        assert!(unpack_parents(&short.up, &short.far).is_err());
        let mut long = c;
        long.far.push(0);
        assert!(unpack_parents(&long.up, &long.far).is_err());
    }

    #[test]
    fn split_columns_store_only_the_rows_not_blanked() {
        let blanked = [false, true, true, false, true, true];
        let values = [3u8, 0, 7, 0, 0, 1];
        let c = SplitColumn::pack(blanked.iter().copied().zip(values));
        assert_eq!(c.kept, [3, 0]);
        assert_eq!(
            (c.odd_rows.as_slice(), c.odd_values.as_slice()),
            (&[2, 3][..], &[7, 1][..])
        );
        assert_eq!(c.unpack(&blanked, "t").unwrap(), values);
        // The first row odd (a step of 0 from row 0) comes back too.
        let c = SplitColumn::pack([(true, 5u8), (true, 0), (false, 2)]);
        assert_eq!(c.unpack(&[true, true, false], "t").unwrap(), [5, 0, 2]);
        // Rows that do not fit: fewer or more rows kept, an odd row kept,
        // odd rows past the end or repeated, columns of unequal length.
        let c = SplitColumn::pack(blanked.iter().copied().zip(values));
        assert!(c
            .unpack(&[false, true, true, true, true, true], "t")
            .is_err());
        assert!(c
            .unpack(&[false, true, false, false, true, true], "t")
            .is_err());
        assert!(c.unpack(&[false, true, true, false], "t").is_err());
        let mut repeated = c.clone();
        repeated.odd_rows[1] = 0;
        assert!(repeated.unpack(&blanked, "t").is_err());
        let mut far = c.clone();
        far.odd_rows[1] = u64::MAX;
        assert!(far.unpack(&blanked, "t").is_err());
        let mut short = c;
        short.odd_values.pop();
        assert!(short.unpack(&blanked, "t").is_err());
    }

    #[test]
    fn kinds_and_parents_share_a_byte_and_deep_codes_come_back() {
        // A chain 20 deep, then an entity whose parent is its 17th
        // ancestor's (a code of 19, stored apart), a far parent, and none.
        let mut parents: Vec<Option<u32>> = (0..20u32).map(|i| i.checked_sub(1)).collect();
        parents.push(Some(2));
        parents.push(Some(25));
        parents.push(None);
        let kinds: Vec<EntityKind> = (0..parents.len())
            .map(|i| EntityKind::ALL[i % EntityKind::ALL.len()])
            .collect();
        let c = KindsAndParents::pack(&kinds, &parents);
        assert_eq!(c.deep, [19]);
        assert_eq!(c.len(), parents.len());
        assert_eq!(c.unpack().unwrap(), (kinds, parents));
        // Damage: a kind out of range, a deep code missing, shallow or
        // left over.
        let mut bad_kind = c.clone();
        bad_kind.joint[0] = 0xF0;
        assert!(bad_kind.unpack().is_err());
        let mut missing = c.clone();
        missing.deep.clear();
        assert!(missing.unpack().is_err());
        let mut shallow = c.clone();
        shallow.deep[0] = 3;
        assert!(shallow.unpack().is_err());
        let mut extra = c;
        extra.deep.push(20);
        assert!(extra.unpack().is_err());
    }
}
