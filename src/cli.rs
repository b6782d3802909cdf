//! The command line: clap types, turned once into the library's typed configs. Library code
//! never sees these types.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use geode::fetch::dns::{parse_override_host, parse_target, Target};

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
    /// Crawl geminispace from seeds and from every URL already known, keeping the index true.
    ///
    /// Each run fetches what is due plus everything new it finds: changed pages are indexed
    /// again, unchanged ones wait longer before their next visit, pages that are gone leave the
    /// index. Run it from cron every few days. A crawl can be stopped at any time (Ctrl-C, or
    /// even kill -9) and started again: it continues where it was.
    Crawl(Box<CrawlArgs>),
    /// Search the index.
    ///
    /// Pages with all the words come first (in any form: "running" also finds "runs"), then
    /// pages that lack some, marked "missing:". A word the index does not know is also matched
    /// by its likely spellings, and a "did you mean" line offers the corrected query. Only one
    /// page of each cluster of near-duplicates is shown, with "N similar pages". The query
    /// language:
    ///
    ///   "exact phrase"      the words in a row, exactly as written (always required)
    ///   a OR b              either; AND binds tighter than OR; ( ) group
    ///   a AND b             every word required
    ///   -word, NOT word     exclude
    ///   site:HOST[/~user]   pages of a capsule, its subdomains, or a user directory
    ///   lang:xx             language (declared by the server, else detected)
    ///   mime:TYPE           text/gemini, text/plain, image ... (alias content_type:)
    ///   filetype:EXT        URL extension: gmi, txt, pdf ...
    ///   intitle:WORD        in the title (intitle:"a phrase" too); inurl:WORD in the URL
    ///   size:>N, size:<N    body size in bytes; K, M, G suffixes (size:>10K)
    ///   similar:URL         the page and its near-duplicates
    ///   scheme:S            gemini, http or https pages only
    ///
    /// Results are ranked by text relevance, link authority and a home-page prior, with at
    /// most two results of one capsule in each block of ten.
    #[command(verbatim_doc_comment)]
    Search(SearchArgs),
    /// Show what the index and the crawl database hold.
    Stats(StatsArgs),
    /// List the pages that link to a URL, with their link labels.
    Backlinks(BacklinksArgs),
    /// Suggest capsules to crawl, or list the suggestions.
    Seed(SeedArgs),
    /// Rebuild the index from the crawl archive, with no network.
    ///
    /// The new index is built beside the live one and swapped in atomically: searches and
    /// `geode serve` keep working meanwhile. Pages crawled before the archive existed cannot be
    /// rebuilt; the next crawl fetches them.
    Reindex(ReindexArgs),
    /// Give every indexed page a vector of a sentence-embedding model, for search by meaning.
    ///
    /// With a model (--model DIR, or DIR/model/ in the data directory: a folder with
    /// config.json, tokenizer.json and model.safetensors, e.g. from scripts/fetch-model),
    /// `geode search` and `geode serve` also find pages that say what a query means in other
    /// words. Run it after each crawl (or reindex): pages whose text did not change keep their
    /// vectors, so only new and changed pages are embedded. It stops at --max-pages or
    /// --max-duration and goes on from there the next time; interrupting it loses nothing.
    Embed(EmbedArgs),
    /// Write the index of a shared crawl: apply what crawlers of `--frontier` recorded.
    ///
    /// Crawlers sharing a PostgreSQL database index nothing themselves; this is the one index
    /// writer. It applies the pending pages to the index in --data and exits, or keeps going
    /// with --follow. Search and serve that index as usual (`geode search --data DIR`).
    /// A page of a capsule a crawler still leases waits for it to let the capsule go (at most
    /// ten minutes from its fetch), so that its document is written once, with the labels of
    /// the links its capsule's other pages make to it.
    Index(IndexArgs),
    /// Show everything geode knows about a URL: state, schedule, response, links in and out,
    /// and the text that was indexed.
    Show(ShowArgs),
    /// Write the archived responses as a WARC 1.1 file (one gzip member per record).
    Export(ExportArgs),
    /// Answer Gemini clients (--listen) and web browsers (--http): search, backlinks and
    /// statistics.
    ///
    /// Prints "listening on ADDR" for each Gemini address and "listening on http://ADDR" for
    /// each HTTP one, then serves until Ctrl-C or SIGTERM. The index is read live: pages a
    /// running crawl commits appear without a restart. Without --cert/--key, a self-signed
    /// certificate for --hostname is made on first start and kept in DIR/serve/ so clients that
    /// trusted it on first use keep trusting it. Over HTTP the same pages are HTML, and
    /// /api/search?q=WORDS answers the JSON of `geode search --json`.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct DataDir {
    /// Data directory holding the index and the crawl database.
    #[arg(long, value_name = "DIR", default_value = "index")]
    pub data: PathBuf,
}

