//! A runner's structured report read as a score: JUnit XML (pytest, node's
//! test runner, PHPUnit, CTest, nextest, or one the user's command names),
//! Jest's and Vitest's JSON, RSpec's JSON, and `go test -json`'s events.
//! Each names every test it holds with how it ended; a report that holds
//! none, or that is not whole (a go package with no end), is no reading.
//! Pure.

use super::launch::ReportFormat;
use super::printed::Tally;
use super::{Outcome, Reading, Runner, Score};
use serde_json::Value;

/// `text`, a report in `format` written by `runner`, read as a score; `root`:
/// the project's root, taken off the absolute file paths reports carry.
pub(crate) fn read(format: ReportFormat, runner: Runner, text: &str, root: &str) -> Option<Score> {
    let tally = match format {
        ReportFormat::Junit => junit(text, runner, root),
        ReportFormat::JestJson => jest_json(text, runner, root),
        ReportFormat::RspecJson => rspec_json(text),
        ReportFormat::GoEvents => go_events(text),
    }?;
    tally.counted().map(|mut s| {
        s.reading = Reading::Report;
        s
    })
}

/// A JUnit XML report (`<testcase>` elements, a `<failure>` or `<error>`
/// inside for a failure, `<skipped>` for a skip), each test named
/// `classname::name`, or for pytest's (with a `file`) its node id, or for
/// node's (no class) the suites that hold it and its name.
pub(crate) fn junit(xml: &str, runner: Runner, root: &str) -> Option<Tally> {
    let mut tally = Tally::new(runner);
    let mut suites: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let head_end = rest.find('>')?;
        let head = &rest[..head_end];
        if let Some(attrs) = head
            .strip_prefix("testsuite ")
            .or(head.strip_prefix("testsuite"))
        {
            if !attrs.trim_end().ends_with('/') && !head.starts_with("testsuites") {
                suites.push(attribute(head, "name").unwrap_or_default());
            }
        } else if head.starts_with("/testsuite") && !head.starts_with("/testsuites") {
            suites.pop();
        } else if head.starts_with("testcase") {
            let closed = head.ends_with('/');
            let body = if closed {
                ""
            } else {
                rest[head_end..].split("</testcase>").next().unwrap_or("")
            };
            // PHPUnit writes a risky test (it ran, asserting nothing) as an error.
            let risky = body.contains("RiskyTestError") && !body.contains("<failure");
            // A skip wins over a failure in the same case: node's `todo`
            // test that fails is written with both, and does not count.
            let outcome = if body.contains("<skipped")
                || attribute(head, "status").is_some_and(|s| s == "notrun" || s == "disabled")
            {
                Outcome::Skipped
            } else if !risky && (body.contains("<failure") || body.contains("<error")) {
                Outcome::Failed
            } else {
                Outcome::Passed
            };
            let (id, file) = junit_id(head, &suites, root);
            tally.reported(id, outcome, file);
            rest = &rest[head_end + body.len()..];
        }
    }
    Some(tally)
}

/// A JUnit test case's name and file.
fn junit_id(head: &str, suites: &[String], root: &str) -> (String, Option<String>) {
    let name = attribute(head, "name").unwrap_or_default();
    let class = attribute(head, "classname").filter(|c| !c.is_empty() && c != "test");
    let file = attribute(head, "file").map(|f| relative(&f, root));
    match (class, &file) {
        // pytest (xunit1): `test_dates.py` + `test_dates.TestApi` → the node id.
        (Some(class), Some(f)) if f.ends_with(".py") => {
            let module = f.trim_end_matches(".py").replace('/', ".");
            let inner = class.strip_prefix(&module).unwrap_or(&class);
            let parts: Vec<&str> = inner.split('.').filter(|p| !p.is_empty()).collect();
            let mut id = f.clone();
            for p in parts.iter().chain([&name.as_str()]) {
                id.push_str("::");
                id.push_str(p);
            }
            (id, file)
        }
        // CTest names a test's class after itself.
        (Some(class), _) if class == name => (name, file),
        (Some(class), _) => (format!("{class}::{name}"), file),
        (None, _) => {
            let mut path: Vec<&str> = suites
                .iter()
                .map(String::as_str)
                .filter(|s| !s.is_empty())
                .collect();
            path.push(&name);
            (path.join(" > "), file)
        }
    }
}

/// Jest's `--json` (and Vitest's json reporter): each file's assertions,
/// named `file › describe › test`; a file that failed to run (no
/// assertion, status failed) is one failed case named by its file.
fn jest_json(text: &str, runner: Runner, root: &str) -> Option<Tally> {
    let report: Value = serde_json::from_str(text).ok()?;
    let mut tally = Tally::new(runner);
    for file in report.get("testResults")?.as_array()? {
        let path = relative(file.get("name")?.as_str()?, root);
        let tests = file.get("assertionResults").and_then(Value::as_array);
        if tests.is_none_or(|t| t.is_empty()) {
            if file.get("status").and_then(Value::as_str) == Some("failed") {
                tally.reported(path.clone(), Outcome::Failed, Some(path));
            }
            continue;
        }
        for test in tests.into_iter().flatten() {
            let mut id = vec![path.clone()];
            for a in test
                .get("ancestorTitles")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                id.push(a.as_str().unwrap_or_default().to_string());
            }
            id.push(test.get("title")?.as_str()?.to_string());
            let outcome = match test.get("status")?.as_str()? {
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed,
                _ => Outcome::Skipped,
            };
            tally.reported(id.join(" › "), outcome, Some(path.clone()));
        }
    }
    Some(tally)
}

