#!/usr/bin/env python3
"""The PostgreSQL half of scripts/bench-search, and its report.

PostgreSQL full-text search as TLGS uses it: a tsvector of title and body
(to_tsvector('english', ...), a stored generated column) with a GIN index, queried with
plainto_tsquery / phraseto_tsquery and ranked by ts_rank_cd.

  load    create the docs table, COPY the generator's TSV into it, build the indexes, VACUUM ANALYZE;
          writes a JSON build record (times, sizes, the fingerprint of the documents loaded)
  query   time the benchmark's queries (warm-up pass, then ROUNDS passes over the whole list);
          writes one JSON record per query, in the same shape as examples/bench_search.rs writes
  report  print geode and PostgreSQL side by side from the two query records and build records,
          with SQLite FTS5 (bench_search_fts5.py) beside them when its records are given;
          exit 1 when geode's overall p50 is not at least 10x lower than PostgreSQL's or a query
          failed (on any of the engines)

This is a measuring tool: nothing in geode uses it. Needs psycopg 3 (the driver installs it in a
venv when missing).
"""

import argparse
import json
import math
import sys
import time


def connect(dsn):
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


# --- load ------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE docs (
    id    bigint PRIMARY KEY,
    url   text NOT NULL,
    host  text NOT NULL,
    title text NOT NULL,
    body  text NOT NULL,
    lang  text,
    mime  text NOT NULL,
    size  bigint NOT NULL,
    tsv   tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body)) STORED
)
"""


def load(args):
    conn = connect(args.dsn)
    record = {"fingerprint": args.fingerprint, "docs": 0}
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS docs")
        # Creating the table and loading it in one transaction lets wal_level=minimal skip the
        # WAL for the COPY, as a bulk load would.
        t0 = time.perf_counter()
        copied = 0
        last = t0
        with conn.transaction():
            cur.execute(SCHEMA)
            with open(args.tsv, "rb") as f, cur.copy(
                "COPY docs (id, url, host, title, body, lang, mime, size) FROM STDIN"
            ) as copy:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    copy.write(chunk)
                    copied += len(chunk)
                    now = time.perf_counter()
                    if now - last >= 15:
                        print(
                            f"bench_search_pg: COPY {copied / 1e6:.0f} MB "
                            f"({copied / 1e6 / (now - t0):.1f} MB/s, to_tsvector included)",
                            file=sys.stderr,
                        )
                        last = now
        record["copy_s"] = time.perf_counter() - t0
        record["tsv_bytes"] = copied
        print(f"bench_search_pg: COPY done in {record['copy_s']:.0f}s; building the GIN index",
              file=sys.stderr)

        t0 = time.perf_counter()
        cur.execute("CREATE INDEX docs_tsv_gin ON docs USING gin (tsv)")
        record["gin_s"] = time.perf_counter() - t0
        # B-tree indexes on the filter columns give the planner every chance with filtered
        # queries (it may still prefer the GIN index and a filter).
        t0 = time.perf_counter()
        cur.execute("CREATE INDEX docs_host ON docs (host)")
        cur.execute("CREATE INDEX docs_lang ON docs (lang)")
        cur.execute("CREATE INDEX docs_size ON docs (size)")
        record["btree_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        cur.execute("VACUUM (ANALYZE) docs")
        record["vacuum_analyze_s"] = time.perf_counter() - t0
        record["build_s"] = (
            record["copy_s"] + record["gin_s"] + record["btree_s"] + record["vacuum_analyze_s"]
        )

        cur.execute("SELECT count(*) FROM docs")
        record["docs"] = cur.fetchone()[0]
        cur.execute(
            """SELECT pg_table_size('docs'), pg_relation_size('docs_tsv_gin'),
                      pg_indexes_size('docs'), pg_total_relation_size('docs'),
                      pg_database_size(current_database())"""
        )
        table, gin, indexes, total, database = cur.fetchone()
        record.update(
            table_bytes=table,  # heap + TOAST: text and tsvector
            gin_bytes=gin,
            indexes_bytes=indexes,  # GIN + primary key + the filter b-trees
            total_bytes=total,
            database_bytes=database,
        )
    conn.close()
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    print(
        f"bench_search_pg: loaded {record['docs']} documents in {record['build_s']:.0f}s "
        f"(COPY {record['copy_s']:.0f}s, GIN {record['gin_s']:.0f}s, "
        f"b-trees {record['btree_s']:.0f}s, VACUUM ANALYZE {record['vacuum_analyze_s']:.0f}s)",
        file=sys.stderr,
    )


# --- query -----------------------------------------------------------------------------------


def read_queries(path):
    queries = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 3:
                raise SystemExit(f"{path}:{n}: needs kind<TAB>geode query<TAB>tsquery[<TAB>filter]")
            queries.append(
                {"kind": cols[0], "query": cols[1], "tsquery": cols[2],
                 "filter": cols[3] if len(cols) > 3 else ""}
            )
    return queries


def sql_of(q, limit):
    where = "tsv @@ q" + (f" AND ({q['filter']})" if q["filter"] else "")
    search = (
        f"SELECT url, title, ts_rank_cd(tsv, q) AS r FROM docs, {q['tsquery']} q "
        f"WHERE {where} ORDER BY r DESC LIMIT {int(limit)}"
    )
    count = f"SELECT count(*) FROM docs, {q['tsquery']} q WHERE {where}"
    return search, count


def query(args):
    import psycopg

    conn = connect(args.dsn)
    records = []
    with conn.cursor() as cur:
        # A bound on a runaway query; it is reported as that query's error.
        cur.execute(f"SET statement_timeout = '{int(args.timeout)}s'")
        cur.execute("SELECT count(*) FROM docs")
        docs = cur.fetchone()[0]
        for q in read_queries(args.queries):
            search, count = sql_of(q, args.limit)
            rec = {"kind": q["kind"], "query": q["query"], "sql": search, "error": None,
                   "total": None, "hits": None, "top_url": None, "warmup_ms": 0.0,
                   "times_ms": []}
            try:
                t = time.perf_counter()
                cur.execute(search)
                rows = cur.fetchall()
                rec["warmup_ms"] = (time.perf_counter() - t) * 1e3
                rec["hits"] = len(rows)
                rec["top_url"] = rows[0][0] if rows else None
                # The number of matches, untimed: geode's search reports it, the PostgreSQL query
                # above does not compute it.
                cur.execute(count)
                rec["total"] = cur.fetchone()[0]
            except psycopg.Error as e:
                rec["error"] = str(e).strip().splitlines()[0]
            records.append(rec)
        for r in range(args.rounds):
            print(f"bench_search_pg: round {r + 1}/{args.rounds}", file=sys.stderr)
            for rec in records:
                if rec["error"]:
                    continue
                try:
                    t = time.perf_counter()
                    cur.execute(rec["sql"])
                    cur.fetchall()
                    rec["times_ms"].append((time.perf_counter() - t) * 1e3)
                except psycopg.Error as e:
                    rec["error"] = str(e).strip().splitlines()[0]
    conn.close()
    with open(args.out, "w") as f:
        json.dump({"engine": "postgresql", "docs": docs, "rounds": args.rounds,
                   "queries": records}, f, indent=1)


# --- report ----------------------------------------------------------------------------------


def percentile(values, p):
    """Nearest-rank percentile: the smallest value with at least p% of the values at or below."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def stats(values):
    if not values:
        return (math.nan, math.nan, math.nan)
    return (percentile(values, 50), percentile(values, 99), sum(values) / len(values))


