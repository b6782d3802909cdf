//! `geode crawl`: the crawl configuration from the command line, a progress line on a
//! terminal, the summary (text or `--json`), and the exit code cron sees.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use super::{interrupted, parse_seed};
use crate::cli::{CrawlArgs, IndexArgs};
use crate::Failure;
use geode::crawl::policy::Exclusions;
use geode::crawl::{self, CrawlConfig};
use geode::fetch::dns;
use geode::urlnorm;

pub(crate) fn crawl(args: CrawlArgs) -> Result<(), Failure> {
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
    config.follow_web(args.follows_web());
    if let Some(web) = seeds.iter().find(|s| urlnorm::is_web(s)) {
        if !args.follows_web() {
            return Err(Failure::Usage(anyhow!(
                "seed {web} is a web URL, and this run follows gemini links only; add \
                 --protocols gemini,http to crawl the web too"
            )));
        }
    }
    if let Some(url) = &args.frontier {
        config.shared = Some(crawl::SharedFrontier {
            url: url.clone(),
            lease: args.lease,
        });
    }
    config.seeds = seeds;
    if let Some(contact) = &args.contact {
        let agent = geode::fetch::http::user_agent(Some(contact));
        if !agent.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            return Err(Failure::Usage(anyhow!(
                "--contact {contact:?}: a User-Agent header holds printable ASCII only \
                 (write a domain name in punycode)"
            )));
        }
        config.contact = Some(contact.clone());
    }
    config.max_pages = args.max_pages;
    config.policy.max_depth = args.max_depth;
    config.capsule_budget = args.capsule_budget;
    if let Some(file) = &args.exclude_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading --exclude-file {}", file.display()))
            .map_err(Failure::Usage)?;
        config.policy.exclusions = Exclusions::parse(&text)
            .map_err(|e| Failure::Usage(anyhow!("--exclude-file {}: {e}", file.display())))?;
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
    let shared = config.shared.is_some();
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
        super::put_line(&line)?;
    } else {
        print_summary(&summary)?;
    }
    // For cron: a run in which not one capsule answered did no work (network or DNS down).
    // A crawler of a shared crawl fetches the share of capsules it was given: a share of a
    // few that are all down says nothing of the network, and another crawler did the work.
    let tried = summary.capsules_tried;
    if tried > 0 && summary.capsules_answered == 0 {
        if shared && tried < SHARE_TRIED_FOR_FAILURE {
            tracing::warn!(
                "not one of the {tried} capsules of this crawler's share answered: they may \
                 be down (too few to tell whether the network or DNS is)"
            );
        } else {
            return Err(Failure::Runtime(anyhow!(
                "not one of the {tried} capsules tried answered: is the network or DNS down?"
            )));
        }
    }
    Ok(())
}

/// How many capsules a crawler of a shared crawl must have tried, none answering, for its run
/// to fail as one without network: its share may be a few capsules that are all down.
const SHARE_TRIED_FOR_FAILURE: u64 = 5;

pub(crate) fn print_summary(summary: &crawl::CrawlSummary) -> anyhow::Result<()> {
    super::put_line(&format!(
        "crawl ended ({}): {} pages fetched: {} new, {} changed, {} unchanged, {} removed from \
         the index, {} failed; {} documents rewritten with new anchors; {} URLs discovered, \
         {} excluded by robots.txt, {} duplicates, {} slow-downs (44), {} capsules unreachable, \
         {} capsules held back for a later run, {} certificate changes; peak open sockets: {} \
         (budget {}), {:.1} s",
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
        summary.capsules_held_back,
        summary.certificates_changed,
        summary.peak_sockets,
        summary.socket_budget,
        summary.elapsed_secs,
    ))
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

/// `geode index`: applies what the crawlers of a shared store recorded to the index in
/// `--data`.
pub(crate) fn index(args: IndexArgs) -> Result<(), Failure> {
    use geode::frontier::{Location, Schema, DEFAULT_LEASE};
    let location = Location::postgres(&args.frontier, DEFAULT_LEASE, Schema::Prepare)
        .with_context(|| format!("connecting to {}", args.frontier))?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the signal watcher")?;
        std::thread::spawn(move || {
            runtime.block_on(interrupted());
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    }
    let summary = geode::apply::apply(&location, &args.data.data, args.follow, &|| {
        stop.load(std::sync::atomic::Ordering::SeqCst)
    })
    .context("index failed")?;
    if args.json {
        super::put_line(&serde_json::to_string(&summary).context("encoding JSON")?)?;
    } else {
        super::put_line(&format!(
            "indexed {} pages, removed {}, refreshed {} for new anchors, in {} commits \
             ({:.1} s, a page indexed at most {} s after its fetch); {} pages wait for \
             archived content, {} for their crawler to finish their capsule",
            summary.upserted,
            summary.deleted,
            summary.refreshed,
            summary.commits,
            summary.elapsed_secs,
            summary.max_lag_secs,
            summary.missing,
            summary.held
        ))?;
    }
    Ok(())
}
