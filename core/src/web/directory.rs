//! The shard directory inside the search shard: the postings, edge and name
//! shards (the run of each, under one key), listed there instead of in the
//! manifest.
//!
//! It exists because the manifest listed each of them as a JSON entry of
//! about 45 bytes gzipped (its name and its hash in hex, twice, its size,
//! its range and a run's first term): on a large codebase 520 entries, most
//! of the manifest, fetched before the first results. The search shard is
//! fetched then too; here an entry costs how many terms, entities or files
//! its run covers and, for postings, its first term as a difference from
//! the one before. The shards are sealed ([`super::shard::seal_shards`]):
//! named by the directory's key and their place, each checked by its own
//! seal, so no entry carries a hash or a size. [`WebIndex::open`] puts the
//! entries back into its copy of the manifest's list, where every lookup
//! finds them as before, and the checks of that list (runs in order, every
//! entity covered) apply to them unchanged.

use serde::Serialize;

use crate::error::CoreError;

use super::columns::{Budget, DiffColumn};
use super::shard::{ShardHash, SHARD_HASH_BYTES};
use super::{ShardInfo, ShardKind};

/// Runs of one kind of shard, in order: run `i` covers the `counts[i]`
/// terms (entities, files, chunks) after those of the runs before it. The
/// text directory ([`super::TextDirectory`]) lists its shards the same way.
///
/// A run carries neither its shard's hash nor its size: the shards are
/// sealed under the directory's key, which the directory stores once.
/// Entries come back with `bytes` 0, which every check reads as "not
/// listed".
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Runs {
    counts: Vec<u32>,
}

/// The key of the sealed shards a directory lists (their
/// [`ShardInfo::sha256`]); an error where one is not sealed or where
/// their keys differ. No shards: the zero key.
pub(super) fn directory_key(shards: &[ShardInfo]) -> Result<ShardHash, CoreError> {
    let mut key = None;
    for s in shards {
        let mut k = [0u8; SHARD_HASH_BYTES];
        hex::decode_to_slice(&s.sha256, &mut k)
            .map_err(|e| CoreError::malformed(format!("{}: key {}: {e}", s.name, s.sha256)))?;
        if !s.sealed || key.is_some_and(|key| key != k) {
            return Err(CoreError::malformed(format!(
                "{}: not sealed under its directory's key",
                s.name
            )));
        }
        key = Some(k);
    }
    Ok(key.unwrap_or_default())
}

impl Runs {
    /// Add `s`, which covers `[first, last]`; `next` is where the run must
    /// start, and becomes where the next one must.
    pub(super) fn push(
        &mut self,
        s: &ShardInfo,
        [first, last]: [u32; 2],
        next: &mut u64,
    ) -> Result<(), CoreError> {
        if u64::from(first) != *next || last < first {
            return Err(CoreError::malformed(format!(
                "{}: covers {first}-{last} after {next}",
                s.name
            )));
        }
        self.counts.push(last - first + 1);
        *next = u64::from(last) + 1;
        Ok(())
    }

    /// How many shards.
    pub(super) fn len(&self) -> usize {
        self.counts.len()
    }

    /// The entries, sealed under `key`, with their `[first, last]` ranges.
    pub(super) fn unpack(
        &self,
        kind: ShardKind,
        key: &ShardHash,
    ) -> Result<Vec<(ShardInfo, [u32; 2])>, CoreError> {
        let mut out = Vec::with_capacity(self.counts.len());
        let mut next = 0u64;
        for (place, &count) in self.counts.iter().enumerate() {
            let last = next + u64::from(count);
            if count == 0 || last > u64::from(u32::MAX) + 1 {
                return Err(CoreError::malformed(format!(
                    "a {} shard covers {count} after {next}",
                    kind.as_str()
                )));
            }
            let info = ShardInfo::sealed(kind, hex::encode(key), place);
            // Both at most u32::MAX, checked above.
            out.push((info, [next as u32, (last - 1) as u32]));
            next = last;
        }
        Ok(out)
    }
}