def ms(v):
    if isinstance(v, float) and math.isnan(v):
        return "-"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def ratio(a, b):
    if any(isinstance(x, float) and math.isnan(x) for x in (a, b)) or a <= 0:
        return "-"
    return f"{b / a:.1f}x"


def mb(n):
    return f"{n / 1e6:,.0f} MB" if n is not None else "-"


def report(args):
    with open(args.geode) as f:
        geode = json.load(f)
    with open(args.pg) as f:
        pg = json.load(f)
    with open(args.geode_build) as f:
        gbuild = json.load(f)
    with open(args.pg_build) as f:
        pbuild = json.load(f)
    if len(geode["queries"]) != len(pg["queries"]):
        raise SystemExit("report: the two runs used different query lists")
    pairs = list(zip(geode["queries"], pg["queries"]))
    # SQLite FTS5, when given: its columns go beside PostgreSQL's, which stay as they were.
    fts = fbuild = None
    if args.fts5:
        with open(args.fts5) as f:
            fts = json.load(f)
        with open(args.fts5_build) as f:
            fbuild = json.load(f)
        if [q["query"] for q in fts["queries"]] != [g["query"] for g in geode["queries"]]:
            raise SystemExit("report: the FTS5 run used a different query list")
    fq = fts["queries"] if fts else [None] * len(pairs)
    kinds = []
    for g, _ in pairs:
        if g["kind"] not in kinds:
            kinds.append(g["kind"])

    print(f"geode vs PostgreSQL full-text search: {geode['docs']:,} documents in geode, "
          f"{pg['docs']:,} in PostgreSQL, {len(pairs)} queries x {geode['rounds']} rounds "
          f"after one warm-up pass each; latencies in ms")
    if fts:
        print(f"and SQLite FTS5 (Kennedy's engine): {fts['docs']:,} documents, the same queries "
              f"and rounds")
    print()
    head = (f"{'kind':<11} {'queries':>7} | {'geode p50':>9} {'p99':>8} {'mean':>8} | "
            f"{'pg p50':>8} {'p99':>8} {'mean':>8} | {'p50 ratio':>9}")
    if fts:
        head += f" | {'fts5 p50':>8} {'p99':>8} {'mean':>8} | {'fts5 ratio':>10}"
    print(head)
    print("-" * len(head))
    overall = None
    overall_fts = None
    fts_left_out = 0
    for kind in kinds + ["all"]:
        sel = [(g, p) for g, p in pairs if kind == "all" or g["kind"] == kind]
        extra = ""
        if fts:
            # FTS5 against geode over the queries that ran on both of them.
            fsel = [(g, f) for (g, _), f in zip(pairs, fq) if kind == "all" or g["kind"] == kind]
            ok = [(g, f) for g, f in fsel if not g["error"] and not f["error"]]
            gfs = stats([t for g, _ in ok for t in g["times_ms"]])
            fs = stats([t for _, f in ok for t in f["times_ms"]])
            extra = (f" | {ms(fs[0]):>8} {ms(fs[1]):>8} {ms(fs[2]):>8} | "
                     f"{ratio(gfs[0], fs[0]):>10}")
            if len(ok) != len(fsel):
                extra += f"  (FTS5: {len(ok)}/{len(fsel)} queries)"
            if kind == "all":
                overall_fts = (gfs, fs)
                fts_left_out = len(fsel) - len(ok)
        gt = [t for g, p in sel if not g["error"] and not p["error"] for t in g["times_ms"]]
        pt = [t for g, p in sel if not g["error"] and not p["error"] for t in p["times_ms"]]
        n_ok = sum(1 for g, p in sel if not g["error"] and not p["error"])
        gs, ps = stats(gt), stats(pt)
        if kind == "all":
            print("-" * len(head))
            overall = (gs, ps)
        label = f"{n_ok}/{len(sel)}" if n_ok != len(sel) else str(len(sel))
        print(f"{kind:<11} {label:>7} | {ms(gs[0]):>9} {ms(gs[1]):>8} {ms(gs[2]):>8} | "
              f"{ms(ps[0]):>8} {ms(ps[1]):>8} {ms(ps[2]):>8} | {ratio(gs[0], ps[0]):>9}{extra}")
    print()
    print("Statistics over every (query, round) sample of the kind; a query that failed on either")
    print("side is left out of both (queries column: timed/all). p50 ratio = PostgreSQL p50 / geode p50.")
    if fts:
        print("FTS5 columns likewise against geode: fts5 ratio = FTS5 p50 / geode p50, over the queries")
        print("that ran on both geode and FTS5" +
              (f" ({fts_left_out} left out, see the notes below)." if fts_left_out else
               " (all of them)."))
    print()

    print("per query: matches (geode total / PostgreSQL count" + (" / FTS5 count" if fts else "")
          + ") and p50 in ms")
    print(f"{'kind':<11} {'query':<34} {'geode n':>8} {'pg n':>8} {'geode':>8} {'pg':>8} {'ratio':>7}"
          + (f" {'fts5 n':>8} {'fts5':>8} {'ratio':>7}" if fts else "") + "  note")
    flagged = 0
    errors = 0
    fts_flagged = 0
    fts_errors = 0
    for (g, p), f in zip(pairs, fq):
        notes = []
        if g["error"]:
            notes.append(f"geode error: {g['error']}")
        if p["error"]:
            notes.append(f"postgres error: {p['error']}")
        if g["error"] or p["error"]:
            errors += 1
        if not g["error"] and not p["error"] and (g["total"] == 0) != (p["total"] == 0):
            notes.append("only one side finds matches")
            flagged += 1
        elif g["total"] and p["total"] and max(g["total"], p["total"]) > 2 * min(g["total"], p["total"]):
            notes.append("match counts differ more than 2x")
        gp = percentile(g["times_ms"], 50)
        pp = percentile(p["times_ms"], 50)
        gn = "-" if g["total"] is None else str(g["total"])
        pn = "-" if p["total"] is None else str(p["total"])
        extra = ""
        if f:
            if f["error"]:
                notes.append(f"fts5 error: {f['error']}")
                fts_errors += 1
            elif not g["error"] and (g["total"] == 0) != (f["total"] == 0):
                notes.append("fts5: only one of geode and FTS5 finds matches")
                fts_flagged += 1
            elif g["total"] and f["total"] and max(g["total"], f["total"]) > 2 * min(g["total"], f["total"]):
                notes.append("fts5: match counts of geode and FTS5 differ more than 2x")
            fp = percentile(f["times_ms"], 50)
            fn = "-" if f["total"] is None else str(f["total"])
            extra = f" {fn:>8} {ms(fp):>8} {ratio(gp, fp):>7}"
        print(f"{g['kind']:<11} {g['query'][:34]:<34} {gn:>8} {pn:>8} {ms(gp):>8} {ms(pp):>8} "
              f"{ratio(gp, pp):>7}{extra}  {'; '.join(notes)}")
    print()

    print("build and size on disk")
    print(f"  geode      {gbuild['docs']:,} docs from {gbuild['corpus_pages']:,} corpus pages "
          f"({gbuild['text_bytes'] / 1e6:,.0f} MB of title+body text): "
          f"generate+extract+index+commit {gbuild['index_s']:.0f}s, merges {gbuild['merge_s']:.0f}s "
          f"({gbuild['segments_after_commit']} -> {gbuild['segments']} segments); "
          f"index {mb(args.geode_bytes)}")
    print(f"  PostgreSQL COPY+to_tsvector {pbuild['copy_s']:.0f}s, GIN {pbuild['gin_s']:.0f}s, "
          f"b-trees {pbuild['btree_s']:.0f}s, VACUUM ANALYZE {pbuild['vacuum_analyze_s']:.0f}s "
          f"(total {pbuild['build_s']:.0f}s); table+TOAST {mb(pbuild['table_bytes'])}, "
          f"GIN {mb(pbuild['gin_bytes'])}, all indexes {mb(pbuild['indexes_bytes'])}, "
          f"database {mb(pbuild['database_bytes'])}, data directory {mb(args.pg_dir_bytes)}")
    if fts:
        print(f"  FTS5       SQLite {fbuild['sqlite_version']}: insert+tokenize {fbuild['insert_s']:.0f}s, "
              f"optimize {fbuild['optimize_s']:.0f}s, b-trees {fbuild['btree_s']:.0f}s, "
              f"ANALYZE {fbuild['analyze_s']:.0f}s (total {fbuild['build_s']:.0f}s); "
              f"FTS5 index {mb(fbuild['fts_index_bytes'])}, stored title+body "
              f"{mb(fbuild['fts_content_bytes'])}, docs table {mb(fbuild['docs_table_bytes'])}, "
              f"b-trees {mb(fbuild['btree_bytes'])}, database file "
              f"{mb(args.fts5_bytes if args.fts5_bytes is not None else fbuild['file_bytes'])}")
    if args.reused:
        print(f"  (reused from an earlier run: {args.reused})")
    print()
    print("geode: SearchIndex::search(query, 10, 0) in-process; its time includes the total count and")
    print("snippets for the 10 hits. PostgreSQL: the SELECT above over TCP loopback with psycopg, time")
    print("from execute to fetchall; it computes no count and no snippets, which favours it.")
    if fts:
        print("FTS5: in-process through python3's sqlite3 over the database file (memory-mapped up to "
              f"{fts.get('mmap_bytes', 0) / 2**30:.1f} GiB);")
        print("its time includes the bm25() SELECT with snippet() for the 10 hits and a count(*) of the")
        print("matches, as geode's does, from execute to fetchall of both.")

    (g50, _, _), (p50, _, _) = overall
    status = 0
    if math.isnan(g50) or math.isnan(p50) or p50 < 10 * g50:
        print(f"FAIL: geode's overall p50 ({ms(g50)} ms) is not at least 10x lower than "
              f"PostgreSQL's ({ms(p50)} ms)")
        status = 1
    else:
        print(f"check: geode's overall p50 is {p50 / g50:.1f}x lower than PostgreSQL's "
              f"({ms(g50)} ms vs {ms(p50)} ms)")
    if errors:
        print(f"FAIL: {errors} queries failed on one side or both (see the notes above)")
        status = 1
    if flagged:
        print(f"note: {flagged} queries find matches on one side only")
    if fts:
        (gf50, _, _), (f50, _, _) = overall_fts
        if math.isnan(gf50) or math.isnan(f50):
            print("FTS5: no query ran on both geode and FTS5")
        elif f50 >= gf50:
            print(f"FTS5: geode's overall p50 is {f50 / gf50:.1f}x lower than FTS5's "
                  f"({ms(gf50)} ms vs {ms(f50)} ms)")
        else:
            print(f"FTS5: FTS5's overall p50 is {gf50 / f50:.1f}x lower than geode's "
                  f"({ms(f50)} ms vs {ms(gf50)} ms)")
        if fts_errors:
            print(f"FAIL: {fts_errors} queries failed on FTS5 or cannot be expressed in it "
                  f"(see the notes above)")
            status = 1
        if fts_flagged:
            print(f"note: {fts_flagged} queries find matches on only one of geode and FTS5")
    return status


