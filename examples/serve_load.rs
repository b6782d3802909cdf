//! Load generator for `geode serve` (used by `scripts/bench-serve`): N concurrent clients of its
//! Gemini frontend or of its web frontend (`--protocol http`) request a list of paths for a
//! fixed time, then print requests per second, latency percentiles and errors.
//!
//! Gemini: each request is a new TCP connection and TLS handshake, as with real Gemini clients;
//! the certificate is not checked (TOFU reduced to "trust"). TLS session resumption is on by
//! default (browsers resume too); `--no-resume` makes every handshake a full one.
//!
//! HTTP: plain HTTP/1.1 through hyper's client connection, as a browser talks to a server next
//! to it: each client keeps one connection open and sends all its requests on it, one after the
//! other (a new connection when the server closes one); `--new-connection` makes a connection
//! per request instead (with `Connection: close`). `--gzip` sends `Accept-Encoding: gzip`, as
//! browsers do; bodies are read whole and counted as they came, not decompressed.
//!
//! Loopback only: the target address must be 127.0.0.0/8 or ::1. Not a correctness test:
//! statuses other than 20 (Gemini) or 200 (HTTP) are counted as errors, not judged. A request's
//! latency runs from before its connection (when it makes one) to the last byte of its body.
//!
//! ```text
//! cargo run --example serve_load -- --addr 127.0.0.1:1965 --host localhost \
//!     --concurrency 32 --seconds 15 --path '/search?the' --path '/search/2?the'
//! cargo run --example serve_load -- --protocol http --gzip --addr 127.0.0.1:8080 \
//!     --concurrency 10 --seconds 5 --path '/search?q=the' --path '/api/search?q=the'
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use geode::fetch::gemini::TofuVerifier;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Drive `geode serve` with concurrent clients and report throughput and latency.
#[derive(Debug, Parser)]
struct Args {
    /// The server's address (loopback only).
    #[arg(long)]
    addr: SocketAddr,
    /// The host name in request URLs and SNI (Gemini) or the Host header (HTTP).
    #[arg(long, default_value = "localhost")]
    host: String,
    /// Which frontend to drive.
    #[arg(long, value_enum, default_value_t = Protocol::Gemini)]
    protocol: Protocol,
    /// Clients running at once, each one request after the other.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// How long to run.
    #[arg(long, default_value_t = 15)]
    seconds: u64,
    /// A path with query to request, e.g. '/search?the' (repeatable; each client takes them in
    /// turn, starting at its own).
    #[arg(long = "path", required = true)]
    paths: Vec<String>,
    /// Gemini: make every handshake a full one (no TLS session resumption).
    #[arg(long)]
    no_resume: bool,
    /// HTTP: a new connection for every request instead of one kept-alive connection a client.
    #[arg(long)]
    new_connection: bool,
    /// HTTP: send `Accept-Encoding: gzip`, as browsers do.
    #[arg(long)]
    gzip: bool,
    /// Print one tab-separated line instead of the report: requests, answered, requests/s,
    /// p50, p90, p99 and max in ms, bytes/s, connections made, answers gzipped, errors.
    #[arg(long)]
    tsv: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Protocol {
    Gemini,
    Http,
}

impl Protocol {
    /// The status of a complete answer.
    fn ok(self) -> &'static str {
        match self {
            Protocol::Gemini => "20",
            Protocol::Http => "200",
        }
    }
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    statuses: BTreeMap<String, u64>,
    bytes: u64,
    connections: u64,
    gzipped: u64,
}

/// One answer: its status, the bytes of its body as sent, whether it came gzipped.
struct Answer {
    status: String,
    bytes: usize,
    gzipped: bool,
}

async fn gemini_request(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    name: ServerName<'static>,
    request: &[u8],
) -> Result<Answer, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {}", e.kind()))?;
    let _ = tcp.set_nodelay(true);
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {}", e.kind()))?;
    tls.write_all(request)
        .await
        .map_err(|e| format!("write: {}", e.kind()))?;
    tls.flush()
        .await
        .map_err(|e| format!("flush: {}", e.kind()))?;
    let mut body = Vec::new();
    tls.read_to_end(&mut body)
        .await
        .map_err(|e| format!("read: {}", e.kind()))?;
    let status = body
        .get(..2)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .unwrap_or_else(|| "no header".to_string());
    Ok(Answer {
        status,
        bytes: body.len(),
        gzipped: false,
    })
}

