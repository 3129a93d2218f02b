//! What the `codegloss` binary shows of a repository's text (issue 18):
//! code numbered with the file's own lines, the signature that a part of
//! a split function repeats shown as what it is, and bidirectional control
//! characters ("Trojan Source") warned about by `index` and written out as
//! `<U+XXXX>` by every command, while the index keeps the text as it is.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codegloss"))
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn run(cmd: &mut Command) -> (String, String) {
    let o: Output = cmd.output().unwrap();
    let (out, err) = (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    );
    assert!(o.status.success(), "{err}\n{out}");
    (out, err)
}

fn index(repo: &Path, out: &Path) -> (String, String) {
    run(bin()
        .arg("index")
        .arg(repo)
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--no-embed"]))
}

/// A long function: split into parts by the indexer.
fn long_function() -> String {
    let mut s = String::from(
        "#pragma once\n\n/// Many steps.\ninline double many_steps(const double* v,\n                         int n) {\n\n    double t = 0;\n",
    );
    for i in 0..50 {
        s.push_str(&format!(
            "    t += v[{i} % n] * weight_{i} - bias_{i};  // step {i}\n"
        ));
        if i % 8 == 2 {
            s.push('\n');
        }
    }
    s.push_str("    return t;\n}\n");
    s
}

/// `query --code` numbers every code line with the file's line, and shows
/// the repeated signature and the part markers unnumbered.
#[test]
fn query_code_shows_the_files_own_line_numbers() {
    let repo = tempfile::tempdir().unwrap();
    let text = long_function();
    write(repo.path(), "src/Steps.hpp", &text);
    let file: Vec<&str> = text.lines().collect();
    let idx = tempfile::tempdir().unwrap();
    index(repo.path(), idx.path());
    // One question for each part.
    let mut out = String::new();
    for step in [5, 30, 45] {
        let (o, _) = run(bin()
            .arg("query")
            .arg(idx.path())
            .arg(format!("many_steps weight_{step} bias_{step}"))
            .arg("--code"));
        out.push_str(&o);
    }
    let mut numbered = 0;
    let mut framed = 0;
    let mut parts_seen = 0;
    for line in out.lines() {
        if line.contains("function_part") {
            parts_seen += 1;
        }
        // Code lines: indent, a gutter (the line number, or blank), then
        // `| ` for the file's lines and `: ` for the frame.
        let Some(rest) = line.strip_prefix("      ") else {
            continue;
        };
        let Some(at) = rest.find(|c: char| !(c.is_ascii_digit() || c == ' ')) else {
            continue;
        };
        let (gutter, sep, code) = (rest[..at].trim(), &rest[at..at + 1], &rest[at + 2..]);
        match sep {
            "|" => {
                let n: usize = gutter.parse().unwrap_or_else(|_| panic!("{line:?}"));
                assert_eq!(code, file[n - 1], "line {n} is shown as {code:?}");
                numbered += 1;
            }
            ":" => {
                assert!(gutter.is_empty(), "{line:?}");
                framed += 1;
            }
            _ => {}
        }
    }
    assert!(parts_seen >= 3, "{out}");
    assert!(numbered > 20 && framed > 2, "{numbered} {framed}\n{out}");
    assert!(
        out.contains("(signature repeated from line 4; not lines of this part)"),
        "{out}"
    );
    assert!(out.contains(" :     // [part 2/"), "{out}");
    assert!(out.contains(" :     // [part 3/3]"), "{out}");
    assert!(out.contains(" :     // [continues in part 2/3]"), "{out}");
    // The first part starts at the signature, numbered.
    assert!(
        out.contains("       4 | inline double many_steps(const double* v,"),
        "{out}"
    );
}

const RTL_PATH: &str = "src/rtl\u{202E}ppc.exe.hpp";
const RTL_CODE: &str = "#pragma once\n\n/// Checks a name.\ninline bool is_allowed(const char* name) {\n    return name != \"abc\u{202E}fdp.exe\u{202C}\";\n}\n";

fn has_bidi(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'))
}

/// A one-shot answer server that streams `answer`, after reading the whole
/// request.
fn answer_server(answer: &'static str) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = l.accept() else { return };
        let mut req = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = s.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return;
            }
            req.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&req).to_string();
            if let Some(at) = text.find("\r\n\r\n") {
                let len = text[..at]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if req.len() >= at + 4 + len {
                    break;
                }
            }
        }
        let delta = serde_json::json!({"choices": [{"delta": {"content": answer}}]});
        let body = format!("data: {delta}\n\ndata: [DONE]\n\n");
        let _ = s.write_all(
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}")
                .as_bytes(),
        );
    });
    format!("http://127.0.0.1:{port}/v1")
}

