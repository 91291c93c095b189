//! What a runner printed, read honestly: each runner's reader finds its
//! closing summary (read whole: a summary broken across lines is joined
//! where the runner's words say where it ends, else not counted) and its
//! per-test lines, and counts only where they agree: each kind of result
//! (passed, failed, skipped) is either named test by test as often as the
//! summary counts it, or not named at all (a runner that prints only its
//! failures). A reader that finds its runner's words but cannot make them
//! agree (a summary a test printed, a second summary, output cut before the
//! end) says so: the output is then no count at all, never a partial or
//! wrong one. The lines are read as the terminal shows them: colour codes
//! out, `\r\n` ends a line, a bare `\r` redraws it.
//! Pure.

pub(crate) mod golang;
pub(crate) mod javascript;
pub(crate) mod libtest;
pub(crate) mod node;
pub(crate) mod others;
pub(crate) mod python;

use super::{MAX_CASES, MAX_FAILING, Outcome, Runner, Score, TestCase};
use std::collections::HashSet;

/// What one runner's reader made of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// None of this runner's closing words.
    NotMine,
    Counted(Score),
    /// This runner's words, which do not add up: no count.
    Refused,
}

/// The summary's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
}

/// Tests counted and named, as a reader finds them.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    reader: Runner,
    counts: Counts,
    cases: Vec<TestCase>,
    seen: HashSet<String>,
    /// Failing tests to show, where the reading names no case (plain `go test`).
    failing: Vec<String>,
}

impl Tally {
    pub(crate) fn new(reader: Runner) -> Tally {
        Tally {
            reader,
            counts: Counts::default(),
            cases: Vec::new(),
            seen: HashSet::new(),
            failing: Vec::new(),
        }
    }

    /// One test, counted and named (a second line for the same test with
    /// the same end is the runner repeating itself: counted once).
    pub(crate) fn case(&mut self, id: String, outcome: Outcome, file: Option<String>) {
        let id = id.trim().to_string();
        if id.is_empty() {
            return;
        }
        let key = format!("{outcome:?}\u{0}{id}");
        if self.seen.contains(&key) {
            return;
        }
        match outcome {
            Outcome::Passed => self.counts.passed += 1,
            Outcome::Failed => self.counts.failed += 1,
            Outcome::Skipped => self.counts.skipped += 1,
        }
        if self.cases.len() < MAX_CASES {
            self.seen.insert(key);
            self.cases.push(TestCase { id, outcome, file });
        }
    }

    /// One test of a report: counted, however its name repeats another's
    /// (a report lists each test once; two may share a name, as in two
    /// files of a JUnit report that names no file).
    pub(crate) fn reported(&mut self, id: String, outcome: Outcome, file: Option<String>) {
        match outcome {
            Outcome::Passed => self.counts.passed += 1,
            Outcome::Failed => self.counts.failed += 1,
            Outcome::Skipped => self.counts.skipped += 1,
        }
        if self.cases.len() < MAX_CASES {
            self.cases.push(TestCase { id, outcome, file });
        }
    }

    /// A failing test to show, not a case (its reading names no suite).
    pub(crate) fn failing_only(&mut self, id: String) {
        if self.failing.len() < MAX_FAILING && !self.failing.contains(&id) {
            self.failing.push(id);
        }
    }

    pub(crate) fn counts(&self) -> Counts {
        self.counts
    }

    /// The score of the tests counted, when there was any.
    pub(crate) fn counted(self) -> Option<Score> {
        let c = self.counts;
        (c.passed + c.failed + c.skipped > 0).then(|| self.into_score(c))
    }

    /// The summary's counts, with the tests named: each kind named as
    /// often as the summary counts it, or (where `unnamed` allows that
    /// kind) not at all; else the words do not add up.
    pub(crate) fn agreeing(self, summary: Counts, unnamed: Counts) -> Found {
        let named = self.counts;
        let fits = |n: u32, s: u32, may_be_unnamed: u32| n == s || (n == 0 && may_be_unnamed > 0);
        let agree = fits(named.passed, summary.passed, unnamed.passed)
            && fits(named.failed, summary.failed, unnamed.failed)
            && fits(named.skipped, summary.skipped, unnamed.skipped);
        if agree {
            Found::Counted(self.into_score(summary))
        } else {
            Found::Refused
        }
    }

