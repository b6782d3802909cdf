//! The HTTP(S) half of the fetcher against a real web server (nginx on loopback): pages,
//! robots.txt, redirects, 404/410, 429 with Retry-After, gzip, conditional GET, charsets and
//! HTTPS with a private CA; and against a hand-made server, bodies that trickle or never end.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use geode::fetch::sockets::SocketBudget;
use geode::fetch::{FetchError, FetchLimits, Fetcher, Outcome, Validators};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use crate::web::{self, Nginx};

const LOCATIONS: &str = r#"
    location = /moved { return 301 /page.html; }
    location = /elsewhere { return 302 /page.html; }
    location = /gone { return 410; }
    location = /busy { add_header Retry-After 7 always; return 429; }
    location = /latin1.html { charset iso-8859-1; }
"#;

/// A small website: an HTML page, a long text (worth compressing), robots.txt, a page in
/// ISO-8859-1 (declared by the header) and one in windows-1251 (declared by a meta tag).
fn site() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let p = root.path();
    std::fs::write(
        p.join("page.html"),
        "<html lang=en><title>A web page</title><h1>Hello</h1><p>Plain words.</p>\
         <a href='/long.txt'>the long text</a><a href='gemini://cap.test/'>a capsule</a></html>",
    )
    .unwrap();
    std::fs::write(
        p.join("long.txt"),
        "All work and no play makes a dull crawler.\n".repeat(2000),
    )
    .unwrap();
    std::fs::write(
        p.join("robots.txt"),
        "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n",
    )
    .unwrap();
    std::fs::write(
        p.join("latin1.html"),
        b"<title>Caf\xe9</title><p>cr\xe8me br\xfbl\xe9e</p>",
    )
    .unwrap();
    std::fs::write(
        p.join("cyrillic.html"),
        b"<meta charset=\"windows-1251\"><title>\xcf\xf0\xe8\xe2\xe5\xf2</title><p>\xec\xe8\xf0</p>",
    )
    .unwrap();
    root
}

fn fetcher() -> Fetcher {
    Fetcher::new(FetchLimits::default(), SocketBudget::new(8))
}

fn url(addr: SocketAddr, scheme: &str, path: &str) -> Url {
    Url::parse(&format!("{scheme}://web.test:{}{path}", addr.port())).unwrap()
}

