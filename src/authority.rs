//! The authority step at the end of a crawl, of `geode index` and of `geode reindex`: link
//! authority computed over the store's whole link graph ([`crate::rank`]), the pages of capsules
//! held back for a trap shape demoted ([`crate::crawl::budget`]), written beside the index
//! ([`crate::index::authority`]); and after a crawl or `geode index`, each capsule's standing
//! for its next crawl budget, from the same graph.

use std::path::Path;
use std::time::Instant;

use crate::clock::unix_now;
use crate::crawl::budget;
use crate::frontier::{Frontier, FrontierError};
use crate::index::IndexError;
use crate::rank::LinkGraph;

/// Recomputes link authority over the whole link graph and writes it beside the index in
/// `index_dir`, then each capsule's standing for its next crawl budget, with the linkers `seen`
/// in this run (none for the index writer of a shared store, which saw no pages itself). A
/// failure is logged, never returned: the run's work is done and the next run tries again.
pub fn update(frontier: &mut dyn Frontier, index_dir: &Path, seen: &[(String, u64)]) {
    crate::heap::give_back_freed_memory();
    let started = Instant::now();
    type Failure = Box<dyn std::error::Error + Send + Sync>;
    let computed = (|| -> Result<(usize, usize), Failure> {
        let graph = frontier.link_graph()?;
        write::<Failure>(frontier, &graph, index_dir)?;
        let counted = (graph.len(), graph.link_count());
        let mut standings = budget::standings(&graph);
        drop(graph);
        // A capsule seen linked in this run may have no indexed page yet (a dead one, or one
        // whose pages all failed): what this run saw is all that is known of it.
        for (capsule, linkers) in seen {
            let standing = standings.entry(capsule.clone()).or_default();
            standing.linkers = standing.linkers.max(*linkers);
        }
        let standings: Vec<_> = standings.into_iter().collect();
        frontier.set_standings(&standings)?;
        Ok(counted)
    })();
    let secs = started.elapsed().as_secs_f64();
    match computed {
        Ok((pages, links)) => tracing::info!(pages, links, secs, "link authority updated"),
        Err(e) => tracing::warn!(error = %e, "link authority not updated"),
    }
}

/// Computes every page's link authority from `graph` (the store's link graph: [`crate::rank`],
/// then the pages of capsules held back for a trap shape demoted) and writes it beside the index
/// in `index_dir`. The one way authority is made: by a crawl at the end of its run, by the index
/// writer of a shared store, and by `geode reindex`, so that they rank alike.
pub fn write<E>(frontier: &mut dyn Frontier, graph: &LinkGraph, index_dir: &Path) -> Result<(), E>
where
    E: From<FrontierError> + From<IndexError>,
{
    let mut scores = crate::rank::authority(graph);
    let traps = frontier.capsules_held_for(&budget::HoldReason::TRAP_SHAPES)?;
    budget::demote_traps(graph, &mut scores, &traps.into_iter().collect());
    let pairs: Vec<(u64, f32)> = graph.keys().iter().copied().zip(scores).collect();
    crate::index::authority::write(index_dir, &pairs)?;
    drop(pairs);
    frontier.set_meta("authority_pages", &graph.len().to_string())?;
    frontier.set_meta("authority_computed_at", &unix_now().to_string())?;
    Ok(())
}
