//! Rust's test runners in words: libtest (`cargo test`: one section per
//! test binary, `running N tests` to `test result: ...`, each test's
//! `test NAME ... ok|FAILED|ignored` between) and cargo-nextest (a status
//! line per test and `Summary [...] N tests run: ...`).
//! Pure.

use super::{Counts, Found, NAMES_ALL, Tally, counted_items, item};
use crate::score::{Outcome, Runner};

/// The test binary a section runs: its name (the file cargo built, without
/// its hash) and the source it was built from.
#[derive(Debug, Clone, Default)]
struct Binary {
    name: Option<String>,
    file: Option<String>,
}

/// One section being read: announced by `running N tests`.
struct Section {
    announced: u32,
    tests: Tally,
}

/// libtest's words. A section counts when its `test result:` counts are
/// exactly its test lines, by kind, and `running N` announced as many; a
/// `test result:` or `running` line outside its place (printed by a test,
/// with `--nocapture` or in its captured output), or a section left open
/// (output cut), makes the whole output no count. What a failing test
/// printed (`---- NAME stdout ----` up to `failures:`) is not read.
pub(crate) fn cargo(lines: &[String]) -> Found {
    if !lines.iter().any(|l| announced(l).is_some()) {
        return Found::NotMine;
    }
    let mut all = Tally::new(Runner::Cargo);
    let mut binary = Binary::default();
    let mut section: Option<Section> = None;
    let mut captured = false;
    let mut sections = 0;
    for line in lines {
        if line.starts_with("---- ") && line.ends_with(" ----") {
            captured = true;
            continue;
        }
        if line == "failures:" {
            captured = false;
            continue;
        }
        if captured {
            continue;
        }
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed
            .strip_prefix("Running ")
            .filter(|_| line.starts_with(' '))
        {
            if section.is_some() {
                return Found::Refused;
            }
            // A `Running` line cut (at the console's width) names no binary.
            let Some(b) = running(rest) else {
                return Found::Refused;
            };
            binary = b;
        } else if let Some(rest) = trimmed
            .strip_prefix("Doc-tests ")
            .filter(|_| line.starts_with(' '))
        {
            if section.is_some() {
                return Found::Refused;
            }
            binary = Binary {
                name: Some(rest.trim().to_string()),
                file: None,
            };
        } else if let Some(n) = announced(line) {
            if section.is_some() {
                return Found::Refused;
            }
            section = Some(Section {
                announced: n,
                tests: Tally::new(Runner::Cargo),
            });
        } else if let Some(rest) = line.strip_prefix("test result: ") {
            if !close(section.take(), rest, &mut all) {
                return Found::Refused;
            }
            sections += 1;
        } else if let (Some(open), Some(rest)) = (section.as_mut(), line.strip_prefix("test "))
            && let Some((name, outcome)) = test_line(rest)
        {
            {
                let id = match &binary.name {
                    Some(bin) => format!("{bin}::{name}"),
                    None => name.to_string(),
                };
                let file = binary.file.clone().or_else(|| doc_file(name));
                open.tests.case(id, outcome, file);
            }
        }
    }
    match (sections, section) {
        (0, None) => Found::NotMine,
        (_, Some(_)) => Found::Refused,
        _ => {
            let c = all.counts();
            all.agreeing(c, NAMES_ALL)
        }
    }
}

/// A section closed by its `test result:` line: its tests added to `all`
/// when the counts are exactly its test lines and what `running` announced.
fn close(section: Option<Section>, result: &str, all: &mut Tally) -> bool {
    let (Some(open), Some(counts)) = (section, result_counts(result)) else {
        return false;
    };
    if counts.passed + counts.failed + counts.skipped != open.announced
        || open.tests.counts() != counts
    {
        return false;
    }
    for case in open.tests.into_cases() {
        all.case(case.id, case.outcome, case.file);
    }
    true
}

/// `running 4 tests` / `running 1 test`.
fn announced(line: &str) -> Option<u32> {
    let rest = line.strip_prefix("running ")?;
    let n = rest.strip_suffix(" tests").or(rest.strip_suffix(" test"))?;
    n.parse().ok()
}

/// `unittests src/lib.rs (target/debug/deps/crt-bd4320a1ed4935a6)` or
/// `tests/api.rs (target/debug/deps/api-c6d0fc33d118c2f8)`.
fn running(rest: &str) -> Option<Binary> {
    let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
    let (file, built) = rest.split_once(" (")?;
    let built = built.strip_suffix(')')?;
    let stem = built
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(built)
        .trim_end_matches(".exe");
    let (name, hash) = stem.rsplit_once('-')?;
    (hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit())).then(|| Binary {
        name: Some(name.to_string()),
        file: Some(file.replace('\\', "/")),
    })
}

