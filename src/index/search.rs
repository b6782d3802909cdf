//! Searching: readers over the index, query parsing, snippets.
//!
//! A [`SearchIndex`] never takes the writer lock, so `geode search` and `geode serve` can run
//! while a crawl is writing; the reader picks up new commits shortly after they land.
//!
//! Query syntax is Tantivy's (`word`, `"a phrase"`, `-excluded`, `title:word`, `a OR b`), with
//! every bare term required by default. Snippets are plain text, matched terms wrapped in
//! `**`..`**`; rendering them as HTML or gemtext is the caller's business.
//!
//! Not here: writing (see [`super::Indexer`]) and output formatting.

use std::ops::Range;
use std::path::Path;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::QueryParser;
use tantivy::schema::Value;
use tantivy::snippet::{Snippet, SnippetGenerator};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument};

use super::{open_index, Fields, IndexError};

/// Longest snippet, in bytes of the source text (Tantivy measures fragments in bytes).
const SNIPPET_MAX: usize = 200;

/// Longest fallback excerpt (when the body holds no matched term), in characters.
const EXCERPT_MAX_CHARS: usize = 200;

/// Per-field boosts: a word in the title says more about a page than one in its body.
const BOOST_TITLE: f32 = 3.0;
const BOOST_HEADINGS: f32 = 2.0;
const BOOST_LINK_LABELS: f32 = 1.5;

/// Marks around a matched term in a snippet.
const MARK: &str = "**";

/// One result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Hit {
    pub url: String,
    pub title: String,
    /// Plain text around the best match in the body, matched terms wrapped in `**`; the start
    /// of the body when the match is elsewhere (e.g. only in the title).
    pub snippet: String,
    /// BM25 score; only meaningful relative to the other hits of the same query.
    pub score: f32,
    pub host: String,
    pub mime: String,
    pub lang: Option<String>,
    pub size: u64,
    /// Fetch time, seconds since the Unix epoch.
    pub fetched_at: i64,
}

/// A page of results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SearchResults {
    /// How many documents match in all.
    pub total: usize,
    pub hits: Vec<Hit>,
}

/// A read-only view of the index; cheap to query many times.
pub struct SearchIndex {
    // Kept so the tokenizer registration the parser and snippets rely on stays alive.
    _index: Index,
    reader: IndexReader,
    parser: QueryParser,
    fields: Fields,
}

impl SearchIndex {
    /// Opens the index in `dir` for reading. Fails with [`IndexError::Missing`] when absent.
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        let Some((index, fields)) = open_index(dir)? else {
            return Err(IndexError::Missing(dir.to_path_buf()));
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        let mut parser = QueryParser::for_index(
            &index,
            vec![
                fields.title,
                fields.headings,
                fields.body,
                fields.link_labels,
            ],
        );
        parser.set_conjunction_by_default();
        parser.set_field_boost(fields.title, BOOST_TITLE);
        parser.set_field_boost(fields.headings, BOOST_HEADINGS);
        parser.set_field_boost(fields.link_labels, BOOST_LINK_LABELS);
        Ok(SearchIndex {
            _index: index,
            reader,
            parser,
            fields,
        })
    }

    /// Number of documents in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Runs a query; a syntax error is [`IndexError::Query`].
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        offset: usize,
    ) -> Result<SearchResults, IndexError> {
        if query.trim().is_empty() {
            return Err(IndexError::Query("empty query".to_string()));
        }
        let parsed = self
            .parser
            .parse_query(query)
            .map_err(|e| IndexError::Query(e.to_string()))?;
        let searcher = self.reader.searcher();

        // TopDocs allocates room for limit + offset hits up front and panics on a zero limit,
        // so bound both by the number of documents: no page can hold more than that.
        let num_docs = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        let page = limit.min(num_docs.saturating_sub(offset));
        if page == 0 {
            let total = searcher.search(&*parsed, &Count)?;
            return Ok(SearchResults {
                total,
                hits: Vec::new(),
            });
        }
        let (total, top) = searcher.search(
            &*parsed,
            &(Count, TopDocs::with_limit(page).and_offset(offset)),
        )?;

        let mut snippets = SnippetGenerator::create(&searcher, &*parsed, self.fields.body)?;
        snippets.set_max_num_chars(SNIPPET_MAX);

        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address)?;
            let snippet = snippets.snippet_from_doc(&doc);
            let snippet = if snippet.highlighted().is_empty() {
                excerpt(
                    first_str(&doc, self.fields.body).unwrap_or_default(),
                    EXCERPT_MAX_CHARS,
                )
            } else {
                render_snippet(&snippet)
            };
            hits.push(Hit {
                url: self.text(&doc, self.fields.url),
                title: self.text(&doc, self.fields.title),
                snippet,
                score,
                host: self.text(&doc, self.fields.host),
                mime: self.text(&doc, self.fields.mime),
                lang: first_str(&doc, self.fields.lang).map(str::to_string),
                size: doc
                    .get_first(self.fields.size)
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0),
                fetched_at: doc
                    .get_first(self.fields.fetched_at)
                    .and_then(|v| v.as_i64())
                    .unwrap_or(0),
            });
        }
        Ok(SearchResults { total, hits })
    }

    fn text(&self, doc: &TantivyDocument, field: tantivy::schema::Field) -> String {
        first_str(doc, field).unwrap_or_default().to_string()
    }
}

