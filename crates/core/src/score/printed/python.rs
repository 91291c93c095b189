//! pytest in words: its closing line (`==== 2 failed, 5 passed, 1 skipped,
//! 1 xfailed in 0.12s ====`, bare with `-q`), its `-v` lines
//! (`path::test PASSED [ 50%]`) and its short summary (`FAILED path::test -
//! why`). `xfailed` counts as skipped (an expected failure proves nothing
//! either way), `xpassed` as passed, errors as failures; `deselected` tests
//! did not run and are not counted.
//! Pure.

use super::{Counts, Found, MAY_NAME_NONE, Tally, counted_items, item};
use crate::score::{Outcome, Runner};

/// pytest's words. The closing line counts when it is the only one of its
/// session (one per `test session starts` header, or exactly one without
/// headers, as with `-q`); each kind is named by the `-v` lines or the
/// short summary as often as it counts, or not at all.
pub(crate) fn pytest(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Pytest);
    let mut summaries: Vec<Counts> = Vec::new();
    let mut sessions = 0;
    let mut captured = false;
    // With its header, pytest frames its closing line in `=`; a bare one
    // then is a piece of it, broken at the console's width.
    let headed = lines.iter().any(|l| is_header(l.trim()));
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if captured {
            // What a test printed, shown under its failure: up to the next
            // test's heading or the next of pytest's own sections.
            captured = !(t.starts_with("___") || is_section_rule(t));
            if captured {
                continue;
            }
        }
        if t.starts_with('-') && t.contains(" Captured ") && t.ends_with('-') {
            captured = true;
        } else if is_header(t) {
            sessions += 1;
        } else if let Some(counts) =
            closing_line(t).filter(|_| is_framed(t) || (!headed && bare_whole(lines, i)))
        {
            summaries.push(counts);
        } else if let Some((id, outcome)) = verbose_line(t).or_else(|| short_summary_line(t)) {
            let file = id.split("::").next().map(str::to_string);
            tally.case(id, outcome, file);
        }
    }
    if summaries.is_empty() {
        return if sessions > 0 {
            Found::Refused
        } else {
            Found::NotMine
        };
    }
    if (sessions == 0 && summaries.len() != 1) || (sessions > 0 && summaries.len() != sessions) {
        return Found::Refused;
    }
    let total = summaries.iter().fold(Counts::default(), |a, c| Counts {
        passed: a.passed + c.passed,
        failed: a.failed + c.failed,
        skipped: a.skipped + c.skipped,
    });
    tally.agreeing(total, MAY_NAME_NONE)
}

fn is_header(t: &str) -> bool {
    is_framed(t) && t.contains(" test session starts ")
}

fn is_framed(t: &str) -> bool {
    t.starts_with('=') && t.ends_with('=')
}

/// A bare closing line (`-q`) is whole: not the end of a list broken on
/// the line before it, nor followed by the rest of a frame.
fn bare_whole(lines: &[String], i: usize) -> bool {
    let before = lines[..i].iter().rev().find(|l| !l.trim().is_empty());
    let after = lines.get(i + 1).map(|l| l.trim_start());
    !before.is_some_and(|l| l.trim_end().ends_with(','))
        && !after.is_some_and(|l| l.starts_with('='))
}

/// A rule of one of pytest's own sections (`==== FAILURES ====`).
fn is_section_rule(t: &str) -> bool {
    let name = t.trim_matches('=').trim();
    t.starts_with("==")
        && [
            "FAILURES",
            "ERRORS",
            "PASSES",
            "short test summary info",
            "warnings summary",
            "slowest durations",
            "xfailures",
            "xpasses",
        ]
        .iter()
        .any(|s| name.starts_with(s))
}

/// The closing line: `1 failed, 2 passed in 0.03s`, inside `=` rules or
/// bare, every item a count of a result pytest knows.
pub(crate) fn closing_line(t: &str) -> Option<Counts> {
    let inner = t.trim_matches('=').trim();
    let (items, time) = inner.rsplit_once(" in ")?;
    let secs = time.split(' ').next()?.strip_suffix('s')?;
    secs.parse::<f64>().ok()?;
    if items == "no tests ran" {
        return Some(Counts::default());
    }
    let items = counted_items(items, ",")?;
    let known = [
        "passed",
        "failed",
        "error",
        "errors",
        "skipped",
        "xfailed",
        "xpassed",
        "deselected",
        "warning",
        "warnings",
        "rerun",
    ];
    if items.iter().any(|(_, w)| !known.contains(w)) {
        return None;
    }
    Some(Counts {
        passed: item(&items, &["passed", "xpassed"]),
        failed: item(&items, &["failed", "error", "errors"]),
        skipped: item(&items, &["skipped", "xfailed"]),
    })
}

/// `-v`: `path::test PASSED [ 50%]`, `path::test SKIPPED (why) [ 50%]`.
fn verbose_line(t: &str) -> Option<(String, Outcome)> {
    let (id, rest) = t.split_once(' ')?;
    if !id.contains("::") {
        return None;
    }
    let word = rest.split_whitespace().next()?;
    Some((id.to_string(), outcome_of(word)?))
}

/// The short summary: `FAILED path::test - why`, `ERROR path::test`,
/// `XFAIL path::test - why` (`-rA` adds `PASSED path::test`).
fn short_summary_line(t: &str) -> Option<(String, Outcome)> {
    let (word, rest) = t.split_once(' ')?;
    let outcome = outcome_of(word)?;
    let id = rest.split(" - ").next()?.trim();
    (id.contains("::") && !id.contains(' ')).then(|| (id.to_string(), outcome))
}

fn outcome_of(word: &str) -> Option<Outcome> {
    match word {
        "PASSED" | "XPASS" => Some(Outcome::Passed),
        "FAILED" | "ERROR" => Some(Outcome::Failed),
        "SKIPPED" | "XFAIL" => Some(Outcome::Skipped),
        _ => None,
    }
}
