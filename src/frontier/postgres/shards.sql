-- The shards of the shared crawl database (schema version 4), run after schema.sql when a
-- database is made, and after adding `hosts.shard` and `hosts.ip` when one is upgraded.

-- A capsule's shard, from its IP address or (until resolved) its name: 256 shards.
CREATE FUNCTION geode_shard(key TEXT) RETURNS INT LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT ('x' || substr(md5(key), 1, 4))::bit(16)::int % 256 $$;

-- Who owns each shard: only its owner claims the shard's capsules and writes their rows. An
-- owner renews `leased_until` (the database's clock) while it runs; a shard whose lease ran out
-- is adopted by a live crawler. `epoch` grows at every change of owner, and fences a crawler
-- that lost a shard: its writes name the epoch it knew, and are refused once it changed.
CREATE TABLE shards (
    id           INT PRIMARY KEY,
    owner        TEXT,
    leased_until BIGINT NOT NULL DEFAULT 0,
    epoch        BIGINT NOT NULL DEFAULT 0
);
INSERT INTO shards(id) SELECT generate_series(0, 255);

-- What other writers learned of a capsule they do not own: URLs added to it (`added`) and the
-- earliest time one is due. Only appended to by anyone; the capsule's owner folds its rows
-- into `hosts.url_count` and `hosts.next_due` and deletes them, so that no writer but the
-- owner ever updates a capsule's row.
CREATE TABLE host_news (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id BIGINT NOT NULL,
    due     BIGINT,
    added   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX host_news_by_host ON host_news(host_id);
CREATE INDEX hosts_shard_due ON hosts(shard, next_due) WHERE next_due IS NOT NULL;
CREATE INDEX hosts_shard_leased ON hosts(shard) WHERE claimed != 0;
