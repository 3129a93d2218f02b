//! The static site end to end: `codegloss index --site` on the fixture
//! (plus `tests/fixtures/site-extra`, a header whose comments hold HTML,
//! and two headers written here: one whose path, comments and code hold
//! bidirectional controls, one with a 49 KB function name), `codegloss
//! serve`, then Debian's headless Chromium driven by playwright-core: the
//! widget test (`tests/browser/widget.test.mjs`), the hostile-input test
//! (`tests/browser/hardening.test.mjs`: Trojan Source text, long names,
//! layout, re-ranking, the site's policy, a damaged shard) and the parity
//! check (the browser's ranked context equals `codegloss query --json` for
//! every fixture question).
//!
//! `cargo xtask ci` builds the widget assets and installs the browser and
//! playwright-core first, and passes them in `CODEGLOSS_SITE_ASSETS` and
//! `CODEGLOSS_NPM`. Without them the browser tests skip with a message
//! outside CI, and fail under CI.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codegloss"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn env_path(name: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(name) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{name} is not set: run the tests through `cargo xtask ci`, which provides {what}"
            );
            eprintln!("skipping: {name} is not set ({what}; `cargo xtask ci` provides it)");
            None
        }
    }
}

/// Built widget assets and the npm folder, when the browser tests can run.
fn browser_setup() -> Option<(PathBuf, PathBuf)> {
    let assets = env_path("CODEGLOSS_SITE_ASSETS", "the built widget assets")?;
    let npm = env_path("CODEGLOSS_NPM", "playwright-core")?;
    Some((assets, npm))
}

fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

struct Site {
    index: PathBuf,
    site: PathBuf,
}

/// The `[retrieval]` the fixture site is indexed with: none of these is a
/// default, so a side that ranked with the defaults would differ. Semantic
/// search probes 2 vector partitions of about 16 vectors and refines 12
/// chunks, so the browser fetches a directory, the probed partitions' codes
/// and the refined chunks' blocks, not every vector.
const NON_DEFAULT_RETRIEVAL: &str = "[retrieval]\nk = 10\nfusion = \"rrf\"\nsupplementary_k = 4\nprimary_same_file_cap = 2\nivf_probe = 2\nivf_refine = 12\nhubness_weight = 1.5\n[embedding]\nivf_partition_size = 16\n";

/// The one origin besides this computer the fixture site's policy allows
/// answers from.
const ANSWER_ORIGIN: &str = "https://llm.example.org";

/// A header whose path, comments and code hold bidirectional controls
/// (Trojan Source): the widget must show each as a visible marker. Written
/// here rather than committed, so that the repository holds no such file.
fn write_trojan_source(repo: &Path) {
    let dir = repo.join("src/Unsafe");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("Access\u{202E}Check.hpp"),
        "// Access control of the \u{202E}admin\u{202C} role for the demo.\n#pragma once\n\n\
         /// Tells whether the caller may administer the run; \u{2066}reviewed\u{2069} by nobody.\n\
         inline bool isAdminAccessCheck(int level) {\n\
         \x20   /* \u{202E} } \u{2066}if (isAdmin)\u{2069} \u{2066} begin admins only */\n\
         \x20   return level > 9;\n}\n",
    )
    .unwrap();
    // A generated name of 49 KB: a card must stay a card.
    let name = format!("trojanLongName{}", "Segment".repeat(7000));
    std::fs::write(
        dir.join("LongName.hpp"),
        format!("#pragma once\n\n/// A function whose name never ends.\ninline int {name}(int x) {{\n    return x + 1;\n}}\n"),
    )
    .unwrap();
}

/// The fixture site, built once per test binary (kept until the process ends).
fn site(assets: &Path) -> &'static Site {
    static S: OnceLock<Site> = OnceLock::new();
    S.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let repo = dir.join("repo");
        copy_tree(&root().join("tests/fixtures/sci-demo"), &repo);
        copy_tree(&root().join("tests/fixtures/site-extra"), &repo);
        write_trojan_source(&repo);
        // Non-default ranking: the site must carry it to the browser, and
        // `codegloss query` must read it back from the index. One answer
        // origin besides this computer for the site's policy.
        std::fs::write(
            repo.join("codegloss.toml"),
            format!("{NON_DEFAULT_RETRIEVAL}[site]\nanswer_origins = [\"{ANSWER_ORIGIN}/\"]\n"),
        )
        .unwrap();
        let (index, site) = (dir.join("index"), dir.join("site"));
        let o = bin()
            .args(["index", repo.to_str().unwrap(), "--out"])
            .arg(&index)
            .arg("--site")
            .arg(&site)
            .arg("--assets")
            .arg(assets)
            .arg("--quiet")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("site written to"), "{stdout}");
        Site { index, site }
    })
}

