//! geode: a search engine for geminispace.
//!
//! The pipeline, once: a seed URL is normalised ([`urlnorm`]) and stored in the crawl
//! [`frontier`] (SQLite, or PostgreSQL shared by several crawlers, whose one index writer is
//! [`apply`]). The [`crawl`] loop picks URLs whose IP address is free under the
//! politeness rules, asks [`robots`] whether it may, and has the [`fetch`] layer retrieve them.
//! [`content`] turns a response into text, links and a title (using the [`gemtext`] parser for
//! `text/gemini`), the one [`index`] writer adds the page to Tantivy, and the frontier records the
//! page as indexed only after the Tantivy commit that holds it. [`revisit`] decides when each URL
//! is visited again, so that later crawls keep the index true. `geode search` reads the index.
//!
//! The test fixture server (`geode-fixture`, a Gemini server of fixture capsules for the tests,
//! the demo and the benchmarks) is a crate of its own in `crates/geode-fixture`, used by geode's
//! tests as a dev-dependency: nothing of it ships in geode.

pub mod apply;
pub mod authority;
pub mod clock;
pub mod content;
pub mod crawl;
pub mod datadir;
pub mod digest;
pub mod document;
pub mod embed;
pub mod feed;
pub mod fetch;
pub mod from_archive;
pub mod frontier;
pub mod gemtext;
pub mod heap;
pub mod human;
pub mod index;
pub mod lang;
pub mod query;
pub mod rank;
pub mod reindex;
pub mod revisit;
pub mod robots;
pub mod serve;
pub mod urlnorm;
pub mod warc;
