//! The `codegloss` binary as a user runs it: results on stdout, problems
//! on stderr, non-zero exit with a clear message on errors.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codegloss"))
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sci-demo")
}

#[test]
fn index_then_inspect() {
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args([
            "index",
            fixture().to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("indexed 20 files"), "{stdout}");
    assert!(
        stdout.contains("function bodies in tree-sitter ERROR nodes: 0/"),
        "{stdout}"
    );
    assert!(stdout.contains("calls"), "{stdout}");

    let o = bin()
        .args([
            "inspect",
            out.path().to_str().unwrap(),
            "--symbol",
            "BareField::fillHalo",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("src/Field/BareField.hpp"), "{s}");
    assert!(s.contains("gloss (structural)"), "{s}");
    assert!(
        s.contains("-> calls method picsim::detail::HaloCells::fillHalo"),
        "{s}"
    );

    let o = bin()
        .args([
            "inspect",
            out.path().to_str().unwrap(),
            "--file",
            "Field/HaloCells.h",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.as_array().is_some_and(|a| !a.is_empty()));
}

fn index_into(out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    bin()
        .args(["index", fixture().to_str().unwrap(), "--out"])
        .arg(out)
        .arg("--quiet")
        .args(extra)
        .output()
        .unwrap()
}

/// Embeddings end to end through the binary: the first run computes every
/// vector, the second reuses them all, `search` finds halo code, and an
/// index without vectors is refused by `search` with a clear message.
#[test]
fn embeddings_are_reused_and_searchable() {
    let out = tempfile::tempdir().unwrap();
    let o = index_into(out.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first = String::from_utf8_lossy(&o.stdout).into_owned();
    let chunks: u64 = first
        .lines()
        .find_map(|l| l.strip_prefix("chunks: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("chunk count");
    assert!(
        first.contains(&format!("embeddings: {chunks} computed, 0 reused")),
        "{first}"
    );
    assert!(first.contains("HNSW recall@10"), "{first}");

    let o = index_into(out.path(), &[]);
    assert!(o.status.success());
    let second = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        second.contains(&format!("embeddings: 0 computed, {chunks} reused")),
        "{second}"
    );

    let o = bin()
        .args(["search"])
        .arg(out.path())
        .args([
            "how are halo cells exchanged between ranks",
            "--k",
            "3",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hits: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter()
            .any(|h| h["path"].as_str().unwrap().contains("Halo")),
        "{hits:?}"
    );

    // Partitioned search measured against exact search: probing every
    // partition finds the exact nearest chunks, and fetches every
    // partition's codes and the refined chunks' blocks, not every block.
    let o = bin()
        .args(["partitions"])
        .arg(out.path())
        .arg("--questions")
        .arg(fixture().join("../questions/sci-demo.jsonl"))
        .args([
            "--probe",
            "1,100000",
            "--partition-size",
            "8",
            "--json",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = m["rows"].as_array().unwrap();
    assert!(m["partitions"].as_u64().unwrap() > 2, "{m}");
    assert!(rows[0]["recall"].as_f64().unwrap() <= rows[1]["recall"].as_f64().unwrap());
    assert!(rows[1]["recall"].as_f64().unwrap() >= 0.99, "{m}");
    let (parts, blocks) = (
        m["partition_bytes"].as_u64().unwrap(),
        m["block_bytes"].as_u64().unwrap(),
    );
    let every = rows[1]["bytes_max"].as_u64().unwrap();
    assert!(every > parts && every < parts + blocks, "{m}");
    assert!(rows[0]["bytes_max"].as_u64().unwrap() < every, "{m}");

    // The whole retrieval pipeline, as text and as JSON.
    let o = bin()
        .args(["query"])
        .arg(out.path())
        .args(["Where is accumulateHalo defined?", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let q: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(q["intent"], "location_lookup");
    let chunks = q["chunks"].as_array().unwrap();
    assert!(!chunks.is_empty());
    for c in chunks {
        assert!(["primary", "structural_expansion", "supplementary"]
            .contains(&c["role"].as_str().unwrap()));
        assert!(c["start_line"].as_u64().is_some() && c["path"].as_str().is_some());
    }
    let o = bin()
        .args(["query"])
        .arg(out.path())
        .args(["How are halo cells exchanged?"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("[primary]") && text.contains("gloss:"),
        "{text}"
    );

    // Evaluation on a small question file, with the baseline in the same run.
    let json = out.path().join("eval.json");
    let questions = fixture().join("../questions/sci-demo.jsonl");
    let o = bin()
        .args(["eval"])
        .arg(out.path())
        .arg("--questions")
        .arg(&questions)
        .arg("--json")
        .arg(&json)
        .args(["--baseline", "bm25-files"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("overall") && text.contains("bm25-files") && text.contains("p95"),
        "{text}"
    );
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in [
        "hit@1",
        "hit@5",
        "hit@10",
        "all_gold@1",
        "all_gold@5",
        "all_gold@10",
        "context_recall",
        "mrr",
        "context_files",
        "context_tokens",
        "nugget_recall",
    ] {
        assert!(e["metrics"]["overall"].get(key).is_some(), "missing {key}");
    }
    assert!(e["metrics"]["by_category"]["location_lookup"].is_object());
    assert_eq!(e["questions"].as_array().unwrap().len(), 5);
    assert!(e["questions"][0]["files"].is_array());
    assert!(e["baseline"]["metrics"]["overall"]["hit@5"].is_number());
    // Answer contexts are written for questions without nuggets too,
    // headed by the gold symbols they lack.
    let asked = out.path().join("gold.jsonl");
    std::fs::write(
        &asked,
        r#"{"id": "g1", "category": "symbol_explanation", "question": "How are halo cells exchanged between neighbouring ranks?", "gold_files": ["src/Field/HaloCells.hpp"], "gold_symbols": ["picsim::detail::HaloCells::exchangeBoundaries", "picsim::NoSuchThing<int>"]}"#,
    )
    .unwrap();
    let dumps = out.path().join("contexts");
    let o = bin()
        .args(["eval"])
        .arg(out.path())
        .arg("--questions")
        .arg(&asked)
        .arg("--contexts")
        .arg(&dumps)
        .arg("--json")
        .arg(out.path().join("gold.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("context gold-symbol recall") && stdout.contains("over 1 questions"),
        "{stdout}"
    );
    for kind in ["pipeline", "bm25-files"] {
        let dump = std::fs::read_to_string(dumps.join(format!("g1.{kind}.txt"))).unwrap();
        assert!(dump.starts_with("question: How are halo cells"), "{dump}");
        assert!(
            dump.contains("missing gold symbol: picsim::NoSuchThing<int>\n"),
            "{dump}"
        );
    }
    let dump = std::fs::read_to_string(dumps.join("g1.pipeline.txt")).unwrap();
    let (head, text) = dump.split_once("\n\n").unwrap();
    assert_eq!(
        text.contains("exchangeBoundaries"),
        !head.contains("missing gold symbol: picsim::detail::HaloCells::exchangeBoundaries"),
        "{dump}"
    );
    // The report's gold-symbol recall counts the same names: one of two
    // at most (the second symbol does not exist).
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("gold.json")).unwrap())
            .unwrap();
    let recall = &report["metrics"]["context_symbol_recall"]["pipeline"];
    assert_eq!(recall["questions"], 1, "{report}");
    let want = if text.contains("exchangeBoundaries") {
        0.5
    } else {
        0.0
    };
    assert_eq!(recall["overall"].as_f64(), Some(want), "{report}");
    let o = bin()
        .args(["eval"])
        .arg(out.path())
        .arg("--questions")
        .arg(&questions)
        .args(["--field", "alt", "--split", "test"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "fx_004 has no `alt` field");
    assert!(String::from_utf8_lossy(&o.stderr).contains("no string field"));

    let o = index_into(out.path(), &["--no-embed"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("embeddings: none"));
    assert!(std::fs::read_dir(out.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("vectors")));
    let o = bin()
        .args(["search"])
        .arg(out.path())
        .arg("halo")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no vectors"));
    // Without vectors, query still works on keywords and structure.
    let o = bin()
        .args(["query"])
        .arg(out.path())
        .arg("halo exchange")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("dense search off"));
}

#[test]
fn a_missing_embedding_model_stops_early_with_what_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("codegloss.toml");
    std::fs::write(&cfg, "[embedding]\nmodel = \"/nonexistent/model.onnx\"\n").unwrap();
    let out = dir.path().join("index");
    let o = index_into(&out, &["--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("/nonexistent/model.onnx") && e.contains("cargo xtask models"),
        "{e}"
    );
    assert!(!out.join("manifest.json").exists(), "nothing half-written");
}

#[test]
fn errors_are_clear_and_non_zero() {
    let o = bin()
        .args(["index", "/nonexistent/repo", "--out", "/tmp/never"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("error:") && e.contains("/nonexistent/repo") && e.contains("not a directory"),
        "{e}"
    );

    let empty = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["inspect", empty.path().to_str().unwrap(), "--symbol", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("manifest.json"));
}

/// `macros` reports the repository's parse quality as `index` does, and
/// each rule it applies with its uses; the table names what it counts.
#[test]
fn macros_reports_each_rule_with_its_uses() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("lib.hpp"),
        "#ifdef _MSC_VER\n#define LIB_WARN_POP_() __pragma(warning(pop))\n#else\n#define LIB_WARN_POP_()\n#endif\n\
         #define LIB_FN inline\n\nLIB_WARN_POP_()\nLIB_FN int one() { return 1; }\nLIB_FN int two() { return 2; }\n",
    )
    .unwrap();
    let o = bin()
        .args(["macros", repo.path().to_str().unwrap(), "--json", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"], 1, "{v}");
    assert_eq!(v["quality"]["functions"], 2, "{v}");
    assert_eq!(v["quality"]["functions_in_error"], 0, "{v}");
    let rule = |name: &str| {
        v["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no rule {name}: {v}"))
            .clone()
    };
    let pop = rule("LIB_WARN_POP_");
    assert_eq!(pop["origin"], "repository");
    assert_eq!(pop["rule"], "blank with arguments");
    assert_eq!(
        (pop["files"].as_u64(), pop["uses"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(rule("LIB_FN")["uses"], 2);
    assert_eq!(rule("ALL_CAPS")["origin"], "caps_fallback");

    // The fixture: the same share as `index` prints, in a table.
    let o = bin()
        .args(["macros", fixture().to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains(": 0/") && s.contains("function bodies in ERROR nodes"),
        "{s}"
    );
    assert!(
        s.contains("bodies: function bodies kept out of ERROR nodes"),
        "{s}"
    );
}

#[test]
fn help_everywhere() {
    for args in [
        vec!["--help"],
        vec!["index", "--help"],
        vec!["inspect", "--help"],
        vec!["search", "--help"],
        vec!["query", "--help"],
        vec!["eval", "--help"],
        vec!["ask", "--help"],
        vec!["partitions", "--help"],
        vec!["macros", "--help"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains("Usage"));
    }
}

/// `ask` shows the evidence even when the answer server cannot be reached,
/// and (with the test server that `cargo xtask ci` starts) prints a JSON
/// answer record with the prompt signature and citations.
#[test]
fn ask_streams_an_answer_or_shows_the_evidence() {
    let out = tempfile::tempdir().unwrap();
    let o = index_into(out.path(), &["--no-embed"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let o = bin()
        .args(["ask"])
        .arg(out.path())
        .arg("How does BareField fill its halo?")
        .args(["--base-url", &format!("http://127.0.0.1:{port}/v1")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("answer server") && err.contains("running"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("retrieved evidence") && stdout.contains("[1] src/"),
        "{stdout}"
    );

    let Ok(url) = std::env::var("CODEGLOSS_TEST_LLM_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CODEGLOSS_TEST_LLM_URL must be set in CI"
        );
        return;
    };
    let o = bin()
        .args(["ask"])
        .arg(out.path())
        .arg("How does BareField fill its halo?")
        .args([
            "--base-url",
            &url,
            "--model",
            "smollm2",
            "--max-tokens",
            "32",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The answer is the code-written lead (fact lines citing the primary
    // excerpts), then the model's own text.
    let answer = v["answer"].as_str().unwrap();
    let model = v["model_answer"].as_str().unwrap();
    assert!(answer.starts_with("- ["), "{answer}");
    assert!(answer.ends_with(model.trim_start()), "{answer}");
    assert!(v["prompt_template"]
        .as_str()
        .is_some_and(|t| t.starts_with("retrieval_answer")));
    assert_eq!(v["prompt_signature"].as_str().unwrap().len(), 16);
    assert!(v["citations"].is_array() && v["context"].as_array().is_some_and(|c| !c.is_empty()));
    assert!(v["latency_seconds"].as_f64().is_some());
    let o = bin()
        .args(["ask"])
        .arg(out.path())
        .arg("How does BareField fill its halo?")
        .args(["--base-url", &url, "--max-tokens", "24"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("- ["), "{stdout}");
    assert!(stdout.contains("Sources (* = cited):"), "{stdout}");
}

/// `eval --answer` answers every question and can resume, the same
/// question gets the same answer whatever was asked before it; `eval
/// --score` scores nuggets of an answers file.
#[test]
fn eval_answers_resume_and_score() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("index");
    let o = index_into(&idx, &["--no-embed"]);
    assert!(o.status.success());
    let qfile = dir.path().join("q.jsonl");
    std::fs::write(
        &qfile,
        concat!(
            r#"{"id":"a","category":"c1","question":"How does BareField fill its halo?","split":"dev","gold_files":["src/Field/BareField.hpp"],"nuggets":[{"fact":"halo","any":["halo"]},{"fact":"never","any":["zzzz-never"]}]}"#,
            "\n",
            r#"{"id":"b","category":"c2","question":"What is Picsim.cpp for?","gold_files":["src/Picsim.cpp"]}"#,
            "\n"
        ),
    )
    .unwrap();
    // Scoring an answers file needs no server.
    let answers = dir.path().join("answers.json");
    std::fs::write(
        &answers,
        r#"{"run_complete":true,"metrics":{"overall":{},"by_category":{"c1":{}}},"questions":[{"id":"a","answer":"It fills the HALO cells."},{"id":"b","answer":"x"}]}"#,
    )
    .unwrap();
    let o = bin()
        .args(["eval"])
        .arg(&idx)
        .arg("--questions")
        .arg(&qfile)
        .arg("--json")
        .arg(&answers)
        .arg("--score")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&answers).unwrap()).unwrap();
    assert_eq!(v["questions"][0]["nugget_recall"], 0.5);
    assert!(v["questions"][1]["nugget_recall"].is_null());
    assert_eq!(v["metrics"]["overall"]["nugget_recall"], 0.5);

    let Ok(url) = std::env::var("CODEGLOSS_TEST_LLM_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CODEGLOSS_TEST_LLM_URL must be set in CI"
        );
        return;
    };
    let cfg = dir.path().join("codegloss.toml");
    std::fs::write(
        &cfg,
        format!("[answer]\nbase_url = \"{url}\"\nmodel = \"smollm2\"\nmax_tokens = 16\ncontext_tokens = 1200\n"),
    )
    .unwrap();
    let out = dir.path().join("run.json");
    // `eval --answer` of these questions into this report.
    let answer = |questions: &Path, report: &Path| {
        bin()
            .args(["eval"])
            .arg(&idx)
            .arg("--questions")
            .arg(questions)
            .arg("--config")
            .arg(&cfg)
            .arg("--json")
            .arg(report)
            .arg("--answer")
            .output()
            .unwrap()
    };
    let run = || answer(&qfile, &out);
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["run_complete"], true);
    for q in v["questions"].as_array().unwrap() {
        assert!(q["answer"].is_string(), "{q}");
        for k in [
            "citations",
            "context_files",
            "latency_seconds",
            "prompt_tokens",
            "completion_tokens",
            "model",
            "prompt_signature",
        ] {
            assert!(q.get(k).is_some(), "missing {k}");
        }
        // Answers stream, as in `ask`; a stream without usage (the
        // llama-cpp-python server sends none) still gets both counts.
        let prompt = q["prompt_tokens"].as_u64().unwrap();
        let completion = q["completion_tokens"].as_u64().unwrap();
        assert!(prompt > 100 && (1..=16).contains(&completion), "{q}");
    }
    assert!(v["questions"][0]["nugget_recall"].is_number());
    // A second run resumes: every answer is kept as it was.
    let o = run();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("resuming: 2 answers"));
    let w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["questions"][0]["answer"], w["questions"][0]["answer"]);
    // Each request carries the same seed, so an answer depends only on its
    // prompt: asked after the other question, "a" gets the same answer.
    let reversed = dir.path().join("reversed.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&qfile)
        .unwrap()
        .lines()
        .rev()
        .map(String::from)
        .collect();
    std::fs::write(&reversed, lines.join("\n") + "\n").unwrap();
    let again = dir.path().join("again.json");
    let o = answer(&reversed, &again);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let x: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    assert_eq!(x["questions"][1]["id"], "a");
    assert_eq!(v["questions"][0]["answer"], x["questions"][1]["answer"]);
}

/// A model backend that cannot be reached never stops indexing: every
/// gloss falls back to structural, the cause is in the manifest, and the
/// index is complete. The not-yet-available `ort` backend is a clear error.
#[test]
fn index_with_an_unreachable_explanation_server_still_writes_the_index() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("codegloss.toml");
    std::fs::write(
        &cfg,
        format!(
            "[explain]\nbackend = \"openai\"\nlevels = [\"module\"]\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("idx");
    let o = index_into(&out, &["--no-embed", "--config", cfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stdout.contains("fell back to structural"), "{stdout}");
    assert!(stderr.contains("connection refused"), "{stderr}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let fallbacks = manifest["glosses"]["fallbacks"].as_array().unwrap();
    assert!(!fallbacks.is_empty());
    assert!(fallbacks
        .iter()
        .all(|f| f["cause"].as_str().unwrap().contains("connection refused")));
    // The index reads and answers queries.
    let o = bin()
        .args([
            "query",
            out.to_str().unwrap(),
            "How are halo cells filled?",
            "--no-vectors",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // An in-process decoder that is not installed is a fallback too, with
    // the cause that says which decoders exist.
    std::fs::write(
        &cfg,
        "[explain]\nbackend = \"ort\"\nmodel = \"no-such-decoder\"\nlevels = [\"module\"]\n",
    )
    .unwrap();
    let o = index_into(&out, &["--no-embed", "--config", cfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["glosses"]["backend"], "ort");
    let fallbacks = manifest["glosses"]["fallbacks"].as_array().unwrap();
    assert!(!fallbacks.is_empty());
    assert!(fallbacks.iter().all(|f| {
        let cause = f["cause"].as_str().unwrap();
        cause.contains("no-such-decoder") && cause.contains("qwen-coder-1.5b")
    }));
    // `--no-explain` overrides the configuration.
    let o = index_into(
        &out,
        &[
            "--no-embed",
            "--no-explain",
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("glosses: structural"));
}

/// `explain-plan` shows what the explanation stage would send, with no
/// server at all.
#[test]
fn explain_plan_lists_prompts_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("codegloss.toml");
    std::fs::write(
        &cfg,
        "[explain]\nbackend = \"openai\"\nlevels = [\"file\", \"module\"]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let prompts = dir.path().join("prompts.jsonl");
    let o = bin()
        .args(["explain-plan", fixture().to_str().unwrap(), "--config"])
        .arg(&cfg)
        .arg("--prompts")
        .arg(&prompts)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("file_level") && stdout.contains("module_level"),
        "{stdout}"
    );
    assert!(stdout.contains("to generate: 31 glosses"), "{stdout}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&prompts)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 31);
    // Bottom-up: every file prompt comes before every module prompt.
    let first_module = lines.iter().position(|p| p["level"] == "module").unwrap();
    assert!(lines[first_module..].iter().all(|p| p["level"] == "module"));
    assert!(lines[0]["user"]
        .as_str()
        .unwrap()
        .contains("Facts about the file"));
}
