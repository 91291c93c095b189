//! The rule of the suite's inventory: a claim is not done while a test
//! that existed at the baseline, or passed at an iteration since, is
//! missing from the run that judges it, or skipped where it ran before.
//! A test moved to another file with the same name is the same test; a
//! renamed one is a removal and an addition; new tests are welcome. Pure.

use super::{Inventory, Known, Suite};
use crate::score::Outcome;
use std::collections::{BTreeMap, BTreeSet};

/// Why a test no longer counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Not in the run at all: deleted, renamed, filtered out, not compiled.
    Missing,
    /// In the run, but skipped where it ran before.
    Skipped,
}

/// Since when the test was there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PresentSince {
    /// It was in the baseline, the suite at the loop's start.
    Start,
    /// It passed at this iteration.
    Passed(u64),
}

/// One test that is gone from the run that judges a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vanished {
    pub test: String,
    /// The file that held it, where the runner said.
    pub file: Option<String>,
    pub gone: Gone,
    pub since: PresentSince,
}

/// What the inventory finds in a run, against the loop's memory of the suite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct InventoryFinding {
    /// Tests gone, by name (the run and the memory name every test).
    pub vanished: Vec<Vanished>,
    /// Counts only: fewer tests ran than at the start (`(start, now)`).
    pub fewer: Option<(u32, u32)>,
    /// Counts only: more tests skipped than at the start (`(start, now)`).
    pub more_skipped: Option<(u32, u32)>,
    /// The run counted no test while the suite had this many (at the
    /// start, or seen passing since): nothing of it can be seen.
    pub unread: Option<u32>,
    /// The baseline named every test (the runner's own report), and the run
    /// names none: its report was not written (an option or a plugin that
    /// turns it off), so which of these many tests ran cannot be seen.
    pub unnamed: Option<u32>,
}

impl InventoryFinding {
    pub(crate) fn is_clear(&self) -> bool {
        self.vanished.is_empty()
            && self.fewer.is_none()
            && self.more_skipped.is_none()
            && self.unread.is_none()
            && self.unnamed.is_none()
    }
}

/// What one test of the memory asks of the run.
struct Expected<'a> {
    file: Option<&'a str>,
    since: PresentSince,
    /// It must run (not be skipped): it ran at the start, or passed since.
    must_run: bool,
}

/// The run `now` of `command`, against the suite's memory of it: its
/// baseline and the tests seen passing since, less what the user accepted.
pub(crate) fn judge(suite: &Suite, command: &str, now: &Inventory) -> InventoryFinding {
    let baseline = suite.baseline_of(command);
    if now.unread {
        return unread(suite, command, baseline);
    }
    let expected = expected(suite, command, baseline);
    let named = now.named && baseline.is_none_or(|b| b.named);
    // Counts stand in for names only where the baseline had none: a run
    // that lost them (`-p no:junitxml` in pytest.ini) hides which tests
    // ran, and a test swapped for another keeps the counts.
    let lost_names = baseline.is_some_and(|b| b.named)
        && !expected.is_empty()
        && !suite.accepted_unread.contains(command);
    if !named && lost_names {
        return InventoryFinding {
            unnamed: Some(u32::try_from(expected.len()).unwrap_or(u32::MAX)),
            ..InventoryFinding::default()
        };
    }
    if !named {
        return by_counts(baseline, now, suite.accepted_all_at(command));
    }
    // Tests of the run the memory does not know: a moved test may be one.
    let mut newcomers: Vec<(&String, &Known)> = now
        .tests
        .iter()
        .filter(|(id, _)| !expected.contains_key(id.as_str()))
        .collect();
    let mut vanished = Vec::new();
    for (id, want) in &expected {
        if suite.accepted.contains_key(*id) {
            continue;
        }
        let found = now.tests.get(*id).or_else(|| {
            let at = newcomers.iter().position(|(n, _)| leaf(n) == leaf(id))?;
            Some(newcomers.swap_remove(at).1)
        });
        let gone = match found {
            None => Gone::Missing,
            Some(k) if want.must_run && k.outcome == Outcome::Skipped => Gone::Skipped,
            Some(_) => continue,
        };
        vanished.push(Vanished {
            test: (*id).to_string(),
            file: want.file.map(str::to_string),
            gone,
            since: want.since,
        });
    }
    InventoryFinding {
        vanished,
        ..InventoryFinding::default()
    }
}

