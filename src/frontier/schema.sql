-- The crawl database. Every statement is idempotent: it runs on each open.

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- One row per capsule: host, or host:port when the port is not the default.
CREATE TABLE IF NOT EXISTS hosts (
    id                INTEGER PRIMARY KEY,
    name              TEXT NOT NULL UNIQUE,
    robots_status     INTEGER,            -- status of the last robots.txt fetch (NULL: never fetched)
    robots_txt        TEXT,               -- its body when it was 20 text/*
    robots_fetched_at INTEGER,            -- unix seconds
    cert_sha256       TEXT,               -- trust on first use: the pinned certificate
    cert_first_seen   INTEGER,
    cert_last_seen    INTEGER,
    cert_changes      INTEGER NOT NULL DEFAULT 0,
    backoff_until     INTEGER,            -- no request to this capsule before this time
    backoff_level     INTEGER NOT NULL DEFAULT 0, -- consecutive back-offs, for doubling
    url_count         INTEGER NOT NULL DEFAULT 0  -- URLs known on this capsule (the budget)
);

-- Every URL geode knows, fetched or not.
--   new      waiting to be fetched
--   queued   handed to the running crawl (reset to new when a crawl starts)
--   pending  fetched, its document sent to the index in commit `batch`, commit not yet confirmed
--   removing fetched, its removal from the index sent in commit `batch`, not yet confirmed
--   indexed  in the index
--   fetched  fetched, nothing to index (redirect, input, error status)
--   failed   no response (network, TLS or protocol error)
--   excluded never to be fetched (robots.txt, scheme, depth)
CREATE TABLE IF NOT EXISTS urls (
    id              INTEGER PRIMARY KEY,
    url             TEXT NOT NULL UNIQUE,
    host_id         INTEGER NOT NULL REFERENCES hosts(id),
    state           TEXT NOT NULL DEFAULT 'new'
                    CHECK (state IN ('new','queued','pending','removing','indexed','fetched',
                                     'failed','excluded')),
    depth           INTEGER NOT NULL,     -- links followed from a seed
    hops            INTEGER NOT NULL DEFAULT 0, -- redirects followed to reach this URL
    discovered_from INTEGER REFERENCES urls(id),
    alias_of        INTEGER REFERENCES urls(id), -- reached by a temporary redirect from this URL,
                                                 -- under which its content is indexed
    attempts        INTEGER NOT NULL DEFAULT 0,  -- temporary failures in a row
    retry_after     INTEGER,              -- a temporary failure: not before this time
    status          INTEGER,              -- last status code received
    meta            TEXT,                 -- last meta line, or the error's message
    error           TEXT,                 -- short error kind when state is failed or excluded
    mime            TEXT,
    size            INTEGER,
    content_hash    TEXT,
    fetched_at      INTEGER,
    batch           INTEGER               -- index commit sequence holding the page
);
CREATE INDEX IF NOT EXISTS urls_by_state ON urls(state, host_id, id);
CREATE INDEX IF NOT EXISTS urls_by_batch ON urls(batch) WHERE state IN ('pending', 'removing');
CREATE INDEX IF NOT EXISTS urls_by_hash ON urls(content_hash) WHERE content_hash IS NOT NULL;

-- The link graph: one row per distinct (source, target, label).
CREATE TABLE IF NOT EXISTS links (
    source INTEGER NOT NULL REFERENCES urls(id),
    target INTEGER NOT NULL REFERENCES urls(id),
    label  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source, target, label)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_by_target ON links(target);