/// The postings and edge shards, as the search shard lists them.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardDirectory {
    /// The key the shards are sealed under.
    key: ShardHash,
    /// Postings shards: runs of term ids.
    postings: Runs,
    /// Each postings run's first term, front-coded.
    first_terms: DiffColumn,
    /// Edge shards: runs of entity ids.
    edges: Runs,
    /// Name shards: runs of file ids.
    names: Runs,
}

impl ShardDirectory {
    /// The directory of these postings and edge shards (each kind in order,
    /// its runs following each other from 0; other kinds are not listed).
    pub(super) fn pack(shards: &[ShardInfo]) -> Result<Self, CoreError> {
        let mut d = ShardDirectory {
            key: directory_key(shards)?,
            ..ShardDirectory::default()
        };
        let (mut terms, mut entities, mut files) = (0u64, 0u64, 0u64);
        let mut first_terms = Vec::new();
        for s in shards {
            let missing = || CoreError::malformed(format!("{}: no run", s.name));
            match s.kind {
                ShardKind::Postings => {
                    let range = s.terms.ok_or_else(missing)?;
                    d.postings.push(s, range, &mut terms)?;
                    first_terms.push(s.first_term.clone().ok_or_else(missing)?);
                }
                ShardKind::Edges => {
                    let range = s.entities.ok_or_else(missing)?;
                    d.edges.push(s, range, &mut entities)?;
                }
                ShardKind::Names => {
                    let range = s.files.ok_or_else(missing)?;
                    d.names.push(s, range, &mut files)?;
                }
                _ => {
                    return Err(CoreError::malformed(format!(
                        "{}: not a postings, name or edge shard",
                        s.name
                    )))
                }
            }
        }
        d.first_terms = DiffColumn::front_code(&first_terms);
        Ok(d)
    }