    fn into_score(self, counts: Counts) -> Score {
        let mut failing = self.failing;
        for c in self.cases.iter().filter(|c| c.outcome == Outcome::Failed) {
            if failing.len() >= MAX_FAILING {
                break;
            }
            failing.push(c.id.clone());
        }
        Score {
            reader: self.reader,
            passed: counts.passed,
            failed: counts.failed,
            skipped: counts.skipped,
            failing,
            cases: self.cases,
            ..Score::of_exit(false)
        }
    }
}

/// Kinds a runner may leave unnamed (1: may).
pub(crate) const NAMES_ALL: Counts = Counts {
    passed: 0,
    failed: 0,
    skipped: 0,
};
pub(crate) const MAY_NAME_NONE: Counts = Counts {
    passed: 1,
    failed: 1,
    skipped: 1,
};

/// The output's lines as a terminal shows them: colour and other escape
/// sequences out, `\r\n` a line's end, a bare `\r` the start of a redraw
/// (what follows it is what stays), trailing spaces out.
pub(crate) fn screen_lines(output: &str) -> Vec<String> {
    let clean = strip_escapes(output);
    clean
        .split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let shown = line.rsplit('\r').next().unwrap_or(line);
            shown.trim_end().to_string()
        })
        .collect()
}

/// The text without terminal escape sequences: CSI (`ESC [ ... final`),
/// OSC (`ESC ] ... BEL` or `ESC \`), and two-character escapes.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for d in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&d) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(d) = chars.next() {
                    if d == '\u{7}' || (d == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `items` such as `1 failed, 2 passed, 4 total` split on `sep`, each
/// exactly a count and its words; `None` when any item is not.
pub(crate) fn counted_items<'a>(text: &'a str, sep: &str) -> Option<Vec<(u32, &'a str)>> {
    text.split(sep)
        .map(|item| {
            let (n, word) = item.trim().split_once(' ')?;
            Some((n.parse().ok()?, word.trim()))
        })
        .collect()
}

/// The count labelled `word` among `items`, 0 when absent.
pub(crate) fn item(items: &[(u32, &str)], words: &[&str]) -> u32 {
    items
        .iter()
        .filter(|(_, w)| words.contains(w))
        .map(|(n, _)| n)
        .sum()
}

/// A test's name without the time its runner adds: `name (3 ms)`,
/// `name (0.8ms)`, `name 12ms` → `name`.
pub(crate) fn without_time(text: &str) -> String {
    let t = text.trim();
    if let Some((name, time)) = t.rsplit_once(" (")
        && time.ends_with(')')
        && time
            .trim_end_matches(')')
            .trim_end_matches("ms")
            .trim_end_matches([' ', 's'])
            .parse::<f64>()
            .is_ok()
    {
        return name.trim().to_string();
    }
    match t.rsplit_once(' ') {
        Some((name, time))
            if time.ends_with("ms") && time.trim_end_matches("ms").parse::<f64>().is_ok() =>
        {
            name.trim().to_string()
        }
        _ => t.to_string(),
    }
}

/// How far `line` is indented.
pub(crate) fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_screen_shows_what_a_redraw_leaves_and_no_colour() {
        let out = "a\r\nprogress 10%\rprogress 90%\rdone\n\u{1b}[32mok\u{1b}[0m \u{1b}]8;;x\u{7}link\u{1b}]8;;\u{7}\n";
        assert_eq!(screen_lines(out), ["a", "done", "ok link", ""]);
    }

    #[test]
    fn a_summary_is_read_only_when_each_item_is_a_count() {
        let items = counted_items("1 failed, 2 passed, 3 total", ",").unwrap();
        assert_eq!(
            (item(&items, &["passed"]), item(&items, &["failed"])),
            (2, 1)
        );
        assert_eq!(counted_items("1 failed, x passed", ","), None);
        assert_eq!(without_time("adds (3 ms)"), "adds");
        assert_eq!(without_time("adds (0.87ms)"), "adds");
        assert_eq!(without_time("adds (a note)"), "adds (a note)");
    }

    #[test]
    fn each_kind_is_named_whole_or_not_at_all() {
        let mut t = Tally::new(Runner::Pytest);
        t.case("a".into(), Outcome::Failed, None);
        let summary = Counts {
            passed: 3,
            failed: 1,
            skipped: 0,
        };
        let Found::Counted(s) = t.clone().agreeing(summary, MAY_NAME_NONE) else {
            panic!("the failure named, the passes counted");
        };
        assert!(!s.names_every_test());
        assert_eq!(t.clone().agreeing(summary, NAMES_ALL), Found::Refused);
        t.case("b".into(), Outcome::Failed, None);
        assert_eq!(
            t.agreeing(summary, MAY_NAME_NONE),
            Found::Refused,
            "more named than counted"
        );
    }
}