/// Every test the memory holds for `command`, with what it asks.
fn expected<'a>(
    suite: &'a Suite,
    command: &str,
    baseline: Option<&'a Inventory>,
) -> BTreeMap<&'a str, Expected<'a>> {
    let mut out: BTreeMap<&str, Expected> = BTreeMap::new();
    if let Some(b) = baseline {
        for (id, known) in &b.tests {
            out.insert(
                id,
                Expected {
                    file: known.file.as_deref(),
                    since: PresentSince::Start,
                    must_run: known.outcome != Outcome::Skipped,
                },
            );
        }
    }
    for (id, seen) in suite.passed.get(command).into_iter().flatten() {
        out.entry(id).or_insert(Expected {
            file: seen.file.as_deref(),
            since: PresentSince::Passed(seen.iteration),
            must_run: true,
        });
        if let Some(e) = out.get_mut(id.as_str()) {
            e.must_run = true;
        }
    }
    out
}

/// A run that counted no test hides the whole suite: named while the
/// suite had tests (at the start, or seen passing since), unless the user
/// accepted that this command's output counts none.
fn unread(suite: &Suite, command: &str, baseline: Option<&Inventory>) -> InventoryFinding {
    let known = expected(suite, command, baseline).len();
    let had = baseline
        .map_or(0, Inventory::total)
        .max(u32::try_from(known).unwrap_or(u32::MAX));
    let accepted = suite.accepted_unread.contains(command);
    InventoryFinding {
        unread: (had > 0 && !accepted).then_some(had),
        ..InventoryFinding::default()
    }
}

/// Without names on both sides: the totals. Fewer tests than at the
/// start, or more skipped, is named (the user's acceptance of the counts
/// as they were, `accepted`, is the new floor).
fn by_counts(
    baseline: Option<&Inventory>,
    now: &Inventory,
    accepted: Option<(u32, u32)>,
) -> InventoryFinding {
    let Some(b) = baseline else {
        return InventoryFinding::default();
    };
    let (start_total, start_skipped) = accepted.unwrap_or((b.total(), b.skipped));
    let now_total = now.total();
    InventoryFinding {
        vanished: Vec::new(),
        fewer: (now_total < start_total).then_some((start_total, now_total)),
        more_skipped: (now.skipped > start_skipped).then_some((start_skipped, now.skipped)),
        unread: None,
        unnamed: None,
    }
}

/// A test's own name, without the file, module or suite that holds it:
/// `tests/a.py::TestX::test_y[1]` and `tests/b.py::test_y[1]` are both
/// `test_y[1]`; `sum › adds` is `adds`; `crate::tests::adds` is `adds`.
pub(crate) fn leaf(id: &str) -> &str {
    let mut rest = id;
    for sep in ["::", " › ", " > ", "/", "#"] {
        if let Some((_, tail)) = rest.rsplit_once(sep) {
            rest = tail;
        }
    }
    rest.trim()
}

