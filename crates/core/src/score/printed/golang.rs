//! `go test` in words: `--- PASS: TestX (0.00s)`, `--- FAIL:`, `--- SKIP:`
//! (subtests indented), each package closed by `ok  \tpkg\t0.01s` or
//! `FAIL\tpkg\t0.01s`; and `go test -json`'s events when the user's own
//! command asks for them (`score::report` reads them). With `-v` (`=== RUN`
//! lines) every test is named `package::Test`; without it go prints only
//! the failures, so they are shown and counted, and no test is named. A
//! test line with no package closing it after (output cut) is no count.
//! Before Go 1.20, `go test` could not tell a test's own `--- PASS:` line
//! from its own: a limit of the runner, said in docs/trust.md.
//! Pure.

use super::{Counts, Found, NAMES_ALL, Tally};
use crate::score::report::build_failed;
use crate::score::{Outcome, Runner};

/// The user's own `go test -json`: its events, when whole.
pub(crate) fn go_json(output: &str) -> Found {
    if !output
        .lines()
        .any(|l| l.starts_with("{\"Time\"") || l.starts_with("{\"Action\""))
    {
        return Found::NotMine;
    }
    match crate::score::report::read(
        crate::score::launch::ReportFormat::GoEvents,
        Runner::GoTest,
        output,
        "",
    ) {
        Some(score) => Found::Counted(score),
        None => Found::Refused,
    }
}

/// `go test`'s words.
pub(crate) fn go_text(lines: &[String]) -> Found {
    let verbose = lines.iter().any(|l| l.starts_with("=== RUN"));
    let mut tally = Tally::new(Runner::GoTest);
    let mut pending: Vec<(String, Outcome)> = Vec::new();
    let mut packages = 0;
    let mut failures = 0;
    for line in lines {
        if let Some(pkg) = build_failed(line) {
            packages += 1;
            if verbose {
                tally.case(pkg.to_string(), Outcome::Failed, Some(pkg.to_string()));
            } else {
                failures += 1;
                tally.failing_only(pkg.to_string());
            }
        } else if let Some(pkg) = package_end(line) {
            packages += 1;
            for (test, outcome) in pending.drain(..) {
                if verbose {
                    tally.case(format!("{pkg}::{test}"), outcome, Some(pkg.to_string()));
                } else if outcome == Outcome::Failed {
                    tally.failing_only(format!("{pkg}::{test}"));
                }
            }
        } else if let Some((test, outcome)) = test_line(line.trim_start()) {
            if outcome == Outcome::Failed {
                failures += 1;
            }
            pending.push((test, outcome));
        }
    }
    if packages == 0 {
        return Found::NotMine;
    }
    if !pending.is_empty() {
        return Found::Refused;
    }
    if verbose {
        let c = tally.counts();
        return tally.agreeing(c, NAMES_ALL);
    }
    let failed = failures;
    if failed == 0 {
        return Found::NotMine;
    }
    tally.agreeing(
        Counts {
            failed,
            ..Counts::default()
        },
        Counts {
            failed: 1,
            ..NAMES_ALL
        },
    )
}

/// `ok  \tpkg\t0.01s`, `ok  \tpkg\t(cached)`, `FAIL\tpkg\t0.01s`.
fn package_end(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("ok  \t")
        .or(line.strip_prefix("FAIL\t"))?;
    let (pkg, after) = rest.split_once('\t')?;
    (after.ends_with('s') || after.starts_with('(')).then_some(pkg)
}

/// `--- PASS: TestX (0.00s)` and its kin.
fn test_line(t: &str) -> Option<(String, Outcome)> {
    let (outcome, rest) = if let Some(r) = t.strip_prefix("--- PASS: ") {
        (Outcome::Passed, r)
    } else if let Some(r) = t.strip_prefix("--- FAIL: ") {
        (Outcome::Failed, r)
    } else if let Some(r) = t.strip_prefix("--- SKIP: ") {
        (Outcome::Skipped, r)
    } else {
        return None;
    };
    let (name, time) = rest.rsplit_once(" (")?;
    time.ends_with("s)").then(|| (name.to_string(), outcome))
}