/// Trojan Source: `index` warns with path, line and character; `query`,
/// `inspect` and `ask` show every control as `<U+XXXX>` (JSON as `\uXXXX`
/// escapes); the index keeps the text unchanged.
#[test]
fn bidi_controls_are_warned_about_and_shown_written_out() {
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), RTL_PATH, RTL_CODE);
    let idx = tempfile::tempdir().unwrap();
    let (out, err) = index(repo.path(), idx.path());
    assert!(!has_bidi(&out) && !has_bidi(&err), "{out}\n{err}");
    assert!(
        err.contains("warning: src/rtl<U+202E>ppc.exe.hpp: the path holds bidirectional control characters (U+202E (RIGHT-TO-LEFT OVERRIDE) at column 8)"),
        "{err}"
    );
    assert!(
        err.contains("warning: src/rtl<U+202E>ppc.exe.hpp:5: bidirectional control characters (U+202E (RIGHT-TO-LEFT OVERRIDE) at column 24, U+202C (POP DIRECTIONAL FORMATTING) at column 32)"),
        "{err}"
    );

    // The index stores the text as it is.
    let (_, data) = codegloss_indexer::store::read_index(idx.path()).unwrap();
    assert_eq!(data.files[0].path, RTL_PATH);
    assert!(data
        .chunks
        .iter()
        .any(|c| c.code.contains("abc\u{202E}fdp.exe\u{202C}")));

    let (out, _) = run(bin()
        .arg("query")
        .arg(idx.path())
        .arg("is_allowed name")
        .arg("--code"));
    assert!(!has_bidi(&out), "{out}");
    assert!(out.contains("src/rtl<U+202E>ppc.exe.hpp:4-6"), "{out}");
    assert!(
        out.contains("5 |     return name != \"abc<U+202E>fdp.exe<U+202C>\";"),
        "{out}"
    );

    let (out, _) = run(bin()
        .arg("query")
        .arg(idx.path())
        .arg("is_allowed name")
        .args(["--code", "--json"]));
    assert!(!has_bidi(&out), "{out}");
    assert!(out.contains("src/rtl\\u202eppc.exe.hpp"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let chunks = v["chunks"].as_array().unwrap();
    assert!(chunks.iter().any(|c| c["path"] == RTL_PATH));
    assert!(chunks.iter().any(|c| c["code"]
        .as_str()
        .is_some_and(|s| s.contains("abc\u{202E}fdp.exe\u{202C}"))));

    let (out, _) = run(bin()
        .arg("inspect")
        .arg(idx.path())
        .args(["--file", RTL_PATH]));
    assert!(!has_bidi(&out), "{out}");
    assert!(out.contains("file src/rtl<U+202E>ppc.exe.hpp"), "{out}");
    assert!(
        out.contains("warning: src/rtl<U+202E>ppc.exe.hpp:5:"),
        "{out}"
    );

    // The model's answer text, streamed, is shown written out too.
    let url = answer_server("- `is_allowed` rejects \u{2067}abc\u{2069} [1].");
    let (out, _) = run(bin()
        .arg("ask")
        .arg(idx.path())
        .arg("What does is_allowed reject?")
        .args(["--base-url", &url, "--no-vectors"]));
    assert!(!has_bidi(&out), "{out}");
    assert!(
        out.contains("- `is_allowed` rejects <U+2067>abc<U+2069> [1]."),
        "{out}"
    );
    assert!(out.contains("[1] src/rtl<U+202E>ppc.exe.hpp:"), "{out}");
}
