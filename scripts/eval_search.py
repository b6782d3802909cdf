"""Scores geode's ranking on a judged query set (see scripts/eval-search).

Each line of the set: query<TAB>grade:url<TAB>grade:url... (grade 2: the page that should come
first, listed under each URL it has; grade 1: other good answers). URLs that differ only by a
trailing `index.gmi` are the same page. A line `#kind: NAME` sets the kind of the queries after
it (the natural set has kinds; the others have none, and count as one kind, "all").

Three rankings are scored on every query's top 10, four with `--model DIR`:
- `geode`: `geode search --ranking full --no-model`, by words alone;
- `hybrid` (with `--model`): `geode search --ranking full --model DIR`, words and meaning fused;
- `bm25`: `geode search --ranking bm25` (geode's own matching, text relevance only);
- `bm25-or`: a plain BM25 (k1 1.2, b 0.75) computed here, in Python, over the raw text of the
  same pages geode indexed (read from the corpus, one field, no stemming, no field weights), any
  query word matching (OR). It needs no geode code, so it is the baseline a user could pick
  instead.
MRR@10 uses the rank of the first grade-2 page, nDCG@10 the graded gains (2^grade - 1), found@10
the share of queries whose grade-2 page is in the top 10.
"""

import argparse
import json
import math
import re
import sqlite3
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_check as cc  # noqa: E402

RANKINGS = ("geode", "bm25", "bm25-or")


def canonical(url):
    return url[: -len("index.gmi")] if url.endswith("/index.gmi") else url


def load_set(path):
    """[(kind, query, {url: grade})]"""
    queries = []
    kind = "all"
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#kind:"):
                kind = line.partition(":")[2].strip() or "all"
                continue
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            judged = {}
            for part in parts[1:]:
                grade, _, url = part.partition(":")
                if not url or grade not in ("1", "2"):
                    sys.exit(f"{path}:{number}: expected grade:url, got {part!r}")
                url = canonical(url)
                judged[url] = max(judged.get(url, 0), int(grade))
            if not any(g == 2 for g in judged.values()):
                sys.exit(f"{path}:{number}: no grade-2 page")
            queries.append((kind, parts[0], judged))
    return queries


