//! Replaying the committed corpus through the harnesses without libFuzzer
//! (`cargo test` in `fuzz/`), and writing the seed corpus from the fixture
//! (`cargo test -- --ignored write_seeds`, then `cargo fuzz cmin`).

use std::path::{Path, PathBuf};

use super::*;

/// A fuzz target's harness.
type Harness = fn(&[u8]);

/// Every target with its harness.
const TARGETS: [(&str, Harness); 8] = [
    ("index_data", index_data),
    ("index_manifest", index_manifest),
    ("web_manifest", web_manifest),
    ("web_shard", web_shard),
    ("config", config),
    ("sse", sse),
    ("cpp", cpp),
    ("docs", docs),
];

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

#[test]
fn the_corpus_replays_within_budget() {
    for (target, harness) in TARGETS {
        let Ok(dir) = std::fs::read_dir(corpus(target)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = dir.map(|e| e.expect("corpus entry").path()).collect();
        paths.sort();
        for p in paths {
            let bytes = std::fs::read(&p).expect("corpus file");
            harness(&bytes);
        }
    }
}

fn save(target: &str, seeds: &mut Vec<Vec<u8>>) {
    let dir = corpus(target);
    std::fs::create_dir_all(&dir).expect("corpus folder");
    for s in seeds.drain(..) {
        let name = &codegloss_core::format::sha256_hex(&s)[..16];
        std::fs::write(dir.join(format!("seed-{name}")), &s).expect("seed");
    }
}

fn with(sel: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut v = sel.to_vec();
    v.extend_from_slice(payload);
    v
}

#[test]
#[ignore = "writes fuzz/corpus; run by hand, then minimise with cargo fuzz cmin"]
fn write_seeds() {
    let fx = fixture::get();
    let mut s = Vec::new();
    for (i, k) in crate::DATA_KINDS.iter().enumerate() {
        let file = &fx.files[k];
        s.push(with(&[i as u8], &file[56..]));
        s.push(with(&[i as u8 | 0x80], file));
    }
    save("index_data", &mut s);

    s.push(fx.manifest_json.clone().into_bytes());
    save("index_manifest", &mut s);

    s.push(fx.web_json.clone().into_bytes());
    s.push(format!("{}\0{{\"k\": 3, \"fusion\": \"rrf\"}}", fx.web_json).into_bytes());
    s.push(
        WebManifest::from_json(&fx.web_json)
            .and_then(|m| m.to_binary())
            .expect("the fixture's manifest"),
    );
    save("web_manifest", &mut s);

    for (i, kind) in [
        ShardKind::Search,
        ShardKind::Postings,
        ShardKind::Text,
        ShardKind::Vectors,
        ShardKind::VectorDirectory,
        ShardKind::Qualified,
        ShardKind::TextDirectory,
        ShardKind::Edges,
    ]
    .into_iter()
    .enumerate()
    {
        let web = if kind == ShardKind::VectorDirectory {
            &fx.web_ivf
        } else {
            &fx.web_listed
        };
        // Text shards are listed in the text directory, not the manifest;
        // postings and edge shards in the search shard.
        let infos: Vec<&ShardInfo> = if kind == ShardKind::Text {
            fx.web_text.iter().collect()
        } else {
            web.shards_of(kind).map(|(_, s)| s).collect()
        };
        for (which, info) in infos.into_iter().enumerate().take(2) {
            let bytes = &fx.shards[&info.name];
            let inflated =
                miniz_oxide::inflate::decompress_to_vec(&bytes[16..]).expect("fixture shard");
            let payload = if kind == ShardKind::Vectors {
                inflated[56..].to_vec()
            } else {
                inflated
            };
            s.push(with(&[i as u8, which as u8], &payload));
            s.push(with(&[i as u8 | 0x80, which as u8], bytes));
        }
    }
    save("web_shard", &mut s);

    s.push(Vec::new());
    s.push(
        b"[chunk]\nmax_tokens = 200\n[retrieval]\nk = 5\nfusion = \"rrf\"\n[parse]\ngeneric_caps_rule = true\nattribute_macros = [\"API_*\"]\n[parse.macro_replacements]\nCAPTURE = \"[=]\"\n[answer]\ncontext_tokens = 100\n".to_vec(),
    );
    save("config", &mut s);

    let stream = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n: keep-alive\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Halo cells are exchanged by `fillHalo` [1]. \"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"See HaloCells::exchange [2] and BareField.\"},\"finish_reason\":null}]}\n\n\
data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7}}\n\n\
data: {\"error\":{\"message\":\"overloaded\"}}\n\ndata: [DONE]\n\n";
    s.push(with(&[7], stream.as_bytes()));
    s.push(with(&[0], b"{\"choices\":[{\"message\":{\"content\":\"It calls fillHalo [1].\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}"));
    // A model looping over a line that ends in a multi-byte character (the
    // repetition guard once cut such a character in two).
    let looping = "- [1] `src/Field.hpp` is defined in `src/Field.hpp:10-69`, lines 13-21 not shown\u{2026}\\n".repeat(6);
    s.push(with(
        &[0],
        format!("{{\"choices\":[{{\"message\":{{\"content\":\"Answer.\\n{looping}\"}}}}]}}")
            .as_bytes(),
    ));
    save("sse", &mut s);

    let repo = fixture::repo();
    let mut sources = Vec::new();
    let mut stack = vec![repo.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("fixture folder") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                sources.push(p);
            }
        }
    }
    sources.sort();
    for p in &sources {
        let bytes = std::fs::read(p).expect("fixture file");
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext {
            "h" | "hpp" | "cpp" | "cu" => s.push(with(&[(s.len() % 4) as u8], &bytes)),
            _ => {}
        }
    }
    save("cpp", &mut s);
    for p in &sources {
        let bytes = std::fs::read(p).expect("fixture file");
        let lang = match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "md" => 0,
            "rst" => 1,
            "txt" => 2,
            "cmake" => 3,
            _ => continue,
        };
        s.push(with(&[lang, 40], &bytes));
    }
    save("docs", &mut s);
}

/// Run one input through its harness: `CODEGLOSS_FUZZ_REPLAY=target:path`
/// (a crash from `fuzz/artifacts/`, say) with `-- --ignored replay`.
#[test]
#[ignore = "needs CODEGLOSS_FUZZ_REPLAY=target:path"]
fn replay() {
    let spec = std::env::var("CODEGLOSS_FUZZ_REPLAY").expect("CODEGLOSS_FUZZ_REPLAY=target:path");
    let (target, path) = spec.split_once(':').expect("target:path");
    let (_, harness) = TARGETS
        .iter()
        .find(|(t, _)| *t == target)
        .expect("a target name");
    harness(&std::fs::read(path).expect("the input"));
}
