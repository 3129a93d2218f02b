//! Writing the web layout: a native index laid out as the manifest and
//! its shards ([`build_site_index`]).
//!
//! Apart from `mod.rs`, which holds the layout's types and the browser's
//! reader, because the writer runs only natively (`codegloss site`) and
//! decides how rows are grouped into shards: the search shard, postings
//! runs, edge shards by range of entities, text runs and the vectors.

use std::collections::BTreeMap;

use super::directory::ShardDirectory;
use super::edges;
use super::lookups::{key_entries, GlobalLookups, KeyEntry, RunLookups};
use super::names::{blank_filed_rows, name_ranges, rows_by_range, NameShard};
use super::postings::PostingsShard;
use super::qualified::QualifiedShard;
use super::shard::{encode_shard, seal_shards, shard, wrap_shard};
use super::tables::Tables;
use super::textdir::text_directory_shard;
use super::vectors;
use super::{
    ChunkText, EntityText, SearchShard, ShardInfo, ShardKind, TextShard, WebManifest,
    EDGE_ENDS_PER_SHARD, NAME_ENTITIES_PER_SHARD, POSTINGS_PER_SHARD, TEXT_SHARD_RAW_BYTES,
    WEB_FORMAT_VERSION,
};
use crate::error::CoreError;
use crate::format::{sha256_hex, IndexData, Manifest};
use crate::lexical::{coarse_code, length_code, LexicalIndex};
use crate::retrieve::features::TextFeatures;
use crate::retrieve::names::{NameLookups, NameRanges};
use crate::vectors::VectorIndex;