/// Where a command that only reads finds the crawl state: the data directory (`--data`) and its
/// SQLite file, or a shared crawl (`--frontier`).
#[derive(Debug, Args)]
pub struct ReadStore {
    #[command(flatten)]
    pub data: DataDir,
    /// Read the crawl state of a shared crawl (postgres://USER@HOST[:PORT]/DB) instead of the
    /// data directory's SQLite file.
    #[arg(long, value_name = "URL")]
    pub frontier: Option<String>,
}

/// Largest `--min-delay-ms`: an hour between two requests to one address is already a crawl
/// that does nearly nothing; more is a typo (and u64::MAX milliseconds overflow every clock).
const MAX_MIN_DELAY_MS: u64 = 3_600_000;

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
    /// Smallest gap, in milliseconds, between the starts of two requests to one IP address
    /// (at most an hour: 3600000).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=MAX_MIN_DELAY_MS))]
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
    /// Most URLs one capsule may have in the crawl database; later ones are not stored, and a
    /// full capsule's pages are no longer expanded (bounds infinite dynamic capsules and link
    /// bombs). The requests a capsule may have in one run are its crawl budget, earned from the
    /// sites linking to it and the pages it has in the index: see the README's crawler policy.
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
    /// Fewer, larger commits make fewer segments to merge; after a crash the pages not yet
    /// committed are fetched again.
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub commit_docs: u32,
    /// Commit the index at least this often, in seconds, while pages arrive.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub commit_secs: u32,
    /// How long a page waits before its first revisit. Pages found unchanged wait longer, up
    /// to --revisit-max; pages found changed come back sooner, down to --revisit-min; feeds are
    /// revisited at --revisit-min. Durations read 90s, 15m, 12h, 3d, 2w.
    #[arg(long, value_name = "DURATION", default_value = "3d", value_parser = parse_duration)]
    pub revisit: Duration,
    /// The shortest revisit interval; also how long a capsule held back by its crawl budget
    /// waits before a run goes on with it, and the longest a capsule that does not answer is
    /// backed off (10 minutes, doubling while it keeps failing, at most a day).
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = parse_duration)]
    pub revisit_min: Duration,
    /// The longest revisit interval (also when 51 pages and permanent redirects are checked
    /// again).
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = parse_duration)]
    pub revisit_max: Duration,
    /// A page whose every visit has failed (network, TLS, 5x other than 51 and 52) for this
    /// long leaves the index; until then it stays searchable.
    #[arg(long, value_name = "DURATION", default_value = "14d", value_parser = parse_duration)]
    pub remove_after: Duration,
    /// Print the run's summary as one JSON object on stdout (fetched, new, changed, unchanged,
    /// removed, failed, ended, ...); progress stays on stderr.
    #[arg(long)]
    pub json: bool,
    /// End the run after this long: stop starting requests, let those in flight finish (a few
    /// seconds at most), commit and exit 0 with `ended: "time"`. The next run continues.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_duration: Option<Duration>,
    /// Fetch only capsules matching this pattern: a host name, or *.example.org for its
    /// subdomains (repeatable). URLs of other capsules are recorded but not fetched.
    #[arg(long = "allow-host", value_name = "PATTERN")]
    pub allow_hosts: Vec<String>,
    /// A file of --allow-host patterns, one per line; blank lines and # comments are ignored.
    #[arg(long, value_name = "FILE")]
    pub allow_hosts_file: Option<PathBuf>,
    /// Never fetch capsules matching this pattern (repeatable); wins over --allow-host.
    #[arg(long = "deny-host", value_name = "PATTERN")]
    pub deny_hosts: Vec<String>,
    /// Which links to follow, comma-separated: `gemini` (the default), or `gemini,http` to
    /// follow http:// and https:// links too. Links of the protocols left out are recorded,
    /// not fetched, and wait for a run that follows them.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "gemini",
        value_parser = ["gemini", "http", "https"]
    )]
    pub protocols: Vec<String>,
    /// How web masters can reach you (a URL or mailto:), named in the User-Agent of HTTP
    /// requests: `geode/VERSION (+CONTACT; ...)`.
    #[arg(long, value_name = "URL", env = "GEODE_CONTACT")]
    pub contact: Option<String>,
    /// Share the crawl with other crawlers through a PostgreSQL database
    /// (postgres://USER@HOST[:PORT]/DB) instead of the data directory's SQLite file. The crawl
    /// then keeps no index: `geode index --frontier URL` writes it.
    #[arg(long, value_name = "URL")]
    pub frontier: Option<String>,
    /// With --frontier: how long this crawler's leases last unless renewed; a crawler that dies
    /// loses its work to the others this long after its last renewal.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub lease: Duration,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// The shared crawl (postgres://USER@HOST[:PORT]/DB).
    #[arg(long, value_name = "URL")]
    pub frontier: String,
    /// Keep applying what the crawlers record until interrupted, instead of exiting when
    /// nothing is left. Once it has caught up, it commits at most every two seconds (each
    /// commit is a segment for Tantivy to merge), so a page waits that much longer.
    #[arg(long)]
    pub follow: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The embedding model of a search: `--model DIR`, else the data directory's `model/`.