#[tokio::test]
async fn pages_redirects_errors_slow_downs_gzip_conditional_gets_and_charsets() {
    let root = site();
    let ip: IpAddr = "127.0.8.1".parse().unwrap();
    let Some(nginx) = Nginx::start(ip, root.path(), LOCATIONS, None) else {
        return web::skip("pages_redirects_errors...");
    };
    let addr = nginx.addr;
    let fetcher = fetcher();
    let get = |path: &str| {
        let url = url(addr, "http", path);
        let fetcher = fetcher.clone();
        async move { fetcher.fetch(&url, addr).await.expect("a response") }
    };

    // A page, and what content extraction makes of it.
    let page = get("/page.html").await;
    assert_eq!(page.status, 20);
    let Outcome::Success { meta, body } = &page.outcome else {
        panic!("{:?}", page.outcome)
    };
    assert_eq!(meta, "text/html");
    assert!(page.cert_fingerprint.is_none());
    let extracted = geode::content::extract(&url(addr, "http", "/page.html"), meta, body);
    assert_eq!(extracted.title, "A web page");
    assert_eq!(extracted.lang.as_deref(), Some("en"));
    let links: Vec<&str> = extracted.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(
        links,
        [
            format!("http://web.test:{}/long.txt", addr.port()).as_str(),
            "gemini://cap.test/"
        ]
    );

    // robots.txt, read as the web reads it.
    let robots = get("/robots.txt").await;
    let Outcome::Success { body, .. } = &robots.outcome else {
        panic!("{:?}", robots.outcome)
    };
    let rules = geode::robots::Robots::parse_web(&String::from_utf8_lossy(body));
    assert!(!rules.is_allowed("/private/x"));
    assert!(rules.is_allowed("/page.html"));
    assert_eq!(rules.crawl_delay(), Some(Duration::from_secs(1)));

    // Redirects are outcomes, never followed by the fetcher.
    for (path, permanent) in [("/moved", true), ("/elsewhere", false)] {
        let answer = get(path).await;
        let Outcome::Redirect {
            target,
            permanent: p,
        } = &answer.outcome
        else {
            panic!("{path}: {:?}", answer.outcome)
        };
        assert!(target.ends_with("/page.html"), "{target}");
        assert_eq!(*p, permanent, "{path}");
        assert_eq!(answer.status, if permanent { 31 } else { 30 });
    }
    // 404, 410, 429 with Retry-After.
    assert_eq!(get("/missing").await.status, 51);
    assert_eq!(get("/gone").await.status, 52);
    let busy = get("/busy").await;
    assert_eq!(
        busy.outcome,
        Outcome::TemporaryFailure {
            code: 44,
            message: "7".into()
        }
    );

    // gzip: nginx compressed the text, the fetcher inflated it.
    let long = get("/long.txt").await;
    let Outcome::Success { body, .. } = &long.outcome else {
        panic!("{:?}", long.outcome)
    };
    let original = std::fs::read(root.path().join("long.txt")).unwrap();
    assert_eq!(body, &original);
    let sent = nginx.wait_for(|h| h.request.contains("/long.txt")).bytes;
    assert!(
        (sent as usize) < original.len() / 10,
        "sent {sent} bytes for {}",
        original.len()
    );

    // A conditional GET with the validators of the last visit: 304, not modified.
    assert!(long.validators.etag.is_some(), "{:?}", long.validators);
    assert!(long.validators.last_modified.is_some());
    let again = fetcher
        .fetch_revisit(
            &url(addr, "http", "/long.txt"),
            addr,
            &long.validators,
            None,
        )
        .await
        .unwrap();
    assert_eq!(again.outcome, Outcome::NotModified);
    let changed = Validators {
        etag: Some("\"not-the-same\"".into()),
        last_modified: None,
    };
    let fresh = fetcher
        .fetch_revisit(&url(addr, "http", "/long.txt"), addr, &changed, None)
        .await
        .unwrap();
    assert!(matches!(fresh.outcome, Outcome::Success { .. }));

    // Charsets: from the header, and from a meta tag.
    for (path, title, text) in [
        ("/latin1.html", "Café", "crème brûlée"),
        ("/cyrillic.html", "Привет", "мир"),
    ] {
        let answer = get(path).await;
        let Outcome::Success { meta, body } = &answer.outcome else {
            panic!("{path}: {:?}", answer.outcome)
        };
        let page = geode::content::extract(&url(addr, "http", path), meta, body);
        assert_eq!(page.title, title, "{path} ({meta})");
        assert!(page.body.contains(text), "{path}: {}", page.body);
    }

    // nginx really answered what the outcomes say.
    for (path, status) in [
        ("/busy", 429),
        ("/gone", 410),
        ("/moved", 301),
        ("/missing", 404),
    ] {
        assert_eq!(
            nginx.wait_for(|h| h.request.contains(path)).status,
            status,
            "{path}"
        );
    }
    assert_eq!(
        nginx
            .hits()
            .iter()
            .filter(|h| h.request.contains("/long.txt") && h.status == 304)
            .count(),
        1
    );
    // Every request named geode. nginx logs a request after answering it: the last one may
    // not be in the log yet.
    nginx.wait_for(|h| h.request.contains("/cyrillic.html"));
    let hits = nginx.hits();
    assert!(hits.len() >= 12, "{hits:?}");
    assert!(
        hits.iter().all(|h| h.agent.starts_with("geode/")),
        "{hits:?}"
    );
}

