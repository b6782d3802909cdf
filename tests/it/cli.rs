//! The `geode` binary as people and scripts use it: crawl, search, stats, backlinks, exit codes.