fn first_str(doc: &TantivyDocument, field: tantivy::schema::Field) -> Option<&str> {
    doc.get_first(field).and_then(|v| v.as_str())
}

/// Renders a Tantivy snippet as plain text: whitespace runs collapsed to one space, matched
/// terms wrapped in [`MARK`].
fn render_snippet(snippet: &Snippet) -> String {
    mark_ranges(snippet.fragment(), snippet.highlighted())
}

/// Wraps `ranges` of `text` in [`MARK`] and collapses whitespace. Ranges that overlap are
/// merged; ranges that are out of bounds or split a character are ignored rather than trusted.
fn mark_ranges(text: &str, ranges: &[Range<usize>]) -> String {
    let mut sorted: Vec<Range<usize>> = ranges
        .iter()
        .filter(|r| r.start < r.end && text.get((*r).clone()).is_some())
        .cloned()
        .collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            // Adjacent ranges stay separate: `**a****b**` is odd but they are distinct terms.
            Some(last) if r.start < last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }

    let mut marked = String::with_capacity(text.len() + merged.len() * 2 * MARK.len());
    let mut pos = 0;
    for r in merged {
        // Both slices are on char boundaries: checked by the filter above, and `pos` is always
        // a previous range's end.
        marked.push_str(text.get(pos..r.start).unwrap_or_default());
        marked.push_str(MARK);
        marked.push_str(text.get(r.clone()).unwrap_or_default());
        marked.push_str(MARK);
        pos = r.end;
    }
    marked.push_str(text.get(pos..).unwrap_or_default());
    collapse_whitespace(&marked)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `max_chars` characters of `text` with whitespace collapsed, cut at a character