def add_query_options(parser):
    """The options of a `query` subcommand, the same for every engine's script."""
    parser.add_argument("--queries", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--out", required=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--dsn", required=True)
    lp.add_argument("--tsv", required=True)
    lp.add_argument("--fingerprint", required=True)
    lp.add_argument("--out", required=True)
    qp = sub.add_parser("query")
    qp.add_argument("--dsn", required=True)
    add_query_options(qp)
    rp = sub.add_parser("report")
    rp.add_argument("--geode", required=True)
    rp.add_argument("--pg", required=True)
    rp.add_argument("--geode-build", required=True)
    rp.add_argument("--pg-build", required=True)
    rp.add_argument("--geode-bytes", type=int, default=None)
    rp.add_argument("--pg-dir-bytes", type=int, default=None)
    rp.add_argument("--fts5", default=None, help="bench_search_fts5.py's query record")
    rp.add_argument("--fts5-build", default=None, help="bench_search_fts5.py's build record")
    rp.add_argument("--fts5-bytes", type=int, default=None)
    rp.add_argument("--reused", default="")
    args = ap.parse_args()
    if args.command == "report" and bool(args.fts5) != bool(args.fts5_build):
        ap.error("report: --fts5 and --fts5-build go together")
    if args.command == "load":
        load(args)
    elif args.command == "query":
        query(args)
    else:
        sys.exit(report(args))


if __name__ == "__main__":
    main()
