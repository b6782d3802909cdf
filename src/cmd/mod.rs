//! The subcommands, one file each (or one per family), and what they share: seeds as the user
//! types them, and the wait for Ctrl-C or SIGTERM. Each returns a [`Failure`] carrying its exit
//! code.

pub(crate) mod archive;
pub(crate) mod crawl;
pub(crate) mod search;
pub(crate) mod seed;
pub(crate) mod serve;
pub(crate) mod stats;

use geode::urlnorm;

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
