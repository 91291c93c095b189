//! Jest and Vitest in words. Jest: its closing block (`Test Suites:` then
//! `Tests:       1 failed, 1 skipped, 2 passed, 4 total`, at the line's
//! start; a `Tests:` line broken across lines at the console's width is
//! joined back where it reads whole and adds up), the suite headers (`PASS
//! file`, `FAIL file`), the verbose lines (`✓`, `✕`, `○ skipped`, `✎ todo`,
//! nested under their describe blocks by indentation) and each failure's
//! `● describe › test`. Vitest: `Test Files` then `Tests  1 failed | 2
//! passed (3)`, and each failure's `FAIL  file > describe > test`.
//! Tests are named `file › describe › test` (Jest) and `file > describe >
//! test` (Vitest), as their JSON reports are read.
//! Pure.

use super::{Counts, Found, MAY_NAME_NONE, Tally, counted_items, indent, item, without_time};
use crate::score::{Outcome, Runner};

/// Jest's words: one closing block, each kind named as often as it counts
/// or not at all.
pub(crate) fn jest(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Jest);
    let mut summary = None;
    let mut file = String::new();
    let mut describe: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("Test Suites:") {
            if summary.is_some() {
                return Found::Refused;
            }
            let Some(tests) = lines.get(i + 1).filter(|l| l.starts_with("Tests:")) else {
                return Found::Refused;
            };
            match jest_tests_line(tests, &lines[i + 2..]) {
                Some(counts) => summary = Some(counts),
                None => return Found::Refused,
            }
        } else if let Some(rest) = line.strip_prefix("PASS ").or(line.strip_prefix("FAIL ")) {
            file = rest
                .split(" (")
                .next()
                .unwrap_or(rest)
                .trim()
                .trim_start_matches("./")
                .to_string();
            describe.clear();
        } else if let Some(rest) = line.strip_prefix("  ● ") {
            if rest != "Console" && !rest.starts_with("Test suite failed to run") {
                tally.case(
                    format!("{file} › {rest}"),
                    Outcome::Failed,
                    Some(file.clone()),
                );
            }
        } else if let Some((title, outcome)) = jest_verbose(line.trim_start()) {
            if title
                .rsplit_once(" (")
                .is_some_and(|(_, t)| !t.contains(')'))
            {
                // Its time cut at the console's width: the line is not whole.
                return Found::Refused;
            }
            let depth = indent(line);
            describe.retain(|(d, _)| *d < depth);
            let mut id = vec![file.clone()];
            id.extend(describe.iter().map(|(_, t)| t.clone()));
            id.push(title);
            tally.case(id.join(" › "), outcome, Some(file.clone()));
        } else if !file.is_empty()
            && indent(line) >= 2
            && !line.trim().is_empty()
            && !line.trim_start().starts_with('●')
        {
            let depth = indent(line);
            describe.retain(|(d, _)| *d < depth);
            describe.push((depth, line.trim().to_string()));
        }
    }
    match summary {
        Some(s) => tally.agreeing(s, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}

/// A verbose test line: `✓ adds (2 ms)`, `✕ parses`, `○ skipped slow`, `✎ todo later`.
fn jest_verbose(t: &str) -> Option<(String, Outcome)> {
    if let Some(rest) = t.strip_prefix("✓ ").or(t.strip_prefix("√ ")) {
        Some((without_time(rest), Outcome::Passed))
    } else if let Some(rest) = t.strip_prefix("✕ ").or(t.strip_prefix("× ")) {
        Some((without_time(rest), Outcome::Failed))
    } else {
        t.strip_prefix("○ skipped ")
            .or(t.strip_prefix("✎ todo "))
            .map(|rest| (rest.trim().to_string(), Outcome::Skipped))
    }
}

/// `Tests:       1 failed, 2 passed, 3 total`, its continuation lines
/// joined back (with or without the space the break took) where exactly
/// one joining reads whole and adds up.
fn jest_tests_line(first: &str, after: &[String]) -> Option<Counts> {
    let mut candidates: Vec<String> = vec![first.to_string()];
    for next in after.iter().take(3) {
        if next.is_empty() || next.starts_with("Snapshots:") || next.starts_with("Time:") {
            break;
        }
        let mut joined = Vec::new();
        for c in &candidates {
            joined.push(format!("{c} {next}"));
            joined.push(format!("{c}{next}"));
        }
        candidates.extend(joined);
    }
    let mut read: Vec<Counts> = candidates
        .iter()
        .filter_map(|c| jest_counts(c.strip_prefix("Tests:")?))
        .collect();
    read.dedup();
    match read.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// `1 failed, 1 skipped, 1 todo, 2 passed, 5 total`: the kinds add up to the total.
fn jest_counts(text: &str) -> Option<Counts> {
    let items = counted_items(text, ",")?;
    let known = ["failed", "skipped", "todo", "passed", "total"];
    if items.iter().any(|(_, w)| !known.contains(w)) || !items.iter().any(|(_, w)| *w == "total") {
        return None;
    }
    let counts = Counts {
        passed: item(&items, &["passed"]),
        failed: item(&items, &["failed"]),
        skipped: item(&items, &["skipped", "todo"]),
    };
    (counts.passed + counts.failed + counts.skipped == item(&items, &["total"])).then_some(counts)
}

/// Vitest's words: one `Tests` line right after `Test Files`, adding up
/// to its total; failures named by `FAIL  file > describe > test`.
pub(crate) fn vitest(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Vitest);
    let mut summary = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with("Test Files ") {
            if summary.is_some() {
                return Found::Refused;
            }
            let next = lines.get(i + 1).map(|l| l.trim());
            let Some(counts) = next
                .and_then(|n| n.strip_prefix("Tests "))
                .and_then(vitest_counts)
            else {
                return Found::Refused;
            };
            summary = Some(counts);
        } else if let Some(rest) = t.strip_prefix("FAIL ") {
            let rest = rest.trim();
            if let Some((file, _)) = rest.split_once(" > ") {
                tally.case(rest.to_string(), Outcome::Failed, Some(file.to_string()));
            }
        }
    }
    match summary {
        Some(s) => tally.agreeing(s, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}

/// `1 failed | 2 passed | 1 skipped | 1 todo (5)`.
fn vitest_counts(text: &str) -> Option<Counts> {
    let (items, total) = text.trim().rsplit_once(" (")?;
    let total: u32 = total.strip_suffix(')')?.parse().ok()?;
    let items = counted_items(items, "|")?;
    let known = ["failed", "passed", "skipped", "todo", "expected fail"];
    if items.iter().any(|(_, w)| !known.contains(w)) {
        return None;
    }
    let counts = Counts {
        passed: item(&items, &["passed"]),
        failed: item(&items, &["failed"]),
        skipped: item(&items, &["skipped", "todo", "expected fail"]),
    };
    (counts.passed + counts.failed + counts.skipped == total).then_some(counts)
}
