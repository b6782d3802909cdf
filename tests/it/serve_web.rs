//! `geode serve --http` as web browsers and scripts meet it: the real binary over the index
//! crawled from the fixture capsules (shared with `serve.rs`), spoken to over plain HTTP/1.1 by
//! a small client written here, so that keep-alive, raw limits and odd requests can be tested
//! byte for byte. Requests come from many loopback source addresses (127.78.x.y) so the
//! per-client limits bite only where a test wants them to. What a real browser sees (forms,
//! links, script injection, accessibility) is tested in Chromium by `scripts/test-browser`.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support;

/// A `geode serve` with an HTTP listener (and a Gemini one, to show both run side by side).
pub(crate) struct WebServing {
    child: Child,
    pub(crate) http: SocketAddr,
    gemini: Option<SocketAddr>,
}

impl WebServing {
    pub(crate) fn start(data: &Path, extra: &[&str]) -> WebServing {
        let mut command = Command::new(support::geode_bin());
        command
            .args(["serve", "--data"])
            .arg(data)
            .args(["--http", "127.0.0.1:0"])
            .args(extra);
        let (mut child, rx) = crate::serve::spawn_with_lines(command);
        let gemini_wanted = extra.contains(&"--listen");
        let (mut http, mut gemini) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(20);
        while http.is_none() || (gemini_wanted && gemini.is_none()) {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                panic!("geode serve did not say where it listens");
            };
            if let Some(addr) = line.strip_prefix("listening on http://") {
                http = addr.parse().ok();
            } else if let Some(addr) = line.strip_prefix("listening on ") {
                gemini = addr.parse().ok();
            }
        }
        WebServing {
            child,
            http: http.unwrap(),
            gemini,
        }
    }

    /// Sends SIGTERM; the exit code and how long the exit took.
    fn terminate(mut self) -> (Option<i32>, Duration) {
        crate::serve::terminate(&mut self.child)
    }
}

impl Drop for WebServing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A loopback source address no other request of this run has used.
fn fresh_source() -> IpAddr {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    IpAddr::V4(Ipv4Addr::new(127, 78, (n >> 8) as u8, n as u8))
}

/// An HTTP/1.1 connection from a chosen source address.
struct Client {
    stream: TcpStream,
    /// Bytes read past the last response.
    buffer: Vec<u8>,
}

