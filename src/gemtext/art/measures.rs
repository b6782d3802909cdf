//! The [`Measures`] of a block (counts over its first lines: words, symbols, repetition, rule
//! lines, palette) from which the rules in [`super`] read their shares, and the line-level
//! helpers they are built from (escape sequences, rule lines, repeated graphemes).

use super::*;

/// Counts over the lines of a block, from which the rules read shares.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Measures {
    /// Non-blank lines measured.
    pub(super) lines: usize,
    /// Lines that are not rule lines.
    pub(super) content_lines: usize,
    /// ANSI CSI escape sequences (colour codes) seen.
    pub(super) escapes: usize,
    /// Non-space graphemes on all lines.
    pub(super) graphemes: usize,
    pub(super) art_chars: usize,
    /// Lines holding art characters, and those of them shaped like a labelled bar.
    pub(super) art_lines: usize,
    pub(super) bar_lines: usize,
    /// Non-space, non-frame graphemes on content lines, and how many are letters or digits.
    pub(super) content_graphemes: usize,
    pub(super) alnum: usize,
    /// Graphemes on content lines that hold no word and few letters.
    pub(super) drawing_graphemes: usize,
    /// Content lines of three graphemes or more (a lone `}` says nothing), and those of them
    /// that hold no word and few letters.
    pub(super) shaped_lines: usize,
    pub(super) drawing_lines: usize,
    /// Symbols on content lines, and those with no letter or digit on either side.
    pub(super) symbols: usize,
    pub(super) loose_symbols: usize,
    /// Graphemes in runs of four or more of the same grapheme, on content lines.
    pub(super) repeated: usize,
    /// Whitespace-separated tokens on content lines (table cells split at `|` and box strokes),
    /// and those that read as words, identifiers or numbers ([`is_word`]).
    pub(super) tokens: usize,
    pub(super) words: usize,
    /// Content lines that start with a shell or REPL prompt, or look like a line of code.
    pub(super) prompts: usize,
    pub(super) code_lines: usize,
    /// Distinct graphemes on content lines (frames aside), kept only up to one more than
    /// [`PALETTE_MAX`]: more than that is all the rules need to know.
    pub(super) palette: Vec<String>,
}

impl Measures {
    pub(super) fn of(text: &str) -> Measures {
        let mut m = Measures::default();
        for raw in text.split('\n').take(MAX_LINES) {
            let (line, escapes) = strip_escapes(raw);
            m.escapes += escapes;
            m.add_line(&line);
        }
        m
    }

    pub(super) fn add_line(&mut self, line: &str) {
        let graphemes: Vec<(&str, Kind)> = graphemes(line)
            .map(|g| (g, kind(g)))
            .filter(|(_, k)| *k != Kind::Space)
            .collect();
        if graphemes.is_empty() {
            return;
        }
        self.lines += 1;
        self.graphemes += graphemes.len();
        let art = graphemes
            .iter()
            .filter(|(_, k)| *k == Kind::ArtChar)
            .count();
        self.art_chars += art;
        let tokens: Vec<&str> = line
            .split(|c: char| {
                c.is_whitespace() || c == '|' || (0x2500..=0x257F).contains(&u32::from(c))
            })
            .filter(|t| !t.is_empty())
            .collect();
        let words = tokens.iter().filter(|t| is_word(t)).count();
        if art > 0 {
            self.art_lines += 1;
            if words > 0 && is_single_bar(line) {
                self.bar_lines += 1;
            }
        }
        if is_rule_line(line) {
            return;
        }
        self.content_lines += 1;
        let measured: Vec<&str> = graphemes
            .iter()
            .filter(|(_, k)| *k != Kind::Frame)
            .map(|(g, _)| *g)
            .collect();
        let alnum = graphemes.iter().filter(|(_, k)| *k == Kind::Alnum).count();
        self.content_graphemes += measured.len();
        for g in &measured {
            if self.palette.len() <= PALETTE_MAX && !self.palette.iter().any(|p| p == g) {
                self.palette.push((*g).to_string());
            }
        }
        self.alnum += alnum;
        let drawing_line = words == 0 && alnum * 2 < measured.len();
        if drawing_line {
            self.drawing_graphemes += measured.len();
        }
        if measured.len() >= 3 {
            self.shaped_lines += 1;
            self.drawing_lines += usize::from(drawing_line);
        }
        let (symbols, loose) = loose_symbols(line);
        self.symbols += symbols;
        self.loose_symbols += loose;
        self.repeated += repeated_graphemes(line);
        self.tokens += tokens.len();
        self.words += words;
        if is_prompt(line) {
            self.prompts += 1;
        }
        if looks_like_code(line) {
            self.code_lines += 1;
        }
    }

    pub(super) fn share(part: usize, whole: usize) -> f64 {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    }
    pub(super) fn alnum_share(&self) -> f64 {
        Self::share(self.alnum, self.content_graphemes)
    }
    pub(super) fn word_share(&self) -> f64 {
        Self::share(self.words, self.tokens)
    }
    pub(super) fn drawing_share(&self) -> f64 {
        Self::share(self.drawing_graphemes, self.content_graphemes)
    }
    pub(super) fn drawing_line_share(&self) -> f64 {
        Self::share(self.drawing_lines, self.shaped_lines)
    }
    pub(super) fn loose_share(&self) -> f64 {
        Self::share(self.loose_symbols, self.symbols)
    }
    pub(super) fn repeat_share(&self) -> f64 {
        Self::share(self.repeated, self.content_graphemes)
    }
    pub(super) fn code_share(&self) -> f64 {
        Self::share(self.code_lines, self.content_lines)
    }