/// `codegloss site index --out dir --assets assets`, which must succeed.
fn write_site(index: &Path, dir: &Path, assets: &Path) {
    let o = bin()
        .arg("site")
        .arg(index)
        .arg("--out")
        .arg(dir)
        .arg("--assets")
        .arg(assets)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `codegloss serve` on a free port, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let mut child = bin()
            .arg("serve")
            .arg(dir)
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("http://127.0.0.1:"),
            "serve printed {line:?}"
        );
        Server {
            child,
            url: line.trim().to_string(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn node(script: &str, npm: &Path, envs: &[(&str, String)]) -> String {
    let o = Command::new("node")
        .arg(root().join("tests/browser").join(script))
        .env("CODEGLOSS_NPM", npm)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("node (Node.js) must be installed");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{out}");
    assert!(o.status.success(), "{script} failed:\n{out}");
    out
}

#[test]
fn widget_in_headless_chromium() {
    let Some((assets, npm)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    let server = Server::start(&site.site);
    // A port where nothing listens: the answer endpoint is down.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let shots = root().join("target/screenshots/site");
    std::fs::create_dir_all(&shots).unwrap();
    let llm = std::env::var("CODEGLOSS_TEST_LLM_URL").unwrap_or_default();
    let out = node(
        "widget.test.mjs",
        &npm,
        &[
            ("SITE_URL", server.url.clone()),
            ("LLM_URL", llm.clone()),
            ("LLM_MODEL", "smollm2".into()),
            ("DOWN_URL", format!("http://127.0.0.1:{down}/v1")),
            ("SCREENSHOT_DIR", shots.to_string_lossy().into_owned()),
        ],
    );
    assert!(!out.contains("FAIL"), "{out}");
    if !llm.is_empty() {
        assert!(
            out.contains("ok answer"),
            "the streaming answer check did not run:\n{out}"
        );
    }
}

/// A maintainer's own page: the widget, and no policy of its own (`codegloss
/// serve` still sends the site's as a header).
const PLAIN_PAGE: &str =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>our docs</title><link rel=\"icon\" href=\"data:,\">\n\
<script type=\"module\" src=\"codegloss/widget.js\"></script></head>\n\
<body><h1>our docs</h1><codegloss-search></codegloss-search></body></html>\n";

#[test]
fn widget_resists_hostile_text_and_damaged_files() {
    let Some((assets, npm)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    let server = Server::start(&site.site);
    // A copy to damage (the other tests share the fixture site), with a
    // page that declares no policy.
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&site.site, copy.path());
    std::fs::write(copy.path().join("plain.html"), PLAIN_PAGE).unwrap();
    let copied = Server::start(copy.path());
    let shots = root().join("target/screenshots/site");
    std::fs::create_dir_all(&shots).unwrap();
    let out = node(
        "hardening.test.mjs",
        &npm,
        &[
            ("SITE_URL", server.url.clone()),
            ("COPY_URL", copied.url.clone()),
            ("COPY_DIR", copy.path().to_string_lossy().into_owned()),
            ("ANSWER_ORIGIN", ANSWER_ORIGIN.into()),
            ("SCREENSHOT_DIR", shots.to_string_lossy().into_owned()),
        ],
    );
    assert!(!out.contains("FAIL"), "{out}");
}

/// The worker's check of answer endpoints (`site/policy.js`, in plain
/// Node) against the policy this crate writes: loopback and the listed
/// origin pass, others get the reader's message.
#[test]
fn the_workers_endpoint_check_reads_the_sites_policy() {
    let Some((_, npm)) = browser_setup() else {
        return;
    };
    let policy = codegloss_indexer::site::content_security_policy(&[ANSWER_ORIGIN.to_string()]);
    let out = node("policy.test.mjs", &npm, &[("POLICY", policy)]);
    assert!(out.contains("ok policy"), "{out}");
}

/// The landing page declares the site's policy (with the configured answer
/// origin) before it loads anything, and holds no inline script or style
/// the policy would block.
#[test]
fn the_landing_page_declares_the_sites_policy() {
    let Some((assets, _)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    let page = std::fs::read_to_string(site.site.join("index.html")).unwrap();
    let policy = codegloss_indexer::site::content_security_policy(&[ANSWER_ORIGIN.to_string()]);
    let meta = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        policy.replace('&', "&amp;").replace('"', "&quot;")
    );
    let at = page
        .find(&meta)
        .unwrap_or_else(|| panic!("no policy {meta} in:\n{page}"));
    for load in ["<script", "<link rel=\"stylesheet\""] {
        let first = page.find(load).unwrap_or(usize::MAX);
        assert!(at < first, "the policy comes after {load}:\n{page}");
    }
    assert!(policy.contains(&format!(" {ANSWER_ORIGIN}")), "{policy}");
    assert!(
        !page.contains("<style") && !page.contains("style="),
        "inline style:\n{page}"
    );
    for script in page.split("<script").skip(1) {
        assert!(
            script.split('>').next().unwrap().contains(" src="),
            "inline script:\n{page}"
        );
    }
}

#[test]
fn the_browser_ranks_like_the_cli() {
    let Some((assets, npm)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    let server = Server::start(&site.site);
    let questions: Vec<String> =
        std::fs::read_to_string(root().join("tests/fixtures/questions/sci-demo.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["question"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .chain([
                "inert markup sanitizer".to_string(),
                "What does picsim::detail::HaloCells::fillHalo call?".to_string(),
            ])
            .collect();
    let key = |chunks: &serde_json::Value| -> Vec<String> {
        chunks
            .as_array()
            .unwrap()
            .iter()
            // No lines: the browser's ranking carries a chunk's lines only
            // once its text is loaded (the chunk id fixes them, and the
            // prompts compared below quote them).
            .map(|c| {
                format!(
                    "{} {} {} {}",
                    c["chunk"], c["role"], c["path"], c["sources"]
                )
            })
            .collect()
    };
    let tmp = tempfile::tempdir().unwrap();
    let qfile = tmp.path().join("q.json");
    std::fs::write(&qfile, serde_json::to_string(&questions).unwrap()).unwrap();
    // Keyword and structure only, then hybrid with the query embedded in
    // the browser (onnxruntime-web) against the CLI's native ONNX Runtime.
    for semantic in [false, true] {
        let out = tmp.path().join(format!("ranked-{semantic}.json"));
        node(
            "parity.mjs",
            &npm,
            &[
                ("SITE_URL", server.url.clone()),
                ("QUESTIONS", qfile.to_string_lossy().into_owned()),
                ("OUT", out.to_string_lossy().into_owned()),
                ("SEMANTIC", if semantic { "1" } else { "0" }.into()),
            ],
        );
        let ranked: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(ranked.len(), questions.len());
        // `codegloss <command> <index> <q> <args>` as JSON, with or
        // without dense search like the browser run.
        let native_json = |command: &str, q: &str, args: &[&str]| -> serde_json::Value {
            let mut cmd = bin();
            cmd.arg(command).arg(&site.index).arg(q).args(args);
            if !semantic {
                cmd.arg("--no-vectors");
            }
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            serde_json::from_slice(&o.stdout).unwrap()
        };
        for (q, browser) in questions.iter().zip(&ranked) {
            let native = native_json("query", q, &["--json"]);
            let b = &browser["result"];
            assert_eq!(b["semantic"], serde_json::json!(semantic), "{q}");
            assert!(!key(&native["chunks"]).is_empty(), "{q}: nothing retrieved");
            assert_eq!(
                key(&b["chunks"]),
                key(&native["chunks"]),
                "{q} (semantic: {semantic})"
            );
            assert_eq!(b["files"], native["files"], "{q}");
            // Token estimates are a native report; the web layout omits them.
            assert!(b.get("context_tokens").is_none(), "{q}");
            // The answer prompt the worker would send is the CLI's, token
            // for token: the same fact sheet, evidence lines and shape.
            let native = native_json("ask", q, &["--show-prompt", "--json"]);
            let p = &browser["prompt"];
            assert!(native["messages"][1]["content"]
                .as_str()
                .is_some_and(|t| t.contains("[1] ")));
            assert_eq!(
                p["messages"], native["messages"],
                "{q} (semantic: {semantic})"
            );
            assert_eq!(p["tokens"], native["tokens"], "{q}");
            assert_eq!(p["prompt_signature"], native["prompt_signature"], "{q}");
            // And the evidence the answer opens with and is checked against.
            for field in ["text", "lead", "chunks"] {
                assert_eq!(
                    p["context"][field], native["context"][field],
                    "{q}: {field}"
                );
            }
        }
    }
}

/// The index records the `[retrieval]` it was built with, `query` ranks
/// with it, the site's manifest carries it, and a `[retrieval]` given at
/// query time wins. The settings change the ranking of the fixture
/// questions, so the browser parity above would catch a side that ignored
/// them.
#[test]
fn retrieval_settings_travel_with_the_index_and_the_site() {
    let Some((assets, _)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(site.index.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["retrieval"]["k"], 10);
    assert_eq!(manifest["retrieval"]["fusion"], "rrf");
    let web: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(site.site.join("index/codegloss.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(web["retrieval"], manifest["retrieval"]);
    // Partitioned vectors: a directory in the manifest, no single shard.
    let kinds: Vec<&str> = web["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"vector_directory"), "{kinds:?}");
    assert!(!kinds.contains(&"vectors"), "{kinds:?}");
    let tmp = tempfile::tempdir().unwrap();
    let defaults = tmp.path().join("defaults.toml");
    std::fs::write(&defaults, "[retrieval]\n").unwrap();
    let questions =
        std::fs::read_to_string(root().join("tests/fixtures/questions/sci-demo.jsonl")).unwrap();
    let mut differ = 0;
    for line in questions.lines().filter(|l| !l.trim().is_empty()) {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        let q = q["question"].as_str().unwrap();
        let run = |config: Option<&Path>| -> serde_json::Value {
            let mut cmd = bin();
            cmd.arg("query")
                .arg(&site.index)
                .arg(q)
                .arg("--json")
                .arg("--no-vectors");
            if let Some(c) = config {
                cmd.arg("--config").arg(c);
            }
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            serde_json::from_slice(&o.stdout).unwrap()
        };
        let (recorded, default) = (run(None), run(Some(&defaults)));
        if recorded["chunks"] != default["chunks"] {
            differ += 1;
        }
    }
    assert!(differ > 0, "the non-default settings changed no ranking");
}

#[test]
fn site_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    // No assets where pointed.
    let o = bin()
        .args(["site", tmp.path().to_str().unwrap(), "--out"])
        .arg(tmp.path().join("site"))
        .arg("--assets")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cargo xtask site-assets"), "{err}");
    // Serving a folder that is not a site.
    let o = bin()
        .arg("serve")
        .arg(tmp.path())
        .args(["--port", "0"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not a codegloss site"), "{err}");
}

#[test]
fn rewriting_a_site_replaces_the_widget_files_it_wrote_and_nothing_else() {
    let Some((assets, _)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    // Assets of an "older" build, with a module the newer one lacks.
    let tmp = tempfile::tempdir().unwrap();
    let older = tmp.path().join("older");
    copy_tree(&assets, &older);
    std::fs::write(older.join("codegloss/old-module.js"), "old").unwrap();
    let dir = tmp.path().join("site");
    write_site(&site.index, &dir, &older);
    assert!(dir.join("codegloss/old-module.js").is_file());
    // A maintainer's file beside them, and a damaged list that names a
    // file outside the folder: neither is touched.
    std::fs::write(dir.join("codegloss/ours.js"), "ours").unwrap();
    std::fs::write(dir.join("outside.js"), "ours").unwrap();
    let list = dir.join("codegloss/.assets");
    let mut text = std::fs::read_to_string(&list).unwrap();
    assert!(text.lines().any(|l| l == "old-module.js"), "{text}");
    text.push_str("../outside.js\n");
    std::fs::write(&list, text).unwrap();
    write_site(&site.index, &dir, &assets);
    assert!(!dir.join("codegloss/old-module.js").exists());
    assert!(dir.join("codegloss/ours.js").is_file());
    assert!(dir.join("outside.js").is_file());
    assert!(dir.join("codegloss/widget.js").is_file());
    let text = std::fs::read_to_string(&list).unwrap();
    assert!(
        !text.contains("old-module.js") && !text.contains("outside"),
        "{text}"
    );
}

#[test]
fn rewriting_a_site_keeps_its_page_and_clears_stale_shards() {
    let Some((assets, _)) = browser_setup() else {
        return;
    };
    let site = site(&assets);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("site");
    // A maintainer's own landing page stays; stale shards go (named by a
    // shard hash, 128 bits before web format 18, or by a whole SHA-256 as
    // before web format 9); other files stay.
    std::fs::create_dir_all(dir.join("index/shards")).unwrap();
    std::fs::write(dir.join("index.html"), "<h1>our docs</h1>").unwrap();
    let stale = dir.join(format!("index/shards/text-{}.bin", "0".repeat(16)));
    std::fs::write(&stale, "old").unwrap();
    let old = dir.join(format!("index/shards/postings-{}.bin", "3".repeat(32)));
    std::fs::write(&old, "old").unwrap();
    let older = dir.join(format!("index/shards/search-{}.bin", "1".repeat(64)));
    std::fs::write(&older, "older").unwrap();
    let not_a_hash = dir.join(format!("index/shards/text-{}.bin", "2".repeat(40)));
    std::fs::write(&not_a_hash, "mine").unwrap();
    std::fs::write(dir.join("index/shards/notes.txt"), "mine").unwrap();
    write_site(&site.index, &dir, &assets);
    assert_eq!(
        std::fs::read_to_string(dir.join("index.html")).unwrap(),
        "<h1>our docs</h1>"
    );
    assert!(!stale.exists());
    assert!(!old.exists());
    assert!(!older.exists());
    assert!(not_a_hash.exists());
    assert!(dir.join("index/shards/notes.txt").exists());
    // The same index gives the same manifest as the first site.
    assert_eq!(
        std::fs::read(dir.join("index/codegloss.json")).unwrap(),
        std::fs::read(site.site.join("index/codegloss.json")).unwrap()
    );
}
