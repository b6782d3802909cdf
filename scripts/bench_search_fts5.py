#!/usr/bin/env python3
"""The SQLite FTS5 third of scripts/bench-search.

SQLite full-text search as the Kennedy search engine uses it: an FTS5 virtual table of title and
body with tokenize='porter unicode61' that stores its own copy of the text (for snippet()), a
companion table of the other fields joined to it by rowid, results ranked by bm25(), the top 10
with snippet(fts, 1, '[', ']', '…', 20) of the body, and a count(*) of the matches for the
total, as Kennedy's results page shows.

  load    create the database file from the generator's TSV (the PostgreSQL COPY text format that
          `examples/bench_search.rs generate --tsv` writes: id, url, host, title, body, lang,
          mime, size), build the filter b-trees, merge the FTS5 index into one segment
          ('optimize'), ANALYZE; writes a JSON build record (times, sizes, the fingerprint of the
          documents loaded)
  check   exit 0 when a database file holds the documents of a given fingerprint and count and
          was built by this version of the loader (the driver's --reuse)
  query   time the benchmark's queries (warm-up pass, then ROUNDS passes over the whole list),
          in-process over the file database, one query at a time; writes one JSON record per
          query, in the same shape as bench_search_pg.py and examples/bench_search.rs write

The queries of scripts/bench-search-queries.tsv are translated as bench_search_pg.py runs them
on PostgreSQL: plainto_tsquery('english', 'a b') becomes the FTS5 query "a" AND "b",
phraseto_tsquery('english', 'a b') the FTS5 phrase "a b", and the SQL filter column is used as
it is, as a WHERE condition on the companion table's columns (host, lang, size: the filters are
plain SQL that SQLite reads as PostgreSQL does, with case_sensitive_like on so that LIKE compares
as PostgreSQL's does). A query that cannot be translated is not skipped: its record carries the
error, and the report counts it as a failed query.

This is a measuring tool: nothing in geode uses it. Needs only python3's built-in sqlite3 with
FTS5 compiled in.
"""

import argparse
import json
import os
import re
import sqlite3
import sys
import time
from pathlib import Path

# The query file and the query options are the PostgreSQL side's (that module imports psycopg
# only when it talks to PostgreSQL).
from bench_search_pg import add_query_options, read_queries

# Bumped when the schema or the build steps change: a kept database of an older version is
# rebuilt by --reuse.
SCHEMA_VERSION = 1

# Filters use ordinary columns of a companion table with b-tree indexes, joined by rowid, rather
# than UNINDEXED columns of the FTS5 table: an UNINDEXED column can only be tested row by row on
# the documents MATCH returns, while indexed columns let the planner start from a small site or
# language, as PostgreSQL's b-trees on the same columns let it.
SCHEMA = """
CREATE TABLE docs (
    id   INTEGER PRIMARY KEY,  -- the rowid of the document's row in fts
    url  TEXT NOT NULL,
    host TEXT NOT NULL,
    lang TEXT,
    mime TEXT NOT NULL,
    size INTEGER NOT NULL
);
CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize = 'porter unicode61');
CREATE TABLE bench_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

INDEXES = """
CREATE INDEX docs_host ON docs (host);
CREATE INDEX docs_lang ON docs (lang);
CREATE INDEX docs_size ON docs (size);
"""

# Kennedy's snippet: the body column (1), matches in brackets, at most 20 tokens.
SNIPPET = "snippet(fts, 1, '[', ']', '…', 20)"

# Page cache for the bulk load and for the queries (negative: KiB). The queries also map the file
# (up to SQLite's compiled-in limit, 2 GiB here), as geode's index is mapped.
CACHE_KIB = 1 << 20
MMAP_BYTES = 16 << 30


def log(message):
    print(f"bench_search_fts5: {message}", file=sys.stderr)


def require_fts5():
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    except sqlite3.Error as e:
        raise SystemExit(f"bench_search_fts5: this python3's SQLite has no FTS5: {e}")


# --- load ------------------------------------------------------------------------------------

COPY_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
COPY_ESCAPE = re.compile(r"\\(.)")


def copy_field(field):
    """One field of PostgreSQL's COPY text format: \\N is NULL, backslash escapes undone."""
    if field == "\\N":
        return None
    if "\\" not in field:
        return field
    return COPY_ESCAPE.sub(lambda m: COPY_ESCAPES.get(m.group(1), m.group(1)), field)


