#!/usr/bin/env python3
"""Synthetic geminispace for scripts/bench-crawl: N capsules x M gemtext pages.

Writes OUT/capNNN.test/... (the layout geode-fixture serves: one directory per host name) and
the file --urls (default OUT/../urls.txt, kept out of the served tree): the canonical URL of every
generated page, one a line, in capsule order, which is what the crawl must find and what the
baseline fetch loop fetches. Deterministic for a given --seed.

Each capsule has an index.gmi (served as gemini://capNNN.test/), a few sections with their own
index.gmi listing every page of the section (so every page is two links from the root, far
inside geode's depth limit), and article pages. Articles are gemtext of roughly 1-8 KB (log-normal
sizes, median about 2.5 KB): headings, paragraphs of pseudo-words drawn with a Zipf-like
frequency, lists, quotes, now and then a preformatted block, and 10-20 links, mostly within the
capsule (relative and absolute paths), some to other capsules. Every link points at a page that
exists, and each page is reachable by exactly one URL (the root is always linked as "/", never
"/index.gmi"), so a complete crawl indexes exactly the pages listed in urls.txt.

Not a model of real geminispace link structure or of real language; it only aims for realistic
page sizes, markup mix and link counts, so that parsing and indexing cost what they would. The
text is English function words among pseudo-words, so that language detection finds English and
the indexer stems it, as it does for most real pages.
"""

import argparse
import bisect
import itertools
import math
import os
import random
import sys

PAGES_PER_SECTION = 25
SECTION_NAMES = [
    "log", "notes", "projects", "essays", "recipes", "travel", "music", "books",
    "garden", "code", "photos", "radio", "maps", "letters", "misc", "archive",
]
SYLLABLES = [
    c + v
    for c in ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
              "br", "ch", "st", "th", "tr", "sh"]
    for v in ["a", "e", "i", "o", "u", "ai", "ou", "ee", "an", "en", "on", "or", "el", "is"]
]


# The most frequent ranks are English function words, as in real text, where they are some 40% of
# the words: a page then reads as English to language detection and is stemmed, as most of
# geminispace is. The content words are pseudo-words.
FUNCTION_WORDS = (
    "the of and to a in is that it for was on with as be at by this i you not are or from have "
    "but an they which one we all there their has been if more when will would so can no what "
    "out up about who its into them some could than then only other these my your like also"
).split()


class Words:
    """English function words, then pseudo-words, with Zipf-like frequencies (Zipf-Mandelbrot:
    rank r weighs 1/(r + 2.7))."""

    def __init__(self, rng, size=6000):
        seen = set(FUNCTION_WORDS)
        self.vocab = list(FUNCTION_WORDS)
        while len(self.vocab) < size:
            # Frequent words are short, as in real text: the rank decides the syllable count.
            n = 1 + min(3, int(rng.expovariate(1.0) + len(self.vocab) / 1500))
            w = "".join(rng.choice(SYLLABLES) for _ in range(n))
            if w and w not in seen:
                seen.add(w)
                self.vocab.append(w)
        self.cum = list(itertools.accumulate(1.0 / (r + 2.7) for r in range(1, size + 1)))
        self.total = self.cum[-1]

    def word(self, rng):
        return self.vocab[bisect.bisect_left(self.cum, rng.random() * self.total)]

    def words(self, rng, n):
        return " ".join(self.word(rng) for _ in range(n))

    def sentence(self, rng):
        s = self.words(rng, rng.randint(6, 18))
        return s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!"])

    def paragraph(self, rng):
        return " ".join(self.sentence(rng) for _ in range(rng.randint(2, 6)))

    def title(self, rng, n=None):
        return self.words(rng, n or rng.randint(2, 5)).title()


def host_name(i):
    return f"cap{i:03d}.test"


def layout(pages):
    """Paths of one capsule's pages: [root, section indexes..., articles...] and sections.

    Returns (paths, sections) where paths[k] is the URL path of page k ("/" for the root,
    "/sec/" for a section index, "/sec/slug.gmi" for an article) and sections maps a section
    name to the indexes of its articles.
    """
    n_articles = max(0, pages - 1)
    n_sections = min(len(SECTION_NAMES), max(1, round(n_articles / PAGES_PER_SECTION)))
    n_sections = min(n_sections, max(0, pages - 1))
    names = SECTION_NAMES[:n_sections]
    paths = ["/"] + [f"/{s}/" for s in names]
    sections = {s: [] for s in names}
    for k in range(pages - 1 - n_sections):
        s = names[k % n_sections]
        sections[s].append(len(paths))
        paths.append(f"/{s}/{k // n_sections + 1:03d}-{['a', 'b', 'c'][k % 3]}{k}.gmi")
    return paths, sections


def file_path(path):
    return path + "index.gmi" if path.endswith("/") else path


def relative(from_path, to_path):
    """A relative reference from one URL path to another (both absolute, same capsule)."""
    from_dir = from_path.rsplit("/", 1)[0].split("/")[1:]
    to_parts = to_path.split("/")[1:]
    common = 0
    while (common < len(from_dir) and common < len(to_parts) - 1
           and from_dir[common] == to_parts[common]):
        common += 1
    up = len(from_dir) - common
    rest = "/".join(to_parts[common:])
    if up == 0:
        return rest or "./"
    return "../" * up + rest


def sizes(rng):
    """Target size of the running text in bytes: log-normal, median 2.2 KB, clipped to 1-8 KB."""
    return int(min(8000, max(1000, math.exp(rng.gauss(math.log(2200), 0.55)))))


