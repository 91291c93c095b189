//! RSpec, PHPUnit and CTest in words, and the plain line any runner may
//! close with. RSpec: `Finished in ...` then `4 examples, 1 failure, 2
//! pending`, once; failures named by `rspec ./spec/x_spec.rb:6 # full
//! description`. PHPUnit: `OK (5 tests, 10 assertions)` or `Tests: 6,
//! Assertions: 2, Errors: 1, Failures: 1, Skipped: 1, Incomplete: 1,
//! Risky: 1.`, once; failures and errors named under their `There was 1
//! failure:` headings as `N) Class::method` (risky tests ran: passed).
//! CTest: `75% tests passed, 1 tests failed out of 4`, once, and a line
//! per test (`1/5 Test #1: name ....   Passed`), which names them all (its
//! summary counts a skipped test as passed and leaves disabled ones out).
//! Plain: `12 passed, 3 failed` alone on a line (`, 1 skipped` may follow,
//! one word with a colon may stand before), once.
//! Pure.

use super::{Counts, Found, MAY_NAME_NONE, NAMES_ALL, Tally, counted_items, item};
use crate::score::{Outcome, Runner};

/// RSpec's words.
pub(crate) fn rspec(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Rspec);
    let mut summary = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with("Finished in ") {
            if summary.is_some()
                && rspec_summary(lines.get(i + 1).map(|l| l.trim()).unwrap_or_default()).is_some()
            {
                return Found::Refused;
            }
            // Only RSpec's own `Finished in` is followed by its summary.
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or_default();
            if let Some(counts) = rspec_summary(next) {
                summary = Some(counts);
            }
        } else if let Some(rest) = t.strip_prefix("rspec ./") {
            let Some((at, name)) = rest.split_once(" # ") else {
                continue;
            };
            let file = at.split(':').next().map(str::to_string);
            tally.case(name.to_string(), Outcome::Failed, file);
        }
    }
    match summary {
        Some(s) => tally.agreeing(s, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}

/// `4 examples, 1 failure, 2 pending` (`, 1 error occurred outside of examples`).
fn rspec_summary(t: &str) -> Option<Counts> {
    let items = counted_items(t, ",")?;
    let known = [
        "example",
        "examples",
        "failure",
        "failures",
        "pending",
        "error occurred outside of examples",
        "errors occurred outside of examples",
    ];
    if items.iter().any(|(_, w)| !known.contains(w)) {
        return None;
    }
    let examples = item(&items, &["example", "examples"]);
    let failed = item(&items, &["failure", "failures"]);
    let pending = item(&items, &["pending"]);
    let outside = item(
        &items,
        &[
            "error occurred outside of examples",
            "errors occurred outside of examples",
        ],
    );
    Some(Counts {
        passed: examples.checked_sub(failed + pending)?,
        failed: failed + outside,
        skipped: pending,
    })
}

/// PHPUnit's words.
pub(crate) fn phpunit(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Phpunit);
    let mut summary = None;
    let mut heading: Option<Outcome> = None;
    for line in lines {
        let t = line.trim();
        let counts = if let Some(rest) = t.strip_prefix("OK (") {
            rest.split_once(" test")
                .and_then(|(n, _)| n.parse().ok())
                .map(|n| Counts {
                    passed: n,
                    ..Counts::default()
                })
        } else if t.starts_with("Tests: ") && t.contains(", Assertions: ") {
            phpunit_summary(t)
        } else {
            None
        };
        if let Some(counts) = counts {
            if summary.is_some() {
                return Found::Refused;
            }
            summary = Some(counts);
        } else if t.starts_with("There was ") || t.starts_with("There were ") {
            heading = phpunit_heading(t);
        } else if let (Some(outcome), Some((n, name))) = (heading, t.split_once(") "))
            && n.parse::<u32>().is_ok()
            && name.contains("::")
            && !name.contains(' ')
        {
            tally.case(name.to_string(), outcome, None);
        }
    }
    match summary {
        Some(s) => tally.agreeing(s, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}

/// What the tests under `There was 1 failure:` ended as (`None`: risky,
/// warnings, deprecations: not a kind of their own).
fn phpunit_heading(t: &str) -> Option<Outcome> {
    if t.ends_with(" failure:")
        || t.ends_with(" failures:")
        || t.ends_with(" error:")
        || t.ends_with(" errors:")
    {
        Some(Outcome::Failed)
    } else if t.contains(" skipped test") || t.contains(" incomplete test") {
        Some(Outcome::Skipped)
    } else {
        None
    }
}

/// `Tests: 6, Assertions: 2, Errors: 1, Failures: 1, Skipped: 1, Incomplete: 1, Risky: 1.`
fn phpunit_summary(t: &str) -> Option<Counts> {
    let mut fields = Vec::new();
    for part in t.trim_end_matches('.').split(", ") {
        let (label, n) = part.split_once(": ")?;
        fields.push((label, n.parse::<u32>().ok()?));
    }
    let field = |name: &str| {
        fields
            .iter()
            .filter(|(l, _)| *l == name)
            .map(|(_, n)| n)
            .sum::<u32>()
    };
    let failed = field("Failures") + field("Errors");
    let skipped = field("Skipped") + field("Incomplete");
    Some(Counts {
        passed: field("Tests").checked_sub(failed + skipped)?,
        failed,
        skipped,
    })
}

/// CTest's words: its per-test lines, which its one summary must agree with.
pub(crate) fn ctest(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Ctest);
    let mut summary: Option<(u32, u32)> = None;
    let mut disabled = 0;
    for line in lines {
        let t = line.trim();
        if t.contains("% tests passed, ") && t.contains(" out of ") {
            if summary.is_some() {
                return Found::Refused;
            }
            let Some((_, rest)) = t.split_once("% tests passed, ") else {
                return Found::Refused;
            };
            let failed = rest.split(' ').next().and_then(|n| n.parse().ok());
            let total = rest
                .rsplit(" out of ")
                .next()
                .and_then(|n| n.trim().parse().ok());
            let (Some(failed), Some(total)) = (failed, total) else {
                return Found::Refused;
            };
            summary = Some((failed, total));
        } else if let Some((name, outcome, off)) = ctest_line(t) {
            disabled += u32::from(off);
            tally.case(name, outcome, None);
        }
    }
    let Some((failed, total)) = summary else {
        return Found::NotMine;
    };
    let named = tally.counts();
    let run = named.passed + named.failed + named.skipped - disabled;
    if named.failed != failed || run != total {
        return Found::Refused;
    }
    tally.agreeing(named, NAMES_ALL)
}

/// `1/5 Test #1: api_ok .......   Passed    0.00 sec`: the name, how it
/// ended, whether it was disabled (not in the summary's total).
fn ctest_line(t: &str) -> Option<(String, Outcome, bool)> {
    let (_, rest) = t.split_once("Test #")?;
    let (_, rest) = rest.split_once(": ")?;
    let (name, result) = rest.split_once(" .")?;
    let result = result
        .trim_start_matches('.')
        .trim_start()
        .trim_start_matches("***");
    let (outcome, disabled) = if result.starts_with("Passed") {
        (Outcome::Passed, false)
    } else if result.starts_with("Not Run (Disabled)") {
        (Outcome::Skipped, true)
    } else if result.starts_with("Skipped") || result.starts_with("Not Run") {
        (Outcome::Skipped, false)
    } else {
        (Outcome::Failed, false)
    };
    Some((name.trim().to_string(), outcome, disabled))
}

/// The plain line: `12 passed, 3 failed` (`, 1 skipped`), alone, once.
pub(crate) fn plain(lines: &[String]) -> Found {
    let mut found = None;
    for line in lines {
        let t = line.trim();
        let body = match t.split_once(": ") {
            Some((word, rest)) if !word.contains(' ') => rest,
            _ => t,
        };
        let lower = body.to_ascii_lowercase();
        let Some(items) = counted_items(&lower, ",") else {
            continue;
        };
        let known = ["passed", "passing", "failed", "failing", "skipped"];
        let says_passed = items.iter().any(|(_, w)| *w == "passed" || *w == "passing");
        if !says_passed || items.iter().any(|(_, w)| !known.contains(w)) {
            continue;
        }
        if found.is_some() {
            return Found::Refused;
        }
        found = Some(Counts {
            passed: item(&items, &["passed", "passing"]),
            failed: item(&items, &["failed", "failing"]),
            skipped: item(&items, &["skipped"]),
        });
    }
    match found {
        Some(c) => Tally::new(Runner::Plain).agreeing(c, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}