#[derive(Debug, Args)]
pub struct ModelArg {
    /// A sentence-embedding model (a folder with config.json, tokenizer.json and
    /// model.safetensors, e.g. all-MiniLM-L6-v2 from scripts/fetch-model) to also search by
    /// meaning; default: DIR/model/ in the data directory when it exists. Pages need vectors
    /// of the same model (`geode embed`).
    #[arg(long, value_name = "DIR", env = "GEODE_MODEL")]
    pub model: Option<PathBuf>,
    /// Search by words alone, even with a model at hand.
    #[arg(long, conflicts_with = "model")]
    pub no_model: bool,
}

impl ModelArg {
    /// The model the flags choose.
    pub fn choice(&self) -> geode::embed::ModelChoice {
        use geode::embed::ModelChoice;
        match (&self.model, self.no_model) {
            (_, true) => ModelChoice::Off,
            (Some(dir), false) => ModelChoice::Folder(dir.clone()),
            (None, false) => ModelChoice::InDataDir,
        }
    }
}

#[derive(Debug, Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// The model (default: DIR/model/ in the data directory).
    #[arg(long, value_name = "DIR", env = "GEODE_MODEL")]
    pub model: Option<PathBuf>,
    /// Embed at most this many pages, then stop (pages that reuse a vector do not count).
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Stop embedding after this long (90s, 15m, 2h); the next run goes on.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_duration: Option<Duration>,
    /// Print the summary as one JSON object: pages, up_to_date, reused, embedded, left,
    /// removed, seconds, pages_per_second, vectors, bytes, bytes_per_page, compacted,
    /// peak_rss_bytes, model, fingerprint.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReindexArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// Commit the new index after this many documents. Each commit lets the writer drop what it
    /// keeps for the documents since the last one; fewer, larger commits make fewer segments to
    /// merge at the end.
    #[arg(long, value_name = "N", default_value_t = geode::reindex::COMMIT_DOCS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub commit_docs: u32,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub store: ReadStore,
    /// Print exactly the body bytes of the latest response, and nothing else.
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// Print everything as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The URL (normalised like every URL geode stores).
    #[arg(value_name = "URL")]
    pub url: String,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub store: ReadStore,
    /// The WARC file to write (`-` for standard output).
    #[arg(long, value_name = "FILE", required = true)]
    pub warc: PathBuf,
    /// Only responses fetched at or after this moment: 2024-05-01 or 2024-05-01T12:00:00Z.
    #[arg(long, value_name = "DATE", value_parser = parse_date)]
    pub since: Option<i64>,
}

