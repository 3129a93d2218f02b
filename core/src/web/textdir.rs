//! The text directory: the list of text shards (the chunk run of each,
//! sealed under one key), one shard of its own that the manifest lists in
//! their place.
//!
//! It exists because a browser needs that list only to show text, after
//! its first results, while the manifest is fetched before them: listed in
//! the manifest, the text shards were half of its bytes on a large codebase
//! (559 of 1,027 entries, each with a hash that does not compress). Here
//! each costs the length of its run, and the directory arrives with the
//! first text a question shows; the shards are sealed under the
//! directory's key ([`super::shard::seal_shards`]), which it lists once. The loading of text shards through it
//! ([`WebIndex::missing_text`], [`WebIndex::add_text`]) lives here too.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::error::CoreError;

use super::directory::{directory_key, Runs};
use super::shard::ShardHash;
use super::shard::{decode_shard, encode_shard, shard, Fetched};
use super::{ShardInfo, ShardKind, TextShard, WebIndex};

/// The text shards, in chunk order: shard `i` covers the chunks that
/// follow those of the shards before it, as many as its run says.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct TextDirectory {
    /// The key the shards are sealed under.
    key: ShardHash,
    /// Each shard's number of chunks.
    runs: Runs,
}

impl TextDirectory {
    /// The directory of text shards that cover the chunks from 0 on, each
    /// run following the one before.
    pub(super) fn pack(shards: &[ShardInfo]) -> Result<Self, CoreError> {
        let mut d = TextDirectory {
            key: directory_key(shards)?,
            ..TextDirectory::default()
        };
        let mut next = 0u64;
        for s in shards {
            let (Some(range), ShardKind::Text) = (s.chunks, s.kind) else {
                return Err(CoreError::malformed(format!(
                    "{}: not a text shard with a chunk run",
                    s.name
                )));
            };
            d.runs.push(s, range, &mut next)?;
        }
        Ok(d)
    }

    /// The text shards as the manifest would list them; they must cover
    /// exactly `chunks` chunks.
    pub(super) fn unpack(&self, chunks: usize) -> Result<Vec<ShardInfo>, CoreError> {
        let runs = self.runs.unpack(ShardKind::Text, &self.key)?;
        let next = runs.last().map_or(0, |(_, [_, last])| u64::from(*last) + 1);
        if next != chunks as u64 {
            return Err(CoreError::malformed(format!(
                "the text directory covers {next} of {chunks} chunks"
            )));
        }
        Ok(runs
            .into_iter()
            .map(|(mut info, range)| {
                info.chunks = Some(range);
                info
            })
            .collect())
    }
}

/// The text directory of these text shards (in chunk order, covering the
/// chunks from 0 on), as a shard with its manifest entry.
pub fn text_directory_shard(text: &[ShardInfo]) -> Result<(ShardInfo, Vec<u8>), CoreError> {
    let directory = TextDirectory::pack(text)?;
    Ok(shard(
        ShardKind::TextDirectory,
        encode_shard(ShardKind::TextDirectory, &directory)?,
        None,
    ))
}

impl WebIndex {
    /// Whether a chunk's text shard is loaded: its code, gloss and lines
    /// (the search shard does not carry a chunk's lines).
    pub fn has_text(&self, chunk: u32) -> bool {
        (chunk as usize) < self.corpus.data.chunks.len()
            && self
                .shard_covering(ShardKind::Text, chunk)
                .is_some_and(|s| self.loaded.contains(&s))
    }

    /// Positions (in the manifest's shard list) of the text shards still
    /// needed to show these chunks with their code and glosses: the text
    /// directory's alone while it is not loaded (its shards then join the
    /// list, so ask again).
    pub fn missing_text(&self, chunks: &[u32]) -> Vec<usize> {
        let known = chunks
            .iter()
            .any(|&c| (c as usize) < self.corpus.data.chunks.len());
        if known && self.manifest.shards_of(ShardKind::Text).next().is_none() {
            return self
                .manifest
                .shards_of(ShardKind::TextDirectory)
                .map(|(p, _)| p)
                .take(1)
                .collect();
        }
        let mut need = BTreeSet::new();
        for &c in chunks {
            let Some(chunk) = self.corpus.data.chunks.get(c as usize) else {
                continue;
            };
            let first = self.corpus.first_chunk(chunk.entity).unwrap_or(c);
            for id in [c, first] {
                if let Some(s) = self.shard_covering(ShardKind::Text, id) {
                    if !self.loaded.contains(&s) {
                        need.insert(s);
                    }
                }
            }
        }
        need.into_iter().collect()
    }

