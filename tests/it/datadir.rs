//! The data directory under harsh conditions: the read-only commands on a directory they may
//! only read, or may not even enter (issue 12, item 7), and crashes while an index is being
//! created (item 6).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use crate::serve::{crawl_into, get, runtime, Serving};
use crate::support::{self, Space};

/// Every entry under `dir`, sorted: relative path, size and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, u64, Option<SystemTime>)>) {
        for entry in std::fs::read_dir(dir).expect("readable").flatten() {
            let path = entry.path();
            let meta = entry.metadata().expect("metadata");
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            if meta.is_dir() {
                walk(root, &path, out);
                out.push((relative, 0, None));
            } else {
                out.push((relative, meta.len(), meta.modified().ok()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[cfg(unix)]
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Sets every directory under (and including) `dir` to `dirs` and every file to `files`;
/// children before their parent, so a directory losing its write bit comes last.
#[cfg(unix)]
fn chmod_tree(dir: &Path, dirs: u32, files: u32) {
    chmod(dir, 0o755);
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            chmod_tree(&path, dirs, files);
        } else {
            chmod(&path, files);
        }
    }
    chmod(dir, dirs);
}

/// A prefix that runs a program as a user who owns nothing here: nothing when not root (the
/// files are root's or another test user's), `setpriv` to nobody as root (root ignores file
/// permissions). `None` as root without a working `setpriv`.
fn as_another_user() -> Option<Vec<String>> {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(Vec::new());
    }
    let prefix: Vec<String> = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let works = Command::new(&prefix[0])
        .args(&prefix[1..])
        .arg("true")
        .status()
        .is_ok_and(|s| s.success());
    works.then_some(prefix)
}

/// The `geode` binary, run through `prefix`.
fn geode_command(prefix: &[String]) -> Command {
    match prefix.split_first() {
        None => Command::new(support::geode_bin()),
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(support::geode_bin());
            command
        }
    }
}

fn run(prefix: &[String], args: &[&str]) -> Output {
    geode_command(prefix)
        .args(args)
        .output()
        .expect("geode runs")
}

/// What `search`, `stats`, `backlinks` and `serve` make of `data`, as comparable text.
fn read_everything(prefix: &[String], data: &Path, serve_args: &[&str]) -> Vec<String> {
    let dir = data.to_str().unwrap();
    let mut seen = Vec::new();
    for args in [
        &["search", "--data", dir, "--json", "kettle OR bread"][..],
        &["stats", "--data", dir, "--json"],
        &["backlinks", "--data", dir, "--json", "gemini://beta.test/"],
    ] {
        let out = run(prefix, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "geode {args:?}: {err}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        seen.push(match args[0] {
            "search" => {
                let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                let urls: Vec<_> = doc["hits"]
                    .as_array()
                    .expect("hits")
                    .iter()
                    .map(|h| h["url"].to_string())
                    .collect();
                format!("search: {}", urls.join(" "))
            }
            "stats" => {
                let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                format!(
                    "stats: {} pages, {} documents, {} URLs",
                    doc["pages_indexed"], doc["index_documents"], doc["urls_known"]
                )
            }
            _ => format!("backlinks: {} lines", text.lines().count()),
        });
    }
    let server = Serving::spawn(geode_command(prefix), data, serve_args);
    runtime().block_on(async {
        for path in [
            "/",
            "/search?kettle%20OR%20bread",
            "/stats",
            "/backlinks?gemini://beta.test/",
        ] {
            let answer = get(server.addr, &server.url(path)).await;
            let links = crate::serve::link_targets(&answer.body)
                .into_iter()
                .filter(|t| t.starts_with("gemini://"))
                .count();
            seen.push(format!(
                "serve {path}: {} {} ({links} links)",
                answer.status, answer.meta
            ));
        }
    });
    seen
}

