//! The fetch layer against the fixture server: what a `Fetcher` makes of answers that real
//! capsules send and the specification allows.

use std::net::SocketAddr;

use geode::fetch::sockets::SocketBudget;
use geode::fetch::{FetchLimits, Fetcher, Outcome};
use geode_fixture::{FixtureConfig, FixtureServer};

const PAGE: &str = "# Bare header\n\nA page served without a MIME type.\n=> /other A link\n";

/// Issue 12, item 9: a success with no MIME type (`20` alone, or `20 `) means
/// `text/gemini; charset=utf-8`; geode threw such bodies away.
#[tokio::test]
async fn a_success_without_a_mime_type_is_gemtext_and_its_body_is_kept() {
    let root = tempfile::tempdir().unwrap();
    let capsule = root.path().join("nomime.test");
    std::fs::create_dir(&capsule).unwrap();
    std::fs::write(capsule.join("page.gmi"), PAGE).unwrap();
    std::fs::write(
        capsule.join("routes.conf"),
        "/bare nomime page.gmi\n/blank file page.gmi \"\"\n/typed file page.gmi\n",
    )
    .unwrap();
    let server = FixtureServer::start(FixtureConfig {
        root: root.path().to_path_buf(),
        listen: vec![SocketAddr::from(([127, 0, 9, 1], 0))],
    })
    .await
    .expect("fixture server");
    let addr = server.addrs[0];
    let fetcher = Fetcher::new(FetchLimits::default(), SocketBudget::new(8));

    for (path, header) in [
        ("/bare", "20"),
        ("/blank", "20 "),
        ("/typed", "20 text/gemini"),
    ] {
        let url = url::Url::parse(&format!("gemini://nomime.test{path}")).unwrap();
        let response = fetcher.fetch(&url, addr).await.expect("a response");
        assert_eq!(response.status, 20, "{path}");
        let Outcome::Success { meta, body } = response.outcome else {
            panic!("{path}: {:?}", response.outcome);
        };
        assert_eq!(
            body,
            PAGE.as_bytes(),
            "{path} ({header:?}): the body is kept"
        );
        let page = geode::content::extract(&url, &meta, &body);
        assert_eq!(page.mime, "text/gemini", "{path}");
        assert_eq!(page.title, "Bare header", "{path}");
        assert_eq!(page.links.len(), 1, "{path}");
    }
    // The fixture really sent the headers the test is about.
    let log = server.requests();
    let meta_of = |path: &str| {
        log.iter()
            .find(|r| r.request.ends_with(path))
            .and_then(|r| r.meta.clone())
    };
    assert_eq!(meta_of("/blank").as_deref(), Some(""));
    assert_eq!(meta_of("/typed").as_deref(), Some("text/gemini"));
    server.shutdown().await;
}

/// Issue 19: a crawl takes turns among many capsules, and each next connection to a capsule
/// resumes its TLS session (no certificate, no signature on either side). rustls' default
/// store remembers 32 servers, so with 40 capsules in turn nothing was resumed.
#[tokio::test]
async fn sessions_of_many_capsules_taking_turns_are_resumed() {
    const CAPSULES: usize = 40;
    let root = tempfile::tempdir().unwrap();
    for i in 0..CAPSULES {
        let capsule = root.path().join(format!("turn{i:02}.test"));
        std::fs::create_dir(&capsule).unwrap();
        std::fs::write(capsule.join("index.gmi"), format!("# Capsule {i}\n")).unwrap();
    }
    let server = FixtureServer::start(FixtureConfig {
        root: root.path().to_path_buf(),
        listen: vec![SocketAddr::from(([127, 0, 9, 2], 0))],
    })
    .await
    .expect("fixture server");
    let addr = server.addrs[0];
    let fetcher = Fetcher::new(FetchLimits::default(), SocketBudget::new(8));
    let mut resumed = [0usize; 3];
    for round in resumed.iter_mut() {
        for i in 0..CAPSULES {
            let url = url::Url::parse(&format!("gemini://turn{i:02}.test/")).unwrap();
            let response = fetcher.fetch(&url, addr).await.expect("a response");
            assert_eq!(response.status, 20, "{url}");
            assert!(
                response.cert_fingerprint.is_some(),
                "{url}: a resumed session still names its certificate, for the pin"
            );
            *round += usize::from(response.resumed);
        }
    }
    assert_eq!(
        resumed,
        [0, CAPSULES, CAPSULES],
        "resumed handshakes per round of {CAPSULES} capsules"
    );
}

