//! Names read through the corpus's accessors (`core::retrieve::names`):
//! with every file's names blank until a read asks for its range, as a
//! browser that fetches names per range of files would hold them,
//! retrieving and building the answer's context again until no read
//! lacks anything gives exactly what the corpus with every name gives. A
//! read that bypassed the accessors would see a blank name and rank
//! differently, or never ask for its range.

use codegloss_core::answer::build_context_estimated;
use codegloss_core::lexical::{FieldWeights, LexicalIndex};
use codegloss_core::retrieve::names::{names_load_apart, NameRanges};
use codegloss_core::retrieve::{retrieve, Corpus, RetrievalSettings};
use codegloss_core::IndexData;
use codegloss_indexer::{ingest::build, Config};
use codegloss_tests::{fixture_repo, FIXTURE_QUESTIONS};
use indicatif::ProgressBar;

/// Besides the fixture's usual questions: a comparison, and a call and
/// data-flow question.
const MORE: [&str; 2] = [
    "What is the difference between BareField and HaloCells?",
    "Which functions call fillHalo and what data flows from the particles to the field?",
];

/// Copy the names of the entities of `file` (and of their chunks) from
/// `from` into `to`; with `from` blank, blank them.
fn copy_names(to: &mut IndexData, from: &IndexData, file: Option<u32>) {
    for (e, src) in to.entities.iter_mut().zip(&from.entities) {
        if names_load_apart(e) && (file.is_none() || e.file == file) {
            e.name.clone_from(&src.name);
            e.qualified_name.clone_from(&src.qualified_name);
            e.parent_symbol.clone_from(&src.parent_symbol);
            e.class_name.clone_from(&src.class_name);
        }
    }
    for (c, src) in to.chunks.iter_mut().zip(&from.chunks) {
        let e = &to.entities[c.entity as usize];
        if names_load_apart(e) && (file.is_none() || e.file == file) {
            c.symbol_name.clone_from(&src.symbol_name);
            c.parent_symbol.clone_from(&src.parent_symbol);
            c.class_name.clone_from(&src.class_name);
        }
    }
}

#[test]
fn names_read_per_range_rank_and_answer_like_every_name() {
    let out =
        build::build_index(&fixture_repo(), &Config::default(), &ProgressBar::hidden()).unwrap();
    let lexical = LexicalIndex::build(&out.data, FieldWeights::default());
    let full = Corpus::new(out.data.clone(), None, lexical.clone());
    let files = full.data.files.len() as u32;
    let settings = RetrievalSettings::default();
    let mut blank = out.data.clone();
    for e in &mut blank.entities {
        e.name.clear();
        e.qualified_name.clear();
        e.parent_symbol.clear();
        e.class_name = None;
    }
    for c in &mut blank.chunks {
        c.symbol_name.clear();
        c.parent_symbol.clear();
        c.class_name = None;
    }
    let mut fewest = files;
    for q in FIXTURE_QUESTIONS.into_iter().chain(MORE) {
        let expected = retrieve(&full, q, None, &settings).unwrap();
        let expected_context = build_context_estimated(&full, &expected, q, 2_000);
        // Lookups keep every name (they arrive apart from the rows); the
        // rows of every file with a name start blank, one range per file.
        let mut corpus = Corpus::new(out.data.clone(), None, lexical.clone());
        let whole = corpus.data.clone();
        copy_names(&mut corpus.data, &blank, None);
        corpus.name_ranges = Some(NameRanges::new((0..files).collect()));
        let mut loaded = 0u32;
        let mut settled = false;
        for _ in 0..12 {
            let r = retrieve(&corpus, q, None, &settings).unwrap();
            let context = build_context_estimated(&corpus, &r, q, 2_000);
            for chunk in &r.chunks {
                let _ = chunk.to_json(&corpus, false);
            }
            let wanted = corpus.take_wanted_names();
            if wanted.is_empty() {
                assert_eq!(r.chunks, expected.chunks, "{q}");
                assert_eq!(context, expected_context, "{q}");
                settled = true;
                break;
            }
            for range in wanted {
                copy_names(&mut corpus.data, &whole, Some(range as u32));
                if let Some(ranges) = corpus.name_ranges.as_mut() {
                    ranges.set_loaded(range);
                }
                loaded += 1;
            }
        }
        assert!(settled, "{q}: the names read did not settle");
        fewest = fewest.min(loaded);
    }
    // Not vacuous: some question reads the names of few files.
    assert!(fewest * 2 < files, "{fewest} of {files} files");
}