/// boundary. Only reads as much of `text` as it needs, since bodies can be large.
fn excerpt(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        if chars >= max_chars {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars >= max_chars {
                break;
            }
            out.push(c);
            chars += 1;
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Indexer, PageDoc};

    fn page(url: &str, title: &str, body: &str) -> PageDoc {
        PageDoc {
            url: url.to_string(),
            host: "example.org".to_string(),
            title: title.to_string(),
            body: body.to_string(),
            mime: "text/gemini".to_string(),
            lang: Some("en".to_string()),
            size: body.len() as u64,
            fetched_at: 1_700_000_000,
            ..PageDoc::default()
        }
    }

    /// Builds an index from `pages`, committed, and opens it for searching.
    fn index_of(pages: &[PageDoc]) -> (tempfile::TempDir, SearchIndex) {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
            for p in pages {
                ix.upsert(p).expect("upsert");
            }
            ix.commit(1).expect("commit");
        }
        let si = SearchIndex::open(tmp.path()).expect("search index");
        (tmp, si)
    }

    fn urls(res: &SearchResults) -> Vec<&str> {
        res.hits.iter().map(|h| h.url.as_str()).collect()
    }

    fn corpus() -> Vec<PageDoc> {
        vec![
            page(
                "gemini://a.example/",
                "Gardening notes",
                "Tomatoes need sun. My café sells them.",
            ),
            page("gemini://b.example/", "Tomatoes", "A page about red fruit."),
            page(
                "gemini://c.example/",
                "Русский сайт",
                "Привет мир, это капсула о погоде.",
            ),
            PageDoc {
                headings: "Compost heaps".to_string(),
                link_labels: "Worm farming guide".to_string(),
                ..page("gemini://d.example/", "Soil", "Dirt and more dirt.")
            },
        ]
    }

    #[test]
    fn finds_pages_by_each_searchable_field() {
        let (_tmp, si) = index_of(&corpus());
        let cases: &[(&str, &[&str])] = &[
            // body word
            ("sun", &["gemini://a.example/"]),
            // title word
            ("gardening", &["gemini://a.example/"]),
            // heading word
            ("compost", &["gemini://d.example/"]),
            // link label word (not stored, still searchable)
            ("worm", &["gemini://d.example/"]),
            // case-insensitive
            ("SUN", &["gemini://a.example/"]),
            // accent folding both ways
            ("cafe", &["gemini://a.example/"]),
            ("café", &["gemini://a.example/"]),
            // Cyrillic, in body and title, any case
            ("погоде", &["gemini://c.example/"]),
            ("РУССКИЙ", &["gemini://c.example/"]),
            // all terms required
            ("tomatoes sun", &["gemini://a.example/"]),
            ("tomatoes zebra", &[]),
            // explicit OR and phrase
            (
                "compost OR gardening",
                &["gemini://a.example/", "gemini://d.example/"],
            ),
            ("\"red fruit\"", &["gemini://b.example/"]),
            ("\"fruit red\"", &[]),
            // fielded query
            ("title:tomatoes", &["gemini://b.example/"]),
        ];
        for (query, want) in cases {
            let res = si.search(query, 10, 0).expect(query);
            let mut got = urls(&res);
            got.sort_unstable();
            assert_eq!(&got, want, "query {query:?}");
            assert_eq!(res.total, want.len(), "total for {query:?}");
        }
    }

    #[test]
    fn title_match_ranks_above_body_only_match() {
        let (_tmp, si) = index_of(&corpus());
        let res = si.search("tomatoes", 10, 0).expect("search");
        assert_eq!(
            urls(&res),
            vec!["gemini://b.example/", "gemini://a.example/"]
        );
        assert!(res.hits[0].score > res.hits[1].score);
    }

    #[test]
    fn hits_carry_the_stored_fields() {
        let (_tmp, si) = index_of(&corpus());
        let res = si.search("sun", 10, 0).expect("search");
        let hit = &res.hits[0];
        assert_eq!(hit.url, "gemini://a.example/");
        assert_eq!(hit.title, "Gardening notes");
        assert_eq!(hit.host, "example.org");
        assert_eq!(hit.mime, "text/gemini");
        assert_eq!(hit.lang.as_deref(), Some("en"));
        assert_eq!(
            hit.size,
            "Tomatoes need sun. My café sells them.".len() as u64
        );
        assert_eq!(hit.fetched_at, 1_700_000_000);

        let json = serde_json::to_value(&res).expect("json");
        assert_eq!(json["total"], 1);
        assert_eq!(json["hits"][0]["url"], "gemini://a.example/");
    }

    #[test]
    fn missing_lang_stays_none() {
        let (_tmp, si) = index_of(&[PageDoc {
            lang: None,
            ..page("gemini://x.example/", "T", "quokka")
        }]);
        let res = si.search("quokka", 10, 0).expect("search");
        assert_eq!(res.hits[0].lang, None);
    }

    #[test]
    fn total_counts_all_matches_while_limit_and_offset_page() {
        let pages: Vec<PageDoc> = (0..7)
            .map(|i| page(&format!("gemini://p{i}.example/"), "T", "common word"))
            .collect();
        let (_tmp, si) = index_of(&pages);
        let all = si.search("common", 100, 0).expect("all");
        let all_urls = urls(&all);
        let cases: &[(usize, usize, Range<usize>)] = &[
            (3, 0, 0..3),
            (3, 3, 3..6),
            (3, 6, 6..7),
            (3, 7, 7..7),
            (3, 1000, 7..7),
            (0, 0, 0..0),
            (usize::MAX, 0, 0..7),
            (usize::MAX, usize::MAX, 7..7),
        ];
        for (limit, offset, want) in cases {
            let res = si.search("common", *limit, *offset).expect("page");
            assert_eq!(res.total, 7, "limit {limit} offset {offset}");
            assert_eq!(
                urls(&res),
                all_urls[want.clone()].to_vec(),
                "limit {limit} offset {offset}"
            );
        }
    }

    #[test]
    fn snippet_marks_the_matched_words() {
        let long_tail = " filler".repeat(100);
        let (_tmp, si) = index_of(&[
            page(
                "gemini://s.example/",
                "Snippets",
                &format!("Intro line.\n\nThe   Café opens\tat noon.{long_tail}"),
            ),
            page(
                "gemini://t.example/",
                "Ruby",
                "Про язык Ruby и его СИНТАКСИС.",
            ),
        ]);
        let cases: &[(&str, &str)] = &[
            ("cafe", "**Café**"),
            ("noon opens", "**opens** at **noon**"),
            ("синтаксис", "**СИНТАКСИС**"),
        ];
        for (query, want) in cases {
            let res = si.search(query, 10, 0).expect(query);
            let snippet = &res.hits[0].snippet;
            assert!(
                snippet.contains(want),
                "query {query:?}: snippet {snippet:?}"
            );
            assert!(
                !snippet.contains('\n') && !snippet.contains("  "),
                "{snippet:?}"
            );
            assert!(snippet.chars().count() <= SNIPPET_MAX + 20, "{snippet:?}");
        }
    }

    #[test]
    fn title_only_match_falls_back_to_the_start_of_the_body() {
        let body = format!("First   line\nsecond line. {}", "é".repeat(300));
        let (_tmp, si) = index_of(&[page("gemini://f.example/", "Platypus", &body)]);
        let res = si.search("platypus", 10, 0).expect("search");
        let snippet = &res.hits[0].snippet;
        assert!(
            snippet.starts_with("First line second line. é"),
            "{snippet:?}"
        );
        assert_eq!(snippet.chars().count(), EXCERPT_MAX_CHARS);
        assert!(!snippet.contains("**"));
    }

    #[test]
    fn malformed_and_empty_queries_are_query_errors() {
        let (_tmp, si) = index_of(&corpus());
        // Each of these is rejected by Tantivy's strict parser (checked against 0.25); the
        // lenient parser would silently turn them into partial or match-nothing queries.
        for query in [
            "",
            "   \t\n",
            "\"unbalanced",
            "title:",
            "(tomatoes",
            "tomatoes AND",
            "tomatoes^x",
            "nosuchfield:word",
            // a URL reads as field `gemini` + value
            "gemini://a.example/",
            "-tomatoes",
            "size:notanumber",
            "url:[a TO",
        ] {
            match si.search(query, 10, 0) {
                Err(IndexError::Query(msg)) => assert!(!msg.is_empty(), "{query:?}"),
                other => panic!("query {query:?}: expected Query error, got {other:?}"),
            }
        }
        assert!(matches!(
            si.search(" ", 10, 0),
            Err(IndexError::Query(m)) if m == "empty query"
        ));
    }

    #[test]
    fn opening_a_missing_index_is_missing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for dir in [tmp.path().to_path_buf(), tmp.path().join("absent")] {
            match SearchIndex::open(&dir) {
                Err(IndexError::Missing(p)) => assert_eq!(p, dir),
                Err(e) => panic!("{}: expected Missing, got {e:?}", dir.display()),
                Ok(_) => panic!("{}: expected Missing, got an index", dir.display()),
            }
        }
    }

    #[test]
    fn reader_sees_later_commits() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut ix = Indexer::open_or_create(tmp.path()).expect("open");
        ix.upsert(&page("gemini://a.example/", "A", "one"))
            .expect("upsert");
        ix.commit(1).expect("commit");
        let si = SearchIndex::open(tmp.path()).expect("open reader while writer lives");
        assert_eq!(si.num_docs(), 1);
        ix.upsert(&page("gemini://b.example/", "B", "two"))
            .expect("upsert");
        ix.commit(2).expect("commit");
        // OnCommitWithDelay reloads asynchronously; give it a bounded time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while si.num_docs() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(si.num_docs(), 2);
    }

    #[test]
    fn mark_ranges_handles_overlaps_and_bad_ranges() {
        // (text, highlighted byte ranges as (start, end), rendering)
        type Case = (&'static str, &'static [(usize, usize)], &'static str);
        let cases: &[Case] = &[
            ("a b c", &[], "a b c"),
            ("a b c", &[(2, 3)], "a **b** c"),
            ("a b c", &[(4, 5), (0, 1)], "**a** b **c**"),
            ("abcdef", &[(0, 3), (2, 5)], "**abcde**f"),
            ("abc", &[(0, 1), (0, 1)], "**a**bc"),
            // out of bounds and empty ranges are ignored
            ("abc", &[(1, 10), (2, 2)], "abc"),
            // a range splitting 'é' (bytes 1..3) is ignored, not a panic
            ("cé x", &[(0, 2), (4, 5)], "cé **x**"),
            (" lead\n\n trail ", &[(1, 5)], "**lead** trail"),
        ];
        for (text, ranges, want) in cases {
            let ranges: Vec<Range<usize>> = ranges.iter().map(|&(s, e)| s..e).collect();
            assert_eq!(mark_ranges(text, &ranges), *want, "{text:?} {ranges:?}");
        }
    }

    #[test]
    fn excerpt_cuts_at_chars_and_collapses_whitespace() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 10, ""),
            ("  a \n\n b  ", 10, "a b"),
            ("ééééé", 3, "ééé"),
            ("ab cd", 3, "ab"),
            ("ab cd", 4, "ab c"),
            ("日本語のテキスト", 4, "日本語の"),
        ];
        for (text, max, want) in cases {
            assert_eq!(excerpt(text, *max), *want, "{text:?} max {max}");
        }
    }
}
