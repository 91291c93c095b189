//! A check's output read as a score: the test runners people use, each by
//! the lines it prints (its summary for the counts, its per-test lines for
//! the names), tried from the most particular to the most general; then a
//! plain `N passed, N failed` line; then, for a `--score` command, the last
//! number printed; else the exit code. Colour codes are taken out first,
//! and any other line (logs, warnings, the compiler) is passed over.
//! Pure.

use super::{MAX_FAILING, MAX_PASSING, Runner, Score};

/// One runner's reading of the output's lines.
type Reader = fn(&[&str]) -> Option<Score>;

/// What a check printed, read as a score. `number`: the command is a
/// `--score` command, whose last number counts when no runner is found.
pub(crate) fn read(output: &str, passed: bool, number: bool) -> Score {
    let clean = strip_colour(output);
    let lines: Vec<&str> = clean.lines().map(str::trim_end).collect();
    let readers: [Reader; 13] = [
        go_json, cargo, nextest, pytest, jest, vitest, node_test, mocha, rspec, phpunit, ctest,
        go_text, plain,
    ];
    if let Some(score) = readers.iter().find_map(|read| read(&lines)) {
        return score;
    }
    if number && let Some(milli) = last_number(&lines) {
        return Score {
            reader: Runner::Number,
            milli: Some(milli),
            ..Score::of_exit(passed)
        };
    }
    Score::of_exit(passed)
}

/// A JUnit XML report (`<testcase>` elements, a `<failure>` or `<error>`
/// inside for a failure, `<skipped>` for a skip); `None` when it holds no
/// test case.
pub(crate) fn junit(xml: &str) -> Option<Score> {
    let mut tally = Tally::new(Runner::Junit);
    for case in xml.split("<testcase").skip(1) {
        let head_end = case.find('>').unwrap_or(case.len());
        let head = &case[..head_end];
        let self_closed = head.ends_with('/');
        let body = if self_closed {
            ""
        } else {
            case[head_end..].split("</testcase>").next().unwrap_or("")
        };
        let class = attribute(head, "classname");
        let name = attribute(head, "name").unwrap_or_default();
        let full = match class {
            Some(c) if !c.is_empty() => format!("{c}::{name}"),
            _ => name,
        };
        if body.contains("<skipped") {
            continue;
        }
        tally.test(
            full,
            !(body.contains("<failure") || body.contains("<error")),
        );
    }
    tally.counted()
}

/// Passed and failed tests with their names, as a reader finds them.
struct Tally {
    reader: Runner,
    passed: u32,
    failed: u32,
    failing: Vec<String>,
    passing: Vec<String>,
}

impl Tally {
    fn new(reader: Runner) -> Tally {
        Tally {
            reader,
            passed: 0,
            failed: 0,
            failing: Vec::new(),
            passing: Vec::new(),
        }
    }

    /// One test's line: counted and named.
    fn test(&mut self, name: String, passed: bool) {
        if passed {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        self.name(name, passed);
    }

    /// A name only (the counts come from a summary).
    fn name(&mut self, name: String, passed: bool) {
        let name = name.trim().to_string();
        if name.is_empty() {
            return;
        }
        let (list, cap) = if passed {
            (&mut self.passing, MAX_PASSING)
        } else {
            (&mut self.failing, MAX_FAILING)
        };
        if list.len() < cap && !list.contains(&name) {
            list.push(name);
        }
    }

    fn counted(self) -> Option<Score> {
        (self.passed + self.failed > 0).then(|| self.score())
    }

    fn score(self) -> Score {
        Score {
            reader: self.reader,
            passed: self.passed,
            failed: self.failed,
            milli: None,
            failing: self.failing,
            passing: self.passing,
        }
    }

    /// The summary's counts, with the names found in the lines.
    fn with_counts(mut self, passed: u32, failed: u32) -> Score {
        self.passed = passed;
        self.failed = failed;
        self.score()
    }
}

/// `go test -json`: one event per line; a test's `pass` or `fail`.
fn go_json(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::GoTest);
    for line in lines.iter().filter(|l| l.starts_with('{')) {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let test = event.get("Test").and_then(|t| t.as_str());
        let action = event.get("Action").and_then(|a| a.as_str());
        match (test, action) {
            (Some(t), Some("pass")) => tally.test(t.to_string(), true),
            (Some(t), Some("fail")) => tally.test(t.to_string(), false),
            _ => {}
        }
    }
    tally.counted()
}

