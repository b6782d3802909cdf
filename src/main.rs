//! The `geode` command: parses arguments, runs one subcommand, maps errors to exit codes
//! (0 success, 1 runtime error, 2 usage error or malformed query).

pub(crate) mod cli;
mod cmd;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// An error with the exit code it deserves.
pub(crate) enum Failure {
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
        Command::Crawl(_)
            | Command::Serve(_)
            | Command::Reindex(_)
            | Command::Index(_)
            | Command::Embed(_)
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
        Command::Crawl(args) => cmd::crawl::crawl(*args),
        Command::Search(args) => cmd::search::search(args),
        Command::Stats(args) => cmd::stats::stats(args),
        Command::Backlinks(args) => cmd::search::backlinks(args),
        Command::Seed(args) => cmd::seed::seed(args),
        Command::Reindex(args) => cmd::archive::reindex(args),
        Command::Index(args) => cmd::crawl::index(args),
        Command::Embed(args) => cmd::embed::embed(args),
        Command::Show(args) => cmd::archive::show(args),
        Command::Export(args) => cmd::archive::export(args),
        Command::Serve(args) => cmd::serve::serve(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of the output went away (`geode stats | head`): what it wanted, it has.
        Err(Failure::Usage(e) | Failure::Runtime(e)) if cmd::is_closed_output(&e) => {
            ExitCode::SUCCESS
        }
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