/// One response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// Lower-case names; the last value of each.
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Reply {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

impl Client {
    async fn connect(addr: SocketAddr, source: IpAddr) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(source, 0)).unwrap();
        let stream = socket.connect(addr).await.expect("connect");
        Client {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Sends a GET for `target` with `headers` (each "Name: value").
    async fn get(&mut self, target: &str, headers: &[&str]) -> Reply {
        self.send("GET", target, headers, b"").await
    }

    async fn send(&mut self, method: &str, target: &str, headers: &[&str], body: &[u8]) -> Reply {
        let mut request = format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\n");
        for header in headers {
            request.push_str(header);
            request.push_str("\r\n");
        }
        if !body.is_empty() || method == "POST" {
            request.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.write_all(&bytes).await.expect("send");
        self.read_reply(method == "HEAD")
            .await
            .expect("a whole response")
    }

    /// Reads one response; `None` when the connection closed first.
    async fn read_reply(&mut self, head_only: bool) -> Option<Reply> {
        let end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers: BTreeMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = if head_only || status == 304 {
            0
        } else {
            headers.get("content-length")?.parse().ok()?
        };
        while self.buffer.len() < length {
            if !self.fill().await {
                return None;
            }
        }
        let body = self.buffer.drain(..length).collect();
        Some(Reply {
            status,
            headers,
            body,
        })
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match tokio::time::timeout(Duration::from_secs(20), self.stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
            _ => false,
        }
    }

    /// Whether the server closes this connection within `within` (reading nothing).
    async fn closed_within(&mut self, within: Duration) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(within, self.stream.read(&mut byte)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(crate) async fn get(addr: SocketAddr, target: &str) -> Reply {
    Client::connect(addr, fresh_source())
        .await
        .get(target, &[])
        .await
}

/// Every route answers with its status and type, beside a Gemini listener, and the hostile
/// query comes back as text.
#[test]
fn every_route_answers_beside_the_gemini_listener() {
    let data = crate::serve::crawled();
    let server = WebServing::start(
        data,
        &["--listen", "127.0.0.1:0", "--hostname", "localhost"],
    );
    assert!(server.gemini.is_some());
    let addr = server.http;
    runtime().block_on(async {
        let html = "text/html; charset=utf-8";
        for (target, status, kind) in [
            ("/", 200, html),
            ("/search", 200, html),
            ("/search?q=tea", 200, html),
            ("/search?q=tea&page=2", 200, html),
            ("/v/search?q=tea", 200, html),
            ("/backlinks?url=gemini://alpha.test/", 200, html),
            ("/backlinks", 200, html),
            ("/known-hosts", 200, html),
            ("/stats", 200, html),
            ("/about", 200, html),
            ("/add-seed", 200, html),
            ("/api/search?q=tea", 200, "application/json"),
            ("/style.css", 200, "text/css; charset=utf-8"),
            ("/robots.txt", 200, "text/plain; charset=utf-8"),
            (
                "/opensearch.xml",
                200,
                "application/opensearchdescription+xml; charset=utf-8",
            ),
            ("/nope", 404, html),
            ("/search?q=tea&page=0", 400, html),
            ("/search?q=%22unclosed", 400, html),
            ("/api/search?q=tea&limit=1000", 400, "application/json"),
            ("/api/search", 400, "application/json"),
        ] {
            let reply = get(addr, target).await;
            assert_eq!(reply.status, status, "{target}: {}", reply.text());
            assert_eq!(reply.header("content-type"), kind, "{target}");
            assert!(
                reply
                    .header("content-security-policy")
                    .starts_with("default-src 'none'"),
                "{target}: {:?}",
                reply.headers
            );
            assert_eq!(reply.header("x-content-type-options"), "nosniff");
        }
        let robots = get(addr, "/robots.txt").await.text();
        assert!(robots.contains("Disallow: /search\n"), "{robots}");
        assert!(robots.contains("Disallow: /api/\n"), "{robots}");
        let opensearch = get(addr, "/opensearch.xml").await.text();
        assert!(
            opensearch.contains("http://localhost/search?q={searchTerms}"),
            "{opensearch}"
        );
        let mut client = Client::connect(addr, fresh_source()).await;
        let wrong = client.send("DELETE", "/", &[], b"").await;
        assert_eq!(wrong.status, 405);
        assert_eq!(wrong.header("allow"), "GET, HEAD");
        let head = client.send("HEAD", "/about", &[], b"").await;
        assert_eq!(head.status, 200);
        assert!(head.body.is_empty());
        let hostile = "/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E%20%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E";
        let page = get(addr, hostile).await.text();
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)"), "{page}");
    });
}

/// `/api/search` answers the object `geode search --json` prints, for the same query, offset
/// and limit (all but the time taken), and says what is wrong as JSON.
#[test]
fn the_api_answers_what_geode_search_json_prints() {
    let data = crate::serve::crawled();
    let server = WebServing::start(data, &[]);
    runtime().block_on(async {
        for (query, offset, limit) in [("tea", 0, 10), ("gemini capsule", 2, 3), ("zzyzx", 0, 5)] {
            let cli = Command::new(support::geode_bin())
                .args(["search", "--json", "--data"])
                .arg(data)
                .args([
                    "--offset",
                    &offset.to_string(),
                    "--limit",
                    &limit.to_string(),
                ])
                .arg(query)
                .output()
                .unwrap();
            assert!(cli.status.success());
            let mut expected: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
            let target = format!(
                "/api/search?q={}&offset={offset}&limit={limit}",
                query.replace(' ', "+")
            );
            let reply = get(server.http, &target).await;
            assert_eq!(reply.status, 200, "{}", reply.text());
            let mut got: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
            for v in [&mut expected, &mut got] {
                assert!(v["took_ms"].is_number(), "{v}");
                v.as_object_mut().unwrap().remove("took_ms");
            }
            assert_eq!(got, expected, "{query}");
        }
        let bad = get(server.http, "/api/search?q=%22unclosed").await;
        assert_eq!(bad.status, 400);
        let error: serde_json::Value = serde_json::from_slice(&bad.body).unwrap();
        assert!(
            error["error"]
                .as_str()
                .unwrap()
                .contains("unbalanced quote"),
            "{error}"
        );
    });
}

/// A refresh of an unchanged page is answered 304 with no body (result pages without
/// searching again), bodies are gzipped for clients that take gzip, and one connection serves
/// many requests.
#[test]
fn unchanged_pages_cost_nothing_and_bodies_are_gzipped() {
    let data = crate::serve::crawled();
    let server = WebServing::start(data, &[]);
    runtime().block_on(async {
        let mut client = Client::connect(server.http, fresh_source()).await;
        for target in [
            "/search?q=tea",
            "/api/search?q=tea",
            "/",
            "/about",
            "/style.css",
        ] {
            let first = client.get(target, &[]).await;
            assert_eq!(first.status, 200, "{target}");
            let etag = first.header("etag").to_string();
            assert!(etag.starts_with("W/\""), "{target}: {etag:?}");
            let again = client
                .get(target, &[&format!("If-None-Match: {etag}")])
                .await;
            assert_eq!(again.status, 304, "{target}");
            assert!(again.body.is_empty());
            assert_eq!(again.header("etag"), etag, "{target}");
            let other = client.get(target, &["If-None-Match: W/\"0\""]).await;
            assert_eq!(other.status, 200, "{target}");
        }
        let plain = client.get("/about", &[]).await;
        let zipped = client.get("/about", &["Accept-Encoding: gzip, br"]).await;
        assert_eq!(zipped.header("content-encoding"), "gzip");
        assert_eq!(zipped.header("vary"), "Accept-Encoding");
        assert!(zipped.body.len() < plain.body.len());
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&zipped.body[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, plain.body);
        assert!(plain.header("content-encoding").is_empty());
    });
}

/// The limits hold on default flags: one client's rate (429 with Retry-After; the stylesheet
/// is never refused), its connections, and the sizes of request targets, heads and forms.
#[test]
fn the_limits_hold_on_default_flags() {
    let data = crate::serve::crawled();
    let server = WebServing::start(data, &[]);
    let addr = server.http;
    runtime().block_on(async {
        let source = fresh_source();
        let mut client = Client::connect(addr, source).await;
        let mut statuses = Vec::new();
        for _ in 0..40 {
            statuses.push(client.get("/about", &[]).await.status);
        }
        let refused = statuses.iter().filter(|&&s| s == 429).count();
        assert!(statuses[..20].iter().all(|&s| s == 200), "{statuses:?}");
        assert!(refused >= 10, "{statuses:?}");
        let limited = client.get("/about", &[]).await;
        assert_eq!(limited.status, 429);
        let wait: u64 = limited.header("retry-after").parse().unwrap();
        assert!((1..=5).contains(&wait), "{wait}");
        assert_eq!(client.get("/style.css", &[]).await.status, 200);

        // 32 connections of one client at once; the 33rd is closed unanswered.
        let crowd_source = fresh_source();
        let mut crowd = Vec::new();
        for _ in 0..32 {
            crowd.push(Client::connect(addr, crowd_source).await);
        }
        let first = crowd[0].get("/style.css", &[]).await;
        assert_eq!(first.status, 200);
        let mut extra = Client::connect(addr, crowd_source).await;
        assert!(extra.closed_within(Duration::from_secs(5)).await);
        drop(crowd);

        let long = format!("/search?q={}", "a".repeat(3000));
        assert_eq!(get(addr, &long).await.status, 414);
        let mut big_head = Client::connect(addr, fresh_source()).await;
        let cookie = format!("Cookie: {}", "c".repeat(20_000));
        let reply = big_head.get("/", &[&cookie]).await;
        assert_eq!(reply.status, 431);
        let mut form = Client::connect(addr, fresh_source()).await;
        let body = format!("url={}", "a".repeat(10_000));
        let reply = form.send("POST", "/add-seed", &[], body.as_bytes()).await;
        assert_eq!(reply.status, 413);
    });
}

/// Idle keep-alive connections cannot keep a new client out: when the connection budget is
/// full, the newcomer is served and the oldest idle connection of the client holding the most
/// is closed.
#[test]
fn idle_connections_make_way_for_new_clients() {
    let data = crate::serve::crawled();
    let server = WebServing::start(data, &["--max-pending-connections", "4"]);
    runtime().block_on(async {
        let hog = fresh_source();
        let mut idle = Vec::new();
        for _ in 0..4 {
            let mut client = Client::connect(server.http, hog).await;
            assert_eq!(client.get("/style.css", &[]).await.status, 200);
            idle.push(client);
        }
        let newcomer = get(server.http, "/about").await;
        assert_eq!(newcomer.status, 200);
        assert!(
            idle[0].closed_within(Duration::from_secs(5)).await,
            "the oldest idle connection was closed"
        );
    });
}

/// SIGTERM with idle keep-alive connections open: the server closes them and exits at once.
#[test]
fn it_stops_promptly_with_keep_alive_connections_open() {
    let data = crate::serve::crawled();
    let server = WebServing::start(data, &[]);
    let rt = runtime();
    let mut clients = rt.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..3 {
            let mut client = Client::connect(server.http, fresh_source()).await;
            assert_eq!(client.get("/", &[]).await.status, 200);
            clients.push(client);
        }
        clients
    });
    let (code, took) = server.terminate();
    assert_eq!(code, Some(0));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    rt.block_on(async {
        for client in &mut clients {
            assert!(client.closed_within(Duration::from_secs(1)).await);
        }
    });
}

/// The suggestion form records a gemini:// URL for the next crawl and refuses anything else
/// with a message (400), and refuses forms posted from another site (403).
#[test]
fn the_seed_form_takes_gemini_urls_only() {
    let data = tempfile::tempdir().unwrap();
    let server = WebServing::start(data.path(), &[]);
    runtime().block_on(async {
        let form = "Content-Type: application/x-www-form-urlencoded";
        for garbage in ["not+a+url", "https%3A%2F%2Fbeta.test%2F", ""] {
            let mut client = Client::connect(server.http, fresh_source()).await;
            let body = format!("url={garbage}");
            let reply = client
                .send("POST", "/add-seed", &[form], body.as_bytes())
                .await;
            assert_eq!(reply.status, 400, "{garbage}: {}", reply.text());
            assert_eq!(reply.header("cache-control"), "no-store");
        }
        let mut client = Client::connect(server.http, fresh_source()).await;
        // Another site's page posting here: told by the browser's Sec-Fetch-Site, or by the
        // Origin alone where the browser sends no Sec-Fetch-Site.
        for headers in [
            &[
                form,
                "Sec-Fetch-Site: cross-site",
                "Origin: https://elsewhere.example",
            ][..],
            &[form, "Origin: https://elsewhere.example"][..],
        ] {
            let cross = client
                .send(
                    "POST",
                    "/add-seed",
                    headers,
                    b"url=gemini%3A%2F%2Fbeta.test%2F",
                )
                .await;
            assert_eq!(cross.status, 403, "{headers:?}");
        }
        let added = client
            .send(
                "POST",
                "/add-seed",
                &[
                    form,
                    "Sec-Fetch-Site: same-origin",
                    "Origin: http://localhost",
                ],
                b"url=gemini%3A%2F%2FBETA.test",
            )
            .await;
        assert_eq!(added.status, 200, "{}", added.text());
        assert!(
            added.text().contains("gemini://beta.test/"),
            "{}",
            added.text()
        );
    });
    let listed = Command::new(support::geode_bin())
        .args(["seed", "list", "--json", "--data"])
        .arg(data.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    let seeds: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(seeds.len(), 1, "{text}");
    assert_eq!(seeds[0]["url"], "gemini://beta.test/");
    assert_eq!(seeds[0]["source"], "serve");
}

/// `--http-gemini-proxy` adds a second link to each gemini:// result, through the operator's
/// proxy; without the flag there is none.
#[test]
fn results_link_through_the_operators_proxy_when_asked() {
    let data = crate::serve::crawled();
    let prefix = "https://portal.example/gemini/";
    let with = WebServing::start(data, &["--http-gemini-proxy", prefix]);
    let without = WebServing::start(data, &[]);
    runtime().block_on(async {
        let page = get(with.http, "/search?q=tea").await.text();
        assert!(
            page.contains("href=\"https://portal.example/gemini/alpha.test/"),
            "{page}"
        );
        let page = get(without.http, "/search?q=tea").await.text();
        assert!(page.contains("href=\"gemini://alpha.test/"), "{page}");
        assert!(!page.contains("portal.example"), "{page}");
    });
}

/// What the command line refuses before serving anything.
#[test]
fn serve_refuses_what_it_cannot_serve() {
    let data = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--http-gemini-proxy", "ftp://x/"][..],
            "not an http:// or https:// URL",
        ),
        (&[][..], "--listen"),
        (&["--listen", "127.0.0.1:0"][..], "--hostname"),
    ] {
        let out = Command::new(support::geode_bin())
            .args(["serve", "--data"])
            .arg(data.path())
            .args(args)
            .args(if args.is_empty() || args[0] == "--listen" {
                &[][..]
            } else {
                &["--http", "127.0.0.1:0"][..]
            })
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// Behind a trusted reverse proxy, each client the proxy names has its own rate; a proxy not
/// named by the flag is limited as one client, whatever it says.
#[test]
fn a_trusted_proxy_names_its_clients() {
    let data = crate::serve::crawled();
    let proxy: IpAddr = "127.78.250.1".parse().unwrap();
    let server = WebServing::start(data, &["--http-trusted-proxy", "127.78.250.1"]);
    runtime().block_on(async {
        let mut client = Client::connect(server.http, proxy).await;
        for i in 0..40 {
            let forwarded = format!("X-Forwarded-For: 203.0.113.9, 198.51.100.{i}");
            let reply = client.get("/about", &[&forwarded]).await;
            assert_eq!(reply.status, 200, "client {i}");
        }
        let mut statuses = Vec::new();
        for _ in 0..40 {
            let reply = client
                .get("/about", &["X-Forwarded-For: 198.51.100.200"])
                .await;
            statuses.push(reply.status);
        }
        assert!(statuses.contains(&429), "{statuses:?}");
        // An untrusted peer's X-Forwarded-For changes nothing.
        let mut other = Client::connect(server.http, fresh_source()).await;
        let mut statuses = Vec::new();
        for i in 0..40 {
            let forwarded = format!("X-Forwarded-For: 198.51.101.{i}");
            statuses.push(other.get("/about", &[&forwarded]).await.status);
        }
        assert!(statuses.contains(&429), "{statuses:?}");
    });
}

/// A client that sends half a request head, or stays idle between requests, is closed after
/// the head's time limit (10 s), on default flags.
#[test]
fn slow_and_idle_clients_are_closed() {
    let data = crate::serve::crawled();
    let server = WebServing::start(data, &[]);
    runtime().block_on(async {
        let mut slow = Client::connect(server.http, fresh_source()).await;
        slow.stream
            .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
            .await
            .unwrap();
        let mut idle = Client::connect(server.http, fresh_source()).await;
        assert_eq!(idle.get("/about", &[]).await.status, 200);
        let started = Instant::now();
        // The slow client may get a 408 before the close; either way nothing is served.
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(15), slow.stream.read_to_end(&mut rest))
            .await
            .expect("the half-sent request was cut off");
        let text = String::from_utf8_lossy(&rest);
        assert!(!text.contains(" 200 "), "{text}");
        assert!(idle.closed_within(Duration::from_secs(15)).await);
        let took = started.elapsed();
        assert!(took >= Duration::from_secs(8), "closed after {took:?}");
    });
}
