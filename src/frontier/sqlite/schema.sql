-- The crawl database, schema version 4 (PRAGMA user_version). A new database is created from
-- this file; an older one is brought here by migrate.rs.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- One row per capsule: host, or host:port when the port is not the default. Its crawl budget
-- (crawl/budget.rs) keeps why a crawl held it back until backoff_until (`held_reason`) and what
-- the last run learned of its value: its pages in the index and the other sites with indexed
-- pages linking to it (`pages`, `linkers`). No comment follows those columns: SQLite edits the
-- table's text to drop a column, and the migration tests drop them to make an older file.
CREATE TABLE hosts (
    id                INTEGER PRIMARY KEY,
    name              TEXT NOT NULL UNIQUE,
    robots_status     INTEGER,            -- status of the last robots.txt fetch (NULL: never fetched)
    robots_txt        TEXT,               -- its body when it was 20 text/*
    robots_fetched_at INTEGER,            -- unix seconds
    cert_sha256       TEXT,               -- trust on first use: the pinned certificate
    cert_first_seen   INTEGER,            -- when the pinned certificate was first seen
    cert_last_seen    INTEGER,
    cert_changes      INTEGER NOT NULL DEFAULT 0,
    backoff_until     INTEGER,            -- no request to this capsule before this time
    backoff_level     INTEGER NOT NULL DEFAULT 0, -- consecutive back-offs, for doubling
    url_count         INTEGER NOT NULL DEFAULT 0, -- URLs known on this capsule (the budget)
    next_due          INTEGER,            -- no unclaimed URL of it is due before this (may be early)
    claimed           INTEGER NOT NULL DEFAULT 0, -- 1 while a running crawl holds the capsule
    held_reason       TEXT,
    pages             INTEGER NOT NULL DEFAULT 0,
    linkers           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX hosts_due ON hosts(next_due) WHERE claimed = 0 AND next_due IS NOT NULL;

-- Every URL geode knows, fetched or not. `state` is what the last visit found:
--   new      never visited
--   indexed  its content is indexed under this URL (directly, or through a temporary redirect)
--   fetched  answered, nothing indexed under it (redirect, input, error status, duplicate)
--   failed   no usable answer at the last visit (network, TLS or protocol error)
--   excluded not fetched (robots.txt, scheme, depth, traps, the operator's exclusions)
-- `in_index` says whether the Tantivy index holds a document under this URL; it only changes
-- when an index commit holding the URL's `index_op` is confirmed (see mod.rs).
CREATE TABLE urls (
    id              INTEGER PRIMARY KEY,
    url             TEXT NOT NULL UNIQUE,
    host_id         INTEGER NOT NULL REFERENCES hosts(id),
    state           TEXT NOT NULL DEFAULT 'new'
                    CHECK (state IN ('new','indexed','fetched','failed','excluded')),
    depth           INTEGER NOT NULL,     -- links followed from a seed
    hops            INTEGER NOT NULL DEFAULT 0, -- redirects followed to reach this URL
    discovered_from INTEGER REFERENCES urls(id),
    alias_of        INTEGER REFERENCES urls(id), -- reached by a temporary redirect from this URL,
                                                 -- under which its content is indexed
    redirect_to     INTEGER REFERENCES urls(id), -- where its last redirect (30 or 31) pointed
    attempts        INTEGER NOT NULL DEFAULT 0,  -- temporary failures in a row
    status          INTEGER,              -- last status code received
    meta            TEXT,                 -- last meta line, or the error's message
    error           TEXT,                 -- short error kind (failed, excluded, duplicate)
    mime            TEXT,
    size            INTEGER,
    content_hash    TEXT,                 -- SHA-256 of the last content (its body in `bodies`)
    content_meta    TEXT,                 -- the meta line that came with that content
    etag            TEXT,                 -- HTTP validators of that content, for conditional
    last_modified   TEXT,                 -- revisits (If-None-Match, If-Modified-Since)
    fetched_at      INTEGER,              -- last visit
    -- The revisit schedule (crawl/revisit.rs).
    prio            INTEGER NOT NULL DEFAULT 1, -- claim order in its capsule: 0 hub, 1 new, 2 revisit
    due_at          INTEGER,              -- next visit; NULL: never
    revisit_secs    INTEGER,              -- the interval set at the last visit
    first_failed_at INTEGER,              -- start of the current run of failed visits
    changed_at      INTEGER,              -- last visit that found new or changed content
    visits          INTEGER NOT NULL DEFAULT 0,
    changes         INTEGER NOT NULL DEFAULT 0, -- visits that found new or changed content
    feed            INTEGER NOT NULL DEFAULT 0, -- a gemfeed, Atom or RSS feed
    -- 0 free, 1 claimed by the running crawl, 2 visited in the running crawl (not again in it).
    claimed         INTEGER NOT NULL DEFAULT 0,
    -- The index.
    in_index        INTEGER NOT NULL DEFAULT 0,
    index_op        TEXT CHECK (index_op IN ('upsert', 'delete')), -- sent, not yet committed
    batch           INTEGER               -- index commit sequence holding index_op
);
CREATE INDEX urls_due ON urls(host_id, prio, due_at) WHERE claimed = 0 AND due_at IS NOT NULL;
CREATE INDEX urls_claimed ON urls(host_id) WHERE claimed != 0;
CREATE INDEX urls_by_op ON urls(batch) WHERE index_op IS NOT NULL;
-- Pages by content (duplicates, bodies still needed): by the first 16 hex digits of the hash
-- (64 bits, which distinct contents about never share), in a quarter of the space of the whole
-- hash; queries compare the whole hash on the rows found.
CREATE INDEX urls_by_hash_prefix ON urls(substr(content_hash, 1, 16))
    WHERE content_hash IS NOT NULL;
CREATE INDEX urls_redirected ON urls(redirect_to) WHERE redirect_to IS NOT NULL;
-- Web links waiting for a run that follows the web (see migrate.rs: also made in older files).
CREATE INDEX urls_web_waiting ON urls(id) WHERE state = 'excluded' AND error IN ('web', 'not-fetchable');

-- The link graph: one row per distinct (source, target, label), keyed by target (backlinks,
-- anchors and their updates look links up by target).
CREATE TABLE links (
    target INTEGER NOT NULL REFERENCES urls(id),
    label  TEXT NOT NULL DEFAULT '',
    source INTEGER NOT NULL REFERENCES urls(id),
    PRIMARY KEY (target, label, source)
) WITHOUT ROWID;
-- The same links by source, one row per page that has any: its (target, label) pairs packed
-- (outlinks.rs), read when it is visited again, removed or shown.
CREATE TABLE outlinks (
    source INTEGER PRIMARY KEY REFERENCES urls(id),
    links  BLOB NOT NULL
);

-- The archive (archive.rs): the latest response of every fetched URL, and its body once per
-- distinct content, zstd-compressed.
CREATE TABLE bodies (
    id   INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,      -- SHA-256 of the body, hex (urls.content_hash)
    size INTEGER NOT NULL,          -- bytes before compression
    zstd BLOB NOT NULL
);
CREATE TABLE responses (
    url_id      INTEGER PRIMARY KEY REFERENCES urls(id),
    status      INTEGER NOT NULL,
    meta        TEXT NOT NULL,
    fetched_at  INTEGER NOT NULL,
    cert_sha256 TEXT,
    body_hash   TEXT                -- NULL when no body was read
);
CREATE INDEX responses_by_body ON responses(body_hash) WHERE body_hash IS NOT NULL;

-- Seeds people suggested (`geode seed add`, the frontend's /add-seed): their URLs are in `urls`,
-- due at once; this table remembers who asked and when.
CREATE TABLE seeds (
    url      TEXT PRIMARY KEY,
    added_at INTEGER NOT NULL,
    source   TEXT NOT NULL          -- 'cli' or 'serve'
) WITHOUT ROWID;

-- Pages whose inbound link labels (anchors) changed since their document was written: the
-- crawl rewrites their documents at its end, from what is stored, without fetching them.
CREATE TABLE anchor_updates (
    url_id INTEGER PRIMARY KEY REFERENCES urls(id)
);
