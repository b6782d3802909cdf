//! The `geode` command: parses arguments, runs one subcommand, maps errors to exit codes
//! (0 success, 1 runtime error, 2 usage error or malformed query).

mod cli;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use clap::Parser;

use cli::{
    BacklinksArgs, Cli, Command, CrawlArgs, ExportArgs, ReindexArgs, SearchArgs, SeedAction,
    SeedArgs, ServeArgs, ShowArgs, StatsArgs,
};
use geode::crawl::policy::Exclusions;
use geode::crawl::{self, CrawlConfig};
use geode::fetch::dns;
use geode::frontier::Frontier;
use geode::index::{IndexError, Ranking, SearchIndex, SearchOptions};
use geode::urlnorm;

/// An error with the exit code it deserves.
enum Failure {
    /// Bad input from the user: exit 2.
    Usage(anyhow::Error),
    /// Anything else: exit 1.
    Runtime(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Runtime(e)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = if matches!(
        cli.command,
        Command::Crawl(_) | Command::Serve(_) | Command::Reindex(_)
    ) {
        "info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("GEODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("geode={default_level}")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let result = match cli.command {
        Command::Crawl(args) => crawl(args),
        Command::Search(args) => search(args),
        Command::Stats(args) => stats(args),
        Command::Backlinks(args) => backlinks(args),
        Command::Seed(args) => seed(args),
        Command::Reindex(args) => reindex(args),
        Command::Show(args) => show(args),
        Command::Export(args) => export(args),
        Command::Serve(args) => serve(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("geode: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("geode: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn crawl(args: CrawlArgs) -> Result<(), Failure> {
    let mut config = CrawlConfig::new(&args.data.data);
    let mut seeds = Vec::new();
    for seed in &args.seeds {
        seeds.push(parse_seed(seed).map_err(|e| Failure::Usage(anyhow!("--seed {seed}: {e}")))?);
    }
    if let Some(file) = &args.seeds_file {
        let mut from_file = 0usize;
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading seeds file {}", file.display()))
            .map_err(Failure::Usage)?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let seed = parse_seed(line).map_err(|e| {
                Failure::Usage(anyhow!("{}:{}: {line}: {e}", file.display(), n + 1))
            })?;
            seeds.push(seed);
            from_file += 1;
        }
        // Without seeds the crawl falls back to the URLs it knows or the built-in public list;
        // a file given on purpose that holds none is a mistake, not a wish for either.
        if from_file == 0 {
            return Err(Failure::Usage(anyhow!(
                "seeds file {} holds no seed URL (only blank lines and # comments); add one, or \
                 leave out --seeds-file to continue from the URLs already known",
                file.display()
            )));
        }
    }
    config.seeds = seeds;
    config.max_pages = args.max_pages;
    config.policy.max_depth = args.max_depth;
    config.capsule_budget = args.capsule_budget;
    if let Some(file) = &args.exclude_file {
        config.policy.exclusions =
            Exclusions::load(file).map_err(|e| Failure::Usage(anyhow!("--exclude-file {e}")))?;
    }
    config.min_delay = args.min_delay();
    config.concurrency = args.concurrency as usize;
    config.resolve = dns::Overrides::new(args.resolve.iter().cloned());
    config.commit.max_docs = args.commit_docs as usize;
    config.commit.max_age = Duration::from_secs(u64::from(args.commit_secs));
    config.revisit = geode::revisit::RevisitPolicy {
        initial: args.revisit,
        min: args.revisit_min,
        max: args.revisit_max,
        remove_after: args.remove_after,
    };
    config
        .revisit
        .validate()
        .map_err(|e| Failure::Usage(anyhow!(e)))?;
    config.max_duration = args.max_duration;
    for pattern in &args.allow_hosts {
        config
            .scope
            .allow(pattern)
            .map_err(|e| Failure::Usage(anyhow!("--allow-host {e}")))?;
    }
    if let Some(file) = &args.allow_hosts_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading --allow-hosts-file {}", file.display()))
            .map_err(Failure::Usage)?;
        let added = config
            .scope
            .allow_list(&text)
            .map_err(|e| Failure::Usage(anyhow!("{}: {e}", file.display())))?;
        if added == 0 {
            return Err(Failure::Usage(anyhow!(
                "--allow-hosts-file {} holds no pattern",
                file.display()
            )));
        }
    }
    for pattern in &args.deny_hosts {
        config
            .scope
            .deny(pattern)
            .map_err(|e| Failure::Usage(anyhow!("--deny-host {e}")))?;
    }

    config.limits.reset_on_close = args.reset_on_close;
    match geode::fetch::sockets::raise_nofile_limit() {
        Ok(limit) => {
            config.socket_budget = Some(geode::fetch::sockets::budget_for(limit.soft));
            tracing::debug!(?limit, "file descriptor limit");
        }
        Err(e) => tracing::warn!("cannot read the file descriptor limit: {e}"),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // On a terminal, a live progress line replaces the periodic log lines.
    let live = std::io::stderr().is_terminal();
    if live {
        config.progress_every = Duration::from_secs(24 * 3600);
    }
    let summary = runtime
        .block_on(async {
            if !live {
                return crawl::run(config, interrupted()).await;
            }
            let (tx, rx) = tokio::sync::watch::channel(crawl::Progress::default());
            let display = tokio::spawn(show_progress(rx));
            let summary = crawl::run_observed(config, interrupted(), Some(tx)).await;
            let _ = display.await;
            summary
        })
        .context("crawl failed")?;
    if args.json {
        let line = serde_json::to_string(&summary).context("encoding JSON")?;
        println!("{line}");
    } else {
        print_summary(&summary);
    }
    // For cron: a run in which not one capsule answered did no work (network or DNS down).
    if summary.capsules_tried > 0 && summary.capsules_answered == 0 {
        return Err(Failure::Runtime(anyhow!(
            "not one of the {} capsules tried answered: is the network or DNS down?",
            summary.capsules_tried
        )));
    }
    Ok(())
}

fn print_summary(summary: &crawl::CrawlSummary) {
    println!(
        "crawl ended ({}): {} pages fetched: {} new, {} changed, {} unchanged, {} removed from \
         the index, {} failed; {} documents rewritten with new anchors; {} URLs discovered, \
         {} excluded by robots.txt, {} duplicates, {} slow-downs (44), {} capsules unreachable, \
         {} certificate changes; peak open sockets: {} (budget {}), {:.1} s",
        summary.ended.describe(),
        summary.fetched,
        summary.new,
        summary.changed,
        summary.unchanged,
        summary.removed,
        summary.failed,
        summary.anchors_refreshed,
        summary.urls_discovered,
        summary.robots_excluded,
        summary.duplicates,
        summary.slow_downs,
        summary.capsules_unreachable,
        summary.certificates_changed,
        summary.peak_sockets,
        summary.socket_budget,
        summary.elapsed_secs,
    );
}

fn reindex(args: ReindexArgs) -> Result<(), Failure> {
    let dir = &args.data.data;
    if !geode::datadir::database_path(dir).exists() {
        return Err(Failure::Runtime(anyhow!(
            "no crawl database in {} (run geode crawl first)",
            dir.display()
        )));
    }
    let started = Instant::now();
    let mut last = Instant::now();
    let summary = geode::reindex::reindex(dir, &mut |pages| {
        if last.elapsed() >= Duration::from_secs(5) {
            tracing::info!(pages, "reindexing");
            last = Instant::now();
        }
    })
    .context("reindex failed")?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&summary).context("encoding JSON")?
        );
    } else {
        println!(
            "reindexed {} pages in {:.1} s ({:.0} pages/s); {} pages had no archived content \
             and are due for the next crawl",
            summary.pages,
            started.elapsed().as_secs_f64(),
            summary.pages as f64 / started.elapsed().as_secs_f64().max(0.001),
            summary.missing
        );
    }
    Ok(())
}

fn show(args: ShowArgs) -> Result<(), Failure> {
    let url =
        urlnorm::normalize(&args.url).map_err(|e| Failure::Usage(anyhow!("{}: {e}", args.url)))?;
    let frontier = Frontier::open_read_only(&geode::datadir::database_path(&args.data.data))
        .map_err(|e| Failure::Runtime(e.into()))?;
    let Some(details) = frontier
        .url_details(url.as_str())
        .context("reading the crawl database")?
    else {
        return Err(Failure::Runtime(anyhow!("geode knows nothing of {url}")));
    };
    let archived = frontier
        .archived(details.id)
        .context("reading the archive")?;
    if args.raw {
        let body = archived.and_then(|a| a.body).ok_or_else(|| {
            Failure::Runtime(anyhow!(
                "no body is archived for {url} (its latest response had none)"
            ))
        })?;
        let mut out = std::io::stdout().lock();
        out.write_all(&body).context("writing the body")?;
        out.flush().context("writing the body")?;
        return Ok(());
    }
    let links_in = frontier.backlinks(url.as_str()).context("reading links")?;
    // The text as indexed: the last content extracted again, art left out as the index does.
    let content = match &details.content_hash {
        Some(hash) => frontier
            .archived_body(hash)
            .context("reading the archive")?,
        None => None,
    };
    let meta = details
        .content_meta
        .clone()
        .or(details.mime.clone())
        .unwrap_or_default();
    let extracted = (content.is_some() || details.in_index)
        .then(|| geode::content::extract(&url, &meta, content.as_deref().unwrap_or_default()));
    let lang = extracted.as_ref().and_then(|e| {
        e.lang
            .as_deref()
            .and_then(geode::index::analysis::normalize_lang)
            .map(|l| (l, "declared"))
            .or_else(|| {
                let sample: String = format!("{}\n{}", e.title, e.body)
                    .chars()
                    .take(2048)
                    .collect();
                geode::index::analysis::detect_lang(&sample).map(|l| (l.to_string(), "detected"))
            })
    });
    if args.json {
        let doc = serde_json::json!({
            "url": details.url,
            "details": details,
            "response": archived.as_ref().map(|a| serde_json::json!({
                "status": a.status,
                "meta": a.meta,
                "fetched_at": a.fetched_at,
                "cert_sha256": a.cert_sha256,
                "body_hash": a.body_hash,
                "body_bytes": a.body.as_ref().map(Vec::len),
            })),
            "links_in": links_in,
            "title": extracted.as_ref().map(|e| e.title.clone()),
            "lang": lang.as_ref().map(|(l, _)| l.clone()),
            "text": extracted.as_ref().map(|e| e.body.clone()),
        });
        println!("{doc}");
        return Ok(());
    }
    let mut out = String::new();
    let mut row = |name: &str, value: String| out.push_str(&format!("{name:<14}{value}\n"));
    row("URL", details.url.clone());
    row("capsule", details.capsule.clone());
    row(
        "state",
        format!(
            "{}{}",
            details.state,
            if details.in_index {
                ", in the index"
            } else {
                ", not in the index"
            }
        ),
    );
    if let Some(status) = details.status {
        row(
            "status",
            format!("{status} {}", details.meta.clone().unwrap_or_default()),
        );
    }
    if let Some(error) = &details.error {
        row("error", error.clone());
    }
    row(
        "fetched",
        when(details.fetched_at.map(|t| t.to_string()).as_deref()),
    );
    row(
        "next visit",
        match details.due_at {
            Some(t) => when(Some(&t.to_string())),
            None if details.state == "new" => "when first claimed".into(),
            None => "never".into(),
        },
    );
    if let Some(secs) = details.revisit_secs {
        row(
            "interval",
            format!(
                "{} (visits {}, changes {})",
                geode::human::duration(secs),
                details.visits,
                details.changes
            ),
        );
    }
    if let Some(since) = details.first_failed_at {
        row("failing since", when(Some(&since.to_string())));
    }
    if let Some(size) = details.size {
        row("size", geode::human::size(size));
    }
    if let Some(hash) = &details.content_hash {
        row("body SHA-256", hash.clone());
    }
    if let Some(mime) = &details.mime {
        row("type", mime.clone());
    }
    if let Some((lang, how)) = &lang {
        row("language", format!("{lang} ({how})"));
    }
    if let Some(e) = &extracted {
        row("title", e.title.clone());
    }
    if details.feed {
        row("feed", "yes: revisited at --revisit-min".into());
    }
    if let Some(to) = &details.redirect_to {
        row("redirects to", to.clone());
    }
    if let Some(of) = &details.alias_of {
        row("indexed as", of.clone());
    }
    out.push_str(&format!("\nlinks out ({})\n", details.links_out.len()));
    for l in &details.links_out {
        out.push_str(&format!("  {} {}\n", l.url, l.label));
    }
    out.push_str(&format!("\nlinks in ({})\n", links_in.len()));
    for l in &links_in {
        out.push_str(&format!("  {} {}\n", l.url, l.label));
    }
    if let Some(e) = &extracted {
        out.push_str("\nindexed text\n");
        out.push_str(&e.body);
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}

fn export(args: ExportArgs) -> Result<(), Failure> {
    let frontier = Frontier::open_read_only(&geode::datadir::database_path(&args.data.data))
        .map_err(|e| Failure::Runtime(e.into()))?;
    let out: Box<dyn Write> = if args.warc.as_os_str() == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(
            std::fs::File::create(&args.warc)
                .with_context(|| format!("creating {}", args.warc.display()))?,
        )
    };
    let mut warc =
        geode::warc::WarcWriter::new(std::io::BufWriter::new(out)).context("writing the WARC")?;
    let mut after = 0;
    loop {
        let chunk = frontier
            .archived_responses(after, args.since.unwrap_or(0), 500)
            .context("reading the archive")?;
        let Some((last, _, _)) = chunk.last() else {
            break;
        };
        after = *last;
        for (_, url, response) in chunk {
            let header = format!("{:02} {}", response.status, response.meta);
            warc.response(
                &url,
                response.fetched_at,
                header.trim_end(),
                response.body.as_deref().unwrap_or_default(),
            )
            .context("writing the WARC")?;
        }
    }
    let records = warc.records();
    warc.finish().context("writing the WARC")?;
    eprintln!(
        "geode: wrote {} response records to {}",
        records - 1,
        args.warc.display()
    );
    Ok(())
}

fn seed(args: SeedArgs) -> Result<(), Failure> {
    match args.action {
        SeedAction::Add { data, urls } => {
            let mut parsed = Vec::new();
            for url in &urls {
                parsed.push(parse_seed(url).map_err(|e| Failure::Usage(anyhow!("{url}: {e}")))?);
            }
            std::fs::create_dir_all(&data.data)
                .with_context(|| format!("creating the data directory {}", data.data.display()))?;
            let mut frontier = Frontier::open(&geode::datadir::database_path(&data.data))
                .map_err(|e| Failure::Runtime(e.into()))?;
            for url in parsed {
                let outcome = frontier
                    .suggest_seed(
                        url.as_str(),
                        &urlnorm::capsule_key(&url),
                        "cli",
                        crawl::unix_now(),
                    )
                    .context("recording the seed")?;
                let what = match outcome {
                    geode::frontier::Suggested::New => "added: the next crawl fetches it",
                    geode::frontier::Suggested::Known => {
                        "already known: the next crawl visits it again"
                    }
                    geode::frontier::Suggested::AlreadySuggested => "already suggested",
                    geode::frontier::Suggested::QueueFull => {
                        return Err(Failure::Runtime(anyhow!(
                            "{url}: too many seeds wait for a crawl already"
                        )))
                    }
                };
                println!("{url}: {what}");
            }
            Ok(())
        }
        SeedAction::List { data, json } => {
            let frontier = Frontier::open_read_only(&geode::datadir::database_path(&data.data))
                .map_err(|e| Failure::Runtime(e.into()))?;
            let seeds = frontier.suggested_seeds().context("reading the seeds")?;
            let mut out = std::io::stdout().lock();
            for seed in seeds {
                if json {
                    let line = serde_json::to_string(&seed).context("encoding JSON")?;
                    writeln!(out, "{line}").context("writing")?;
                } else {
                    let stands = match (seed.in_index, seed.state.as_str()) {
                        (true, _) => "indexed".to_string(),
                        (false, "new") => "waiting for a crawl".to_string(),
                        (false, state) => state.to_string(),
                    };
                    writeln!(
                        out,
                        "{}  {}  (from {}, {})",
                        seed.url,
                        stands,
                        seed.source,
                        when(Some(&seed.added_at.to_string()))
                    )
                    .context("writing")?;
                }
            }
            Ok(())
        }
    }
}

/// Draws a progress line until the crawl drops its end of the channel.
async fn show_progress(mut rx: tokio::sync::watch::Receiver<crawl::Progress>) {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.enable_steady_tick(Duration::from_millis(250));
    let started = Instant::now();
    while rx.changed().await.is_ok() {
        let p = rx.borrow_and_update().clone();
        let rate = p.pages_fetched as f64 / started.elapsed().as_secs_f64().max(0.001);
        bar.set_message(format!(
            "{} pages ({rate:.0}/s): {} new, {} changed, {} unchanged, {} removed; {} queued, \
             {} in flight, {} sockets, {} failed, {} capsules backed off, {} slow-downs",
            p.pages_fetched,
            p.new,
            p.changed,
            p.unchanged,
            p.removed,
            p.queued,
            p.in_flight,
            p.open_sockets,
            p.errors,
            p.capsules_backed_off,
            p.slow_downs
        ));
    }
    bar.finish_and_clear();
}

fn parse_seed(seed: &str) -> Result<url::Url, String> {
    let url = urlnorm::normalize(seed).map_err(|e| e.to_string())?;
    if !urlnorm::is_fetchable(&url) {
        return Err(format!("geode cannot crawl {}:// URLs", url.scheme()));
    }
    Ok(url)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
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

fn search(args: SearchArgs) -> Result<(), Failure> {
    let query = args.query.join(" ");
    // Check the query before opening the index: a typo is reported the same with or without one.
    let parsed = geode::query::parse(&query)
        .map_err(|e| Failure::Usage(anyhow!("malformed query: {e}\n{}", e.caret_line(&query))))?;
    let index =
        SearchIndex::open(&geode::datadir::index_path(&args.data.data)).map_err(index_failure)?;
    let options = SearchOptions {
        limit: args.limit,
        offset: args.offset,
        ranking: if args.ranking == "bm25" {
            Ranking::Bm25
        } else {
            Ranking::Full
        },
        strict: args.strict,
        all: args.all,
    };
    let started = Instant::now();
    let results = index
        .search_parsed(&query, &parsed, &options)
        .map_err(index_failure)?;
    let took_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = serde_json::json!({
            "query": query,
            "total": results.total,
            "with_all_words": results.with_all_words,
            "did_you_mean": results.did_you_mean,
            "offset": args.offset,
            "limit": args.limit,
            "took_ms": (took_ms * 1000.0).round() / 1000.0,
            "hits": results.hits,
        });
        let line = serde_json::to_string(&doc).context("encoding JSON")?;
        writeln!(out, "{line}").context("writing results")?;
        return Ok(());
    }
    if let Some(better) = &results.did_you_mean {
        writeln!(out, "Did you mean: {better}\n").context("writing results")?;
    }
    for (i, hit) in results.hits.iter().enumerate() {
        let title = if hit.title.is_empty() {
            hit.url.as_str()
        } else {
            hit.title.as_str()
        };
        // Saturating: an offset near usize::MAX has no hits, but the sum must not wrap.
        let rank = args.offset.saturating_add(i).saturating_add(1);
        writeln!(out, "{rank}. {title}").context("writing results")?;
        writeln!(out, "   {}", hit.url).context("writing results")?;
        if !hit.snippet.is_empty() {
            writeln!(out, "   {}", hit.snippet).context("writing results")?;
        }
        let mut facts = format!(
            "   {} · {} · {}",
            hit.host,
            hit.mime,
            geode::human::size(hit.size)
        );
        if !hit.missing.is_empty() {
            facts.push_str(&format!(" · missing: {}", hit.missing.join(", ")));
        }
        if hit.similar > 0 && !args.all {
            facts.push_str(&format!(
                " · {} similar page{} (--all, or similar:{})",
                hit.similar,
                if hit.similar == 1 { "" } else { "s" },
                hit.url
            ));
        }
        writeln!(out, "{facts}").context("writing results")?;
        writeln!(out).context("writing results")?;
    }
    writeln!(
        out,
        "{} result{} ({}) in {:.1} ms",
        results.total,
        if results.total == 1 { "" } else { "s" },
        shown_range(args.offset, results.hits.len()),
        took_ms
    )
    .context("writing results")?;
    Ok(())
}

/// Which results a page showed, counted from 1: "3-12 shown", or "none shown" for a page past
/// the end (where "0-N" would name results that were not shown).
fn shown_range(offset: usize, shown: usize) -> String {
    if shown == 0 {
        return "none shown".to_string();
    }
    let first = offset.saturating_add(1);
    let last = offset.saturating_add(shown);
    format!("{first}-{last} shown")
}

fn index_failure(e: IndexError) -> Failure {
    match e {
        IndexError::Query(_) => Failure::Usage(e.into()),
        other => Failure::Runtime(other.into()),
    }
}

fn stats(args: StatsArgs) -> Result<(), Failure> {
    let data = &args.data.data;
    // The index first: when it cannot be opened, that is the problem to report, even if the
    // crawl database is missing as well (a crawl killed while it was starting).
    let documents = match SearchIndex::open(&geode::datadir::index_path(data)) {
        Ok(index) => index.num_docs(),
        Err(IndexError::Missing(_)) => 0,
        Err(e) => return Err(Failure::Runtime(e.into())),
    };
    let frontier = Frontier::open_read_only(&geode::datadir::database_path(data))
        .map_err(|e| Failure::Runtime(e.into()))?;
    let now = geode::clock::unix_now();
    let stats = frontier.stats(now).context("reading the crawl database")?;
    if args.json {
        let mut value = serde_json::to_value(&stats).context("encoding JSON")?;
        value["index_documents"] = documents.into();
        println!("{value}");
        return Ok(());
    }
    let mut out = String::new();
    let mut row = |name: &str, value: String| out.push_str(&format!("{name:<28}{value}\n"));
    row("pages indexed", stats.pages_indexed.to_string());
    row("documents in the index", documents.to_string());
    row("URLs known", stats.urls_known.to_string());
    row("capsules", stats.hosts.to_string());
    row("capsules in back-off", stats.hosts_in_backoff.to_string());
    row(
        "certificate changes",
        format!("{} capsules", stats.certificate_changes),
    );
    row("duplicate pages", stats.duplicates.to_string());
    row("query endpoints (10/11)", stats.query_endpoints.to_string());
    row("URLs awaiting a retry", stats.awaiting_retry.to_string());
    row(
        "last crawl started",
        when(stats.last_crawl_started.as_deref()),
    );
    row(
        "last crawl finished",
        when(stats.last_crawl_finished.as_deref()),
    );
    out.push_str("\nURLs by state\n");
    for (state, n) in &stats.by_state {
        out.push_str(&format!("  {state:<26}{n}\n"));
    }
    out.push_str("\nresponses by status\n");
    for (status, n) in &stats.by_status {
        out.push_str(&format!("  {status:<26}{n}\n"));
    }
    if !stats.errors.is_empty() {
        out.push_str("\nerrors (no response)\n");
        for (kind, n) in &stats.errors {
            out.push_str(&format!("  {kind:<26}{n}\n"));
        }
    }
    if !stats.excluded.is_empty() {
        out.push_str("\nnot fetched\n");
        for (why, n) in &stats.excluded {
            out.push_str(&format!("  {why:<26}{n}\n"));
        }
    }
    let s = &stats.schedule;
    out.push_str("\nrevisit schedule\n");
    for (name, n) in [
        ("due now", s.due_now),
        ("due within a day", s.due_within_day),
        ("due within a week", s.due_within_week),
        ("never visited", s.never_visited),
        ("never again (52, excluded)", s.never_again),
        ("feeds", s.feeds),
        ("failing, still searchable", s.failing_but_searchable),
    ] {
        out.push_str(&format!("  {name:<26}{n}\n"));
    }
    let a = &stats.archive;
    out.push_str("\narchive\n");
    out.push_str(&format!("  {:<26}{}\n", "responses", a.responses));
    out.push_str(&format!(
        "  {:<26}{} ({} stored, {:.0}% of their size)\n",
        "distinct bodies",
        a.bodies,
        geode::human::size(a.stored_bytes),
        a.stored_bytes as f64 * 100.0 / a.raw_bytes.max(1) as f64
    ));
    out.push_str("\nrevisit intervals\n");
    for (bucket, n) in &s.intervals {
        out.push_str(&format!("  {bucket:<26}{n}\n"));
    }
    if !stats.certificates_changed.is_empty() {
        out.push_str("\ncertificates changed (accepted and pinned)\n");
        for c in &stats.certificates_changed {
            out.push_str(&format!(
                "  {:<26}{} change(s); current one first seen {}, last seen {}\n",
                c.host,
                c.changes,
                when(c.current_since.map(|t| t.to_string()).as_deref()),
                when(c.last_seen.map(|t| t.to_string()).as_deref()),
            ));
        }
    }
    print!("{out}");
    Ok(())
}

/// A stored unix time for people, relative to now.
fn when(unix: Option<&str>) -> String {
    geode::human::when_stored(unix, geode::clock::unix_now())
}

fn backlinks(args: BacklinksArgs) -> Result<(), Failure> {
    let url =
        urlnorm::normalize(&args.url).map_err(|e| Failure::Usage(anyhow!("{}: {e}", args.url)))?;
    let frontier = Frontier::open_read_only(&geode::datadir::database_path(&args.data.data))
        .map_err(|e| Failure::Runtime(e.into()))?;
    let links = frontier
        .backlinks(url.as_str())
        .context("reading the crawl database")?;
    let mut out = std::io::stdout().lock();
    for link in &links {
        if args.json {
            let line = serde_json::to_string(link).context("encoding JSON")?;
            writeln!(out, "{line}").context("writing backlinks")?;
        } else if link.label.is_empty() {
            writeln!(out, "{}", link.url).context("writing backlinks")?;
        } else {
            writeln!(out, "{}  {}", link.url, link.label).context("writing backlinks")?;
        }
    }
    if !args.json {
        writeln!(
            out,
            "{} page{} link to {url}",
            links.len(),
            if links.len() == 1 { "" } else { "s" }
        )
        .context("writing backlinks")?;
    }
    Ok(())
}

fn serve(args: ServeArgs) -> Result<(), Failure> {
    use geode::serve::cert::CertError;
    use geode::serve::{ServeError, Server};
    let mut config = args.config();
    // Every pending and answered connection is a descriptor: take what the system allows, and
    // keep the pending budget within it (accepting into EMFILE would only make clients wait).
    match geode::fetch::sockets::raise_nofile_limit() {
        Ok(limit) => {
            let reserve = config.max_connections as u64 + 64;
            let room = usize::try_from(limit.soft.saturating_sub(reserve)).unwrap_or(usize::MAX);
            if room < config.max_pending_connections {
                tracing::warn!(
                    "descriptor limit {}: at most {} pending connections instead of {}",
                    limit.soft,
                    room.max(1),
                    config.max_pending_connections
                );
                config.max_pending_connections = room.max(1);
            }
        }
        Err(e) => tracing::warn!("cannot read the file descriptor limit: {e}"),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let server = Server::bind(config).await.map_err(|e| match e {
            // The operator's files or host name are wrong: a usage error.
            ServeError::Cert(
                CertError::Read { .. }
                | CertError::NoCertificate(_)
                | CertError::Unusable(_)
                | CertError::Generate { .. },
            ) => Failure::Usage(e.into()),
            other => Failure::Runtime(other.into()),
        })?;
        let identity = server.identity();
        tracing::info!(
            "certificate {} (SHA-256 fingerprint {})",
            identity.origin,
            identity.fingerprint
        );
        {
            let mut out = std::io::stdout().lock();
            for addr in server.local_addrs() {
                writeln!(out, "listening on {addr}").context("writing to stdout")?;
            }
            // Scripts wait for these lines through a pipe, where stdout is block-buffered.
            out.flush().context("writing to stdout")?;
        }
        server.run(interrupted()).await;
        Ok(())
    })
}
