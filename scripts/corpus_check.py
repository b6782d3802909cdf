#!/usr/bin/env python3
"""Helper of scripts/check-corpus: the parts of the real-corpus acceptance check that need more
than shell. Python 3.11 standard library only.

  prepare  lays out the scratch directory agate serves from (one symlink per corpus host), picks
           one loopback address per host and one seed per capsule, and writes them down.
  report   computes, independently of geode, which pages are reachable from the seeds (a BFS
           over the corpus files that imitates what agate would answer), compares that with the
           URLs geode's crawl database says are indexed, then checks that a distinctive phrase
           from a sample of pages finds the page in geode's top 10. Exit status 1 when a figure
           is below its target.

It is not a Gemini client and never opens a socket: reachability comes from the files and the
server's documented behaviour, so a geode bug cannot hide in both sides of the comparison. It
reads geode's database read-only and runs `geode search` for the queries.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import random
import re
import sqlite3
import subprocess
import sys
import time
import unicodedata
import urllib.parse
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

# urljoin only resolves relative references for schemes it knows to be hierarchical.
for _registry in (urllib.parse.uses_relative, urllib.parse.uses_netloc):
    if "gemini" not in _registry:
        _registry.append("gemini")

GEMINI_PORT = 1965
# geode's own limits (ARCHITECTURE.md): links followed from a seed, redirects in a chain.
GEODE_MAX_DEPTH = 30
MAX_REDIRECTS = 5
# geode's analyzer drops longer tokens, so a phrase must not contain one.
MAX_TOKEN_BYTES = 40
# A phrase found in more corpus files than this is not "distinctive".
MAX_PHRASE_FILES = 3
PAGE_SUFFIXES = (".gmi",)

REACH_TARGET = 98.0
PHRASE_TARGET = 90.0


# --------------------------------------------------------------------------------------------
# URLs: the same canonical form geode stores (src/urlnorm.rs), so both sides compare as strings.

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = "0123456789ABCDEF"
# What the WHATWG URL parser escapes in the path and query of a non-special URL such as
# gemini://, on top of controls and non-ASCII bytes.
_PATH_ESCAPE = frozenset(' "<>`{}')
_QUERY_ESCAPE = frozenset(' "<>')
_HEXDIGITS = frozenset(b"0123456789abcdefABCDEF")


def _escape_raw(text: str, extra: frozenset[str]) -> str:
    out = []
    for ch in text:
        if ord(ch) < 0x21 or ord(ch) > 0x7E or ch in extra:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch)
    return "".join(out)


def _normalize_escapes(text: str) -> str:
    """geode's rule: escapes of unreserved bytes decoded, others upper-case, stray % -> %25."""
    data = text.encode("utf-8", "surrogatepass")
    out = []
    i = 0
    while i < len(data):
        b = data[i]
        if b == 0x25:  # '%'
            pair = data[i + 1 : i + 3]
            if len(pair) == 2 and all(c in _HEXDIGITS for c in pair):
                value = int(pair, 16)
                out.append(chr(value) if value in _UNRESERVED else f"%{_HEX[value >> 4]}{_HEX[value & 15]}")
                i += 3
                continue
            out.append("%25")
        elif b < 0x80:
            out.append(chr(b))
        else:
            out.append(f"%{_HEX[b >> 4]}{_HEX[b & 15]}")
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, with WHATWG's reading of %2e as a dot."""
    segments = path.split("/")[1:] if path.startswith("/") else path.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        low = seg.lower()
        if low in (".", "%2e"):
            if last:
                out.append("")
        elif low in ("..", ".%2e", "%2e.", "%2e%2e"):
            if out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/" + "/".join(out)


