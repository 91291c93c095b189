//! What the model and the user read of the suite's inventory: the tests
//! gone from a claim's run, each with the file that held it, and how to
//! put them back (or who may accept their removal). Shared by the Stop's
//! words and the `--parallel` merge queue's. Pure.

use super::inventory::{Gone, InventoryFinding, PresentSince, Vanished};
use crate::fmt::plural;

/// Tests named at most in one message (the rest are counted).
const MAX_NAMED: usize = 20;

/// The refusal, as the model reads it.
pub(crate) fn report(findings: &[(String, InventoryFinding)]) -> String {
    let mut out = String::new();
    for (command, found) in findings {
        if !found.vanished.is_empty() {
            out.push_str(&format!(
                "{} from `{command}` since the loop started:\n",
                gone_count(found.vanished.len())
            ));
            for v in found.vanished.iter().take(MAX_NAMED) {
                out.push_str(&format!("- {}\n", line(v)));
            }
            if found.vanished.len() > MAX_NAMED {
                out.push_str(&format!(
                    "- and {} more\n",
                    found.vanished.len() - MAX_NAMED
                ));
            }
        }
        if let Some((start, now)) = found.fewer {
            out.push_str(&format!(
                "`{command}` ran {} at the start and runs {now} now (its output names no tests, so ralph counts them).\n",
                plural(u64::from(start), "test")
            ));
        }
        if let Some((start, now)) = found.more_skipped {
            out.push_str(&format!(
                "`{command}` skips {now} tests now, {start} at the start (counted: its output names no tests).\n"
            ));
        }
        if let Some(had) = found.unnamed {
            out.push_str(&format!(
                "`{command}` named each of its {} at the start (the runner's own report), and names none now: its report was not written this time (an option, a configuration or a plugin that turns it off), so ralph cannot see which tests ran. Put back what turned it off.\n",
                plural(u64::from(had), "test")
            ));
        }
        if let Some(had) = found.unread {
            out.push_str(&format!(
                "`{command}` had {} in the suite, and its output counts none now: the runner's words in it do not add up (something prints a runner's summary of its own, or the output is cut short), so ralph cannot see whether the suite is whole. Take out what prints them.\n",
                plural(u64::from(had), "test")
            ));
        }
    }
    let example = findings
        .iter()
        .find_map(|(_, f)| f.vanished.first())
        .map_or_else(|| "--all".to_string(), |v| v.test.clone());
    out.push_str(&format!(
        "Restore them (put the test back, undo the skip or the filter): a claim is not done while a test of the suite is gone. If removing one is right, only the user can accept it (/ralph-accept {example}); tell them why."
    ));
    out
}

/// `tests/t.py::test_leap (tests/t.py) existed at the start and is gone now`.
fn line(v: &Vanished) -> String {
    let file = match &v.file {
        Some(f) if !v.test.starts_with(f.as_str()) => format!(" ({f})"),
        _ => String::new(),
    };
    let was = match v.since {
        PresentSince::Start => "existed at the start".to_string(),
        PresentSince::Passed(i) => format!("passed at iteration {i}"),
    };
    let now = match v.gone {
        Gone::Missing => "is gone now",
        Gone::Skipped => "is skipped now",
    };
    format!("`{}`{file} {was} and {now}", v.test)
}

fn gone_count(n: usize) -> String {
    if n == 1 {
        "1 test is gone".to_string()
    } else {
        format!("{n} tests are gone")
    }
}

/// The user's short form: `2 tests gone from the suite`.
pub(crate) fn status(findings: &[(String, InventoryFinding)]) -> String {
    let named: usize = findings.iter().map(|(_, f)| f.vanished.len()).sum();
    if named > 0 {
        return format!("{} gone from the suite", plural(named as u64, "test"));
    }
    if findings.iter().any(|(_, f)| f.unread.is_some()) {
        return "the check's output counts no test".to_string();
    }
    if findings.iter().any(|(_, f)| f.unnamed.is_some()) {
        return "the check's run names no test".to_string();
    }
    "fewer tests than at the start".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gone_test_is_named_with_its_file_and_the_way_back() {
        let found = InventoryFinding {
            vanished: vec![
                Vanished {
                    test: "tests/test_dates.py::test_leap".into(),
                    file: Some("tests/test_dates.py".into()),
                    gone: Gone::Missing,
                    since: PresentSince::Start,
                },
                Vanished {
                    test: "dates::tests::adds".into(),
                    file: Some("src/lib.rs".into()),
                    gone: Gone::Skipped,
                    since: PresentSince::Passed(3),
                },
            ],
            ..InventoryFinding::default()
        };
        let text = report(&[("pytest".into(), found.clone())]);
        assert!(text.starts_with("2 tests are gone from `pytest` since the loop started:\n"));
        assert!(
            text.contains(
                "- `tests/test_dates.py::test_leap` existed at the start and is gone now\n"
            )
        );
        assert!(text.contains(
            "- `dates::tests::adds` (src/lib.rs) passed at iteration 3 and is skipped now\n"
        ));
        assert!(
            text.contains("/ralph-accept tests/test_dates.py::test_leap"),
            "{text}"
        );
        assert_eq!(
            status(&[("pytest".into(), found)]),
            "2 tests gone from the suite"
        );
        let counted = InventoryFinding {
            fewer: Some((120, 117)),
            ..InventoryFinding::default()
        };
        let text = report(&[("cargo test -q".into(), counted)]);
        assert!(text.contains("`cargo test -q` ran 120 tests at the start and runs 117 now"));
        assert!(text.contains("/ralph-accept --all"), "{text}");
        let unread = InventoryFinding {
            unread: Some(2),
            ..InventoryFinding::default()
        };
        let findings = [("cargo test".to_string(), unread)];
        let text = report(&findings);
        assert!(
            text.starts_with(
                "`cargo test` had 2 tests in the suite, and its output counts none now"
            ),
            "{text}"
        );
        assert!(text.contains("/ralph-accept --all"), "{text}");
        assert_eq!(status(&findings), "the check's output counts no test");
    }
}