/// `NAME ... ok`, `NAME ... FAILED`, `NAME ... ignored[, reason]`.
fn test_line(rest: &str) -> Option<(&str, Outcome)> {
    let (name, outcome) = rest.rsplit_once(" ... ")?;
    let outcome = match outcome {
        "ok" => Outcome::Passed,
        "FAILED" => Outcome::Failed,
        o if o == "ignored" || o.starts_with("ignored, ") => Outcome::Skipped,
        _ => return None,
    };
    Some((name, outcome))
}

/// A doc-test's file: `src/lib.rs - add (line 3)` → `src/lib.rs`.
fn doc_file(name: &str) -> Option<String> {
    name.split_once(" - ")
        .map(|(file, _)| file.to_string())
        .filter(|f| f.ends_with(".rs"))
}

/// `ok. 3 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.07s`.
fn result_counts(rest: &str) -> Option<Counts> {
    let rest = rest
        .strip_prefix("ok. ")
        .or_else(|| rest.strip_prefix("FAILED. "))?;
    let body = rest.split("; finished in ").next()?;
    let items = counted_items(body, ";")?;
    Some(Counts {
        passed: item(&items, &["passed"]),
        failed: item(&items, &["failed"]),
        skipped: item(&items, &["ignored"]),
    })
}

/// The status words nextest right-aligns before `[ time]`.
const NEXTEST_STATUS: &[(&str, Outcome)] = &[
    ("PASS", Outcome::Passed),
    ("FAIL", Outcome::Failed),
    ("SKIP", Outcome::Skipped),
    ("TIMEOUT", Outcome::Failed),
    ("SIGSEGV", Outcome::Failed),
    ("SIGABRT", Outcome::Failed),
    ("SIGBUS", Outcome::Failed),
    ("ABORT", Outcome::Failed),
    ("LEAK-FAIL", Outcome::Failed),
];

/// cargo-nextest: a status line per test (`        PASS [   0.004s] (1/5)
/// crt tests::adds`, its word ending at column 12), named `crt::tests::adds`
/// as its JUnit report names it, and one `Summary [...] N tests run: N
/// passed, N failed, N skipped`. Skipped tests are counted, not named.
pub(crate) fn nextest(lines: &[String]) -> Found {
    let mut tally = Tally::new(Runner::Nextest);
    let mut summary = None;
    let mut started = false;
    for line in lines {
        let t = line.trim_start();
        if t.starts_with("Starting ") && t.contains(" tests across ") {
            started = true;
        } else if let Some(rest) = t.strip_prefix("Summary [") {
            if summary.is_some() {
                return Found::Refused;
            }
            let Some(counts) = rest.split_once("] ").and_then(|(_, s)| nextest_summary(s)) else {
                return Found::Refused;
            };
            summary = Some(counts);
        } else if let Some((id, outcome)) = nextest_status(line) {
            tally.case(id, outcome, None);
        }
    }
    match (summary, started) {
        (Some(s), _) => tally.agreeing(
            s,
            Counts {
                skipped: 1,
                ..NAMES_ALL
            },
        ),
        (None, true) => Found::Refused,
        (None, false) => Found::NotMine,
    }
}

/// A nextest status line's test and how it ended.
fn nextest_status(line: &str) -> Option<(String, Outcome)> {
    let (head, rest) = line.split_at_checked(12)?;
    let word = head.trim_start();
    let (_, outcome) = NEXTEST_STATUS.iter().find(|(w, _)| *w == word)?;
    let rest = rest.strip_prefix(" [")?;
    let (_, after) = rest.split_once("] ")?;
    // `(3/5) ` is a counter, not the name.
    let after = match after.strip_prefix('(') {
        Some(counter) => counter.split_once(") ").map_or(after, |(_, n)| n),
        None => after,
    };
    let (binary, test) = after.trim().split_once(' ')?;
    Some((format!("{binary}::{}", test.trim()), *outcome))
}

/// `5 tests run: 3 passed, 2 failed, 1 skipped` (or `5/6 tests run:`).
fn nextest_summary(text: &str) -> Option<Counts> {
    let (_, items) = text.split_once(" run: ")?;
    let items = counted_items(items, ",")?;
    Some(Counts {
        passed: item(&items, &["passed"]),
        failed: item(&items, &["failed", "timed out"]),
        skipped: item(&items, &["skipped"]),
    })
}

impl Tally {
    /// The cases named, to move into another tally.
    fn into_cases(self) -> Vec<crate::score::TestCase> {
        self.cases
    }
}
