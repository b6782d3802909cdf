#!/usr/bin/env python3
"""Checks the judged query sets in scripts/eval against the real corpus. Python 3.11 standard
library only; it reuses scripts/corpus_check.py for URL normalisation, for what agate would serve
at a URL, and for the reachability walk from the capsule seeds.

For every query file given it checks that each line is `query<TAB>grade:url...` with grades 1 or 2,
that every URL is in canonical form and is answered 20 with a corpus file, that the grade-2 URLs of
a line all name one and the same file (a page and its aliases), that this file is reachable from
the seeds (a page the crawl cannot reach can never be found), that every URL under which the crawl
reaches that file is listed as a grade-2 alias, and that queries are not repeated. Across files it
checks that no query text and no grade-2 page is shared.

It prints counts and, for a problem, the file, line number and URL, never the query text, so it
can be run on the held-out set without showing it. It does not run geode and scores nothing.

  scripts/eval/check_queries.py [--corpus ../shared/corpus] FILE...

Exit status 1 when any problem is found.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import corpus_check as cc  # noqa: E402


def seeds_of(corpus: cc.Corpus) -> list[str]:
    """One seed per capsule, chosen the way `corpus_check.py prepare` chooses them."""
    seeds = []
    for cap in corpus.capsules:
        root_url = f"gemini://{cap.host}{cap.root}"
        if corpus.serve(root_url)[0] == 20:
            seeds.append(root_url)
            continue
        root_dir = corpus.base / cap.host / cap.root.strip("/")
        gmis = sorted(root_dir.rglob("*.gmi"), key=lambda p: (len(p.relative_to(root_dir).parts), str(p)))
        if gmis:
            seeds.append(corpus.url_of(gmis[0]))
    return seeds


def check_file(path: Path, corpus: cc.Corpus, reached: dict[Path, set[str]], problems: list[str]):
    """Returns (queries, grade-2 files by query line) and appends problems."""
    queries: dict[str, int] = {}
    targets: dict[Path, int] = {}
    n_grade1 = 0
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        where = f"{path.name}:{lineno}"
        cols = raw.split("\t")
        query, judgements = cols[0].strip(), cols[1:]
        if not query or not judgements:
            problems.append(f"{where}: needs a query and at least one grade:url")
            continue
        if query in queries:
            problems.append(f"{where}: same query as line {queries[query]}")
        queries[query] = lineno
        best: set[Path] = set()
        listed2: set[str] = set()
        good: set[Path] = set()
        for j in judgements:
            grade, sep, url = j.partition(":")
            if not sep or grade not in ("1", "2"):
                problems.append(f"{where}: bad judgement {j!r} (want 1:url or 2:url)")
                continue
            if cc.normalize(url) != url:
                problems.append(f"{where}: {url} is not canonical (normalize gives {cc.normalize(url)})")
            status, what = corpus.serve(url)
            if status != 20 or not isinstance(what, Path):
                problems.append(f"{where}: {url} is not served as a page (agate would answer {status})")
                continue
            if what not in reached:
                problems.append(f"{where}: {url} is not reachable from the seeds")
            if grade == "2":
                best.add(what)
                listed2.add(url)
            else:
                good.add(what)
        if len(best) != 1:
            problems.append(f"{where}: grade 2 must name exactly one page, names {len(best)}")
            continue
        page = next(iter(best))
        if page in good:
            problems.append(f"{where}: the grade-2 page is also listed with grade 1")
        if len(good) > 3:
            problems.append(f"{where}: {len(good)} grade-1 pages (at most 3)")
        n_grade1 += len(good)
        for form in sorted(reached.get(page, set()) - listed2):
            problems.append(f"{where}: the crawl also reaches the grade-2 page as {form}; list it with grade 2")
        if page in targets:
            problems.append(f"{where}: same grade-2 page as line {targets[page]}")
        targets[page] = lineno
    print(f"{path.name}: {len(queries)} queries, {len(targets)} distinct grade-2 pages, "
          f"{n_grade1} grade-1 judgements")
    return queries, targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(Path(__file__).resolve().parents[3] / "shared" / "corpus"))
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    corpus = cc.Corpus.load(Path(args.corpus))
    reach = cc.bfs(corpus, seeds_of(corpus))
    reached: dict[Path, set[str]] = {}
    for url, file in reach.pages.items():
        reached.setdefault(file, set()).add(url)
    print(f"corpus: {len(corpus.capsules)} capsules, {len(reached)} files reachable from the seeds")
    problems: list[str] = []
    seen_queries: dict[str, str] = {}
    seen_targets: dict[Path, str] = {}
    for path in args.files:
        queries, targets = check_file(path, corpus, reached, problems)
        for q, lineno in queries.items():
            if q in seen_queries:
                problems.append(f"{path.name}:{lineno}: query also in {seen_queries[q]}")
            seen_queries[q] = f"{path.name}:{lineno}"
        for page, lineno in targets.items():
            if page in seen_targets:
                problems.append(f"{path.name}:{lineno}: grade-2 page also the answer of {seen_targets[page]}")
            seen_targets[page] = f"{path.name}:{lineno}"
    for p in problems:
        print("PROBLEM", p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