/// A date or a moment, as unix seconds: `2024-05-01` (midnight UTC) or RFC 3339.
fn parse_date(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let full = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s.to_string()
    };
    let at = humantime::parse_rfc3339_weak(&full)
        .map_err(|e| format!("{e} (write 2024-05-01 or 2024-05-01T12:00:00Z)"))?;
    at.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .map_err(|_| "a date before 1970".to_string())
}

#[derive(Debug, Args)]
pub struct SeedArgs {
    #[command(subcommand)]
    pub action: SeedAction,
}

#[derive(Debug, Subcommand)]
pub enum SeedAction {
    /// Queue capsules for the next crawl: each gemini:// URL is normalised and fetched by the
    /// next `geode crawl` (with or without --seed).
    Add {
        #[command(flatten)]
        data: DataDir,
        /// Queue them in a shared crawl (postgres://USER@HOST[:PORT]/DB) instead.
        #[arg(long, value_name = "URL")]
        frontier: Option<String>,
        #[arg(required = true, value_name = "URL")]
        urls: Vec<String>,
    },
    /// List the seeds added with `seed add` or the frontend's /add-seed, newest first.
    List {
        #[command(flatten)]
        data: DataDir,
        /// List those of a shared crawl (postgres://USER@HOST[:PORT]/DB) instead.
        #[arg(long, value_name = "URL")]
        frontier: Option<String>,
        /// One JSON object per seed, a line each.
        #[arg(long)]
        json: bool,
    },
}