    /// The manifest entries of the shards listed: postings shards with
    /// their term runs and first terms, then edge shards with their
    /// entity runs, then name shards with their file runs.
    pub(super) fn unpack(&self) -> Result<Vec<ShardInfo>, CoreError> {
        let postings = self.postings.unpack(ShardKind::Postings, &self.key)?;
        let first_terms = self
            .first_terms
            .front_coded(&Budget::new(self.first_terms.weight()))?;
        if first_terms.len() != postings.len() {
            return Err(CoreError::malformed(format!(
                "{} first terms for {} postings shards",
                first_terms.len(),
                postings.len()
            )));
        }
        let mut out = Vec::with_capacity(postings.len() + self.edges.len() + self.names.len());
        for ((mut info, range), first) in postings.into_iter().zip(first_terms) {
            info.terms = Some(range);
            info.first_term = Some(first);
            out.push(info);
        }
        for (mut info, range) in self.edges.unpack(ShardKind::Edges, &self.key)? {
            info.entities = Some(range);
            out.push(info);
        }
        for (mut info, range) in self.names.unpack(ShardKind::Names, &self.key)? {
            info.files = Some(range);
            out.push(info);
        }
        Ok(out)
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(Runs { counts });
crate::wire::wire_struct!(ShardDirectory {
    key,
    postings,
    first_terms,
    edges,
    names
});

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0123456789abcdef";

    fn entry(kind: ShardKind, place: usize, range: [u32; 2], first: Option<&str>) -> ShardInfo {
        let mut s = ShardInfo::sealed(kind, KEY.into(), place);
        match kind {
            ShardKind::Postings => {
                s.terms = Some(range);
                s.first_term = first.map(str::to_string);
            }
            ShardKind::Names => s.files = Some(range),
            _ => s.entities = Some(range),
        }
        s
    }

    #[test]
    fn round_trip() {
        let shards = vec![
            entry(ShardKind::Postings, 0, [0, 9], Some("alpha")),
            entry(ShardKind::Postings, 1, [10, 10], Some("alps")),
            entry(ShardKind::Postings, 2, [11, 40], Some("zeta")),
            entry(ShardKind::Edges, 0, [0, 99], None),
            entry(ShardKind::Edges, 1, [100, 120], None),
            entry(ShardKind::Names, 0, [0, 3], None),
            entry(ShardKind::Names, 1, [4, 9], None),
        ];
        let d = ShardDirectory::pack(&shards).unwrap();
        assert_eq!(d.unpack().unwrap(), shards);
        assert_eq!(shards[4].name, format!("shards/edges-{KEY}-1.bin"));
        assert!(ShardDirectory::default().unpack().unwrap().is_empty());
    }

    #[test]
    fn gaps_other_kinds_and_other_keys_are_refused() {
        let gap = [
            entry(ShardKind::Postings, 0, [0, 9], Some("a")),
            entry(ShardKind::Postings, 1, [11, 12], Some("b")),
        ];
        assert!(ShardDirectory::pack(&gap).is_err());
        let late = [entry(ShardKind::Edges, 0, [5, 9], None)];
        assert!(ShardDirectory::pack(&late).is_err());
        let text = [ShardInfo::sealed(ShardKind::Text, KEY.into(), 0)];
        assert!(ShardDirectory::pack(&text).is_err());
        // Shards sealed under two keys, or not sealed, have no directory.
        let mut other = entry(ShardKind::Postings, 1, [10, 12], Some("b"));
        other.sha256 = "f".repeat(16);
        let two_keys = [entry(ShardKind::Postings, 0, [0, 9], Some("a")), other];
        assert!(ShardDirectory::pack(&two_keys).is_err());
        let mut hashed = entry(ShardKind::Edges, 0, [0, 9], None);
        hashed.sealed = false;
        assert!(ShardDirectory::pack(&[hashed]).is_err());
    }

    /// The checks of the manifest's list apply to what the directory
    /// lists: runs of first terms out of order, edge runs that stop short
    /// of the last entity.
    #[test]
    fn the_lists_checks_apply_to_the_directory() {
        let manifest = |shards: Vec<ShardInfo>| super::super::WebManifest {
            format: super::super::WebManifest::FORMAT_NAME.into(),
            format_version: super::super::WEB_FORMAT_VERSION,
            tool_version: String::new(),
            build_id: String::new(),
            config_hash: String::new(),
            counts: Default::default(),
            embedding: None,
            model_files: Vec::new(),
            shards: ShardDirectory::pack(&shards).unwrap().unpack().unwrap(),
            retrieval: Default::default(),
        };
        let sorted = manifest(vec![
            entry(ShardKind::Postings, 0, [0, 9], Some("a")),
            entry(ShardKind::Postings, 1, [10, 12], Some("b")),
        ]);
        assert!(super::super::postings::vocabulary_runs(&sorted).is_ok());
        let unsorted = manifest(vec![
            entry(ShardKind::Postings, 0, [0, 9], Some("b")),
            entry(ShardKind::Postings, 1, [10, 12], Some("a")),
        ]);
        assert!(super::super::postings::vocabulary_runs(&unsorted).is_err());
        let edges = manifest(vec![
            entry(ShardKind::Edges, 0, [0, 9], None),
            entry(ShardKind::Edges, 1, [10, 19], None),
        ]);
        assert!(super::super::edges::shard_starts(&edges, 20, true).is_ok());
        assert!(super::super::edges::shard_starts(&edges, 21, true).is_err());
    }

    #[test]
    fn damage_is_an_error() {
        let shards = vec![entry(ShardKind::Postings, 0, [0, 9], Some("alpha"))];
        let mut d = ShardDirectory::pack(&shards).unwrap();
        d.postings.counts[0] = 0;
        assert!(d.unpack().is_err());
        let mut d = ShardDirectory::pack(&shards).unwrap();
        d.postings.counts.push(1);
        assert!(d.unpack().is_err());
        let mut d = ShardDirectory::pack(&shards).unwrap();
        d.first_terms = DiffColumn::default();
        assert!(d.unpack().is_err());
        let mut d = ShardDirectory::pack(&shards).unwrap();
        d.edges.counts = vec![u32::MAX, u32::MAX];
        assert!(d.unpack().is_err());
    }
}