/// A Gemini server on `addr` speaking only the TLS `versions`, answering every request with a
/// page; it records, per connection, the version negotiated (`None`: the handshake failed, or
/// never came) and whether the handshake was resumed. With `stall_first`, it holds its first
/// connection open without a word.
async fn tls_server(
    addr: SocketAddr,
    versions: &[&'static rustls::SupportedProtocolVersion],
    stall_first: bool,
) -> (
    SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<Option<(rustls::ProtocolVersion, bool)>>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["versions.test".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let bound = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    tokio::spawn(async move {
        let mut stalled = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            if stall_first && stalled.is_empty() {
                log.lock().unwrap().push(None);
                stalled.push(tcp);
                continue;
            }
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                log.lock().unwrap().push(None);
                continue;
            };
            let conn = tls.get_ref().1;
            let resumed = conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            log.lock()
                .unwrap()
                .push(conn.protocol_version().map(|v| (v, resumed)));
            let mut request = [0u8; 1026];
            let _ = tls.read(&mut request).await;
            let _ = tls.write_all(b"20 text/gemini\r\n# Versions\n").await;
            let _ = tls.shutdown().await;
        }
    });
    (bound, seen)
}

/// Issue 19: a capsule is asked for TLS 1.2, whose resumed handshakes make no key exchange, and
/// its session is resumed from then on.
#[tokio::test]
async fn tls_1_2_is_asked_for_and_its_sessions_resumed() {
    use rustls::ProtocolVersion::TLSv1_2;
    let both = [&rustls::version::TLS13, &rustls::version::TLS12];
    let (addr, seen) = tls_server(SocketAddr::from(([127, 0, 9, 3], 0)), &both, false).await;
    let fetcher = Fetcher::new(FetchLimits::default(), SocketBudget::new(8));
    let url = url::Url::parse("gemini://versions.test/").unwrap();
    for _ in 0..3 {
        let response = fetcher.fetch(&url, addr).await.expect("a response");
        assert_eq!(response.status, 20);
        assert!(response.cert_fingerprint.is_some());
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            Some((TLSv1_2, false)),
            Some((TLSv1_2, true)),
            Some((TLSv1_2, true))
        ]
    );
}

/// A capsule that speaks TLS 1.3 only (the protocol allows it) refuses the TLS 1.2 handshake
/// once: the same fetch asks again with TLS 1.3, and the next ones ask with TLS 1.3 at once.
#[tokio::test]
async fn a_capsule_refusing_tls_1_2_is_asked_again_with_tls_1_3_once() {
    use rustls::ProtocolVersion::TLSv1_3;
    let (addr, seen) = tls_server(
        SocketAddr::from(([127, 0, 9, 4], 0)),
        &[&rustls::version::TLS13],
        false,
    )
    .await;
    let fetcher = Fetcher::new(FetchLimits::default(), SocketBudget::new(8));
    let url = url::Url::parse("gemini://versions.test/").unwrap();
    for _ in 0..3 {
        let response = fetcher.fetch(&url, addr).await.expect("a response");
        assert_eq!(response.status, 20);
        let Outcome::Success { body, .. } = response.outcome else {
            panic!("{:?}", response.outcome);
        };
        assert_eq!(body, b"# Versions\n");
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            None,
            Some((TLSv1_3, false)),
            Some((TLSv1_3, true)),
            Some((TLSv1_3, true))
        ]
    );
}

/// A capsule that lets a TLS 1.2 hello go unanswered past the handshake time limit is asked
/// again at once with TLS 1.3 offered, as one that refuses it is.
#[tokio::test]
async fn a_tls_1_2_hello_left_unanswered_is_asked_again_with_tls_1_3() {
    use rustls::ProtocolVersion::TLSv1_3;
    let both = [&rustls::version::TLS13, &rustls::version::TLS12];
    let (addr, seen) = tls_server(SocketAddr::from(([127, 0, 9, 5], 0)), &both, true).await;
    let limits = FetchLimits {
        handshake_timeout: std::time::Duration::from_millis(300),
        ..FetchLimits::default()
    };
    let fetcher = Fetcher::new(limits, SocketBudget::new(8));
    let url = url::Url::parse("gemini://versions.test/").unwrap();
    for _ in 0..2 {
        let response = fetcher.fetch(&url, addr).await.expect("a response");
        assert_eq!(response.status, 20);
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [None, Some((TLSv1_3, false)), Some((TLSv1_3, true))]
    );
}