def read_tsv(path, progress):
    """Yields (id, url, host, title, body, lang, mime, size) per line of the generator's TSV."""
    with open(path, encoding="utf-8", newline="\n") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 8:
                raise SystemExit(f"{path}:{n}: expected 8 tab-separated columns, got {len(cols)}")
            id_, url, host, title, body, lang, mime, size = map(copy_field, cols)
            progress(len(line))
            yield int(id_), url, host, title, body, lang, mime, int(size)


def table_bytes(conn):
    """Bytes on disk per table and index (SQLite's dbstat), 0 when dbstat is not compiled in."""
    try:
        return dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    except sqlite3.Error:
        return {}


def load(args):
    require_fts5()
    db = Path(args.db)
    db.parent.mkdir(parents=True, exist_ok=True)
    tmp = db.with_name(db.name + ".tmp")
    for p in (db, tmp):
        p.unlink(missing_ok=True)
    # A bulk load: no journal, no fsync until the end, one transaction.
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    conn.executescript(SCHEMA)
    record = {"fingerprint": args.fingerprint, "docs": 0, "schema_version": SCHEMA_VERSION,
              "sqlite_version": sqlite3.sqlite_version}

    t0 = time.perf_counter()
    state = {"bytes": 0, "last": t0}

    def progress(n):
        state["bytes"] += n
        now = time.perf_counter()
        if now - state["last"] >= 15:
            log(f"inserted {state['bytes'] / 1e6:.0f} MB of TSV "
                f"({state['bytes'] / 1e6 / (now - t0):.1f} MB/s, tokenizing included)")
            state["last"] = now

    conn.execute("BEGIN")
    docs_insert = "INSERT INTO docs (id, url, host, lang, mime, size) VALUES (?, ?, ?, ?, ?, ?)"
    fts_insert = "INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)"
    batch = []

    def flush():
        conn.executemany(docs_insert, [(i, u, h, la, m, s) for i, u, h, _, _, la, m, s in batch])
        conn.executemany(fts_insert, [(i, t, b) for i, _, _, t, b, _, _, _ in batch])
        batch.clear()

    for row in read_tsv(args.tsv, progress):
        batch.append(row)
        if len(batch) >= 1000:
            flush()
    flush()
    conn.execute("COMMIT")
    record["insert_s"] = time.perf_counter() - t0
    record["tsv_bytes"] = state["bytes"]
    log(f"insert done in {record['insert_s']:.0f}s; merging the FTS5 index ('optimize')")

    # One b-tree for the whole index, as a finished build would leave it (geode waits for its
    # merges, PostgreSQL builds its GIN index in one go).
    t0 = time.perf_counter()
    conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")
    record["optimize_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.executescript(INDEXES)
    record["btree_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.execute("ANALYZE")
    record["analyze_s"] = time.perf_counter() - t0
    record["build_s"] = (
        record["insert_s"] + record["optimize_s"] + record["btree_s"] + record["analyze_s"]
    )

    record["docs"] = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    fts_docs = conn.execute("SELECT count(*) FROM fts").fetchone()[0]
    if fts_docs != record["docs"]:
        raise SystemExit(f"bench_search_fts5: {record['docs']} rows in docs, {fts_docs} in fts")
    sizes = table_bytes(conn)
    record.update(
        # the inverted index: its segments (fts_data), their b-tree keys (fts_idx), the length of
        # every document for bm25 (fts_docsize), the configuration (fts_config)
        fts_index_bytes=sum(sizes.get(f"fts_{t}", 0) for t in ("data", "idx", "docsize", "config")),
        fts_content_bytes=sizes.get("fts_content", 0),  # the stored title and body, for snippet()
        docs_table_bytes=sizes.get("docs", 0),
        btree_bytes=sum(sizes.get(i, 0) for i in ("docs_host", "docs_lang", "docs_size")),
    )
    meta = {"schema_version": SCHEMA_VERSION, "fingerprint": args.fingerprint,
            "docs": record["docs"]}
    conn.executemany("INSERT INTO bench_meta (key, value) VALUES (?, ?)",
                     [(k, str(v)) for k, v in meta.items()])
    conn.close()
    os.replace(tmp, db)
    record["file_bytes"] = db.stat().st_size
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    log(f"loaded {record['docs']} documents in {record['build_s']:.0f}s "
        f"(insert {record['insert_s']:.0f}s, optimize {record['optimize_s']:.0f}s, "
        f"b-trees {record['btree_s']:.0f}s, ANALYZE {record['analyze_s']:.0f}s); "
        f"{record['file_bytes'] / 1e6:,.0f} MB")


# --- check -----------------------------------------------------------------------------------


def check(args):
    """0 when the database holds what the driver would load again, 1 otherwise."""
    if not Path(args.db).is_file():
        return 1
    try:
        conn = sqlite3.connect(Path(args.db).resolve().as_uri() + "?mode=ro", uri=True)
        meta = dict(conn.execute("SELECT key, value FROM bench_meta"))
        conn.close()
    except sqlite3.Error as e:
        log(f"cannot reuse {args.db}: {e}")
        return 1
    want = {"schema_version": str(SCHEMA_VERSION), "fingerprint": args.fingerprint,
            "docs": str(args.docs)}
    for key, value in want.items():
        if meta.get(key) != value:
            log(f"cannot reuse {args.db}: its {key} is {meta.get(key)!r}, not {value!r}")
            return 1
    return 0


# --- query -----------------------------------------------------------------------------------


class Untranslatable(Exception):
    """A query of the list that has no FTS5 equivalent."""


TSQUERY = re.compile(r"(plainto|phraseto)_tsquery\(\s*'english'\s*,\s*'((?:[^']|'')*)'\s*\)")


def fts5_string(text):
    """An FTS5 string: its tokens are found by the table's tokenizer, nothing is syntax."""
    return '"' + text.replace('"', '""') + '"'


def match_of(tsquery):
    """The FTS5 MATCH expression of the queries file's PostgreSQL tsquery expression."""
    m = TSQUERY.fullmatch(tsquery.strip())
    if not m:
        raise Untranslatable(f"no FTS5 translation of the tsquery expression {tsquery!r}")
    kind, text = m.group(1), m.group(2).replace("''", "'")
    if not text.split():
        raise Untranslatable(f"empty query text in {tsquery!r}")
    if kind == "phraseto":
        # phraseto_tsquery: the words in this order, next to each other.
        return fts5_string(" ".join(text.split()))
    # plainto_tsquery: every word, anywhere.
    return " AND ".join(fts5_string(w) for w in text.split())


def sql_of(q, limit):
    """The search (top hits by bm25, with snippets) and the count of one query.

    Kennedy selects snippet() in the ranked SELECT itself; SQLite computes every result column
    of every matching row before ORDER BY ... LIMIT keeps the best ones, so that would make a
    snippet for every match (several times slower on common words). The search below ranks in
    a subquery and makes snippets for the `limit` best documents only: the top 10 with snippets,
    as geode's search returns them.
    """
    if q["filter"]:
        where = f"fts MATCH :match AND ({q['filter']})"
        matches = f"fts JOIN docs ON docs.id = fts.rowid WHERE {where}"
    else:
        matches = "fts WHERE fts MATCH :match"
    search = (
        f"WITH top AS (SELECT fts.rowid AS id, bm25(fts) AS score FROM {matches} "
        f"ORDER BY score LIMIT {int(limit)}) "
        f"SELECT docs.url, fts.title, {SNIPPET}, top.score FROM top "
        f"JOIN fts ON fts.rowid = top.id JOIN docs ON docs.id = top.id "
        f"WHERE fts MATCH :match ORDER BY top.score"
    )
    count = f"SELECT count(*) FROM {matches}"
    return search, count


def query(args):
    require_fts5()
    conn = sqlite3.connect(Path(args.db).resolve().as_uri() + "?mode=ro", uri=True,
                           cached_statements=512)
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    mmap = conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}").fetchone()
    # PostgreSQL's LIKE is case-sensitive; SQLite's is not unless told.
    conn.execute("PRAGMA case_sensitive_like = ON")
    # A bound on a runaway query (PostgreSQL's side has statement_timeout): reported as that
    # query's error.
    deadline = [0.0]
    conn.set_progress_handler(lambda: 1 if time.perf_counter() > deadline[0] else 0, 10000)

    def run(search, count, match):
        """The timed work of one query: top hits with snippets, and the count of matches."""
        deadline[0] = time.perf_counter() + args.timeout
        rows = conn.execute(search, {"match": match}).fetchall()
        total = conn.execute(count, {"match": match}).fetchone()[0]
        return rows, total

    docs = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    records = []
    for q in read_queries(args.queries):
        rec = {"kind": q["kind"], "query": q["query"], "match": None, "sql": None,
               "count_sql": None, "error": None, "total": None, "hits": None, "top_url": None,
               "top_snippet": None, "warmup_ms": 0.0, "times_ms": []}
        try:
            rec["match"] = match_of(q["tsquery"])
            rec["sql"], rec["count_sql"] = sql_of(q, args.limit)
            t = time.perf_counter()
            rows, total = run(rec["sql"], rec["count_sql"], rec["match"])
            rec["warmup_ms"] = (time.perf_counter() - t) * 1e3
            rec["hits"] = len(rows)
            rec["total"] = total
            rec["top_url"] = rows[0][0] if rows else None
            rec["top_snippet"] = rows[0][2] if rows else None
        except Untranslatable as e:
            rec["error"] = f"cannot be expressed in FTS5: {e}"
        except sqlite3.Error as e:
            rec["error"] = "sqlite: " + str(e).strip().splitlines()[0]
        if rec["error"]:
            log(f"{q['kind']} {q['query']!r}: {rec['error']}")
        records.append(rec)
    for r in range(args.rounds):
        log(f"round {r + 1}/{args.rounds}")
        for rec in records:
            if rec["error"]:
                continue
            try:
                t = time.perf_counter()
                run(rec["sql"], rec["count_sql"], rec["match"])
                rec["times_ms"].append((time.perf_counter() - t) * 1e3)
            except sqlite3.Error as e:
                rec["error"] = "sqlite: " + str(e).strip().splitlines()[0]
    conn.close()
    with open(args.out, "w") as f:
        json.dump({"engine": "sqlite-fts5", "sqlite_version": sqlite3.sqlite_version,
                   "mmap_bytes": mmap[0] if mmap else 0, "docs": docs, "rounds": args.rounds,
                   "queries": records}, f, indent=1, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--db", required=True, help="the database file to create")
    lp.add_argument("--tsv", required=True)
    lp.add_argument("--fingerprint", required=True)
    lp.add_argument("--out", required=True, help="the JSON build record")
    cp = sub.add_parser("check")
    cp.add_argument("--db", required=True)
    cp.add_argument("--fingerprint", required=True)
    cp.add_argument("--docs", type=int, required=True)
    qp = sub.add_parser("query")
    qp.add_argument("--db", required=True)
    add_query_options(qp)
    args = ap.parse_args()
    if args.command == "load":
        load(args)
    elif args.command == "check":
        sys.exit(check(args))
    else:
        query(args)


if __name__ == "__main__":
    main()
