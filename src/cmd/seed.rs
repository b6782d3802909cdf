//! `geode seed add|list`: seeds waiting for the next crawl.

use std::io::Write;

use anyhow::{anyhow, Context};

use super::{parse_seed, when};
use crate::cli::{SeedAction, SeedArgs};
use crate::Failure;
use geode::crawl::{self};
use geode::frontier;
use geode::urlnorm;

pub(crate) fn seed(args: SeedArgs) -> Result<(), Failure> {
    match args.action {
        SeedAction::Add {
            data,
            frontier: shared,
            urls,
        } => {
            let mut parsed = Vec::new();
            for url in &urls {
                parsed.push(parse_seed(url).map_err(|e| Failure::Usage(anyhow!("{url}: {e}")))?);
            }
            let mut frontier = frontier::Location::chosen(
                &data.data,
                shared.as_deref(),
                frontier::Schema::Prepare,
            )
            .and_then(|store| store.open())
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
                super::put_line(&format!("{url}: {what}"))?;
            }
            Ok(())
        }
        SeedAction::List {
            data,
            frontier: shared,
            json,
        } => {
            let frontier = super::read_frontier(&data.data, shared.as_deref())?;
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
