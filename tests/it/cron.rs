//! `geode crawl` as an unattended cron or systemd job (issue 13): one crawl per data directory,
//! `--max-duration`, SIGTERM, exit statuses, `--allow-host`, and seeds people add.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{self, Space};

fn crawl_args(space: &Space, dir: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["crawl", "--data", dir, "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(space.resolve_args());
    args
}

fn spawn(args: &[String]) -> Child {
    Command::new(support::geode_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(support::geode_bin())
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn summary(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {text:?}, stderr {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Waits for a child, at most `limit`.
fn wait_for(mut child: Child, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    (child.wait_with_output().unwrap(), took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_crawl_on_a_data_directory_is_refused_and_a_stale_lock_is_not() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    // What kill -9 leaves behind: a lock file naming a process that is gone.
    std::fs::write(data.path().join("crawl.lock"), "4194304\n").unwrap();
    let args = crawl_args(
        &space,
        &dir,
        &["--seed", "gemini://alpha.test/", "--min-delay-ms", "400"],
    );
    let first = spawn(&args);
    let pid = first.id();
    // Once the first crawl has made a request it holds the lock.
    let deadline = Instant::now() + Duration::from_secs(20);
    while space.requests().is_empty() {
        assert!(Instant::now() < deadline, "the first crawl never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let second = run(args.clone()).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once"
    );
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("another crawl") && err.contains(&format!("pid {pid}")),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let (out, _) = tokio::task::spawn_blocking(move || wait_for(first, Duration::from_secs(120)))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_duration_ends_the_run_in_time_and_the_next_run_continues() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let mut args = crawl_args(
        &space,
        &dir,
        &["--seed", "gemini://alpha.test/", "--min-delay-ms", "300"],
    );
    args.extend(["--max-duration".into(), "1s".into()]);
    let started = Instant::now();
    let out = run(args).await;
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = summary(&out);
    assert_eq!(first["ended"], "time", "{first}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let partial = support::indexed(data.path()).len();
    assert!(
        partial > 0 && partial < 31,
        "{partial} pages after one second"
    );

    let out = run(crawl_args(&space, &dir, &["--min-delay-ms", "5"])).await;
    assert_eq!(summary(&out)["ended"], "done");
    assert_eq!(support::indexed(data.path()).len(), 31);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_run_within_ten_seconds_with_exit_0() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let args = crawl_args(
        &space,
        &dir,
        &["--seed", "gemini://alpha.test/", "--min-delay-ms", "400"],
    );
    let child = spawn(&args);
    let deadline = Instant::now() + Duration::from_secs(20);
    while space.requests().len() < 3 {
        assert!(Instant::now() < deadline, "the crawl never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let (out, took) = tokio::task::spawn_blocking(move || wait_for(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} after SIGTERM"
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(summary(&out)["ended"], "signal");
    let out = run(crawl_args(&space, &dir, &["--min-delay-ms", "5"])).await;
    assert_eq!(summary(&out)["ended"], "done");
    assert_eq!(support::indexed(data.path()).len(), 31);
}

/// The loop records the results arriving within a quarter second in one transaction, and
/// keeps starting requests while it gathers them: a signal must stop those at once all the
/// same, not when the transaction closes. The gathering lasts while requests are in flight,
/// so one capsule here answers only after three seconds and another has pages to spare.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_stops_new_requests_at_once_while_results_are_gathered() {
    let root = tempfile::tempdir().unwrap();
    let pages = root.path().join("pages.test");
    std::fs::create_dir(&pages).unwrap();
    let mut index = String::from("# Pages\n");
    for i in 0..60 {
        index.push_str(&format!("=> p{i}.gmi Page {i}\n"));
        std::fs::write(pages.join(format!("p{i}.gmi")), format!("# Page {i}\n")).unwrap();
    }
    std::fs::write(pages.join("index.gmi"), index).unwrap();
    let held = root.path().join("held.test");
    std::fs::create_dir(&held).unwrap();
    std::fs::write(held.join("index.gmi"), "# Held\n").unwrap();
    std::fs::write(
        held.join("routes.conf"),
        "/ delay 3000 file index.gmi text/gemini\n",
    )
    .unwrap();
    let server = geode_fixture::FixtureServer::start(geode_fixture::FixtureConfig {
        root: root.path().to_path_buf(),
        listen: vec![
            "127.0.1.1:0".parse().unwrap(),
            "127.0.1.2:0".parse().unwrap(),
        ],
    })
    .await
    .expect("fixture server starts");
    let data = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = [
        "crawl",
        "--data",
        &data.path().display().to_string(),
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(
        [
            "--seed",
            "gemini://held.test/",
            "--seed",
            "gemini://pages.test/",
            "--min-delay-ms",
            "20",
        ]
        .map(String::from),
    );
    args.extend([
        "--resolve".into(),
        format!("pages.test={}", server.addrs[0]),
        "--resolve".into(),
        format!("held.test={}", server.addrs[1]),
    ]);
    let child = spawn(&args);
    let deadline = Instant::now() + Duration::from_secs(20);
    let to_pages = |s: &geode_fixture::FixtureServer| {
        s.requests()
            .iter()
            .filter(|r| r.request.contains("pages.test/p"))
            .count()
    };
    while to_pages(&server) < 3 {
        assert!(Instant::now() < deadline, "the crawl never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let signalled = std::time::SystemTime::now()
        .duration_since(server.started_at())
        .unwrap();
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let (out, _) = tokio::task::spawn_blocking(move || wait_for(child, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(summary(&out)["ended"], "signal");
    assert!(to_pages(&server) < 60, "the crawl was stopped midway");
    // A request accepted a little after the signal was on its way already; none later.
    let late: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.accepted > signalled + Duration::from_millis(150))
        .map(|r| r.request)
        .collect();
    assert!(
        late.is_empty(),
        "requests started after the signal: {late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_where_no_capsule_answers_fails_for_cron() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let closed = std::net::TcpListener::bind("127.0.1.99:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = run([
        "crawl",
        "--data",
        &dir,
        "--json",
        "--seed",
        "gemini://down.test/",
        "--resolve",
        &format!("down.test={closed}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect())
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.trim().lines().last().unwrap_or_default();
    assert!(
        last.contains("not one of the 1 capsules tried answered"),
        "{err}"
    );
    // The summary still reaches stdout, for the log.
    assert_eq!(summary(&out)["capsules_answered"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allowed_capsules_are_fetched_the_others_are_recorded() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let hosts_file = data.path().join("allowed.txt");
    std::fs::write(&hosts_file, "# mine\nalpha.test\n*.gamma.test\n").unwrap();
    let out = run(crawl_args(
        &space,
        &dir,
        &[
            "--seed",
            "gemini://alpha.test/",
            "--min-delay-ms",
            "5",
            "--allow-hosts-file",
            &hosts_file.display().to_string(),
            "--allow-host",
            "gamma.test",
            "--deny-host",
            "gamma.test",
        ],
    ))
    .await;
    // The file allows alpha (and gamma's subdomains, none); gamma is allowed and denied, and
    // the denial wins: alpha only.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hosts: std::collections::BTreeSet<String> = space
        .requests()
        .iter()
        .filter_map(|r| support::host_and_path(&r.request).map(|(h, _)| h))
        .collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["alpha.test"]);
    assert!(support::indexed(data.path())
        .iter()
        .all(|u| u.starts_with("gemini://alpha.test/")));
    let waiting = support::urls_in(data.path(), geode::frontier::UrlState::New);
    assert!(
        waiting.iter().any(|u| u.starts_with("gemini://beta.test/")),
        "beta.test is recorded for later: {waiting:?}"
    );
    // Without the scope, a later run fetches the rest.
    let out = run(crawl_args(&space, &dir, &["--min-delay-ms", "5"])).await;
    assert!(out.status.success());
    assert_eq!(support::indexed(data.path()).len(), 31);

    let bad = run(crawl_args(&space, &dir, &["--allow-host", "not a host"])).await;
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_added_by_people_are_crawled_next() {
    let space = Space::start().await;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let seed = |args: &[&str]| {
        let mut all = vec!["seed"];
        all.extend_from_slice(args);
        Command::new(support::geode_bin())
            .args(&all)
            .output()
            .unwrap()
    };
    let out = seed(&[
        "add",
        "--data",
        &dir,
        "gemini://BETA.test",
        "gemini://delta.test/",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("gemini://beta.test/: added"), "{said}");
    // Web seeds are accepted (a run with --protocols gemini,http fetches them); ftp is not.
    for bad in ["ftp://beta.test/", "not a url"] {
        let out = seed(&["add", "--data", &dir, bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
    let listed = String::from_utf8_lossy(&seed(&["list", "--data", &dir]).stdout).into_owned();
    assert!(
        listed.contains("gemini://beta.test/  waiting for a crawl"),
        "{listed}"
    );

    // No --seed: the crawl starts from the added seeds, not from the built-in public list.
    let out = run(crawl_args(&space, &dir, &["--min-delay-ms", "5"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let indexed = support::indexed(data.path());
    assert!(
        indexed.contains(&"gemini://beta.test/".to_string()),
        "{indexed:?}"
    );
    assert!(
        indexed.contains(&"gemini://delta.test/".to_string()),
        "{indexed:?}"
    );
    let listed =
        String::from_utf8_lossy(&seed(&["list", "--data", &dir, "--json"]).stdout).into_owned();
    let first: serde_json::Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(first["in_index"], true, "{listed}");
    assert_eq!(first["source"], "cli");
}

/// The shipped systemd units: what cron jobs get wrong, checked by reading them, and
/// `systemd-analyze verify` (where it is installed) for the rest.
#[test]
fn the_systemd_units_are_sound() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let crawl = read("geode-crawl.service");
    let timer = read("geode-crawl.timer");
    let serve = read("geode-serve.service");
    let has = |unit: &str, line: &str| unit.lines().any(|l| l.trim() == line);
    assert!(has(&crawl, "Type=oneshot"), "a crawl is a one-shot job");
    assert!(
        !crawl.lines().any(|l| l.trim_start().starts_with("Restart")),
        "a crawl never restarts itself"
    );
    assert!(has(&crawl, "User=geode"));
    assert!(has(&crawl, "ProtectSystem=strict"));
    assert!(has(&crawl, "ReadWritePaths=/var/lib/geode"));
    assert!(has(&crawl, "IOSchedulingClass=idle") && has(&crawl, "Nice=10"));
    assert!(has(&timer, "Persistent=true"));
    assert!(timer.lines().any(|l| l.starts_with("RandomizedDelaySec=")));
    assert!(timer.lines().any(|l| l.starts_with("OnCalendar=")));
    assert!(has(&serve, "Restart=on-failure"));
    assert!(has(&serve, "ProtectSystem=strict"));

    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("SKIPPED: systemd-analyze is not installed (Debian package systemd)");
        return;
    };
    assert!(version.status.success());
    // verify wants the programs a unit runs to exist: point them at the binary under test.
    let scratch = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for name in [
        "geode-crawl.service",
        "geode-crawl.timer",
        "geode-serve.service",
    ] {
        let text = read(name).replace("/usr/local/bin/geode", support::geode_bin());
        let path = scratch.path().join(name);
        std::fs::write(&path, text).unwrap();
        paths.push(path);
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(&paths)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Unknown keys and unparsable values are only warnings to verify: any line about our units
    // is a failure here.
    let complaints: Vec<&str> = said.lines().filter(|l| l.contains("geode-")).collect();
    assert!(
        out.status.success() && complaints.is_empty(),
        "systemd-analyze verify: {said}"
    );
}
