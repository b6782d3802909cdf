"""Scores geode's ranking on a judged query set (see scripts/eval-search).

Each line of the set: query<TAB>grade:url<TAB>grade:url... (grade 2: the page that should come
first, listed under each URL it has; grade 1: other good answers). URLs that differ only by a
trailing `index.gmi` are the same page. For every query, geode is asked for its top 10 twice (--ranking full and --ranking bm25);
MRR@10 uses the rank of the first grade-2 page, nDCG@10 the graded gains (2^grade - 1).
"""

import argparse
import json
import math
import subprocess
import sys


def canonical(url):
    return url[: -len("index.gmi")] if url.endswith("/index.gmi") else url


def load_set(path):
    queries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
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
            queries.append((parts[0], judged))
    return queries


def search(geode, data, query, ranking):
    out = subprocess.run(
        [geode, "search", "--data", data, "--json", "--limit", "10", "--ranking", ranking, "--", query],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"
    doc = json.loads(out.stdout)
    return [canonical(h["url"]) for h in doc["hits"]], None


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
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    queries = load_set(args.set)
    rankings = ("full", "bm25")
    totals = {r: [0.0, 0.0] for r in rankings}
    errors = {r: 0 for r in rankings}
    print(f"{'rank full':>9} {'rank bm25':>9}  query")
    for query, judged in queries:
        cells = []
        tops = {}
        for ranking in rankings:
            urls, error = search(args.geode, args.data, query, ranking)
            if urls is None:
                errors[ranking] += 1
                cells.append("error")
                tops[ranking] = [f"error: {error}"]
                continue
            rr, rank = reciprocal_rank(urls, judged)
            totals[ranking][0] += rr
            totals[ranking][1] += ndcg(urls, judged)
            cells.append(str(rank) if rank else "-")
            tops[ranking] = urls[:3]
        print(f"{cells[0]:>9} {cells[1]:>9}  {query}")
        if args.verbose:
            want = [u for u, g in judged.items() if g == 2][0]
            print(f"{'':>20}want {want}")
            for ranking in rankings:
                for u in tops[ranking]:
                    print(f"{'':>20}{ranking:<5} {u}")
    n = len(queries)
    print()
    print(f"{n} queries from {args.set}")
    print(f"{'':<8}{'MRR@10':>8}{'nDCG@10':>9}{'errors':>8}")
    for ranking in rankings:
        mrr, nd = (t / n for t in totals[ranking])
        label = "geode" if ranking == "full" else "bm25"
        print(f"{label:<8}{mrr:>8.3f}{nd:>9.3f}{errors[ranking]:>8}")


if __name__ == "__main__":
    main()
