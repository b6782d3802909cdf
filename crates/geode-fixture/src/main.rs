//! `geode-fixture`: serves a directory of capsules, with their `routes.conf` rules, on loopback
//! addresses (see the `geode_fixture` library), or with `gspace` a generated geminispace
//! (`geode_fixture::gspace`) and its manifest.
//!
//! A test and demo tool, not a Gemini server for real use: it refuses to listen anywhere but on
//! loopback, generates throwaway certificates at each start and keeps its request log in memory
//! until it stops.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use geode_fixture::gspace::{self, World, WorldSpec};
use geode_fixture::{FixtureConfig, FixtureServer, RequestLog};

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
///
/// `geode-fixture gspace` serves a generated geminispace instead (see its --help).
#[derive(Debug, Parser)]
#[command(
    name = "geode-fixture",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,

    /// Directory with one subdirectory per host name.
    #[arg(long, value_name = "DIR", required = true)]
    root: Option<PathBuf>,

    /// Loopback address to listen on, e.g. 127.0.0.1:1965 or [::1]:0 (port 0 picks a free port).
    /// Repeat to listen on several addresses.
    #[arg(long, value_name = "ADDR", required = true)]
    listen: Vec<SocketAddr>,

    /// When stopping, write every request seen to FILE as JSON lines with accepted, closed
    /// ({secs, nanos} since start), peer, local, sni, request, status and meta (null when no
    /// header was sent).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,

    #[command(flatten)]
    latency: Latency,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a generated geminispace ("geminispace in a box"): capsules of heavy-tailed sizes
    /// on shared addresses, linked by preferential attachment, with traps (a web proxy, a git
    /// browser, a calendar, a query space, a link bomb, a mirror, a slow capsule, a dead
    /// address, pages that change on every request). Pages are computed on each request from
    /// the seed; the same seed always gives the same world.
    ///
    /// World address i is served on the i-th loopback address from --listen-base (skipping
    /// .0 and .255), port 0 (a free port); every host answers on every live address, each with
    /// its own certificate by SNI. A dead capsule's address gets a port where nothing listens.
    ///
    /// Writes the manifest (JSON: seed, epoch, capsules with host, ip, port, kind, pages,
    /// seeds, `resolve` entries host=ip:port for geode's --resolve, legit_pages, traps by
    /// kind) to --manifest, and beside it FILE.pages.tsv (FILE without its extension): one
    /// line per legitimate page reachable from the seeds, URL TAB unique word. Then prints
    /// "listening on ADDR" per live address and a last line "world ready: ...".
    ///
    /// SIGUSR1 moves the world to the next epoch (about a tenth of the legitimate pages
    /// change their text) and prints "epoch N after M requests". Ctrl-C or SIGTERM stops.
    Gspace(GspaceArgs),
}

#[derive(Debug, clap::Args)]
struct GspaceArgs {
    /// The world's seed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// small: 60 capsules on 25 addresses, 3,000 legitimate pages (one capsule of 2,000);
    /// full: 2,750 capsules on 1,200 addresses, 500,000 legitimate pages.
    #[arg(long, value_enum, default_value_t = Size::Small)]
    size: Size,
    /// The first loopback address to serve on.
    #[arg(long, value_name = "IP", default_value = "127.1.0.1")]
    listen_base: Ipv4Addr,
    /// Where to write the JSON manifest (the page list goes beside it).
    #[arg(long, value_name = "FILE")]
    manifest: PathBuf,
    /// When stopping, write every request seen to FILE as JSON lines (as without gspace).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    #[command(flatten)]
    latency: Latency,
}

/// How late every answer comes, for both ways of serving.
#[derive(Debug, clap::Args)]
struct Latency {
    /// Wait MS milliseconds after reading each request before answering (on top of a route's
    /// delay), as a capsule across the Internet would: for benchmarks of a crawl bound by its
    /// capsules' round trips. 0 answers at once.
    #[arg(long, value_name = "MS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=10_000))]
    latency_ms: u64,
}