async fn gemini_client(
    connector: tokio_rustls::TlsConnector,
    args: Arc<Args>,
    first: usize,
    until: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let name = match ServerName::try_from(args.host.clone()) {
        Ok(name) => name,
        Err(_) => {
            *tally.statuses.entry("bad host name".into()).or_default() += 1;
            return tally;
        }
    };
    let mut i = first;
    while Instant::now() < until {
        let path = &args.paths[i % args.paths.len()];
        i += 1;
        let request = format!("gemini://{}:{}{path}\r\n", args.host, args.addr.port());
        let started = Instant::now();
        tally.connections += 1;
        let outcome = tokio::time::timeout(
            Duration::from_secs(30),
            gemini_request(&connector, args.addr, name.clone(), request.as_bytes()),
        )
        .await
        .unwrap_or_else(|_| Err("timeout".to_string()));
        tally.record(outcome, started.elapsed());
    }
    tally
}

/// Opens an HTTP/1.1 connection; its I/O runs on a task of its own until it closes.
async fn http_connect(addr: SocketAddr) -> Result<SendRequest<Empty<Bytes>>, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {}", e.kind()))?;
    let _ = tcp.set_nodelay(true);
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {}", http_error(&e)))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// A short, countable name for a hyper error.
fn http_error(e: &hyper::Error) -> &'static str {
    if e.is_incomplete_message() {
        "connection closed before the answer"
    } else if e.is_canceled() {
        "canceled"
    } else if e.is_closed() {
        "closed"
    } else if e.is_parse() || e.is_parse_status() {
        "bad answer"
    } else if e.is_body_write_aborted() {
        "body aborted"
    } else if e.is_timeout() {
        "timeout"
    } else {
        "other"
    }
}

/// Sends one request on `connection`, opening one first when there is none (or the server
/// closed it); the connection is dropped after an error, or after the answer with
/// `new_connection`.
async fn http_request(
    connection: &mut Option<SendRequest<Empty<Bytes>>>,
    args: &Args,
    path: &str,
    connections: &mut u64,
) -> Result<Answer, String> {
    let mut sender = match connection.take() {
        Some(sender) if !sender.is_closed() => sender,
        _ => {
            *connections += 1;
            http_connect(args.addr).await?
        }
    };
    let mut request = hyper::Request::get(path)
        .header(header::HOST, format!("{}:{}", args.host, args.addr.port()))
        .header(header::USER_AGENT, "geode-serve-load")
        .header(header::ACCEPT, "*/*");
    if args.gzip {
        request = request.header(header::ACCEPT_ENCODING, "gzip");
    }
    if args.new_connection {
        request = request.header(header::CONNECTION, "close");
    }
    let request = request
        .body(Empty::new())
        .map_err(|_| "bad request".to_string())?;
    sender
        .ready()
        .await
        .map_err(|e| format!("ready: {}", http_error(&e)))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {}", http_error(&e)))?;
    let status = response.status().as_u16().to_string();
    let gzipped = response
        .headers()
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {}", http_error(&e)))?
        .to_bytes();
    if !args.new_connection {
        *connection = Some(sender);
    }
    Ok(Answer {
        status,
        bytes: body.len(),
        gzipped,
    })
}

async fn http_client(args: Arc<Args>, first: usize, until: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut connection = None;
    let mut i = first;
    while Instant::now() < until {
        let path = &args.paths[i % args.paths.len()];
        i += 1;
        let started = Instant::now();
        let mut connections = 0;
        let outcome = tokio::time::timeout(
            Duration::from_secs(30),
            http_request(&mut connection, &args, path, &mut connections),
        )
        .await
        .unwrap_or_else(|_| Err("timeout".to_string()));
        tally.connections += connections;
        tally.record(outcome, started.elapsed());
    }
    tally
}

impl Tally {
    fn record(&mut self, outcome: Result<Answer, String>, took: Duration) {
        match outcome {
            Ok(answer) => {
                self.latencies.push(took);
                self.bytes += answer.bytes as u64;
                self.gzipped += u64::from(answer.gzipped);
                *self.statuses.entry(answer.status).or_default() += 1;
            }
            Err(e) => *self.statuses.entry(e).or_default() += 1,
        }
    }