def search(geode, data, query, ranking, model=None):
    how = ["--model", model] if model else ["--no-model"]
    out = subprocess.run(
        [geode, "search", "--data", data, "--json", "--limit", "10", "--ranking", ranking, *how, "--", query],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"
    doc = json.loads(out.stdout)
    return [canonical(h["url"]) for h in doc["hits"]], None


# --------------------------------------------------------------------------------------------
# The plain BM25-OR baseline.

_WORD = re.compile(r"\w+")


def _is_cjk(c):
    o = ord(c)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF


def words(text):
    """Lowercased, accent-folded words; a CJK run gives its character bigrams (its character when
    alone), since it has no spaces."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(c for c in text if not unicodedata.combining(c))
    out = []
    for w in _WORD.findall(text):
        run = []
        for c in w + " ":
            if c != " " and _is_cjk(c):
                run.append(c)
                continue
            if run:
                out.extend(run if len(run) == 1 else [a + b for a, b in zip(run, run[1:])])
                run = []
        rest = "".join(" " if _is_cjk(c) else c for c in w).split()
        out.extend(rest)
    return out


class Bm25Or:
    """BM25 over the raw text of the pages geode indexed, OR semantics."""

    def __init__(self, corpus_dir, data):
        corpus = cc.Corpus.load(Path(corpus_dir))
        db = sqlite3.connect(f"file:{Path(data) / 'crawl.sqlite'}?mode=ro", uri=True)
        urls = [u for (u,) in db.execute("SELECT url FROM urls WHERE state = 'indexed' ORDER BY url")]
        self.docs = []  # (url, Counter, length)
        self.df = Counter()
        for url in urls:
            status, what = corpus.serve(url)
            if status != 20 or not isinstance(what, Path):
                continue
            tf = Counter(words(cc.read_text(what)))
            self.docs.append((canonical(url), tf, sum(tf.values())))
            self.df.update(tf.keys())
        self.avgdl = sum(n for _, _, n in self.docs) / max(1, len(self.docs))

    def search(self, query, k1=1.2, b=0.75, limit=10):
        terms = set(words(query))
        n = len(self.docs)
        idf = {t: math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5)) for t in terms if self.df[t]}
        scored = []
        for url, tf, dl in self.docs:
            s = 0.0
            for t, w in idf.items():
                f = tf.get(t, 0)
                if f:
                    s += w * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / self.avgdl))
            if s > 0:
                scored.append((-s, url))
        scored.sort()
        # One page served under several URLs (a directory and its index.gmi) counts once.
        out = []
        for _, url in scored:
            if url not in out:
                out.append(url)
            if len(out) == limit:
                break
        return out


# --------------------------------------------------------------------------------------------
# Measures.


def reciprocal_rank(urls, judged):
    for i, url in enumerate(urls):
        if judged.get(url) == 2:
            return 1.0 / (i + 1), i + 1
    return 0.0, None


def ndcg(urls, judged):
    # All grade-2 URLs of a line are one page under several names: it earns its gain once.
    dcg = 0.0
    seen_answer = False
    for i, u in enumerate(urls[:10]):
        grade = judged.get(u, 0)
        if grade == 2:
            if seen_answer:
                continue
            seen_answer = True
        dcg += (2 ** grade - 1) / math.log2(i + 2)
    ideal = sorted([2] + [g for g in judged.values() if g == 1], reverse=True)[:10]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--geode", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--set", required=True)
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpus"))
    ap.add_argument("--model", help="also score the hybrid ranking with this embedding model")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--summary", action="store_true", help="print the tables only, no query text")
    args = ap.parse_args()
    global RANKINGS
    if args.model:
        RANKINGS = ("geode", "hybrid", "bm25", "bm25-or")

    queries = load_set(args.set)
    baseline = Bm25Or(args.corpus, args.data)
    # kind -> ranking -> [rr sum, ndcg sum, found, count]
    totals = {}
    errors = Counter()
    if not args.summary:
        print("".join(f"{r[:6]:>7}" for r in RANKINGS) + "  kind          query")
    for kind, query, judged in queries:
        cells, tops = [], {}
        for ranking in RANKINGS:
            if ranking == "bm25-or":
                urls, error = baseline.search(query), None
            elif ranking == "hybrid":
                urls, error = search(args.geode, args.data, query, "full", args.model)
            else:
                urls, error = search(args.geode, args.data, query, "full" if ranking == "geode" else "bm25")
            t = totals.setdefault(kind, {}).setdefault(ranking, [0.0, 0.0, 0, 0])
            t[3] += 1
            if urls is None:
                errors[ranking] += 1
                cells.append("error")
                tops[ranking] = [f"error: {error}"]
                continue
            rr, rank = reciprocal_rank(urls, judged)
            t[0] += rr
            t[1] += ndcg(urls, judged)
            t[2] += rank is not None
            cells.append(str(rank) if rank else "-")
            tops[ranking] = urls[:3]
        if not args.summary:
            print("".join(f"{c:>7}" for c in cells) + f"  {kind:<13} {query}")
        if args.verbose and not args.summary:
            want = [u for u, g in judged.items() if g == 2][0]
            print(f"{'':>20}want {want}")
            for ranking in RANKINGS:
                for u in tops[ranking]:
                    print(f"{'':>20}{ranking:<8} {u}")

    print()
    print(f"{len(queries)} queries from {args.set}")
    header = f"{'kind':<14}{'n':>4}" + "".join(f"{r + ' MRR':>13}{'nDCG':>7}{'found':>7}" for r in RANKINGS)
    print(header)
    kinds = list(totals)
    if len(kinds) > 1:
        kinds.append("all")
    for kind in kinds:
        if kind == "all" and len(totals) > 1:
            rows = {r: [sum(totals[k][r][i] for k in totals) for i in range(4)] for r in RANKINGS}
        else:
            rows = totals[kind]
        n = rows[RANKINGS[0]][3]
        line = f"{kind:<14}{n:>4}"
        for r in RANKINGS:
            rr, nd, found, count = rows[r]
            line += f"{rr / count:>13.3f}{nd / count:>7.3f}{found / count:>7.2f}"
        print(line)
    if errors:
        print("errors: " + ", ".join(f"{r} {n}" for r, n in errors.items()))


if __name__ == "__main__":
    main()