def link_line(rng, words, target, label_words=None):
    label = words.title(rng, label_words) if rng.random() < 0.9 else ""
    return f"=> {target} {label}".rstrip()


def article(rng, words, me, paths, cap, n_caps, all_paths):
    """One article page; me is its path, paths the capsule's pages."""
    target_size = sizes(rng)
    n_links = rng.randint(10, 20)
    links = []
    for _ in range(n_links):
        r = rng.random()
        if r < 0.15 and n_caps > 1:
            other = rng.randrange(n_caps - 1)
            other += other >= cap
            other_paths = all_paths[other]
            p = rng.choice(other_paths) if rng.random() < 0.7 else "/"
            links.append(f"gemini://{host_name(other)}{p}")
        else:
            p = rng.choice(paths)
            if p == me:
                p = "/"
            if p == "/":
                links.append("/")
            elif r < 0.55:
                links.append(relative(me, p))
            else:
                links.append(p)
    out = [f"# {words.title(rng)}", ""]
    size = len(out[0]) + 1
    link_i = 0
    while size < target_size:
        kind = rng.random()
        if kind < 0.45:
            block = [words.paragraph(rng), ""]
        elif kind < 0.55:
            block = [f"## {words.title(rng)}", ""]
        elif kind < 0.63:
            block = [f"* {words.words(rng, rng.randint(2, 9))}" for _ in range(rng.randint(2, 7))]
            block.append("")
        elif kind < 0.69:
            block = [f"> {words.sentence(rng)}", ""]
        elif kind < 0.71:
            block = ["```" + rng.choice(["", " text", " sh", " ascii art"])]
            width = rng.randint(20, 60)
            for _ in range(rng.randint(3, 10)):
                block.append("".join(rng.choice("  ._-|/\\#=*+abcxyz0123")
                                     for _ in range(rng.randint(5, width))))
            block += ["```", ""]
        elif link_i < len(links):
            take = rng.randint(1, 4)
            block = [link_line(rng, words, t) for t in links[link_i:link_i + take]] + [""]
            link_i += take
        else:
            continue
        out += block
        size += sum(len(line) + 1 for line in block)
    if link_i < len(links):
        # Links the text had no room for go in a closing list, as many gemlogs end.
        out += ["## See also", ""] + [link_line(rng, words, t) for t in links[link_i:]]
    return "\n".join(out).rstrip() + "\n"


def section_index(rng, words, name, members, paths):
    lines = [f"# {name.title()}", "", words.paragraph(rng), ""]
    for k in members:
        lines.append(f"=> {paths[k].rsplit('/', 1)[1]} {words.title(rng)}")
    lines += ["", "=> / Home"]
    return "\n".join(lines) + "\n"


def root_index(rng, words, host, sections, all_paths, cap, n_caps):
    lines = [f"# {host}", "", words.paragraph(rng), "", "## Sections", ""]
    for name in sections:
        lines.append(f"=> {name}/ {name.title()}")
    lines += ["", "## Recent", ""]
    recent = [p for p in all_paths[cap] if p.endswith(".gmi")][-5:]
    lines += [f"=> {p} {words.title(rng)}" for p in recent]
    if n_caps > 1:
        lines += ["", "## Friends", ""]
        for _ in range(3):
            other = rng.randrange(n_caps)
            if other != cap:
                lines.append(f"=> gemini://{host_name(other)}/ {host_name(other)}")
    lines += ["", words.paragraph(rng)]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory to write (created if missing)")
    ap.add_argument("--capsules", type=int, default=100)
    ap.add_argument("--pages", type=int, default=100, help="pages per capsule, index included")
    ap.add_argument("--urls", help="where to write the URL list (default OUT/../urls.txt)")
    ap.add_argument("--seed", type=int, default=1965)
    args = ap.parse_args()
    if args.capsules < 1 or args.capsules > 1000 or args.pages < 1:
        ap.error("need 1 <= --capsules <= 1000 and --pages >= 1")

    rng = random.Random(args.seed)
    words = Words(rng)
    layouts = [layout(args.pages) for _ in range(args.capsules)]
    all_paths = [paths for paths, _ in layouts]
    urls = []
    total = 0
    page_sizes = []
    for cap, (paths, sections) in enumerate(layouts):
        host = host_name(cap)
        for k, path in enumerate(paths):
            if k == 0:
                text = root_index(rng, words, host, sections, all_paths, cap, args.capsules)
            elif path.endswith("/"):
                name = path.strip("/")
                text = section_index(rng, words, name, sections[name], paths)
            else:
                text = article(rng, words, path, paths, cap, args.capsules, all_paths)
            data = text.encode()
            dest = os.path.join(args.out, host, file_path(path).lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
            urls.append(f"gemini://{host}{path}")
            total += len(data)
            page_sizes.append(len(data))
    urls_file = args.urls or os.path.join(os.path.dirname(os.path.abspath(args.out)), "urls.txt")
    with open(urls_file, "w") as f:
        f.write("\n".join(urls) + "\n")
    page_sizes.sort()
    print(f"generated {args.capsules} capsules x {args.pages} pages = {len(urls)} pages, "
          f"{total / 1e6:.1f} MB, page size median {page_sizes[len(page_sizes) // 2]} B "
          f"(min {page_sizes[0]}, max {page_sizes[-1]})", file=sys.stderr)


if __name__ == "__main__":
    main()