/// libtest (`cargo test`): `test NAME ... ok|FAILED`, and one
/// `test result: ... N passed; N failed; ...` per test binary, summed.
fn cargo(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Cargo);
    let (mut passed, mut failed, mut summaries) = (0, 0, 0);
    for line in lines {
        if let Some(rest) = line.strip_prefix("test result: ") {
            summaries += 1;
            passed += count_before(rest, &["passed"]);
            failed += count_before(rest, &["failed"]);
        } else if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, outcome)) = rest.rsplit_once(" ... ")
        {
            match outcome.trim() {
                "ok" => tally.name(name.to_string(), true),
                o if o.starts_with("FAILED") => tally.name(name.to_string(), false),
                _ => {}
            }
        }
    }
    (summaries > 0).then(|| tally.with_counts(passed, failed))
}

/// cargo-nextest: `PASS [ 0.004s] crate test` per test and `Summary [...]
/// N tests run: N passed, N failed, N skipped`.
fn nextest(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Nextest);
    let mut summary = None;
    for line in lines {
        let t = line.trim_start();
        if t.starts_with("Summary [") && t.contains("tests run:") {
            summary = Some((count_before(t, &["passed"]), count_before(t, &["failed"])));
        }
        for (word, passed) in [("PASS [", true), ("FAIL [", false)] {
            if let Some(rest) = t.strip_prefix(word)
                && let Some((_, name)) = rest.split_once(']')
            {
                // `(3/5) crate::api test_name`: the count goes.
                let name = name.trim_start();
                let name = match name.strip_prefix('(') {
                    Some(counted) => counted.split_once(") ").map_or(name, |(_, n)| n),
                    None => name,
                };
                tally.name(name.to_string(), passed);
            }
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// pytest: `==== 2 failed, 5 passed, 1 skipped in 0.12s ====`, with
/// `FAILED path::test` (the short summary) and `path::test PASSED` (`-v`).
fn pytest(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Pytest);
    let mut summary = None;
    for line in lines {
        let t = line.trim();
        if t.starts_with('=') && t.ends_with('=') && t.contains(" in ") {
            let inner = t.trim_matches('=').trim();
            let (p, f) = (
                count_before(inner, &["passed"]),
                count_before(inner, &["failed", "error", "errors"]),
            );
            if p + f > 0 {
                summary = Some((p, f));
            }
        } else if let Some(rest) = t
            .strip_prefix("FAILED ")
            .or_else(|| t.strip_prefix("ERROR "))
        {
            let name = rest.split(" - ").next().unwrap_or(rest);
            tally.name(name.to_string(), false);
        } else if let Some((name, outcome)) = t.split_once(' ')
            && name.contains("::")
        {
            match outcome.split_whitespace().next() {
                Some("PASSED") => tally.name(name.to_string(), true),
                Some("FAILED" | "ERROR") => tally.name(name.to_string(), false),
                _ => {}
            }
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// Jest: `Tests:       1 failed, 4 passed, 5 total`, with `✓ name` and
/// `✕ name` (`--verbose`) and `● Suite › name` for each failure.
fn jest(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Jest);
    let mut summary = None;
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Tests:")
            && rest.ends_with(" total")
        {
            summary = Some((
                count_before(rest, &["passed"]),
                count_before(rest, &["failed"]),
            ));
        } else if let Some(rest) = t.strip_prefix("● ") {
            if !rest.starts_with("Test suite failed") {
                tally.name(rest.to_string(), false);
            }
        } else if let Some(rest) = t.strip_prefix("✓ ").or_else(|| t.strip_prefix("√ ")) {
            tally.name(without_time(rest), true);
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// Vitest: ` Tests  1 failed | 4 passed (5)`, with `✓`/`×` per test and
/// `FAIL  file > suite > name` for each failure.
fn vitest(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Vitest);
    let mut summary = None;
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Tests ")
            && (rest.contains("passed") || rest.contains("failed"))
        {
            summary = Some((
                count_before(rest, &["passed"]),
                count_before(rest, &["failed"]),
            ));
        } else if let Some(rest) = t.strip_prefix("FAIL ") {
            if rest.contains(" > ") {
                tally.name(rest.trim().to_string(), false);
            }
        } else if let Some(rest) = t.strip_prefix("× ") {
            tally.name(without_time(rest), false);
        } else if let Some(rest) = t.strip_prefix("✓ ") {
            tally.name(without_time(rest), true);
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// Node's test runner: `ℹ pass 4` / `ℹ fail 1` (spec) or `# pass 4` /
/// `# fail 1` (TAP), with `✔ name`/`✖ name` or `ok 1 - name`/`not ok 2 - name`.
fn node_test(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::NodeTest);
    let (mut passed, mut failed) = (None, None);
    for line in lines {
        let t = line.trim();
        for prefix in ["ℹ ", "# "] {
            if let Some(rest) = t.strip_prefix(prefix) {
                if let Some(n) = rest.strip_prefix("pass ").and_then(|n| n.parse().ok()) {
                    passed = Some(n);
                } else if let Some(n) = rest.strip_prefix("fail ").and_then(|n| n.parse().ok()) {
                    failed = Some(n);
                }
            }
        }
        if let Some(rest) = t.strip_prefix("✔ ") {
            tally.name(without_time(rest), true);
        } else if let Some(rest) = t.strip_prefix("✖ ") {
            if !rest.starts_with("failing tests") {
                tally.name(without_time(rest), false);
            }
        } else if t.contains(" # SKIP") || t.contains(" # TODO") {
            // Neither passed nor failed.
        } else if let Some(rest) = t.strip_prefix("not ok ") {
            tally.name(tap_name(rest), false);
        } else if let Some(rest) = t.strip_prefix("ok ") {
            tally.name(tap_name(rest), true);
        }
    }
    let (p, f) = (passed?, failed?);
    Some(tally.with_counts(p, f))
}

/// Mocha: `4 passing (12ms)`, `1 failing`, with `✔ name` and `1) name`.
fn mocha(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Mocha);
    let (mut passed, mut failed) = (None, 0);
    for line in lines {
        let t = line.trim();
        if t.ends_with(')') && t.contains(" passing (") {
            passed = Some(count_before(t, &["passing"]));
        } else if t.ends_with(" failing") && t.split_whitespace().count() == 2 {
            failed = count_before(t, &["failing"]);
        } else if let Some(rest) = t.strip_prefix("✔ ").or_else(|| t.strip_prefix("✓ ")) {
            tally.name(without_time(rest), true);
        } else if let Some((n, rest)) = t.split_once(") ")
            && n.parse::<u32>().is_ok()
            // After the summary the failures are told again, suite by suite.
            && passed.is_none()
        {
            tally.name(rest.to_string(), false);
        }
    }
    Some(tally.with_counts(passed?, failed))
}

/// RSpec: `5 examples, 1 failure, 2 pending`, with `rspec ./spec/x_spec.rb:12 # name`.
fn rspec(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Rspec);
    let mut summary = None;
    for line in lines {
        let t = line.trim();
        if t.contains(" example") && (t.contains(" failure") || t.ends_with("examples")) {
            let examples = count_before(t, &["example", "examples"]);
            let failed = count_before(t, &["failure", "failures"]);
            let pending = count_before(t, &["pending"]);
            if examples > 0 {
                summary = Some((examples.saturating_sub(failed + pending), failed));
            }
        } else if let Some(rest) = t.strip_prefix("rspec ./") {
            let name = rest.split_once(" # ").map_or(rest, |(_, n)| n);
            tally.name(name.to_string(), false);
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// PHPUnit: `OK (5 tests, 10 assertions)` or `Tests: 5, Assertions: 9,
/// Failures: 1, Errors: 1, Skipped: 1.`, with `1) Class::method`.
fn phpunit(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Phpunit);
    let mut summary = None;
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("OK (")
            && rest.contains(" tests")
        {
            summary = Some((count_before(rest, &["tests", "test"]), 0));
        } else if t.starts_with("Tests: ") && t.contains("Assertions: ") {
            let field = |name: &str| labelled(t, name);
            let failed = field("Failures") + field("Errors");
            let not_run = field("Skipped") + field("Incomplete") + field("Risky");
            let total = field("Tests");
            summary = Some((total.saturating_sub(failed + not_run), failed));
        } else if let Some((n, rest)) = t.split_once(") ")
            && n.parse::<u32>().is_ok()
            && rest.contains("::")
        {
            tally.name(rest.to_string(), false);
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// CTest: `80% tests passed, 1 tests failed out of 5`, with `Test #1: name
/// ... Passed` and, after `The following tests FAILED:`, `3 - name (Failed)`.
fn ctest(lines: &[&str]) -> Option<Score> {
    let mut tally = Tally::new(Runner::Ctest);
    let mut summary = None;
    for line in lines {
        let t = line.trim();
        if t.contains("% tests passed, ") && t.contains(" out of ") {
            let failed = count_before(t, &["tests failed", "test failed"]);
            let total = t
                .rsplit(" out of ")
                .next()
                .and_then(|n| n.trim().parse::<u32>().ok())
                .unwrap_or(0);
            summary = Some((total.saturating_sub(failed), failed));
        } else if let Some((_, rest)) = t.split_once("Test #")
            && let Some((_, after)) = rest.split_once(": ")
        {
            let name = after.split(" .").next().unwrap_or(after).trim();
            tally.name(name.to_string(), after.contains("Passed"));
        } else if let Some((n, rest)) = t.split_once(" - ")
            && n.trim().parse::<u32>().is_ok()
            && rest.ends_with(')')
        {
            let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n);
            tally.name(name.to_string(), false);
        }
    }
    summary.map(|(p, f)| tally.with_counts(p, f))
}

/// `go test` (text): `--- PASS: TestX (0.00s)` / `--- FAIL: TestX`
/// (`-v` for the passing ones); without them, packages: `ok  pkg` / `FAIL pkg`.
fn go_text(lines: &[&str]) -> Option<Score> {
    let mut tests = Tally::new(Runner::GoTest);
    let mut packages = Tally::new(Runner::GoTest);
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("--- PASS: ") {
            tests.test(without_time(rest), true);
        } else if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            tests.test(without_time(rest), false);
        } else if let Some(rest) = line.strip_prefix("ok  \t") {
            packages.test(rest.split('\t').next().unwrap_or(rest).to_string(), true);
        } else if let Some(rest) = line.strip_prefix("FAIL\t") {
            packages.test(rest.split('\t').next().unwrap_or(rest).to_string(), false);
        }
    }
    tests.counted().or_else(|| packages.counted())
}

/// Any line that says `N passed` (or `passing`), with `N failed` if any:
/// the last such line.
fn plain(lines: &[&str]) -> Option<Score> {
    lines.iter().rev().find_map(|line| {
        let lower = line.to_ascii_lowercase();
        let passed = count_before(&lower, &["passed", "passing", "pass"]);
        let failed = count_before(
            &lower,
            &["failed", "failing", "failures", "failure", "fail"],
        );
        let said = has_count(&lower, &["passed", "passing", "pass"]);
        said.then(|| Tally::new(Runner::Plain).with_counts(passed, failed))
    })
}

/// The last number of the output (`87.5`, `92%`, `score: 3`), in thousandths.
fn last_number(lines: &[&str]) -> Option<i64> {
    lines.iter().rev().find_map(|line| {
        line.split(|c: char| c.is_whitespace() || c == ':' || c == '=' || c == ',')
            .rev()
            .find_map(|word| {
                let word = word.trim_end_matches(['%', '.', ';', ')']);
                let word = word.trim_start_matches('(');
                let v: f64 = word.parse().ok()?;
                v.is_finite().then(|| (v * 1000.0).round() as i64)
            })
    })
}

/// The number just before any of `words` in `text` (`3 passed` → 3), summed
/// over each word found; 0 when none is.
fn count_before(text: &str, words: &[&str]) -> u32 {
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '|' | '(' | ')' | '.'))
        .filter(|t| !t.is_empty())
        .collect();
    let mut total = 0;
    for pair in tokens.windows(2) {
        if words.contains(&pair[1])
            && let Ok(n) = pair[0].parse::<u32>()
        {
            total += n;
        }
    }
    // Two-word names (`tests failed`).
    for w in words.iter().filter(|w| w.contains(' ')) {
        let mut parts = w.split(' ');
        let (first, second) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        for triple in tokens.windows(3) {
            if triple[1] == first
                && triple[2] == second
                && let Ok(n) = triple[0].parse::<u32>()
            {
                total += n;
            }
        }
    }
    total
}

fn has_count(text: &str, words: &[&str]) -> bool {
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '|' | '(' | ')' | '.'))
        .filter(|t| !t.is_empty())
        .collect();
    tokens
        .windows(2)
        .any(|p| words.contains(&p[1]) && p[0].parse::<u32>().is_ok())
}

/// `Failures: 3` in a PHPUnit summary.
fn labelled(text: &str, label: &str) -> u32 {
    text.split(label)
        .nth(1)
        .and_then(|rest| rest.strip_prefix(": "))
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// A test's name without the time its runner adds: `name (3 ms)`,
/// `name 12ms` → `name`.
fn without_time(text: &str) -> String {
    let t = text.trim();
    if let Some((name, time)) = t.rsplit_once(" (")
        && time.ends_with(')')
        && time.chars().any(|c| c.is_ascii_digit())
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

/// `2 - name # SKIP` → `name`.
fn tap_name(rest: &str) -> String {
    let rest = rest.split(" # ").next().unwrap_or(rest);
    rest.split_once(" - ").map_or(rest, |(_, n)| n).to_string()
}

/// An XML attribute's value, its entities read.
fn attribute(head: &str, name: &str) -> Option<String> {
    let at = head.find(&format!(" {name}=\""))? + name.len() + 3;
    let value = &head[at..];
    let end = value.find('"')?;
    Some(
        value[..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// The output without terminal colour codes (`ESC [ ... letter`).
fn strip_colour(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[path = "runners_tests.rs"]
mod tests;
