//! Load generator for `geode serve` (used by `scripts/bench-serve`): N concurrent Gemini clients
//! request result pages for a list of paths for a fixed time, then print requests per second,
//! latency percentiles and errors.
//!
//! Each request is a new TCP connection and TLS handshake, as with real Gemini clients; the
//! certificate is not checked (TOFU reduced to "trust"). TLS session resumption is on by default
//! (browsers resume too); `--no-resume` makes every handshake a full one. Loopback only: the
//! target address must be 127.0.0.0/8 or ::1. Not a correctness test: statuses other than 20 are
//! counted, not judged.
//!
//! ```text
//! cargo run --example serve_load -- --addr 127.0.0.1:1965 --host localhost \
//!     --concurrency 32 --seconds 15 --path '/search?the' --path '/search/2?the'
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use geode::fetch::gemini::TofuVerifier;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Drive `geode serve` with concurrent clients and report throughput and latency.
#[derive(Debug, Parser)]
struct Args {
    /// The server's address (loopback only).
    #[arg(long)]
    addr: SocketAddr,
    /// The host name in request URLs and SNI.
    #[arg(long, default_value = "localhost")]
    host: String,
    /// Clients running at once, each one request after the other.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// How long to run.
    #[arg(long, default_value_t = 15)]
    seconds: u64,
    /// A path with query to request, e.g. '/search?the' (repeatable; taken in turn).
    #[arg(long = "path", required = true)]
    paths: Vec<String>,
    /// Make every handshake a full one (no TLS session resumption).
    #[arg(long)]
    no_resume: bool,
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    statuses: BTreeMap<String, u64>,
    bytes: u64,
}

async fn one_request(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    name: ServerName<'static>,
    request: &[u8],
) -> Result<(String, usize), String> {
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
    Ok((status, body.len()))
}

async fn client(
    connector: tokio_rustls::TlsConnector,
    args: Arc<Args>,
    first: usize,
    until: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let name = match ServerName::try_from(args.host.clone()) {
        Ok(name) => name,
        Err(_) => return tally,
    };
    let mut i = first;
    while Instant::now() < until {
        let path = &args.paths[i % args.paths.len()];
        i += 1;
        let request = format!("gemini://{}:{}{path}\r\n", args.host, args.addr.port());
        let started = Instant::now();
        let outcome = tokio::time::timeout(
            Duration::from_secs(30),
            one_request(&connector, args.addr, name.clone(), request.as_bytes()),
        )
        .await
        .unwrap_or_else(|_| Err("timeout".to_string()));
        let took = started.elapsed();
        match outcome {
            Ok((status, bytes)) => {
                tally.latencies.push(took);
                tally.bytes += bytes as u64;
                *tally.statuses.entry(status).or_default() += 1;
            }
            Err(e) => *tally.statuses.entry(e).or_default() += 1,
        }
    }
    tally
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = match rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
    {
        Ok(builder) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(TofuVerifier::new(&provider)))
            .with_no_client_auth(),
        Err(e) => {
            eprintln!("serve_load: TLS: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if args.no_resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let args = Arc::new(args);

    let started = Instant::now();
    let until = started + Duration::from_secs(args.seconds);
    let tallies = runtime.block_on(async {
        let tasks: Vec<_> = (0..args.concurrency)
            .map(|i| tokio::spawn(client(connector.clone(), Arc::clone(&args), i, until)))
            .collect();
        let mut tallies = Vec::new();
        for task in tasks {
            if let Ok(tally) = task.await {
                tallies.push(tally);
            }
        }
        tallies
    });
    let elapsed = started.elapsed().as_secs_f64();

    let mut latencies: Vec<Duration> = Vec::new();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    let mut bytes = 0;
    for tally in tallies {
        latencies.extend(tally.latencies);
        bytes += tally.bytes;
        for (status, n) in tally.statuses {
            *statuses.entry(status).or_default() += n;
        }
    }
    latencies.sort_unstable();
    let ok = statuses.get("20").copied().unwrap_or(0);
    let total: u64 = statuses.values().sum();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{} clients, {:.1} s, {} paths, TLS resumption {}",
        args.concurrency,
        elapsed,
        args.paths.len(),
        if args.no_resume { "off" } else { "on" }
    );
    println!("requests:     {total} ({ok} answered 20)");
    println!("requests/s:   {:.0}", total as f64 / elapsed);
    println!(
        "latency:      p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(percentile(&latencies, 50.0)),
        ms(percentile(&latencies, 90.0)),
        ms(percentile(&latencies, 99.0)),
        ms(latencies.last().copied().unwrap_or_default())
    );
    println!("bytes/s:      {:.0}", bytes as f64 / elapsed);
    let errors: Vec<String> = statuses
        .iter()
        .filter(|(s, _)| s.as_str() != "20")
        .map(|(s, n)| format!("{s}: {n}"))
        .collect();
    println!(
        "errors:       {}",
        if errors.is_empty() {
            "none".to_string()
        } else {
            errors.join(", ")
        }
    );
    if ok == 0 {
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
