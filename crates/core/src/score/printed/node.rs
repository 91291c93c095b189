//! Node's test runner and Mocha in words. Node (spec or TAP): one closing
//! block (`ℹ tests 7` / `# tests 7`, then `suites`, `pass`, `fail`,
//! `cancelled`, `skipped`, `todo`, each on the next line, adding up to the
//! tests); a test's own prints are comments in TAP (`# pass 99`), so a line
//! alone is not the block. Node's words nest tests in suites and in other
//! tests in ways its counts do not follow: it is read as counts, its
//! failures shown, none named. Mocha: `N passing (12ms)`, then `N pending`
//! and `N failing`, once; `✔ test`, `N) test` and `- test` nested under
//! their suites by indentation, named `suite test` as Mocha's full titles.
//! Pure.

use super::{Counts, Found, MAY_NAME_NONE, Tally, indent, without_time};
use crate::score::{Outcome, Runner};

/// The closing block's lines, in order, after `tests`.
const NODE_BLOCK: [&str; 6] = ["suites", "pass", "fail", "cancelled", "skipped", "todo"];

/// Node's words: exactly one closing block that adds up.
pub(crate) fn node_test(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::NodeTest);
    let mut summary = None;
    let mut listing_failures = false;
    for (i, line) in lines.iter().enumerate() {
        let Some(marker) = ["ℹ ", "# "].into_iter().find(|m| line.starts_with(m)) else {
            if line == "✖ failing tests:" {
                listing_failures = true;
            } else if let Some(rest) = line.strip_prefix("✖ ").filter(|_| listing_failures) {
                tally.failing_only(without_time(rest));
            } else if let Some(rest) = line.trim_start().strip_prefix("not ok ") {
                let name = rest.split(" # ").next().unwrap_or(rest);
                let name = name.split_once(" - ").map_or(name, |(_, n)| n);
                tally.failing_only(name.to_string());
            }
            continue;
        };
        let Some(tests) = line[marker.len()..].strip_prefix("tests ") else {
            continue;
        };
        // Only the whole block is the runner's closing words.
        let Some(counts) = node_block(marker, tests, &lines[i + 1..]) else {
            continue;
        };
        if summary.is_some() {
            return Found::Refused;
        }
        summary = Some(counts);
    }
    match summary {
        Some(s) => tally.agreeing(s, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}

/// `tests N` and the block after it, when whole and adding up.
fn node_block(marker: &str, tests: &str, after: &[String]) -> Option<Counts> {
    let total: u32 = tests.trim().parse().ok()?;
    let mut values = [0u32; 6];
    for (slot, (word, line)) in NODE_BLOCK.iter().zip(after).enumerate() {
        let rest = line
            .strip_prefix(marker)?
            .strip_prefix(word)?
            .strip_prefix(' ')?;
        values[slot] = rest.trim().parse().ok()?;
    }
    let [_, pass, fail, cancelled, skipped, todo] = values;
    let counts = Counts {
        passed: pass,
        failed: fail + cancelled,
        skipped: skipped + todo,
    };
    (counts.passed + counts.failed + counts.skipped == total).then_some(counts)
}

/// Mocha's words: one closing block; each kind named whole or not at all.
pub(crate) fn mocha(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Mocha);
    let mut summary: Option<Counts> = None;
    let mut suites: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(passed) = mocha_passing(t) {
            if summary.is_some() {
                return Found::Refused;
            }
            let mut counts = Counts {
                passed,
                ..Counts::default()
            };
            for next in lines[i + 1..].iter().take(2).map(|l| l.trim()) {
                if let Some(n) = next.strip_suffix(" pending").and_then(|n| n.parse().ok()) {
                    counts.skipped = n;
                } else if let Some(n) = next.strip_suffix(" failing").and_then(|n| n.parse().ok()) {
                    counts.failed = n;
                }
            }
            summary = Some(counts);
            continue;
        }
        // After the block, the failures are told again, in full; a test's
        // own prints stand at the line's start, Mocha's listing indented.
        let depth = indent(line);
        if summary.is_some() || t.is_empty() || depth < 2 {
            continue;
        }
        suites.retain(|(d, _)| *d < depth);
        let named = if let Some(rest) = t.strip_prefix("✔ ").or(t.strip_prefix("✓ ")) {
            Some((without_time(rest), Outcome::Passed))
        } else if let Some(rest) = t.strip_prefix("- ") {
            Some((rest.to_string(), Outcome::Skipped))
        } else if let Some((n, rest)) = t.split_once(") ") {
            n.parse::<u32>()
                .ok()
                .map(|_| (rest.to_string(), Outcome::Failed))
        } else {
            None
        };
        match named {
            Some((title, outcome)) => {
                let mut id: Vec<&str> = suites.iter().map(|(_, s)| s.as_str()).collect();
                id.push(&title);
                tally.case(id.join(" "), outcome, None);
            }
            None => suites.push((depth, t.to_string())),
        }
    }
    match summary {
        Some(s) => tally.agreeing(s, MAY_NAME_NONE),
        None => Found::NotMine,
    }
}

/// `3 passing (5ms)` → 3.
fn mocha_passing(t: &str) -> Option<u32> {
    let (n, rest) = t.split_once(" passing (")?;
    let time = rest.strip_suffix(')')?;
    let unit = time.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    (["ms", "s", "m"].contains(&unit) && unit.len() < time.len()).then_some(())?;
    n.parse().ok()
}