#[tokio::test]
async fn https_is_checked_against_the_trusted_authorities() {
    let root = site();
    let ip: IpAddr = "127.0.8.2".parse().unwrap();
    let (tls, ca) = web::private_ca(&["web.test"], &[ip]);
    let Some(nginx) = Nginx::start(ip, root.path(), "", Some(&tls)) else {
        return web::skip("https_is_checked_against_the_trusted_authorities");
    };
    let addr = nginx.addr;
    let page = url(addr, "https", "/page.html");

    let trusting = Fetcher::with_roots(
        FetchLimits::default(),
        SocketBudget::new(8),
        geode::fetch::http::trust_roots(&[ca]),
    );
    let answer = trusting.fetch(&page, addr).await.expect("trusted");
    assert!(
        matches!(&answer.outcome, Outcome::Success { meta, .. } if meta == "text/html"),
        "{:?}",
        answer.outcome
    );
    // ALPN chose HTTP/2, which nginx offers over TLS.
    assert!(
        nginx
            .wait_for(|h| h.request.contains("/page.html"))
            .request
            .ends_with("HTTP/2.0"),
        "{:?}",
        nginx.hits()
    );
    // The address too is named by the certificate.
    let by_ip = Url::parse(&format!("https://{ip}:{}/page.html", addr.port())).unwrap();
    assert!(trusting.fetch(&by_ip, addr).await.is_ok());

    // Without the private CA the certificate is unknown: an error, nothing to index.
    let system_only = fetcher();
    match system_only.fetch(&page, addr).await {
        Err(FetchError::Tls(message)) => assert!(!message.is_empty()),
        other => panic!("{other:?}"),
    }
    // A name the certificate does not carry fails too.
    let wrong = Url::parse(&format!("https://other.test:{}/page.html", addr.port())).unwrap();
    assert!(matches!(
        trusting.fetch(&wrong, addr).await,
        Err(FetchError::Tls(_))
    ));
}

/// A server that answers a header, then sends its body `chunk` bytes at a time every `pause`,
/// forever.
async fn streaming_server(ip: IpAddr, chunk: usize, pause: Duration) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                let head =
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let data = vec![b'a'; chunk];
                while stream.write_all(&data).await.is_ok() {
                    tokio::time::sleep(pause).await;
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn slow_and_endless_bodies_end_at_the_limits() {
    let ip: IpAddr = "127.0.8.3".parse().unwrap();
    let limits = FetchLimits {
        response_timeout: Duration::from_secs(2),
        max_body_bytes: 256 * 1024,
        ..FetchLimits::default()
    };
    let fetcher = Fetcher::new(limits, SocketBudget::new(4));

    let endless = streaming_server(ip, 16 * 1024, Duration::ZERO).await;
    let started = Instant::now();
    let result = fetcher.fetch(&url(endless, "http", "/"), endless).await;
    assert!(
        matches!(result, Err(FetchError::BodyTooLarge(max)) if max == 256 * 1024),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));

    let slow = streaming_server(ip, 1, Duration::from_millis(50)).await;
    let started = Instant::now();
    let result = fetcher.fetch(&url(slow, "http", "/"), slow).await;
    assert!(
        matches!(result, Err(FetchError::Timeout("response"))),
        "{result:?}"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(4),
        "{took:?}"
    );
    // Sockets go back to the budget (the connection's task ends a moment after the fetch).
    let deadline = Instant::now() + Duration::from_secs(2);
    while fetcher.sockets().open() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(fetcher.sockets().open(), 0);
}

