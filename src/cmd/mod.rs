//! The subcommands, one file each (or one per family), and what they share: seeds as the user
//! types them, and the wait for Ctrl-C or SIGTERM. Each returns a [`Failure`] carrying its exit
//! code.

pub(crate) mod archive;
pub(crate) mod crawl;
pub(crate) mod embed;
pub(crate) mod search;
pub(crate) mod seed;
pub(crate) mod serve;
pub(crate) mod stats;

use std::io::Write;

use anyhow::Context;
use geode::urlnorm;

/// Writes `text` to standard output. Every command's results go through here (or through a
/// writer that reports its errors the same way), so a reader that goes away early (`| head`)
/// is an error that `main` recognises and ends quietly on, never a panic as in `println!`.
pub(crate) fn put(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the output")
}

/// [`put`] with a line end.
pub(crate) fn put_line(line: &str) -> anyhow::Result<()> {
    put(&format!("{line}\n"))
}

/// Whether an error is only that standard output was closed by its reader: the normal end of
/// `geode ... | head`, which Unix tools end on quietly.
pub(crate) fn is_closed_output(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

pub(crate) fn parse_seed(seed: &str) -> Result<url::Url, String> {
    let url = urlnorm::normalize(seed).map_err(|e| e.to_string())?;
    if !urlnorm::is_fetchable(&url) {
        return Err(format!("geode cannot crawl {}:// URLs", url.scheme()));
    }
    Ok(url)
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn interrupted() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A stored unix time for people, relative to now.
pub(crate) fn when(unix: Option<&str>) -> String {
    geode::human::when_stored(unix, geode::clock::unix_now())
}

/// The crawl state a read-only command reads: the shared store at `--frontier`, else the data
/// directory's SQLite file.
pub(crate) fn read_frontier(
    data: &std::path::Path,
    shared: Option<&str>,
) -> Result<Box<dyn geode::frontier::Frontier>, crate::Failure> {
    use geode::frontier::{Location, Schema};
    Location::chosen(data, shared, Schema::Expect)
        .and_then(|store| store.open_read_only())
        .map_err(|e| crate::Failure::Runtime(e.into()))
}

impl crate::cli::ReadStore {
    /// The crawl state it names, opened for reading ([`read_frontier`]).
    pub(crate) fn open(&self) -> Result<Box<dyn geode::frontier::Frontier>, crate::Failure> {
        read_frontier(&self.data.data, self.frontier.as_deref())
    }
}