impl Latency {
    fn duration(&self) -> Duration {
        Duration::from_millis(self.latency_ms)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Size {
    Small,
    Full,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Gspace(gspace)) = &args.command {
        if !gspace.listen_base.is_loopback() {
            eprintln!(
                "geode-fixture: refusing to listen on {}: only loopback addresses \
                 (127.0.0.0/8) are allowed, this server is for tests and demos",
                gspace.listen_base
            );
            return ExitCode::from(2);
        }
    }
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
    let result = match args.command {
        Some(Command::Gspace(gspace)) => runtime.block_on(run_world(gspace)),
        None => runtime.block_on(run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("geode-fixture: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let root = args.root.clone().context("--root is required")?;
    let server = FixtureServer::start(FixtureConfig {
        root: root.clone(),
        listen: args.listen.clone(),
    })
    .await
    .with_context(|| format!("cannot serve {}", root.display()))?;
    server.set_latency(args.latency.duration());
    {
        let mut out = std::io::stdout().lock();
        for addr in &server.addrs {
            writeln!(out, "listening on {addr}")?;
        }
        // Scripts wait for these lines through a pipe, where stdout is block-buffered.
        out.flush()?;
    }
    wait_for_signal().await?;
    let log = server.stop().await;
    if let Some(path) = &args.log {
        write_log(path, &log).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

async fn run_world(args: GspaceArgs) -> anyhow::Result<()> {
    let spec = match args.size {
        Size::Small => WorldSpec::small(args.seed),
        Size::Full => WorldSpec::full(args.seed),
    };
    let world = Arc::new(World::generate(&spec));
    let ips = gspace::loopback_addresses(args.listen_base, world.addresses())?;
    let server = FixtureServer::start_world(Arc::clone(&world), &ips)
        .await
        .context("cannot serve the world")?;
    server.set_latency(args.latency.duration());
    let tsv = gspace::write_manifest(&world, server.endpoints(), &args.manifest)
        .with_context(|| format!("writing {}", args.manifest.display()))?;
    {
        let mut out = std::io::stdout().lock();
        for addr in &server.addrs {
            writeln!(out, "listening on {addr}")?;
        }
        writeln!(
            out,
            "world ready: seed {}, {} capsules on {} addresses, {} legitimate pages; manifest {}, \
             pages {}",
            spec.seed,
            world.capsules().len(),
            world.addresses(),
            world.legit_page_count(),
            args.manifest.display(),
            tsv.display()
        )?;
        out.flush()?;
    }
    serve_epochs(&server, &world).await?;
    let log = server.stop().await;
    if let Some(path) = &args.log {
        write_log(path, &log).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Moves the world one epoch on at each SIGUSR1, until Ctrl-C or SIGTERM.
async fn serve_epochs(server: &FixtureServer, world: &World) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut usr1 = signal(SignalKind::user_defined1()).context("installing SIGUSR1 handler")?;
        let stop = wait_for_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                result = &mut stop => return result,
                _ = usr1.recv() => {
                    world.set_epoch(world.epoch() + 1);
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "epoch {} after {} requests", world.epoch(), server.request_count())?;
                    out.flush()?;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (server, world);
        wait_for_signal().await
    }
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

fn write_log(path: &Path, log: &RequestLog) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    log.write_json_lines(&mut out)?;
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
        assert!(ok.command.is_none());
        let world = Args::try_parse_from([
            "geode-fixture",
            "gspace",
            "--seed",
            "9",
            "--size",
            "full",
            "--manifest",
            "world.json",
        ])
        .expect("valid gspace arguments");
        match world.command {
            Some(Command::Gspace(g)) => {
                assert_eq!((g.seed, g.size), (9, Size::Full));
                assert_eq!(g.listen_base, Ipv4Addr::new(127, 1, 0, 1));
            }
            other => panic!("{other:?}"),
        }
        let cases: &[&[&str]] = &[
            &["geode-fixture", "--root", "capsules"],
            &["geode-fixture", "--listen", "127.0.0.1:0"],
            &["geode-fixture", "--root", "c", "--listen", "localhost:1965"],
            &[
                "geode-fixture",
                "gspace",
                "--size",
                "huge",
                "--manifest",
                "m.json",
            ],
            &["geode-fixture", "gspace", "--seed", "1"],
            &[
                "geode-fixture",
                "--root",
                "c",
                "gspace",
                "--manifest",
                "m.json",
            ],
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