/// A duration as people write it: 90s, 15m, 12h, 3d, 2w (humantime).
fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("{e} (write e.g. 90s, 15m, 12h, 3d)"))
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// Print the results as one JSON object: query, total, with_all_words, did_you_mean,
    /// took_ms, hits (url, title, snippet, score and its parts, host, mime, lang, size,
    /// fetched_at, missing, similar).
    #[arg(long)]
    pub json: bool,
    /// Every word required, no spelling help: the matching of geode before partial matches.
    #[arg(long)]
    pub strict: bool,
    /// List every near-duplicate instead of one page per cluster.
    #[arg(long)]
    pub all: bool,
    /// Result order: full (text relevance, authority, home-page prior, capsule diversity) or
    /// bm25 (text relevance only, for comparison).
    #[arg(long, value_name = "MODE", default_value = "full", value_parser = ["full", "bm25"])]
    pub ranking: String,
    #[command(flatten)]
    pub model: ModelArg,
    /// Results to show.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,
    /// Results to skip (for paging).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: usize,
    /// The query (several arguments are joined with spaces; quote phrases for the shell:
    /// geode search '"gemini protocol"' site:example.org).
    #[arg(required = true, value_name = "QUERY", allow_hyphen_values = true)]
    pub query: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub store: ReadStore,
    /// Print the statistics as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BacklinksArgs {
    #[command(flatten)]
    pub store: ReadStore,
    /// Print one JSON object per linking page.
    #[arg(long)]
    pub json: bool,
    /// The URL whose backlinks to list.
    #[arg(value_name = "URL")]
    pub url: String,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub data: DataDir,
    /// Serve a shared crawl (postgres://USER@HOST[:PORT]/DB): its index is the one in --data,
    /// written by `geode index`; statistics, backlinks and suggested seeds use the database.
    #[arg(long, value_name = "URL")]
    pub frontier: Option<String>,
    /// Address to listen on for Gemini clients, e.g. 0.0.0.0:1965 or [::]:1965 (port 0 picks
    /// a free port). Repeat to listen on several addresses (IPv4 and IPv6).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        required_unless_present = "http",
        requires = "hostname"
    )]
    pub listen: Vec<std::net::SocketAddr>,
    /// Address to listen on for web browsers and scripts (HTTP/1.1, no TLS: put a TLS proxy
    /// such as nginx in front for the open web), e.g. 127.0.0.1:8080. The same pages as
    /// HTML, and `/api/search?q=...` as JSON. Repeatable; beside or instead of --listen.
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Vec<std::net::SocketAddr>,
    #[command(flatten)]
    pub model: ModelArg,
    /// A web proxy of Gemini pages (e.g. https://portal.example/gemini/): the web pages' results
    /// also link to PREFIX followed by the result's URL without `gemini://`.
    #[arg(long, value_name = "PREFIX", value_parser = parse_proxy_prefix)]
    pub http_gemini_proxy: Option<String>,
    /// A reverse proxy in front of --http (nginx, Caddy) at this IP address: requests it
    /// forwards are rate-limited by the client address it puts last in `X-Forwarded-For`, and
    /// its own connections are not capped by --max-client-connections. Repeatable.
    #[arg(long, value_name = "IP")]
    pub http_trusted_proxy: Vec<std::net::IpAddr>,
    /// The host name clients use to reach this server (in its certificate; Gemini requests for
    /// other hosts are refused with 53). Required with --listen; the web frontend uses the
    /// request's Host header and falls back to it (default there: localhost).
    #[arg(long, value_name = "NAME", value_parser = parse_hostname)]
    pub hostname: Option<String>,
    /// PEM certificate chain to serve (with --key) instead of the kept self-signed one.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM private key of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Connections being answered at once (their request read), across all clients.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    /// Connections in their TLS handshake or request line at once, across all clients, and
    /// every open HTTP connection. When full, a new connection closes the oldest one of the
    /// client holding the most, so idle connections cannot keep new clients out.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_pending_connections: u32,
    /// Connections open at once from one client (IPv4 address or IPv6 /64); 0 for no cap.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_client_connections: u32,
    /// Requests per second allowed to one client (IPv4 address or IPv6 /64), in bursts of up
    /// to --rate-burst; faster clients are answered 44 (Gemini) or 429 (HTTP) with the seconds
    /// to wait. 0 turns the limit off (for benchmarks).
    #[arg(long, value_name = "PER_SEC", default_value_t = 5.0, value_parser = parse_rate)]
    pub rate_limit: f64,
    /// Requests one client may make at once before --rate-limit applies.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_burst: u32,
}

impl ServeArgs {
    pub fn config(&self) -> geode::serve::ServeConfig {
        let hostname = self.hostname.as_deref().unwrap_or("localhost");
        let mut config =
            geode::serve::ServeConfig::new(&self.data.data, self.listen.clone(), hostname);
        config.http = self.http.clone();
        config.http_gemini_proxy = self.http_gemini_proxy.clone();
        config.http_trusted_proxies = self.http_trusted_proxy.clone();
        if let (Some(cert), Some(key)) = (&self.cert, &self.key) {
            config.cert = geode::serve::cert::CertSource::Files {
                cert: cert.clone(),
                key: key.clone(),
            };
        }
        config.max_connections = self.max_connections as usize;
        config.max_pending_connections = self.max_pending_connections as usize;
        config.max_connections_per_client = self.max_client_connections as usize;
        config.rate_limit = (self.rate_limit > 0.0).then_some(geode::serve::ratelimit::RateLimit {
            per_second: self.rate_limit,
            burst: self.rate_burst,
        });
        config.model = self.model.choice();
        config
    }
}