/// One request as a server saw it, on the wall clock.
#[derive(Debug)]
struct Seen {
    start: f64,
    end: f64,
    what: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capsule_and_a_website_on_one_address_are_crawled_together_politely() {
    let _timing = crate::support::TIMING.lock().await;
    let ip: IpAddr = "127.0.8.20".parse().unwrap();
    let web_root = tempfile::tempdir().unwrap();
    std::fs::write(
        web_root.path().join("page.html"),
        "<title>The web side</title><p>Web words: heliotrope.</p>\
         <a href='/second.html'>more</a> <a href='gemini://mix.test/back.gmi'>back to the capsule</a>",
    )
    .unwrap();
    std::fs::write(
        web_root.path().join("second.html"),
        "<title>Second</title><p>Deeper web words: marigold.</p>",
    )
    .unwrap();
    std::fs::write(
        web_root.path().join("robots.txt"),
        "User-agent: *\nDisallow: /private\n",
    )
    .unwrap();
    let Some(nginx) = Nginx::start(ip, web_root.path(), "", None) else {
        return web::skip("a_capsule_and_a_website_on_one_address_are_crawled_together_politely");
    };
    let web_page = format!("http://web.test:{}/page.html", nginx.addr.port());

    let gemini_root = tempfile::tempdir().unwrap();
    let capsule = gemini_root.path().join("mix.test");
    std::fs::create_dir(&capsule).unwrap();
    std::fs::write(
        capsule.join("index.gmi"),
        format!("# Mixed\nCapsule words: lavender.\n=> {web_page} The web side\n"),
    )
    .unwrap();
    std::fs::write(
        capsule.join("back.gmi"),
        "# Back\nReached from the web: tansy.\n",
    )
    .unwrap();
    let fixture = geode_fixture::FixtureServer::start(geode_fixture::FixtureConfig {
        root: gemini_root.path().to_path_buf(),
        listen: vec![SocketAddr::new(ip, 0)],
    })
    .await
    .expect("fixture server");

    let data = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(250);
    let mut config = geode::crawl::CrawlConfig::new(data.path());
    config.seeds = vec![geode::urlnorm::normalize("gemini://mix.test/").unwrap()];
    config.resolve = geode::fetch::dns::Overrides::new([
        (
            "mix.test".to_string(),
            geode::fetch::dns::Target {
                ip,
                port: Some(fixture.addrs[0].port()),
            },
        ),
        (
            "web.test".to_string(),
            geode::fetch::dns::Target { ip, port: None },
        ),
    ]);
    config.min_delay = delay;
    config.progress_every = Duration::from_secs(60);
    config.follow_web(true);
    let summary = crate::support::crawl(config).await;
    assert_eq!(summary.failed, 0, "{summary:?}");

    let indexed = crate::support::indexed(data.path());
    let second = format!("http://web.test:{}/second.html", nginx.addr.port());
    for url in [
        "gemini://mix.test/",
        "gemini://mix.test/back.gmi",
        web_page.as_str(),
        second.as_str(),
    ] {
        assert!(indexed.iter().any(|u| u == url), "{url} not in {indexed:?}");
    }

    // One index for both, and `scheme:` tells them apart.
    let dir = data.path().to_str().unwrap();
    let search = |query: &str| {
        let (_, mut urls) = crate::archive::results(dir, query);
        urls.sort();
        urls
    };
    assert_eq!(search("scheme:http"), [web_page.clone(), second.clone()]);
    assert_eq!(
        search("scheme:gemini"),
        ["gemini://mix.test/", "gemini://mix.test/back.gmi"]
    );
    assert!(search("scheme:https").is_empty());
    assert_eq!(search("marigold"), [second.as_str()]);
    assert_eq!(search("tansy"), ["gemini://mix.test/back.gmi"]);

    // Both servers' logs on one timeline: one request at a time to the address, starts at least
    // the delay apart, whichever the protocol.
    let origin = fixture
        .started_at()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut seen: Vec<Seen> = fixture
        .requests()
        .iter()
        .map(|r| Seen {
            start: origin + r.accepted.as_secs_f64(),
            end: origin + r.closed.as_secs_f64(),
            what: r.request.clone(),
        })
        .collect();
    let web_hits = nginx.hits();
    assert_eq!(
        web_hits.first().map(|h| h.request.as_str()),
        Some("GET /robots.txt HTTP/1.1")
    );
    seen.extend(web_hits.iter().map(|h| Seen {
        start: h.start - h.took,
        end: h.start,
        what: h.request.clone(),
    }));
    seen.sort_by(|a, b| a.start.total_cmp(&b.start));
    assert!(seen.len() >= 6, "{seen:?}");
    assert!(seen.iter().any(|s| s.what.starts_with("gemini://")));
    assert!(seen.iter().any(|s| s.what.starts_with("GET ")));
    // The servers stamp a little after the crawler acts; nginx's clock has millisecond steps.
    let slack = 0.03;
    for pair in seen.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(b.start + slack >= a.end, "overlap: {a:?} then {b:?}");
        assert!(
            b.start - a.start + slack >= delay.as_secs_f64(),
            "too close: {a:?} then {b:?}"
        );
    }
}
