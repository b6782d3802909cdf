//! `geode serve`: the Gemini and web frontends, with the descriptor limit raised and the operator's
//! certificate mistakes reported as usage errors.

use std::io::Write;

use anyhow::Context;

use super::interrupted;
use crate::cli::ServeArgs;
use crate::Failure;

pub(crate) fn serve(args: ServeArgs) -> Result<(), Failure> {
    use geode::serve::cert::CertError;
    use geode::serve::{ServeError, Server};
    let mut config = args.config();
    if let Some(url) = &args.frontier {
        config.shared = Some(
            geode::frontier::Location::postgres(
                url,
                geode::frontier::DEFAULT_LEASE,
                geode::frontier::Schema::Expect,
            )
            .with_context(|| format!("connecting to {url}"))?,
        );
    }
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
        if let Some(identity) = server.identity() {
            tracing::info!(
                "certificate {} (SHA-256 fingerprint {})",
                identity.origin,
                identity.fingerprint
            );
        }
        {
            let mut out = std::io::stdout().lock();
            for addr in server.local_addrs() {
                writeln!(out, "listening on {addr}").context("writing to stdout")?;
            }
            for addr in server.http_addrs() {
                writeln!(out, "listening on http://{addr}").context("writing to stdout")?;
            }
            // Scripts wait for these lines through a pipe, where stdout is block-buffered.
            out.flush().context("writing to stdout")?;
        }
        server.run(interrupted()).await;
        Ok(())
    })
}