def normalize(url: str) -> str | None:
    """geode's canonical spelling of an absolute gemini:// URL; None for anything else."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme.lower() != "gemini":
            return None
        if parts.username is not None or parts.password is not None:
            return None
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        return None
    if not host:
        return None
    try:
        host = urllib.parse.unquote(host, errors="strict").encode("idna").decode("ascii").lower()
    except (UnicodeError, ValueError):
        host = host.lower()
    netloc = host if port in (None, GEMINI_PORT) else f"{host}:{port}"
    path = _normalize_escapes(_escape_raw(parts.path, _PATH_ESCAPE))
    path = _remove_dot_segments(path) if path else "/"
    query = _normalize_escapes(_escape_raw(parts.query, _QUERY_ESCAPE)) if parts.query else ""
    return f"gemini://{netloc}{path}" + (f"?{query}" if query else "")


def resolve(base: str, reference: str) -> str | None:
    try:
        return normalize(urllib.parse.urljoin(base, reference))
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# The corpus as agate serves it.


@dataclass
class Capsule:
    host: str
    root: str  # URL path of the capsule's root, ending in '/'


@dataclass
class Corpus:
    base: Path  # .../corpus/capsules
    hosts: list[str]
    capsules: list[Capsule]
    robots: dict[str, list[str]] = field(default_factory=dict)  # host -> disallowed prefixes

    @classmethod
    def load(cls, corpus: Path) -> "Corpus":
        base = corpus / "capsules"
        hosts = sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
        capsules = []
        sources = corpus / "SOURCES.tsv"
        if sources.exists():
            for row in sources.read_text(encoding="utf-8").splitlines()[1:]:
                cols = row.split("\t")
                if not cols or not cols[0]:
                    continue
                host, _, sub = cols[0].partition("/")
                capsules.append(Capsule(host, "/" + (sub.strip("/") + "/" if sub else "")))
        else:
            capsules = [Capsule(h, "/") for h in hosts]
        capsules.sort(key=lambda c: (c.host, c.root))
        me = cls(base, hosts, capsules)
        for host in hosts:
            me.robots[host] = parse_robots(base / host / "robots.txt")
        return me

    def serve(self, url: str) -> tuple[int, str | Path | None]:
        """What agate would answer for a canonical URL: (20, file), (31, target), or (status, None).

        Mirrors agate 3.3's request handling: host and port checked, each path segment
        percent-decoded and appended (empty segments skipped), hidden segments 52, a directory
        redirected to its slash form or answered with its index.gmi (51 without one), a query
        ignored."""
        try:
            parts = urllib.parse.urlsplit(url)
            host, port = parts.hostname or "", parts.port
        except ValueError:
            return 59, None
        if host not in self.hosts or port not in (None, GEMINI_PORT):
            return 53, None
        target = self.base / host
        for seg in parts.path.split("/"):
            try:
                name = urllib.parse.unquote(seg, errors="strict")
            except UnicodeDecodeError:
                return 51, None
            if not name:
                continue
            if "/" in name or "\0" in name or name in (".", ".."):
                return 51, None
            if name.startswith("."):
                return 52, None
            target = target / name
        try:
            if target.is_dir():
                if parts.path.endswith("/") or not parts.path:
                    index = target / "index.gmi"
                    return (20, index) if index.is_file() else (51, None)
                moved = parts._replace(path=parts.path + "/")
                return 31, normalize(urllib.parse.urlunsplit(moved))
            if target.is_file():
                return 20, target
        except (OSError, ValueError):
            pass
        return 51, None

    def allowed(self, url: str) -> bool:
        parts = urllib.parse.urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return not any(path.startswith(p) for p in self.robots.get(parts.hostname or "", []))

    def url_of(self, file: Path) -> str:
        rel = file.relative_to(self.base)
        host, *segs = rel.parts
        return normalize(f"gemini://{host}/" + "/".join(urllib.parse.quote(s) for s in segs)) or ""


def parse_robots(path: Path) -> list[str]:
    """Disallow prefixes of the groups that bind an indexer named geode (`*`, `indexer`, `geode`)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    prefixes: list[str] = []
    agents: list[str] = []
    in_rules = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            if in_rules:
                agents, in_rules = [], False
            agents.append(value.lower())
        elif key == "disallow":
            in_rules = True
            if value and any(a in ("*", "indexer", "geode") for a in agents):
                prefixes.append(_normalize_escapes(value))
    return prefixes


# --------------------------------------------------------------------------------------------
# Gemtext.

_SEP = re.compile(r"[ \t]+")


def gemtext_lines(text: str):
    """Yields (kind, content) outside preformatted blocks, kind in link/heading/text, and
    ('pre', line) inside them."""
    if text.startswith("\ufeff"):
        text = text[1:]
    pre = False
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if line.startswith("```"):
            pre = not pre
            continue
        if pre:
            yield "pre", line
        elif line.startswith("=>"):
            rest = line[2:].lstrip(" \t")
            target = _SEP.split(rest, 1)[0] if rest.strip(" \t") else ""
            if target:
                yield "link", target
            else:
                yield "text", line
        elif line.startswith("#"):
            yield "heading", line.lstrip("#").strip()
        elif line.startswith("* "):
            yield "text", line[2:]
        elif line.startswith(">"):
            yield "text", line[1:]
        else:
            yield "text", line


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