/// RSpec's json formatter: each example by its full description; errors
/// outside of examples (a file that failed to load) each a failed case.
fn rspec_json(text: &str) -> Option<Tally> {
    let report: Value = serde_json::from_str(text).ok()?;
    let mut tally = Tally::new(Runner::Rspec);
    for example in report.get("examples")?.as_array()? {
        let outcome = match example.get("status")?.as_str()? {
            "passed" => Outcome::Passed,
            "failed" => Outcome::Failed,
            _ => Outcome::Skipped,
        };
        let file = example
            .get("file_path")
            .and_then(Value::as_str)
            .map(|f| f.trim_start_matches("./").to_string());
        let id = example.get("full_description")?.as_str()?.to_string();
        tally.reported(id, outcome, file);
    }
    let outside = report
        .pointer("/summary/errors_outside_of_examples_count")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    for n in 1..=outside {
        tally.reported(
            format!("(error outside of examples {n})"),
            Outcome::Failed,
            None,
        );
    }
    Some(tally)
}

/// `go test -json`'s events: each test's `pass`, `fail` or `skip`, named
/// `package::Test`; every package must have ended (its own `pass` or
/// `fail`), else the stream was cut and is no reading. A package that
/// failed to build (`FAIL pkg [build failed]`) is one failed case.
fn go_events(output: &str) -> Option<Tally> {
    let mut tally = Tally::new(Runner::GoTest);
    let mut open: Vec<String> = Vec::new();
    let mut ended: Vec<String> = Vec::new();
    let mut events = 0;
    for line in output.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(pkg) = build_failed(line) {
            tally.reported(pkg.to_string(), Outcome::Failed, Some(pkg.to_string()));
            continue;
        }
        if !line.starts_with('{') {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(pkg), Some(action)) = (
            event.get("Package").and_then(Value::as_str),
            event.get("Action").and_then(Value::as_str),
        ) else {
            continue;
        };
        events += 1;
        let outcome = match action {
            "pass" => Outcome::Passed,
            "fail" => Outcome::Failed,
            "skip" => Outcome::Skipped,
            _ => {
                if !open.iter().any(|p| p == pkg) {
                    open.push(pkg.to_string());
                }
                continue;
            }
        };
        match event.get("Test").and_then(Value::as_str) {
            Some(test) => tally.reported(format!("{pkg}::{test}"), outcome, Some(pkg.to_string())),
            None => ended.push(pkg.to_string()),
        }
    }
    let whole = events > 0 && open.iter().all(|p| ended.contains(p));
    whole.then_some(tally)
}

/// `FAIL\tpkg [build failed]` / `FAIL pkg [setup failed]`.
pub(crate) fn build_failed(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("FAIL")?.trim_start();
    let (pkg, why) = rest.split_once(char::is_whitespace)?;
    matches!(why.trim(), "[build failed]" | "[setup failed]").then_some(pkg)
}

/// The text `go test -json` would have printed without `-json`: each
/// event's output, and the lines that were not events (build errors), for
/// the model to read.
pub(crate) fn go_words(output: &str) -> String {
    let mut words = String::new();
    for line in output.lines() {
        let event = line
            .starts_with('{')
            .then(|| serde_json::from_str::<Value>(line).ok())
            .flatten();
        match event {
            Some(e) => {
                if let Some(out) = e.get("Output").and_then(Value::as_str) {
                    words.push_str(out);
                }
            }
            None => {
                words.push_str(line);
                words.push('\n');
            }
        }
    }
    words
}

/// `path` relative to `root` (reports carry absolute paths).
fn relative(path: &str, root: &str) -> String {
    let root = root.trim_end_matches('/');
    match path.strip_prefix(root) {
        Some(rest) if !root.is_empty() && rest.starts_with('/') => rest[1..].to_string(),
        _ => path.trim_start_matches("./").to_string(),
    }
}

/// An XML attribute's value, its entities read.
fn attribute(head: &str, name: &str) -> Option<String> {
    let at = head.find(&format!(" {name}=\""))? + name.len() + 3;
    let value = &head[at..];
    let end = value.find('"')?;
    Some(unescape(&value[..end]))
}

/// XML's five entities and its numeric ones (`&#10;`).
fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(end) = after.find(';').filter(|e| *e <= 10) else {
            out.push('&');
            rest = &after[1..];
            continue;
        };
        let entity = &after[1..end];
        let ch = match entity {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "amp" => Some('&'),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
