//! `geode-fixture`: serves a directory of capsules, with their `routes.conf` rules, on loopback
//! addresses (see the `geode_fixture` library).
//!
//! A test and demo tool, not a Gemini server for real use: it refuses to listen anywhere but on
//! loopback, generates throwaway certificates at each start and keeps its request log in memory
//! until it stops.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use geode_fixture::{FixtureConfig, FixtureServer, RequestRecord};

/// Serve static Gemini capsules for tests and demos.
///
/// Every subdirectory of --root is one capsule, named after the host it serves
/// (ROOT/alpha.test/index.gmi is gemini://alpha.test/). Each host gets a fresh self-signed
/// certificate, chosen by SNI; clients without SNI get the first host's. Every --listen address
/// serves every host, so clients must map host names to these addresses themselves
/// (for example with geode's --resolve HOST=ADDR).
///
/// A capsule may hold a routes.conf (never served) with one rule per line,
/// `PATH [first N] [delay MS] ANSWER`, tried before the files; `PATH*` matches a prefix.
/// ANSWER is `NN META` (status 10-69), `file FILE [META]`, `template FILE [META]` ({path}
/// replaced), `calendar`, `big SIZE`, `longmeta LEN`, `raw TEXT` or `close`. Examples:
/// `/old 31 /new`, `/flaky first 2 40 try later`, `/cal/* calendar`,
/// `/latin1.gmi file latin1.gmi text/gemini; charset=iso-8859-1`. A malformed rule stops the
/// server with the file and line; the full syntax is in the geode_fixture documentation.
///
/// Prints "listening on ADDR" once per bound address, then serves until Ctrl-C or SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "geode-fixture", version)]
struct Args {
    /// Directory with one subdirectory per host name.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,

    /// Loopback address to listen on, e.g. 127.0.0.1:1965 or [::1]:0 (port 0 picks a free port).
    /// Repeat to listen on several addresses.
    #[arg(long, value_name = "ADDR", required = true)]
    listen: Vec<SocketAddr>,

    /// When stopping, write every request seen to FILE as JSON lines with accepted, closed
    /// ({secs, nanos} since start), peer, local, sni, request, status and meta (null when no
    /// header was sent).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(addr) = args
        .listen
        .iter()
        .find(|a| !a.ip().to_canonical().is_loopback())
    {
        eprintln!(
            "geode-fixture: refusing to listen on {addr}: only loopback addresses \
             (127.0.0.0/8, ::1) are allowed, this server is for tests and demos"
        );
        return ExitCode::from(2);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("geode-fixture: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("geode-fixture: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let server = FixtureServer::start(FixtureConfig {
        root: args.root.clone(),
        listen: args.listen.clone(),
    })
    .await
    .with_context(|| format!("cannot serve {}", args.root.display()))?;
    {
        let mut out = std::io::stdout().lock();
        for addr in &server.addrs {
            writeln!(out, "listening on {addr}")?;
        }
        // Scripts wait for these lines through a pipe, where stdout is block-buffered.
        out.flush()?;
    }
    wait_for_signal().await?;
    let records = server.finish().await;
    if let Some(path) = &args.log {
        write_log(path, &records).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.context("waiting for Ctrl-C")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    Ok(())
}

fn write_log(path: &std::path::Path, records: &[RequestRecord]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_and_listen_is_required() {
        let ok = Args::try_parse_from([
            "geode-fixture",
            "--root",
            "capsules",
            "--listen",
            "127.0.0.1:0",
            "--listen",
            "[::1]:1965",
            "--log",
            "requests.jsonl",
        ])
        .expect("valid arguments");
        assert_eq!(ok.listen.len(), 2);
        assert_eq!(ok.log, Some(PathBuf::from("requests.jsonl")));
        let cases: &[&[&str]] = &[
            &["geode-fixture", "--root", "capsules"],
            &["geode-fixture", "--listen", "127.0.0.1:0"],
            &["geode-fixture", "--root", "c", "--listen", "localhost:1965"],
        ];
        for argv in cases {
            assert!(Args::try_parse_from(*argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn help_explains_routes_and_the_log_fields() {
        use clap::CommandFactory;
        let help = Args::command().render_long_help().to_string();
        for needle in ["routes.conf", "first N", "calendar", "status 10-69", "meta"] {
            assert!(help.contains(needle), "--help lacks {needle:?}:\n{help}");
        }
    }
}
