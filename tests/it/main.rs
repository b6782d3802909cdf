//! geode's integration tests, one binary: real TLS servers on loopback serving
//! `capsules-fixture/`, crawled by the library or the `geode` binary. Nothing here reaches
//! beyond 127.0.0.0/8.

mod archive;
mod cli;
mod conformance;
mod crawl;
mod cron;
mod datadir;
mod fetch;
mod fuzz;
mod gspace;
mod hostile;
mod http;
mod meaning;
mod memory;
mod polite;
mod postgres;
mod recrawl;
mod resume;
mod serve;
mod serve_web;
mod sockets;
mod support;
mod tidy;
mod web;