# --------------------------------------------------------------------------------------------
# Reachability.


@dataclass
class Reach:
    pages: dict[str, Path]  # canonical URL answered 20 -> the file served
    depth: dict[str, int]
    via: dict[str, str]  # page -> the page whose link first reached it
    robots_excluded: set[str]
    redirects: int


def bfs(corpus: Corpus, seeds: list[str]) -> Reach:
    pages: dict[str, Path] = {}
    depth: dict[str, int] = {}
    via: dict[str, str] = {}
    excluded: set[str] = set()
    seen: set[str] = set()
    redirects = 0
    queue: deque[tuple[str, int, str]] = deque((s, 0, "(seed)") for s in seeds)
    while queue:
        url, d, parent = queue.popleft()
        for _hop in range(MAX_REDIRECTS + 1):
            if url in seen:
                break
            seen.add(url)
            if not corpus.allowed(url):
                excluded.add(url)
                break
            status, what = corpus.serve(url)
            if status == 31 and isinstance(what, str):
                redirects += 1
                url = what
                continue
            if status == 20 and isinstance(what, Path):
                pages[url], depth[url], via[url] = what, d, parent
                if what.suffix in PAGE_SUFFIXES:
                    for kind, target in gemtext_lines(read_text(what)):
                        if kind != "link":
                            continue
                        link = resolve(url, target)
                        if link and link not in seen and corpus.serve(link)[0] != 53:
                            queue.append((link, d + 1, url))
            break
    return Reach(pages, depth, via, excluded, redirects)


def open_db(data: Path) -> sqlite3.Connection:
    db = data / "crawl.sqlite"
    if not db.exists():
        sys.exit(f"check-corpus: no crawl database at {db}")
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


