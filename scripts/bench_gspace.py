#!/usr/bin/env python3
"""Helper of scripts/bench-gspace (geminispace in a box, issue 39): reads the manifest that
`geode-fixture gspace` wrote, the crawl database geode left, GNU time's reports and the
fixture's request log, and prints the benchmark's tables. Standard library only.

  bench_gspace.py args MANIFEST SEEDS RESOLVE   seeds file and --resolve arguments for geode
  bench_gspace.py snapshot DATA MANIFEST        JSON: index and database sizes, coverage
  bench_gspace.py report WORK DELAY_MS SPLIT    the tables (runs "first" and "recrawl")
"""

import json
import os
import sqlite3
import sys
from collections import Counter


def load_manifest(path):
    with open(path) as f:
        return json.load(f)


def cmd_args(manifest_path, seeds_path, resolve_path):
    m = load_manifest(manifest_path)
    with open(seeds_path, "w") as f:
        f.write("".join(s + "\n" for s in m["seeds"]))
    with open(resolve_path, "w") as f:
        for entry in m["resolve"]:
            f.write("--resolve\n" + entry + "\n")


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def cmd_snapshot(data, manifest_path):
    """Coverage: a reachable legitimate page counts when its URL is in the index, or the URL of
    the same path on one of its capsule's mirrors (geode indexes an exact copy once, under the
    URL it fetched first)."""
    m = load_manifest(manifest_path)
    tsv = os.path.join(os.path.dirname(os.path.abspath(manifest_path)), m["pages_tsv"])
    mirrors = {}
    for c in m["capsules"]:
        if c["mirror_of"]:
            mirrors.setdefault(c["mirror_of"], []).append(c["host"])
    db = sqlite3.connect(f"file:{os.path.join(data, 'crawl.sqlite')}?mode=ro", uri=True)
    indexed = {row[0] for row in db.execute("SELECT url FROM urls WHERE in_index = 1")}
    known = db.execute("SELECT count(*) FROM urls").fetchone()[0]
    db.close()
    reachable = covered = 0
    with open(tsv) as f:
        for line in f:
            url = line.split("\t", 1)[0]
            reachable += 1
            host = url[len("gemini://"):].split("/", 1)[0]
            path = url[len("gemini://") + len(host):]
            if url in indexed or any(f"gemini://{h}{path}" in indexed for h in mirrors.get(host, ())):
                covered += 1
    db_bytes = sum(
        os.path.getsize(os.path.join(data, f))
        for f in ("crawl.sqlite", "crawl.sqlite-wal", "crawl.sqlite-shm")
        if os.path.exists(os.path.join(data, f))
    )
    print(json.dumps({
        "indexed": len(indexed),
        "known_urls": known,
        "reachable": reachable,
        "covered": covered,
        "db_bytes": db_bytes,
        "index_bytes": dir_bytes(os.path.join(data, "tantivy")),
    }))


def gnu_time(path):
    """user s, sys s, peak RSS KB from a `/usr/bin/time -v` report."""
    values = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().rpartition(": ")
            values[key] = value
    return (float(values.get("User time (seconds)", 0)),
            float(values.get("System time (seconds)", 0)),
            int(values.get("Maximum resident set size (kbytes)", 0)))


def read_json(path, default=None):
    try:
        with open(path) as f:
            text = f.read().strip().splitlines()
        return json.loads(text[-1]) if text else default
    except (OSError, ValueError):
        return default


def cmd_report(work, delay_ms, split):
    delay_ms, split = float(delay_ms), int(split)
    m = load_manifest(os.path.join(work, "world.json"))
    trap_hosts = [(kind, h) for kind, hosts in m["traps"].items() for h in hosts]
    # The log is in the order connections closed; the first SPLIT lines are the first run's.
    runs = {"first": {"ips": Counter(), "hosts": Counter(), "n": 0},
            "recrawl": {"ips": Counter(), "hosts": Counter(), "n": 0}}
    log = os.path.join(work, "requests.jsonl")
    with open(log) as f:
        for i, line in enumerate(f):
            r = json.loads(line)
            run = runs["first" if i < split else "recrawl"]
            run["n"] += 1
            run["ips"][r["local"].rsplit(":", 1)[0]] += 1
            host = (r.get("sni") or r["request"][len("gemini://"):].split("/", 1)[0]).lower()
            run["hosts"][host] += 1

    columns = []
    for label in ("first", "recrawl"):
        s = read_json(os.path.join(work, f"{label}.out"), {}) or {}
        snap = read_json(os.path.join(work, f"snapshot-{label}.json"), {}) or {}
        with open(os.path.join(work, f"wall-{label}.txt")) as f:
            wall = float(f.read().strip())
        user, system, rss_kb = gnu_time(os.path.join(work, f"time-{label}.txt"))
        run = runs[label]
        busiest_ip, busiest = (run["ips"].most_common(1) or [("-", 0)])[0]
        bound = busiest * delay_ms / 1000.0
        fetched = s.get("fetched", 0) or 0
        indexed = snap.get("indexed", 0) or 0
        reachable = snap.get("reachable", 0) or 0
        cpu = user + system
        columns.append({
            "ended": s.get("ended", "?"),
            "wall s": f"{wall:.1f}",
            "politeness bound s": f"{bound:.1f}",
            "busiest address": f"{busiest_ip} ({busiest} req)",
            "wall / bound": f"{wall / bound:.2f}" if bound else "n/a",
            "requests (fixture log)": str(run["n"]),
            "pages fetched (geode)": str(fetched),
            "new / changed / unchanged": f"{s.get('new', '?')} / {s.get('changed', '?')} / {s.get('unchanged', '?')}",
            "pages/s": f"{fetched / wall:.1f}" if wall else "n/a",
            "CPU s (user+sys)": f"{cpu:.1f}",
            "CPU ms per page": f"{1000 * cpu / fetched:.2f}" if fetched else "n/a",
            "peak RSS MB": f"{rss_kb / 1024:.0f}",
            "URLs known": str(snap.get("known_urls", "?")),
            "pages indexed": str(indexed),
            "database bytes / indexed page": f"{snap.get('db_bytes', 0) / indexed:.0f}" if indexed else "n/a",
            "index bytes / indexed page": f"{snap.get('index_bytes', 0) / indexed:.0f}" if indexed else "n/a",
            "legit coverage": (f"{snap.get('covered', 0)} / {reachable} ({100 * snap.get('covered', 0) / reachable:.1f}%)"
                               if reachable else "n/a"),
            "trap requests (all traps)": str(sum(run["hosts"][h] for _, h in trap_hosts)),
        })
    width = max(len(k) for k in columns[0]) + 2
    print(f"{'':{width}}{'first crawl':>28}{'recrawl (epoch 1)':>28}")
    for key in columns[0]:
        print(f"{key:{width}}{columns[0][key]:>28}{columns[1][key]:>28}")
    print()
    print(f"{'trap capsule':{width + 12}}{'first':>10}{'recrawl':>10}")
    for kind, host in sorted(trap_hosts):
        print(f"{kind + ' ' + host:{width + 12}}{runs['first']['hosts'][host]:>10}{runs['recrawl']['hosts'][host]:>10}")


def main(argv):
    commands = {"args": (cmd_args, 3), "snapshot": (cmd_snapshot, 2), "report": (cmd_report, 3)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    fn, _ = commands[argv[1]]
    fn(*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
