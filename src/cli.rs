//! The command line: clap types, turned once into the library's typed configs. Library code
//! never sees these types.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use geode::fetch::dns::{parse_target, Target};

/// geode: a polite search engine for geminispace.
///
/// Crawl capsules into a local full-text index, then search it from the command line.
/// The data directory (default ./index) holds the index and the crawl database.
#[derive(Debug, Parser)]
#[command(name = "geode", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Crawl geminispace from seeds and from every URL already known, updating the index.
    ///
    /// A crawl can be stopped at any time (Ctrl-C, or even kill -9) and started again: it
    /// continues where it was.
    Crawl(CrawlArgs),
    /// Search the index.
    ///
    /// Every word must match. Quotes search for a phrase; field:term limits a term to a field
    /// (title, headings, body, link_labels).
    Search(SearchArgs),
    /// Show what the index and the crawl database hold.
    Stats(StatsArgs),
    /// List the pages that link to a URL, with their link labels.
    Backlinks(BacklinksArgs),
}

#[derive(Debug, Args)]
pub struct DataDir {
    /// Data directory holding the index and the crawl database.
    #[arg(long, value_name = "DIR", default_value = "index")]
    pub data: PathBuf,
}

#[derive(Debug, Args)]
pub struct CrawlArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// A URL to start from (repeatable). Without seeds, a crawl continues from the URLs it
    /// knows, or from built-in well-known capsules when it knows none.
    #[arg(long = "seed", value_name = "URL")]
    pub seeds: Vec<String>,
    /// A file of seed URLs, one per line; blank lines and lines starting with # are ignored.
    #[arg(long, value_name = "FILE")]
    pub seeds_file: Option<PathBuf>,
    /// Stop after fetching this many pages in this run.
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Smallest gap, in milliseconds, between the starts of two requests to one IP address.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub min_delay_ms: u64,
    /// Requests in flight at once, across all IP addresses (at most one per address).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub concurrency: u32,
    /// Connect to ADDR for HOST instead of asking DNS, like curl's --resolve (repeatable).
    /// ADDR is an IP address, optionally with a port that replaces the URL's:
    /// --resolve example.org=127.0.1.1 or --resolve example.org=127.0.0.1:40123
    #[arg(long = "resolve", value_name = "HOST=ADDR", value_parser = parse_resolve)]
    pub resolve: Vec<(String, Target)>,
    /// Link hops from a seed after which URLs are recorded but no longer fetched.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub max_depth: u32,
    /// Most URLs one capsule may have in the crawl database; later ones are recorded but not
    /// fetched (bounds infinite dynamic capsules).
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub capsule_budget: u64,
    /// A file of URLs never to fetch: one rule per line, a URL prefix, or re:REGEX searched in
    /// the URL; # starts a comment.
    #[arg(long, value_name = "FILE")]
    pub exclude_file: Option<PathBuf>,
    /// Close crawler sockets with a reset (SO_LINGER 0): frees them at once and leaves no
    /// TIME_WAIT behind. By default sockets close gracefully.
    #[arg(long)]
    pub reset_on_close: bool,
    /// Commit the index after this many new documents (it also commits every --commit-secs).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub commit_docs: u32,
    /// Commit the index at least this often, in seconds, while pages arrive.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub commit_secs: u32,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// Print one JSON object per result line (url, title, snippet, score, host, mime, ...).
    #[arg(long)]
    pub json: bool,
    /// Results to show.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,
    /// Results to skip (for paging).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: usize,
    /// The query words.
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// Print the statistics as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BacklinksArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// Print one JSON object per linking page.
    #[arg(long)]
    pub json: bool,
    /// The URL whose backlinks to list.
    #[arg(value_name = "URL")]
    pub url: String,
}

fn parse_resolve(s: &str) -> Result<(String, Target), String> {
    let (host, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("expected HOST=ADDR, got {s:?}"))?;
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Err(format!("no host name in {s:?}"));
    }
    let target = parse_target(addr).ok_or_else(|| {
        format!("{addr:?} is not an IP address (IPv4 or IPv6, optionally with :PORT)")
    })?;
    Ok((host, target))
}

impl CrawlArgs {
    pub fn min_delay(&self) -> Duration {
        Duration::from_millis(self.min_delay_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_overrides_parse() {
        let (host, target) = parse_resolve("Example.ORG.=127.0.1.1").unwrap();
        assert_eq!(host, "example.org");
        assert_eq!(target.ip.to_string(), "127.0.1.1");
        assert_eq!(parse_resolve("h=[::1]:1966").unwrap().1.port, Some(1966));
        assert!(parse_resolve("h").is_err());
        assert!(parse_resolve("=1.2.3.4").is_err());
        assert!(parse_resolve("h=localhost").is_err());
    }

    #[test]
    fn the_cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