    fn add(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.bytes += other.bytes;
        self.connections += other.connections;
        self.gzipped += other.gzipped;
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn tls_connector(no_resume: bool) -> Result<tokio_rustls::TlsConnector, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(TofuVerifier::new(&provider)))
        .with_no_client_auth();
    if no_resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if !args.addr.ip().to_canonical().is_loopback() {
        eprintln!("serve_load: only loopback addresses (127.0.0.0/8, ::1) may be targeted");
        return std::process::ExitCode::from(2);
    }
    if args.concurrency == 0 || args.seconds == 0 {
        eprintln!("serve_load: --concurrency and --seconds must be positive");
        return std::process::ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("serve_load: runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let connector = match tls_connector(args.no_resume) {
        Ok(connector) => connector,
        Err(e) => {
            eprintln!("serve_load: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let args = Arc::new(args);

    let started = Instant::now();
    let until = started + Duration::from_secs(args.seconds);
    let total = runtime.block_on(async {
        let tasks: Vec<_> = (0..args.concurrency)
            .map(|i| match args.protocol {
                Protocol::Gemini => tokio::spawn(gemini_client(
                    connector.clone(),
                    Arc::clone(&args),
                    i,
                    until,
                )),
                Protocol::Http => tokio::spawn(http_client(Arc::clone(&args), i, until)),
            })
            .collect();
        let mut total = Tally::default();
        for task in tasks {
            match task.await {
                Ok(tally) => total.add(tally),
                Err(_) => *total.statuses.entry("client panicked".into()).or_default() += 1,
            }
        }
        total
    });
    let elapsed = started.elapsed().as_secs_f64();

    let mut latencies = total.latencies;
    latencies.sort_unstable();
    let statuses = total.statuses;
    let ok = statuses.get(args.protocol.ok()).copied().unwrap_or(0);
    let requests: u64 = statuses.values().sum();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let errors: Vec<String> = statuses
        .iter()
        .filter(|(s, _)| s.as_str() != args.protocol.ok())
        .map(|(s, n)| format!("{s}: {n}"))
        .collect();
    let errors = if errors.is_empty() {
        "none".to_string()
    } else {
        errors.join(", ")
    };
    let (p50, p90, p99, max) = (
        ms(percentile(&latencies, 50.0)),
        ms(percentile(&latencies, 90.0)),
        ms(percentile(&latencies, 99.0)),
        ms(latencies.last().copied().unwrap_or_default()),
    );
    if args.tsv {
        println!(
            "{requests}\t{ok}\t{:.0}\t{p50:.2}\t{p90:.2}\t{p99:.2}\t{max:.2}\t{:.0}\t{}\t{}\t{errors}",
            requests as f64 / elapsed,
            total.bytes as f64 / elapsed,
            total.connections,
            total.gzipped,
        );
    } else {
        let how = match args.protocol {
            Protocol::Gemini => format!(
                "Gemini, TLS resumption {}",
                if args.no_resume { "off" } else { "on" }
            ),
            Protocol::Http => format!(
                "HTTP/1.1, {}, gzip {}",
                if args.new_connection {
                    "a connection per request"
                } else {
                    "one kept-alive connection a client"
                },
                if args.gzip { "asked" } else { "not asked" }
            ),
        };
        println!(
            "{} clients, {elapsed:.1} s, {} paths, {how}",
            args.concurrency,
            args.paths.len(),
        );
        println!(
            "requests:     {requests} ({ok} answered {})",
            args.protocol.ok()
        );
        println!("requests/s:   {:.0}", requests as f64 / elapsed);
        println!(
            "latency:      p50 {p50:.1} ms, p90 {p90:.1} ms, p99 {p99:.1} ms, max {max:.1} ms"
        );
        println!("bytes/s:      {:.0}", total.bytes as f64 / elapsed);
        if args.protocol == Protocol::Http {
            println!(
                "connections:  {} made, {} answers gzipped",
                total.connections, total.gzipped
            );
        }
        println!("errors:       {errors}");
    }
    if ok == 0 {
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