/// The tests that failed at the baseline and pass in `now` (by name, a
/// moved test with its new name): a fix, or a test changed to pass, which
/// ralph cannot tell apart (`suite::changed`).
pub(crate) fn turned_to_pass<'a>(
    suite: &'a Suite,
    command: &str,
    now: &'a Inventory,
) -> Vec<(&'a String, &'a Known)> {
    let Some(b) = suite.baseline_of(command) else {
        return Vec::new();
    };
    let failed: BTreeSet<&str> = b
        .tests
        .iter()
        .filter(|(_, k)| k.outcome == Outcome::Failed)
        .map(|(id, _)| leaf(id))
        .collect();
    now.tests
        .iter()
        .filter(|(_, k)| k.outcome == Outcome::Passed)
        .filter(|(id, _)| {
            b.tests.get(*id).map_or_else(
                || failed.contains(leaf(id)),
                |k| k.outcome == Outcome::Failed,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Accepted, Baseline, BaselineState, SeenPassing};

    fn run(tests: &[(&str, Outcome)]) -> Inventory {
        Inventory {
            named: true,
            passed: tests.iter().filter(|t| t.1 == Outcome::Passed).count() as u32,
            failed: tests.iter().filter(|t| t.1 == Outcome::Failed).count() as u32,
            skipped: tests.iter().filter(|t| t.1 == Outcome::Skipped).count() as u32,
            tests: tests
                .iter()
                .map(|(id, o)| {
                    let file = id.split("::").next().map(str::to_string);
                    (id.to_string(), Known { outcome: *o, file })
                })
                .collect(),
            ..Inventory::default()
        }
    }

    fn suite_with(baseline: Inventory) -> Suite {
        let mut s = Suite::default();
        s.baselines.insert(
            "pytest".into(),
            Baseline {
                story: None,
                commit: "c".into(),
                timeout_secs: 300,
                state: BaselineState::Done(baseline),
            },
        );
        s.passed.entry("pytest".into()).or_default().insert(
            "t/x.py::test_d".into(),
            SeenPassing {
                iteration: 3,
                file: Some("t/x.py".into()),
            },
        );
        s
    }

    const P: Outcome = Outcome::Passed;
    const F: Outcome = Outcome::Failed;
    const S: Outcome = Outcome::Skipped;

    #[test]
    fn a_test_from_the_start_or_one_that_passed_since_must_still_run() {
        let start = run(&[
            ("t/x.py::test_a", P),
            ("t/x.py::test_b", F),
            ("t/x.py::test_c", S),
        ]);
        let suite = suite_with(start);
        let all = [
            ("t/x.py::test_a", P),
            ("t/x.py::test_b", P),
            ("t/x.py::test_c", S),
        ];
        let whole = |extra: &[(&'static str, Outcome)]| {
            let mut t = all.to_vec();
            t.push(("t/x.py::test_d", P));
            t.extend_from_slice(extra);
            run(&t)
        };
        assert!(judge(&suite, "pytest", &whole(&[])).is_clear());
        assert!(judge(&suite, "pytest", &whole(&[("t/x.py::test_new", P)])).is_clear());
        // b deleted, a skipped, d (passed at 3) gone.
        let now = run(&[("t/x.py::test_a", S), ("t/x.py::test_c", S)]);
        let found = judge(&suite, "pytest", &now);
        let named: Vec<(&str, Gone, PresentSince)> = found
            .vanished
            .iter()
            .map(|v| (v.test.as_str(), v.gone, v.since))
            .collect();
        assert_eq!(
            named,
            [
                ("t/x.py::test_a", Gone::Skipped, PresentSince::Start),
                ("t/x.py::test_b", Gone::Missing, PresentSince::Start),
                ("t/x.py::test_d", Gone::Missing, PresentSince::Passed(3)),
            ]
        );
        assert_eq!(found.vanished[1].file.as_deref(), Some("t/x.py"));
        // The user accepted b's removal: b is no longer named.
        let mut accepted = suite.clone();
        accepted.accepted.insert(
            "t/x.py::test_b".into(),
            Accepted {
                iteration: 4,
                time: "t".into(),
            },
        );
        let found = judge(&accepted, "pytest", &now);
        assert!(found.vanished.iter().all(|v| v.test != "t/x.py::test_b"));
    }

    #[test]
    fn a_moved_test_is_the_same_test_and_a_renamed_one_is_not() {
        let suite = suite_with(run(&[("t/x.py::test_a", P), ("t/x.py::test_b", F)]));
        let moved = run(&[
            ("t/x.py::test_a", P),
            ("t/moved/y.py::TestY::test_b", P),
            ("t/x.py::test_d", P),
        ]);
        assert!(judge(&suite, "pytest", &moved).is_clear());
        let renamed = run(&[
            ("t/x.py::test_a", P),
            ("t/x.py::test_b_fixed", P),
            ("t/x.py::test_d", P),
        ]);
        let found = judge(&suite, "pytest", &renamed);
        assert_eq!(found.vanished.len(), 1, "{found:?}");
        assert_eq!(found.vanished[0].test, "t/x.py::test_b");
        assert_eq!(leaf("sum › adds"), "adds");
        assert_eq!(leaf("crt::tests::adds"), "adds");
        assert_eq!(leaf("t/a.py::TestX::test_y[1]"), "test_y[1]");
    }

    #[test]
    fn a_run_that_lost_the_names_its_baseline_had_is_not_counted_instead() {
        let mut suite = suite_with(run(&[("t/x.py::test_a", P), ("t/x.py::test_b", F)]));
        // The report turned off, the failing test swapped for another: the
        // counts are as they were.
        let counted = Inventory {
            named: false,
            passed: 2,
            ..Inventory::default()
        };
        let found = judge(&suite, "pytest", &counted);
        // Two at the start, and t/x.py::test_d seen passing since.
        assert_eq!(found.unnamed, Some(3), "{found:?}");
        assert!(!found.is_clear());
        // The user accepted it: counted from then on.
        suite.accepted_unread.insert("pytest".into());
        assert!(judge(&suite, "pytest", &counted).is_clear());
    }

    #[test]
    fn counts_only_a_falling_total_or_more_skips_is_named() {
        let start = Inventory {
            named: false,
            passed: 8,
            failed: 2,
            ..Inventory::default()
        };
        let suite = suite_with(start);
        let now = |p, f, s| Inventory {
            named: false,
            passed: p,
            failed: f,
            skipped: s,
            ..Inventory::default()
        };
        assert!(judge(&suite, "pytest", &now(10, 0, 0)).is_clear());
        assert_eq!(judge(&suite, "pytest", &now(8, 0, 0)).fewer, Some((10, 8)));
        assert_eq!(
            judge(&suite, "pytest", &now(9, 0, 1)).more_skipped,
            Some((0, 1))
        );
        let mut accepted = suite.clone();
        accepted.accepted_counts.insert("pytest".into(), (8, 0));
        assert!(judge(&accepted, "pytest", &now(8, 0, 0)).is_clear());
        // No baseline: nothing to fall from.
        assert!(judge(&Suite::default(), "pytest", &now(1, 0, 0)).is_clear());
    }

    #[test]
    fn a_run_that_counts_no_test_hides_the_suite_until_the_user_accepts_it() {
        let suite = suite_with(run(&[("t/x.py::test_a", P), ("t/x.py::test_b", F)]));
        let unread = Inventory {
            unread: true,
            ..Inventory::default()
        };
        // Two at the start, and test_d seen passing since: three.
        assert_eq!(judge(&suite, "pytest", &unread).unread, Some(3));
        assert!(!judge(&suite, "pytest", &unread).is_clear());
        let mut accepted = suite.clone();
        accepted.accepted_unread.insert("pytest".into());
        assert!(judge(&accepted, "pytest", &unread).is_clear());
        // A command with no suite to hide (a check with no tests).
        assert!(judge(&Suite::default(), "make", &unread).is_clear());
    }

    #[test]
    fn a_test_that_failed_at_the_start_and_passes_now_is_found_even_moved() {
        let suite = suite_with(run(&[("t/x.py::test_a", P), ("t/x.py::test_b", F)]));
        let now = run(&[("t/x.py::test_a", P), ("t/z.py::test_b", P)]);
        let turned: Vec<&str> = turned_to_pass(&suite, "pytest", &now)
            .iter()
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(turned, ["t/z.py::test_b"]);
    }
}