/// The index of a site: the manifest and every shard's bytes (paths as the
/// manifest names them). Deterministic: the same index gives the same bytes.
pub struct SiteIndex {
    /// `codegloss.json` (without model files; the writer adds them).
    pub manifest: WebManifest,
    /// The postings and edge shards, as the search shard's directory
    /// lists them.
    pub listed: Vec<ShardInfo>,
    /// The text shards, as the text directory lists them.
    pub text: Vec<ShardInfo>,
    /// `(path, bytes)` of every shard.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Lay out a native index for the web.
pub fn build_site_index(
    manifest: &Manifest,
    data: &IndexData,
    lexical: &LexicalIndex,
    vectors: Option<&VectorIndex>,
) -> Result<SiteIndex, CoreError> {
    build_site_index_with(
        manifest,
        data,
        lexical,
        vectors,
        POSTINGS_PER_SHARD,
        EDGE_ENDS_PER_SHARD,
        NAME_ENTITIES_PER_SHARD,
    )
}

/// [`build_site_index`] with about `postings_per_shard` postings per
/// postings shard instead of [`POSTINGS_PER_SHARD`],
/// `edge_ends_per_shard` edge ends per edge shard instead of
/// [`EDGE_ENDS_PER_SHARD`], and about `name_entities_per_shard` entities
/// per name shard instead of [`NAME_ENTITIES_PER_SHARD`] (tests use them
/// to spread a small index over many shards).
pub fn build_site_index_with(
    manifest: &Manifest,
    data: &IndexData,
    lexical: &LexicalIndex,
    vectors: Option<&VectorIndex>,
    postings_per_shard: usize,
    edge_ends_per_shard: usize,
    name_entities_per_shard: usize,
) -> Result<SiteIndex, CoreError> {
    let mut features = TextFeatures::compute(data);
    features.set_length_steps(lexical);
    let facts: Vec<u8> = features.chunks.iter().map(|f| f.bits()).collect();
    let mut entities = data.entities.clone();
    let entity_texts: Vec<EntityText> = entities.iter_mut().map(EntityText::take).collect();
    let mut chunks = data.chunks.clone();
    let chunk_texts: Vec<ChunkText> = chunks.iter_mut().map(ChunkText::take).collect();
    let (edge_columns, edge_shards) = edges::split(&entities, &data.edges, edge_ends_per_shard);
    // The search shard names only the entities without a file; the others'
    // names, and the facts ranking reads of candidates only, travel in
    // name shards.
    blank_filed_rows(&mut entities, &mut chunks, &mut features.chunks);
    let tables = Tables::pack(&data.files, &entities, &chunks, edge_columns, &features)
        .map_err(|e| e.in_file("search shard"))?;
    // Postings (with the lookups by name), edge and name shards, listed in
    // the search shard's directory.
    let lookups = NameLookups::build(data);
    let acronyms = lookups.acronyms.clone();
    let mut keys = key_entries(lookups);
    let global_lookups = GlobalLookups::pack(&mut keys, &acronyms);
    let mut listed = postings_shards(lexical, postings_per_shard, &keys)?;
    for e in &edge_shards {
        let (mut info, bytes) = shard(ShardKind::Edges, encode_shard(ShardKind::Edges, e)?, None);
        info.entities = Some(e.range());
        listed.push((info, bytes));
    }
    let mut chunks_of_entity = vec![Vec::new(); data.entities.len()];
    for c in &data.chunks {
        if let Some(list) = chunks_of_entity.get_mut(c.entity as usize) {
            list.push(c.id);
        }
    }
    let ranges = name_ranges(data.files.len(), &data.entities, name_entities_per_shard);
    let starts = NameRanges::new(ranges.iter().map(|r| r[0]).collect());
    let rows = rows_by_range(&data.entities, &starts);
    for (range, ids) in ranges.into_iter().zip(&rows) {
        let names = NameShard::pack(
            &data.files,
            &data.entities,
            &data.chunks,
            &chunks_of_entity,
            &facts,
            range,
            ids,
        );
        let (mut info, bytes) = shard(
            ShardKind::Names,
            encode_shard(ShardKind::Names, &names)?,
            None,
        );
        info.files = Some(range);
        listed.push((info, bytes));
    }
    // Named by the directory's key and their place, each with its seal.
    seal_shards(&mut listed);
    let (listed_infos, listed_bytes): (Vec<ShardInfo>, Vec<Vec<u8>>) = listed.into_iter().unzip();
    let search = SearchShard {
        tables,
        weights: lexical.weights.clone(),
        doc_len: lexical
            .doc_len
            .iter()
            .map(|&l| coarse_code(length_code(l)))
            .collect(),
        directory: ShardDirectory::pack(&listed_infos)?,
        lookups: global_lookups,
    };
    let mut shards = vec![
        shard(
            ShardKind::Search,
            encode_shard(ShardKind::Search, &search)?,
            None,
        ),
        shard(
            ShardKind::Qualified,
            encode_shard(ShardKind::Qualified, &QualifiedShard::pack(&features))?,
            None,
        ),
    ];
    let partitioned = manifest.retrieval.as_ref().is_some_and(|r| r.ivf_probe > 0);
    let mut partitions = Vec::new();
    match vectors {
        Some(v) if partitioned => {
            let (directory, parts) = vectors::partitioned(v)?;
            shards.push(directory);
            partitions = parts;
        }
        Some(v) => shards.push(shard(
            ShardKind::Vectors,
            wrap_shard(ShardKind::Vectors, &v.encode()?),
            None,
        )),
        None => {}
    }
    // Text shards: consecutive chunk runs of about TEXT_SHARD_RAW_BYTES,
    // listed in the text directory, which the manifest lists.
    let mut texts = Vec::new();
    let mut first_chunk_of: BTreeMap<u32, u32> = BTreeMap::new();
    for c in &data.chunks {
        first_chunk_of.entry(c.entity).or_insert(c.id);
    }
    let mut entities_by_first: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&e, &c) in &first_chunk_of {
        entities_by_first.entry(c).or_default().push(e);
    }
    let mut current = TextShard::default();
    let mut raw = 0usize;
    let mut start = 0u32;
    let total = data.chunks.len();
    for (i, c) in data.chunks.iter().enumerate() {
        if current.chunks.is_empty() {
            start = c.id;
        }
        let text = chunk_texts[i].clone();
        raw += text.code.len() + text.leading_comment.as_ref().map_or(0, String::len) + 64;
        current.chunks.push(text);
        for &e in entities_by_first.get(&c.id).into_iter().flatten() {
            let text = entity_texts[e as usize].clone();
            raw += text.gloss.len()
                + text.doc_comment.as_ref().map_or(0, String::len)
                + text.signature.len();
            current.entities.push(text);
        }
        if raw >= TEXT_SHARD_RAW_BYTES || i + 1 == total {
            let done = std::mem::take(&mut current);
            texts.push(shard(
                ShardKind::Text,
                encode_shard(ShardKind::Text, &done)?,
                Some([start, c.id]),
            ));
            raw = 0;
        }
    }
    seal_shards(&mut texts);
    let (text, text_bytes): (Vec<ShardInfo>, Vec<Vec<u8>>) = texts.into_iter().unzip();
    shards.push(text_directory_shard(&text)?);
    // The text directory's hash covers every text shard's (through its
    // key), the search shard's every postings, edge and name shard's.
    let build_id = sha256_hex(
        shards
            .iter()
            .map(|(s, _)| s.sha256.as_str())
            .collect::<Vec<_>>()
            .join("\n")
            .as_bytes(),
    )[..16]
        .to_string();
    let (infos, bytes): (Vec<ShardInfo>, Vec<Vec<u8>>) = shards.into_iter().unzip();
    let files = infos
        .iter()
        .chain(&listed_infos)
        .chain(&text)
        .map(|s| s.name.clone())
        .zip(bytes.into_iter().chain(listed_bytes).chain(text_bytes))
        .chain(partitions)
        .collect();
    Ok(SiteIndex {
        manifest: WebManifest {
            format: WebManifest::FORMAT_NAME.into(),
            format_version: WEB_FORMAT_VERSION,
            tool_version: manifest.tool_version.clone(),
            build_id,
            config_hash: manifest.config_hash.clone(),
            counts: manifest.counts.clone(),
            embedding: manifest.embedding.clone(),
            model_files: Vec::new(),
            shards: infos,
            retrieval: manifest.retrieval.clone().unwrap_or_default(),
        },
        listed: listed_infos,
        text,
        files,
    })
}