/// Issue 12, item 7: `search` created `.tantivy-meta.lock`, `stats` and `backlinks` created
/// `-wal` and `-shm` files, and on a read-only directory, or as another user, `search` and
/// `stats` failed; on a `chmod 000` directory the message said that nothing was there.
#[cfg(unix)]
#[test]
fn read_only_commands_write_nothing_and_work_on_a_read_only_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // Another user must be able to reach the data directory through this one.
    chmod(tmp.path(), 0o755);
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    crawl_into(&data, "gemini://alpha.test/", None);

    // serve's certificate lives outside the data directory, readable by the other user.
    let certs = tmp.path().join("certs");
    let provider = rustls::crypto::ring::default_provider();
    geode::serve::cert::load_or_create(
        &geode::serve::cert::CertSource::SelfSigned { dir: certs.clone() },
        "localhost",
        &[],
        &provider,
    )
    .expect("certificate");
    chmod(&certs.join("key.pem"), 0o644);
    let (cert, key) = (certs.join("cert.pem"), certs.join("key.pem"));
    let serve_args = [
        "--cert",
        cert.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ];

    // The lock file a Tantivy reader would make: removed, to see that none is made again.
    let _ = std::fs::remove_file(data.join("tantivy").join(".tantivy-meta.lock"));
    let before = snapshot(&data);
    let wanted = read_everything(&[], &data, &serve_args);
    assert!(wanted[0].contains("gemini://"), "{wanted:?}");
    assert!(
        wanted.iter().any(|l| l.starts_with("serve /search")),
        "{wanted:?}"
    );
    let after = snapshot(&data);
    assert_eq!(
        after, before,
        "the read-only commands changed the data directory"
    );

    let Some(prefix) = as_another_user() else {
        println!("SKIPPED the read-only part: running as root without setpriv");
        return;
    };
    // As the crawl leaves it, lock file included, but read-only to the user reading it.
    std::fs::write(data.join("tantivy").join(".tantivy-meta.lock"), b"").unwrap();
    chmod_tree(&data, 0o555, 0o444);
    let got = read_everything(&prefix, &data, &serve_args);
    assert_eq!(got, wanted, "on a read-only directory, as another user");

    // While a crawl writes (its -wal and -shm files exist, and are not the reader's to write).
    let dir = data.to_str().unwrap();
    {
        let _crawl = geode::frontier::Location::data_dir(&data)
            .open()
            .expect("open");
        let out = run(&prefix, &["stats", "--data", dir, "--json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stats beside a writer: {err}");
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            wanted[1].contains(&format!("{} URLs", stats["urls_known"])),
            "{stats}"
        );
    }

    chmod(&data, 0o000);
    for args in [
        &["search", "--data", dir, "kettle"][..],
        &["stats", "--data", dir],
        &["backlinks", "--data", dir, "gemini://beta.test/"],
    ] {
        let out = run(&prefix, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "geode {args:?}: {err}");
        assert!(
            err.contains("Permission denied"),
            "geode {args:?} names the cause: {err}"
        );
        for wrong in ["no index", "no crawl database", "does not exist"] {
            assert!(!err.contains(wrong), "geode {args:?}: {err}");
        }
    }
    // Let the temporary directory be removed.
    chmod_tree(&data, 0o755, 0o644);
}

/// Issue 12, item 6: a crawl killed while it was creating the index left a directory that
/// every later crawl refused ("built by another version of geode"), and `stats` then blamed a
/// missing crawl database. Now the next crawl starts afresh, and `stats` says what is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_killed_while_creating_the_index_leaves_a_directory_the_next_one_uses() {
    let space = Space::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let index = geode::datadir::index_path(data);
    // What the old geode left when killed between Tantivy's files and its schema marker.
    std::fs::create_dir_all(&index).unwrap();
    std::fs::write(index.join(".managed.json"), "[\"meta.json\"]").unwrap();
    std::fs::write(
        index.join("meta.json"),
        serde_json::json!({
            "index_settings": {"docstore_compression": "lz4", "docstore_blocksize": 16384},
            "segments": [],
            "schema": [],
            "opstamp": 0
        })
        .to_string(),
    )
    .unwrap();
    let dir = data.to_str().unwrap();
    let out = run(&[], &["stats", "--data", dir]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no crawl database"), "{err}");

    let summary = support::crawl(support::config(&space, data, std::time::Duration::ZERO)).await;
    assert!(summary.new > 0, "{summary:?}");
    let out = run(&[], &["stats", "--data", dir, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        stats["index_documents"].as_u64().is_some_and(|n| n > 0),
        "{stats}"
    );
    space.server.shutdown().await;
}