    /// Prose, code or data: mostly letters and digits in real words, or lines shaped like code,
    /// without long runs of one character.
    pub(super) fn reads_as_content(&self) -> bool {
        let wordy = self.alnum_share() >= 0.6 && self.word_share() >= 0.5;
        (wordy || self.code_share() >= 0.5) && self.repeat_share() < 0.25
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "lines={} content={} alnum={:.2} words={:.2} drawing={:.2} drawing-lines={}/{} \
             loose={:.2} repeat={:.2} glyphs={}{} art-chars={}/{} code={:.2} prompts={} escapes={}",
            self.lines,
            self.content_lines,
            self.alnum_share(),
            self.word_share(),
            self.drawing_share(),
            self.drawing_lines,
            self.shaped_lines,
            self.loose_share(),
            self.repeat_share(),
            self.palette.len(),
            if self.palette.len() > PALETTE_MAX {
                "+"
            } else {
                ""
            },
            self.art_chars,
            self.graphemes,
            self.code_share(),
            self.prompts,
            self.escapes,
        )
    }
}

/// Removes ANSI CSI sequences (`ESC [ params final`), counting them. Borrows when there are none.
pub(super) fn strip_escapes(line: &str) -> (std::borrow::Cow<'_, str>, usize) {
    if !line.contains('\u{1b}') {
        return (std::borrow::Cow::Borrowed(line), 0);
    }
    let mut out = String::with_capacity(line.len());
    let mut count = 0;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameter and intermediate bytes, then one final byte in @..~.
            for p in chars.by_ref() {
                if ('@'..='~').contains(&p) {
                    break;
                }
            }
            count += 1;
        } else {
            out.push(c);
        }
    }
    (std::borrow::Cow::Owned(out), count)
}

/// A separator or frame line: only rule symbols and box drawing, and shaped like a rule: a box
/// stroke, a run of three identical symbols (`+----+----+`, `=====`), or one or two symbols
/// repeated (`* * *`, `-=-=-=`). Lines of mixed punctuation such as `.'\`__\`-'__\`\`.` are
/// drawings, not rules, even though every character in them could appear in a rule.
pub(super) fn is_rule_line(line: &str) -> bool {
    // An elision (`...`, `[...]`, `(…)`) separates what it elides, like a rule.
    let bare = line
        .trim()
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')']);
    if !bare.is_empty() && bare.chars().all(|c| c == '.' || c == '…') && line.trim() != bare {
        return true;
    }
    let all: Vec<(&str, Kind)> = graphemes(line).map(|g| (g, kind(g))).collect();
    let graphemes: Vec<(&str, Kind)> = all
        .iter()
        .copied()
        .filter(|(_, k)| *k != Kind::Space)
        .collect();
    if !graphemes
        .iter()
        .all(|(g, k)| *k == Kind::Frame || is_rule_symbol(g))
    {
        return false;
    }
    if graphemes.iter().any(|(_, k)| *k == Kind::Frame) {
        return true;
    }
    // Runs are counted with the spaces in place: `| . | . |` has none.
    let run = all
        .windows(3)
        .any(|w| w[0].1 != Kind::Space && w[0].0 == w[1].0 && w[1].0 == w[2].0);
    let mut distinct: Vec<&str> = graphemes.iter().map(|(g, _)| *g).collect();
    distinct.sort_unstable();
    distinct.dedup();
    graphemes.len() >= 3 && (run || distinct.len() <= 2)
}

/// Whether the block elements of a line form one unbroken bar (`████▌`), as in a chart.
pub(super) fn is_single_bar(line: &str) -> bool {
    let mut bars = 0;
    let mut inside = false;
    for g in graphemes(line) {
        let block = is_block_element(g);
        if block && !inside {
            bars += 1;
        }
        inside = block;
    }
    bars == 1
}

/// Symbols on a line, and how many of them have no letter or digit next to them: drawings set
/// their strokes apart (`/ \`, `(__)\`), code and data attach them to names (`f(x)`, `a, b`).
pub(super) fn loose_symbols(line: &str) -> (usize, usize) {
    let kinds: Vec<Kind> = graphemes(line).map(kind).collect();
    let mut symbols = 0;
    let mut loose = 0;
    for (i, k) in kinds.iter().enumerate() {
        if *k != Kind::Symbol {
            continue;
        }
        symbols += 1;
        let before = i.checked_sub(1).and_then(|j| kinds.get(j));
        let after = kinds.get(i + 1);
        if before != Some(&Kind::Alnum) && after != Some(&Kind::Alnum) {
            loose += 1;
        }
    }
    (symbols, loose)
}

/// Graphemes in runs of four or more identical non-space, non-frame graphemes.
pub(super) fn repeated_graphemes(line: &str) -> usize {
    let mut total = 0;
    let mut run = 0;
    let mut prev: Option<&str> = None;
    let mut flush = |run: usize, prev: Option<&str>| {
        if run >= 4 && prev.is_some_and(|g| !matches!(kind(g), Kind::Space | Kind::Frame)) {
            total += run;
        }
    };
    for g in graphemes(line) {
        if Some(g) == prev {
            run += 1;
        } else {
            flush(run, prev);
            run = 1;
            prev = Some(g);
        }
    }
    flush(run, prev);
    total
}