/// Postings shards: consecutive term runs of about `postings_per_shard`
/// postings each, each with the lookups of the keys from its start to
/// before the next run's (the first run also those before its first
/// term). A run starts at the shortest prefix of its first term that
/// sorts after the run before's last term ([`run_start`]): the search
/// shard's directory lists these, shorter than the terms.
fn postings_shards(
    lexical: &LexicalIndex,
    postings_per_shard: usize,
    keys: &BTreeMap<String, KeyEntry>,
) -> Result<Vec<(ShardInfo, Vec<u8>)>, CoreError> {
    let lists = &lexical.postings;
    let mut runs = Vec::new();
    let mut first = 0usize;
    while first < lists.len() {
        let mut end = first;
        let mut count = 0usize;
        while end < lists.len() && (end == first || count + lists[end].len() <= postings_per_shard)
        {
            count += lists[end].len();
            end += 1;
        }
        runs.push(first..end);
        first = end;
    }
    let starts: Vec<&str> = runs
        .iter()
        .map(|r| match r.start.checked_sub(1) {
            Some(last) => run_start(&lexical.terms[last], &lexical.terms[r.start]),
            None => lexical.terms[r.start].as_str(),
        })
        .collect();
    let mut out = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let (first, end) = (run.start, run.end);
        let from = (i > 0).then(|| starts[i]);
        let to = starts.get(i + 1).copied();
        let in_run = keys.iter().filter(|(k, _)| {
            from.is_none_or(|f| k.as_str() >= f) && to.is_none_or(|t| k.as_str() < t)
        });
        let shard_lists = PostingsShard::pack(
            first as u32,
            &lexical.terms[first..end],
            &lexical.postings[first..end],
            RunLookups::pack(in_run),
        );
        let (mut info, bytes) = shard(
            ShardKind::Postings,
            encode_shard(ShardKind::Postings, &shard_lists)?,
            None,
        );
        info.terms = Some([first as u32, (end - 1) as u32]);
        info.first_term = Some(starts[i].to_string());
        out.push((info, bytes));
    }
    Ok(out)
}

/// The shortest prefix of `first` that sorts after `last` (`last < first`):
/// every term from `first` on lies at or after it, every term up to `last`
/// before it. Cut at a character boundary.
fn run_start<'a>(last: &str, first: &'a str) -> &'a str {
    let common = last
        .bytes()
        .zip(first.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let mut end = (common + 1).min(first.len());
    while !first.is_char_boundary(end) {
        end += 1;
    }
    &first[..end]
}

#[cfg(test)]
mod tests {
    use super::run_start;

    #[test]
    fn a_run_starts_at_the_shortest_prefix_after_the_run_before() {
        for (last, first, start) in [
            ("comm", "compile", "comp"),
            ("exchange", "exchanger", "exchanger"),
            ("halo", "halt", "halt"),
            ("a", "b", "b"),
            ("zeta", "zétä", "zé"),
        ] {
            let s = run_start(last, first);
            assert_eq!(s, start);
            assert!(last < s && s <= first, "{last} {s} {first}");
        }
    }
}