/// A host name or IP address for certificates and request checks: lower case, no trailing dot,
/// no brackets around IPv6.
fn parse_hostname(s: &str) -> Result<String, String> {
    let name = s.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return Ok(bare.to_string());
    }
    if geode::urlnorm::is_host_name(&name, false) {
        Ok(name)
    } else {
        Err(format!(
            "{s:?} is not a host name (ASCII letters, digits, hyphens and dots; use the \
             punycode form of international names) or an IP address"
        ))
    }
}

/// An http:// or https:// URL that proxied links start with.
fn parse_proxy_prefix(s: &str) -> Result<String, String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(s.to_string()),
        _ => Err(format!(
            "{s:?} is not an http:// or https:// URL (e.g. https://portal.example/gemini/)"
        )),
    }
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!(
            "{s:?} is not a rate (a number of requests per second, 0 for none)"
        )),
    }
}

fn parse_resolve(s: &str) -> Result<(String, Target), String> {
    let (host, addr) = s.split_once('=').ok_or_else(|| {
        format!(
            "expected HOST=ADDR, got {:?}",
            s.chars().take(60).collect::<String>()
        )
    })?;
    let host = parse_override_host(host)?;
    let target = parse_target(addr)?;
    Ok((host, target))
}

impl CrawlArgs {
    /// Whether `--protocols` names the web (`http` or `https`: both mean both).
    pub fn follows_web(&self) -> bool {
        self.protocols.iter().any(|p| p == "http" || p == "https")
    }

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
        assert!(parse_resolve("h=127.0.0.1:0").is_err());
        assert!(parse_resolve(&format!("{}=127.0.0.1", "h".repeat(5000))).is_err());
        assert!(parse_resolve("h\u{1b}[2J=127.0.0.1").is_err());
    }

    #[test]
    fn min_delay_is_bounded() {
        let parse = |ms: &str| {
            Cli::try_parse_from(["geode", "crawl", "--min-delay-ms", ms]).map(|cli| {
                match cli.command {
                    Command::Crawl(args) => args.min_delay(),
                    _ => unreachable!("a crawl command"),
                }
            })
        };
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("3600000").unwrap(), Duration::from_secs(3600));
        for bad in ["3600001", "18446744073709551615", "-1", "1e3"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serve_arguments_parse_into_a_config() {
        let cli = Cli::try_parse_from([
            "geode",
            "serve",
            "--data",
            "d",
            "--listen",
            "127.0.0.1:1965",
            "--listen",
            "[::1]:0",
            "--hostname",
            "Geode.Example.",
            "--rate-limit",
            "0",
        ])
        .expect("valid");
        let Command::Serve(args) = cli.command else {
            panic!("not serve");
        };
        let config = args.config();
        assert_eq!(config.hostname, "geode.example");
        assert_eq!(config.listen.len(), 2);
        assert_eq!(config.rate_limit, None);
        assert_eq!(
            (config.max_connections, config.max_pending_connections),
            (256, 1024)
        );
        assert_eq!(
            config.cert,
            geode::serve::cert::CertSource::SelfSigned {
                dir: PathBuf::from("d").join("serve")
            }
        );
        // Each a `geode serve` command line, split at `|` (a host name may hold a blank).
        for bad in [
            "--hostname|h",
            "--listen|127.0.0.1:1965",
            "--listen|localhost:1965|--hostname|h",
            "--listen|127.0.0.1:1|--hostname|a b",
            "--listen|127.0.0.1:1|--hostname|caf\u{e9}.test",
            "--listen|127.0.0.1:1|--hostname|h|--cert|c",
            "--listen|127.0.0.1:1|--hostname|h|--rate-limit|-1",
        ] {
            let args = ["geode", "serve"].into_iter().chain(bad.split('|'));
            assert!(Cli::try_parse_from(args).is_err(), "{bad:?}");
        }
        assert_eq!(parse_hostname("[::1]").as_deref(), Ok("::1"));
    }

    #[test]
    fn the_cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