    /// Add a text shard, or the text directory (its position in the
    /// manifest's shard list, from [`WebIndex::missing_text`]).
    pub fn add_text<'a>(
        &mut self,
        position: usize,
        bytes: impl Into<Fetched<'a>>,
    ) -> Result<(), CoreError> {
        let bytes = bytes.into();
        if self.manifest.shards.get(position).map(|s| s.kind) == Some(ShardKind::TextDirectory) {
            return self.add_text_directory(position, bytes);
        }
        let info = self.shard_at(position, ShardKind::Text)?;
        let t: TextShard = decode_shard(&info, bytes)?;
        let data = &mut self.corpus.data;
        let bad = |what: &str, id: u32| CoreError::Inconsistent {
            file: info.name.clone(),
            message: format!("{what} {id} is outside the index"),
        };
        for text in t.chunks {
            let id = text.id;
            text.restore(
                data.chunks
                    .get_mut(id as usize)
                    .ok_or_else(|| bad("chunk", id))?,
            );
        }
        for text in t.entities {
            let id = text.id;
            text.restore(
                data.entities
                    .get_mut(id as usize)
                    .ok_or_else(|| bad("entity", id))?,
            );
        }
        self.loaded.insert(position);
        Ok(())
    }

    /// Add the text directory: its text shards join the manifest's list
    /// (once; a second copy changes nothing).
    fn add_text_directory(&mut self, position: usize, bytes: Fetched<'_>) -> Result<(), CoreError> {
        let info = self.shard_at(position, ShardKind::TextDirectory)?;
        let d: TextDirectory = decode_shard(&info, bytes)?;
        let text = d
            .unpack(self.corpus.data.chunks.len())
            .map_err(|e| e.in_file(&info.name))?;
        if self.manifest.shards_of(ShardKind::Text).next().is_none() {
            self.manifest.shards.extend(text);
        }
        Ok(())
    }
}

// How the browser reads these types without serde (`crate::wire`).
crate::wire::wire_struct!(TextDirectory { key, runs });

#[cfg(test)]
mod tests {
    use super::*;

    fn text(first: u32, last: u32, place: usize) -> ShardInfo {
        ShardInfo {
            chunks: Some([first, last]),
            ..ShardInfo::sealed(ShardKind::Text, "00ff".repeat(4), place)
        }
    }

    #[test]
    fn round_trips_and_checks_its_coverage() {
        let shards = vec![text(0, 4, 0), text(5, 5, 1), text(6, 9, 2)];
        let d = TextDirectory::pack(&shards).unwrap();
        assert_eq!(d.unpack(10).unwrap(), shards);
        // Too few or too many chunks for the index.
        assert!(d.unpack(9).is_err());
        assert!(d.unpack(11).is_err());
        // A gap, an overlap or another kind is refused when packing.
        assert!(TextDirectory::pack(&[text(0, 4, 0), text(6, 9, 1)]).is_err());
        assert!(TextDirectory::pack(&[text(0, 4, 0), text(4, 9, 1)]).is_err());
        let mut other = text(0, 9, 0);
        other.kind = ShardKind::Postings;
        assert!(TextDirectory::pack(&[other]).is_err());
        // No runs decode to an error (`Runs` is checked in
        // `directory.rs`); so does a run past the last chunk.
        let mut bad = d;
        bad.runs = Runs::default();
        assert!(bad.unpack(10).is_err());
        assert!(TextDirectory::pack(&[text(0, 12, 0)])
            .unwrap()
            .unpack(10)
            .is_err());
    }
}