@functools.cache
def digest(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def pct(a: int, b: int) -> float:
    return 100.0 * a / b if b else 0.0


def reachability(corpus: Corpus, seeds: list[str], data: Path, agate_log: Path | None):
    t0 = time.monotonic()
    reach = bfs(corpus, seeds)
    t_bfs = time.monotonic() - t0
    db = open_db(data)
    rows = db.execute(
        "SELECT url, state, status, error, meta, depth, in_index FROM urls").fetchall()
    frontier: dict[str, tuple] = {}
    for row in rows:
        key = normalize(row[0]) or row[0]
        frontier.setdefault(key, row)
    # in_index: the index holds a document under the URL (state is what the last visit found).
    indexed = {u for u, r in frontier.items() if r[6] == 1}

    reachable = reach.pages
    files = set(reachable.values())
    direct = [u for u in reachable if u in indexed]
    # geode indexes a body once: a URL whose body is byte-identical to an indexed page is
    # recorded as a duplicate of it. The page is still found, so it counts, once checked here.
    indexed_bodies = {digest(reachable[u]) for u in direct}
    dups = sorted(u for u in reachable if u not in indexed and frontier.get(u)
                  and frontier[u][3] == "duplicate" and digest(reachable[u]) in indexed_bodies)
    covered = set(direct) | set(dups)
    miss = sorted((u for u in reachable if u not in covered), key=lambda u: (reach.depth[u], u))
    files_hit = {reachable[u] for u in covered}
    deep = [u for u in reachable if reach.depth[u] > GEODE_MAX_DEPTH]

    print(f"reachability (BFS over the files, {t_bfs:.1f}s): {len(reachable)} URLs answering 20 "
          f"({len(files)} distinct files of {sum(1 for _ in corpus.base.rglob('*') if _.is_file())} "
          f"in the corpus), {reach.redirects} slash redirects followed, "
          f"{len(reach.robots_excluded)} URL(s) disallowed by robots.txt left out: "
          f"{', '.join(sorted(reach.robots_excluded)) or '-'}")
    depths = Counter(reach.depth.values())
    print(f"  link depth from the seeds: max {max(depths) if depths else 0}; "
          f"{len(deep)} page(s) deeper than geode's limit of {GEODE_MAX_DEPTH}")
    states = Counter(r[1] for r in rows)
    corpus_rows = [r for r in rows if (urllib.parse.urlsplit(r[0]).hostname or "") in corpus.hosts]
    print(f"  geode's frontier: {len(rows)} URLs ({', '.join(f'{k} {v}' for k, v in states.most_common())}); "
          f"{len(corpus_rows)} on corpus hosts, {len(rows) - len(corpus_rows)} elsewhere")
    print(f"  indexed under their own URL: {len(direct)}/{len(reachable)} URLs "
          f"({pct(len(direct), len(reachable)):.2f}%); recorded as duplicates of an indexed page "
          f"with a byte-identical body: {len(dups)}"
          + (f" (e.g. {dups[0]}: {frontier[dups[0]][4]})" if dups else ""))
    print(f"  covered: {len(covered)}/{len(reachable)} URLs ({pct(len(covered), len(reachable)):.2f}%), "
          f"{len(files_hit)}/{len(files)} files ({pct(len(files_hit), len(files)):.2f}%)")
    extra = sorted(u for u in indexed if u not in reachable
                   and (urllib.parse.urlsplit(u).hostname or "") in corpus.hosts)
    if extra:
        print(f"  {len(extra)} URL(s) geode indexed that the BFS did not reach (first 10):")
        for u in extra[:10]:
            status, what = corpus.serve(u)
            file = f" {what.relative_to(corpus.base)}" if isinstance(what, Path) else ""
            print(f"    {u}  [agate would answer {status}{file}]")
    if miss:
        log = []
        if agate_log and agate_log.exists():
            log = agate_log.read_text(encoding="utf-8", errors="replace").splitlines()
        print(f"  {len(miss)} reachable URL(s) not indexed; the first {min(20, len(miss))} "
              f"(frontier state/status/error/meta, how the BFS reached them, agate's log):")
        for u in miss[:20]:
            row = frontier.get(u)
            if row:
                info = f"state={row[1]} status={row[2]} error={row[3]} meta={row[4]!r} depth={row[5]}"
            else:
                info = "not in geode's frontier at all"
            print(f"    {u}\n      geode: {info}")
            print(f"      BFS: depth {reach.depth[u]}, linked from {reach.via[u]}")
            wanted = f'"{u}"'
            served = [line for line in log if wanted in line or f'"{u.rstrip("/")}"' in line]
            if log:
                print(f"      agate: {served[-1].split('] ', 1)[-1] if served else 'never asked for it'}")
    return reach, indexed, len(covered), len(direct), len(reachable)


# --------------------------------------------------------------------------------------------
# Phrases.

_TOKEN = re.compile(r"[^\W_]+")


def fold(word: str) -> str:
    """Approximates geode's analyzer: lowercase, accents folded to ASCII where that is possible."""
    low = word.lower()
    stripped = "".join(c for c in unicodedata.normalize("NFKD", low) if not unicodedata.combining(c))
    return stripped if stripped.isascii() else low


def tokens(text: str) -> list[str]:
    return [fold(t) for t in _TOKEN.findall(text)]


@dataclass
class DocStats:
    files: list[Path]
    joined: list[str]  # " tok tok ... " per file, for phrase containment
    postings: dict[str, set[int]]

    @classmethod
    def build(cls, corpus: Corpus) -> "DocStats":
        files = sorted(p for p in corpus.base.rglob("*") if p.is_file())
        joined, postings = [], {}
        for i, f in enumerate(files):
            toks = tokens(read_text(f))
            joined.append(" " + " ".join(toks) + " ")
            for t in set(toks):
                postings.setdefault(t, set()).add(i)
        return cls(files, joined, postings)

    def df(self, word: str) -> int:
        return len(self.postings.get(word, ()))

    def phrase_files(self, words: list[str]) -> int:
        sets = sorted((self.postings.get(w, set()) for w in words), key=len)
        if not sets or not sets[0]:
            return 0
        candidates = set.intersection(*sets)
        needle = " " + " ".join(words) + " "
        return sum(1 for i in candidates if needle in self.joined[i])


def _usable(word: str) -> bool:
    return word.isalpha() and len(word.encode("utf-8")) <= MAX_TOKEN_BYTES


def choose_phrase(text: str, stats: DocStats) -> tuple[str, int] | None:
    """A run of 3-6 whitespace-separated alphabetic words from a text line (text, list item or
    quote; never a heading, link or preformatted line) found in at most MAX_PHRASE_FILES corpus
    files. Prefers four words, then five, six, three; within a length the rarest words (by
    summed inverse document frequency) win, and a phrase unique to the file beats any other."""
    n_docs = len(stats.files)
    windows: dict[int, list[tuple[float, list[str], list[str]]]] = {3: [], 4: [], 5: [], 6: []}
    for kind, line in gemtext_lines(text):
        if kind != "text":
            continue
        run: list[str] = []
        for word in line.split() + [""]:
            if _usable(word):
                run.append(word)
                continue
            for n in windows:
                for i in range(len(run) - n + 1):
                    raw = run[i : i + n]
                    folded = [fold(w) for w in raw]
                    rarity = sum(math.log(n_docs / max(1, stats.df(w))) for w in folded)
                    windows[n].append((rarity, raw, folded))
            run = []
    fallback: tuple[str, int] | None = None
    for n in (4, 5, 6, 3):
        ranked = sorted(windows[n], key=lambda w: (-w[0], w[1]))
        tried = set()
        for rarity, raw, folded in ranked:
            key = " ".join(folded)
            if key in tried:
                continue
            tried.add(key)
            if len(tried) > 8:
                break
            count = stats.phrase_files(folded)
            if count == 1:
                return " ".join(raw), count
            if 1 <= count <= MAX_PHRASE_FILES and (fallback is None or count < fallback[1]):
                fallback = (" ".join(raw), count)
    return fallback


def phrase_check(corpus: Corpus, reach: Reach, indexed: set[str], geode: Path, data: Path,
                 sample_size: int, rng_seed: int) -> tuple[int, int]:
    t0 = time.monotonic()
    stats = DocStats.build(corpus)
    t_stats = time.monotonic() - t0
    urls_of: dict[Path, list[str]] = {}
    for u, f in reach.pages.items():
        if u in indexed:
            urls_of.setdefault(f, []).append(u)
    candidates = sorted(f for f in urls_of if f.suffix in PAGE_SUFFIXES)
    rng = random.Random(rng_seed)
    sample = rng.sample(candidates, min(sample_size, len(candidates)))
    print(f"phrase check: {len(sample)} of {len(candidates)} indexed gemtext files sampled "
          f"(seed {rng_seed}); document frequencies over {len(stats.files)} corpus files "
          f"({t_stats:.1f}s)")

    hits, total, no_phrase, misses = 0, 0, [], []
    ranks: Counter[int] = Counter()
    examples: list[tuple[str, int, str, int, int]] = []
    t1 = time.monotonic()
    for f in sample:
        chosen = choose_phrase(read_text(f), stats)
        if chosen is None:
            no_phrase.append(f)
            continue
        phrase, nfiles = chosen
        query = f'"{phrase}"'
        proc = subprocess.run([str(geode), "search", "--data", str(data), "--json", "--limit", "10", query],
                              capture_output=True, text=True)
        results = []
        for line in proc.stdout.splitlines():
            try:
                results.append(json.loads(line)["url"])
            except (ValueError, KeyError, TypeError):
                continue
        total += 1
        served = [corpus.serve(normalize(r) or r) for r in results]
        # Follow one slash redirect so that a hit on /dir for /dir/ still names the same file.
        files = [(corpus.serve(w)[1] if s == 31 and isinstance(w, str) else w) for s, w in served]
        # A byte-identical copy elsewhere is the same page to a reader (and geode indexes one).
        bodies = [digest(w) if isinstance(w, Path) else None for w in files]
        if digest(f) in bodies:
            rank = bodies.index(digest(f)) + 1
            hits += 1
            ranks[rank] += 1
            if len(examples) < 3:
                examples.append((query, nfiles, urls_of[f][0], rank, len(results)))
        else:
            misses.append((query, nfiles, urls_of[f][0], results[:1], proc.returncode, proc.stderr.strip()))
    t_queries = time.monotonic() - t1
    print(f"  {total} queries in {t_queries:.1f}s; {len(no_phrase)} sampled file(s) without a "
          f"usable phrase, not counted: "
          + ", ".join(str(p.relative_to(corpus.base)) for p in no_phrase[:8])
          + (" ..." if len(no_phrase) > 8 else ""))
    print(f"  rank of the page among the hits: "
          + (", ".join(f"#{r} x{n}" for r, n in sorted(ranks.items())) or "-"))
    for query, nfiles, url, rank, nres in examples:
        print(f"  e.g. {query} (in {nfiles} corpus file(s)) -> {url} at #{rank} of {nres}")
    if misses:
        print(f"  {len(misses)} miss(es); the first {min(10, len(misses))}:")
        for query, nfiles, want, first, rc, err in misses[:10]:
            print(f"    {query} (in {nfiles} corpus file(s))\n      expected {want}\n"
                  f"      first hit: {first[0] if first else 'none'}"
                  + (f"  [exit {rc}: {err[:200]}]" if rc else ""))
    return hits, total


# --------------------------------------------------------------------------------------------
# Commands.


def cmd_prepare(args) -> int:
    corpus = Corpus.load(Path(args.corpus))
    work = Path(args.work)
    content = work / "content"
    content.mkdir(parents=True, exist_ok=True)
    if len(corpus.hosts) > 254:
        sys.exit("check-corpus: more hosts than addresses in 127.0.2.0/24")
    with open(work / "hosts.tsv", "w", encoding="utf-8") as out:
        for i, host in enumerate(corpus.hosts, start=1):
            (content / host).symlink_to((corpus.base / host).resolve(), target_is_directory=True)
            out.write(f"{host}\t127.0.2.{i}\n")
    seeds = []
    for cap in corpus.capsules:
        root_url = f"gemini://{cap.host}{cap.root}"
        status, _ = corpus.serve(root_url)
        if status == 20:
            seeds.append(root_url)
            continue
        # No index.gmi at the capsule root: agate answers 51 there, so start from the
        # shallowest gemtext file instead (alphabetical among equals).
        root_dir = corpus.base / cap.host / cap.root.strip("/")
        gmis = sorted(root_dir.rglob("*.gmi"), key=lambda p: (len(p.relative_to(root_dir).parts), str(p)))
        if not gmis:
            print(f"  no gemtext at all under {root_url}; capsule left out")
            continue
        seed = corpus.url_of(gmis[0])
        print(f"  {root_url} has no index.gmi (agate would answer {status}); seeding {seed} instead")
        seeds.append(seed)
    (work / "seeds.txt").write_text("".join(s + "\n" for s in seeds), encoding="utf-8")
    print(f"  {len(corpus.hosts)} hosts on 127.0.2.1-{len(corpus.hosts)}, {len(corpus.capsules)} capsules, "
          f"{len(seeds)} seeds in {work / 'seeds.txt'}")
    return 0


def cmd_report(args) -> int:
    corpus = Corpus.load(Path(args.corpus))
    seeds = [normalize(s) or s for s in Path(args.seeds).read_text(encoding="utf-8").split()]
    data = Path(args.data)
    t0 = time.monotonic()
    reach, indexed, n_hit, n_direct, n_reach = reachability(corpus, seeds, data,
                                                  Path(args.agate_log) if args.agate_log else None)
    t_reach = time.monotonic() - t0
    t1 = time.monotonic()
    hits, total = phrase_check(corpus, reach, indexed, Path(args.geode), data, args.sample, args.rng_seed)
    t_phrase = time.monotonic() - t1
    reach_pct, phrase_pct = pct(n_hit, n_reach), pct(hits, total)
    ok_reach = n_reach > 0 and reach_pct >= REACH_TARGET
    ok_phrase = total > 0 and phrase_pct >= PHRASE_TARGET
    print()
    print(f"timing: reachability comparison {t_reach:.1f}s, phrase check {t_phrase:.1f}s")
    print(f"reachable {n_reach}, indexed {n_hit} ({reach_pct:.2f}%; {n_direct} under their own "
          f"URL, {n_hit - n_direct} as duplicates of an identical indexed page)  [target {REACH_TARGET:g}%: {'PASS' if ok_reach else 'FAIL'}]")
    print(f"phrase top-10: {hits}/{total} ({phrase_pct:.2f}%)  "
          f"[target {PHRASE_TARGET:g}%: {'PASS' if ok_phrase else 'FAIL'}]")
    return 0 if ok_reach and ok_phrase else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="lay out the scratch directory, addresses and seeds")
    p.add_argument("--corpus", required=True)
    p.add_argument("--work", required=True)
    p.set_defaults(func=cmd_prepare)
    r = sub.add_parser("report", help="compare reachability with geode's index; phrase queries")
    r.add_argument("--corpus", required=True)
    r.add_argument("--seeds", required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--geode", required=True)
    r.add_argument("--agate-log")
    r.add_argument("--sample", type=int, default=300)
    r.add_argument("--rng-seed", type=int, default=1965)
    r.set_defaults(func=cmd_report)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
