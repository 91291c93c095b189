//! Each runner's real output (tests/fixtures/score: made by running the
//! runner on a small project with a pass, a failure, a skip and, in the
//! `-fakes` ones, tests that print a runner's summary), read as a score:
//! the right counts and names, or no count at all; and every fixture cut,
//! wrapped, given `\r\n` or colour never reads as more than it holds.

use super::*;
use crate::score::Outcome;

/// A fixture's text.
fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/score/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(fixture, runner, passed, failed, skipped, names every test, a failing id, a passing id)`.
type Case = (
    &'static str,
    Runner,
    u32,
    u32,
    u32,
    bool,
    &'static str,
    &'static str,
);

const CASES: &[Case] = &[
    (
        "cargo.txt",
        Runner::Cargo,
        3,
        2,
        1,
        true,
        "crt::tests::parse_date_handles_leap_years",
        "api::api_works",
    ),
    // A fake summary in a failing test's captured output is not read; a
    // test named like one (`tests::result::ok`) is a test.
    (
        "cargo-fakes.txt",
        Runner::Cargo,
        3,
        1,
        1,
        true,
        "crt::tests::parse_date_handles_leap_years",
        "crt::tests::result::ok",
    ),
    // `--nocapture`: the fake `running 99 tests` lands inside the section.
    (
        "cargo-nocapture-fakes.txt",
        Runner::Unread,
        0,
        1,
        0,
        false,
        "",
        "",
    ),
    (
        "nextest.txt",
        Runner::Nextest,
        3,
        2,
        1,
        false,
        "crt::api::api_rejects_overflow",
        "crt::tests::adds",
    ),
    (
        "nextest-fakes.txt",
        Runner::Nextest,
        3,
        2,
        1,
        false,
        "crt::api::api_rejects_overflow",
        "crt::tests::prints_a_fake_summary",
    ),
    (
        "pytest.txt",
        Runner::Pytest,
        2,
        2,
        1,
        false,
        "test_dates.py::TestApi::test_error",
        "",
    ),
    (
        "pytest-v.txt",
        Runner::Pytest,
        2,
        2,
        1,
        true,
        "test_dates.py::test_parse_date",
        "test_dates.py::TestApi::test_ok",
    ),
    (
        "pytest-fakes.txt",
        Runner::Pytest,
        2,
        2,
        2,
        false,
        "test_dates.py::test_parse_date",
        "",
    ),
    (
        "pytest-q-fakes.txt",
        Runner::Pytest,
        2,
        2,
        2,
        false,
        "test_dates.py::TestApi::test_error",
        "",
    ),
    (
        "pytest-v-fakes.txt",
        Runner::Pytest,
        2,
        2,
        2,
        true,
        "test_dates.py::test_parse_date",
        "test_dates.py::test_adds",
    ),
    (
        "jest.txt",
        Runner::Jest,
        2,
        1,
        1,
        true,
        "sum.test.js › sum › parses a date",
        "sum.test.js › top level ok",
    ),
    (
        "jest-verbose.txt",
        Runner::Jest,
        2,
        1,
        1,
        true,
        "sum.test.js › sum › parses a date",
        "sum.test.js › sum › adds",
    ),
    (
        "jest-fakes.txt",
        Runner::Jest,
        3,
        1,
        2,
        false,
        "t/sum.test.js › sum › parses a date",
        "",
    ),
    (
        "jest-verbose-fakes.txt",
        Runner::Jest,
        3,
        1,
        2,
        true,
        "t/sum.test.js › sum › parses a date",
        "t/other.test.js › Tests:       98 passed, 98 total",
    ),
    (
        "vitest.txt",
        Runner::Vitest,
        2,
        1,
        1,
        false,
        "v/sum.test.mjs > sum > parses a date",
        "",
    ),
    (
        "vitest-fakes.txt",
        Runner::Vitest,
        2,
        1,
        2,
        false,
        "v/sum.test.mjs > sum > parses a date",
        "",
    ),
    (
        "node-test-tap.txt",
        Runner::NodeTest,
        3,
        1,
        1,
        false,
        "",
        "",
    ),
    (
        "node-test-spec.txt",
        Runner::NodeTest,
        3,
        1,
        1,
        false,
        "",
        "",
    ),
    (
        "node-spec-fakes.txt",
        Runner::NodeTest,
        4,
        1,
        2,
        false,
        "",
        "",
    ),
    (
        "node-tap-fakes.txt",
        Runner::NodeTest,
        4,
        1,
        2,
        false,
        "",
        "",
    ),
    (
        "mocha.txt",
        Runner::Mocha,
        1,
        1,
        1,
        true,
        "sum parses a date",
        "sum adds",
    ),
    // A test printed `99 passing (1ms)` among the tests: two closing lines.
    ("mocha-fakes.txt", Runner::Unread, 0, 1, 0, false, "", ""),
    (
        "go-test-v.txt",
        Runner::GoTest,
        2,
        3,
        1,
        true,
        "example.com/dates::TestSuite/inner_bad",
        "example.com/dates::TestSuite/inner_ok",
    ),
    (
        "go-test-json.txt",
        Runner::GoTest,
        2,
        3,
        1,
        true,
        "example.com/dates::TestParseDate",
        "example.com/dates::TestAdds",
    ),
    ("go-test.txt", Runner::GoTest, 0, 3, 0, false, "", ""),
    // Go 1.19 (Debian's) cannot tell a test's `--- PASS:` line from its
    // own: TestFake counts (docs/trust.md says so); Go 1.20+ frames them.
    (
        "go-test-v-fakes.txt",
        Runner::GoTest,
        3,
        3,
        1,
        true,
        "example.com/fx/dates::TestParseDate",
        "example.com/fake::TestFake",
    ),
    (
        "go-test-json-fakes.txt",
        Runner::GoTest,
        3,
        3,
        1,
        true,
        "example.com/fx/dates::TestSuite",
        "example.com/fx/dates::TestAdds",
    ),
    ("go-test-fakes.txt", Runner::GoTest, 0, 3, 0, false, "", ""),
    (
        "rspec.txt",
        Runner::Rspec,
        1,
        2,
        1,
        false,
        "dates parses a date",
        "",
    ),
    (
        "rspec-fakes.txt",
        Runner::Rspec,
        1,
        1,
        2,
        false,
        "dates parses a date",
        "",
    ),
    (
        "phpunit.txt",
        Runner::Phpunit,
        1,
        2,
        1,
        false,
        "DatesTest::testParseDate",
        "",
    ),
    ("phpunit-ok.txt", Runner::Phpunit, 2, 0, 0, false, "", ""),
    (
        "phpunit-fakes.txt",
        Runner::Phpunit,
        2,
        2,
        2,
        false,
        "DatesTest::testError",
        "",
    ),
    (
        "ctest.txt",
        Runner::Ctest,
        2,
        1,
        0,
        true,
        "parse_date",
        "api_ok",
    ),
    (
        "ctest-fakes.txt",
        Runner::Ctest,
        2,
        1,
        2,
        true,
        "parse_date",
        "api_ok",
    ),
];

fn failing_ids(s: &Score) -> Vec<&str> {
    s.cases
        .iter()
        .filter(|c| c.outcome == Outcome::Failed)
        .map(|c| c.id.as_str())
        .collect()
}

#[test]
fn each_runners_own_words_are_read_with_the_right_counts_or_not_at_all() {
    for (file, runner, passed, failed, skipped, all, failing, passing) in CASES {
        let s = read(&fixture(file), false, false);
        assert_eq!(
            (
                s.reader,
                s.passed,
                s.failed,
                s.skipped,
                s.names_every_test()
            ),
            (*runner, *passed, *failed, *skipped, *all),
            "{file}: {s:?}"
        );
        if !failing.is_empty() {
            assert!(failing_ids(&s).contains(failing), "{file}: {:?}", s.cases);
            assert!(
                s.failing.iter().any(|f| f == failing),
                "{file}: {:?}",
                s.failing
            );
        }
        if !passing.is_empty() {
            assert!(s.passing().any(|p| p == *passing), "{file}: {:?}", s.cases);
        }
    }
}

/// The true reading of `file`, and what a damaged copy read as.
fn no_more_than_the_truth(file: &str, truth: &Score, damaged: &str, how: &str) {
    let s = read(damaged, false, false);
    if !s.reader.counts_tests() {
        return;
    }
    assert_eq!(
        s.reader, truth.reader,
        "{file} {how}: another runner: {s:?}"
    );
    assert!(
        s.passed <= truth.passed && s.failed <= truth.failed && s.skipped <= truth.skipped,
        "{file} {how}: more than it holds: {s:?} vs {truth:?}"
    );
    for case in &s.cases {
        assert!(
            truth.cases.contains(case),
            "{file} {how}: a wrong case {case:?}"
        );
    }
}

#[test]
fn a_fixture_cut_at_any_line_never_reads_as_more_than_it_holds_nor_wrong() {
    for (file, ..) in CASES {
        let text = fixture(file);
        let truth = read(&text, false, false);
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for cut in 0..lines.len() {
            let head: String = lines[..cut].concat();
            no_more_than_the_truth(file, &truth, &head, &format!("cut at line {cut}"));
            // A line cut in its middle, as a killed process leaves it.
            let half = lines[cut]
                .char_indices()
                .nth(lines[cut].chars().count() / 2)
                .map_or(0, |(i, _)| i);
            no_more_than_the_truth(
                file,
                &truth,
                &format!("{head}{}", &lines[cut][..half]),
                "cut mid-line",
            );
        }
    }
}

/// `text` wrapped at `width` columns, as a console log captures it.
fn wrapped(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            out.push('\n');
        }
        for chunk in chars.chunks(width) {
            out.extend(chunk);
            out.push('\n');
        }
    }
    out
}

#[test]
fn wrapped_crlf_and_coloured_copies_read_whole_or_not_at_all() {
    for (file, ..) in CASES {
        let text = fixture(file);
        let truth = read(&text, false, false);
        let crlf = text.replace('\n', "\r\n");
        let s = read(&crlf, false, false);
        assert_eq!(
            (s.reader, s.passed, s.failed, s.skipped),
            (truth.reader, truth.passed, truth.failed, truth.skipped),
            "{file} with CRLF"
        );
        let coloured: String = text
            .lines()
            .map(|l| format!("\u{1b}[32m{l}\u{1b}[0m\u{1b}[K\n"))
            .collect();
        let s = read(&coloured, false, false);
        // `go test -json` never colours its events.
        if !file.contains("json") {
            assert_eq!(
                (s.reader, s.passed, s.failed),
                (truth.reader, truth.passed, truth.failed),
                "{file} coloured"
            );
        }
        let redrawn = format!("building 10%\rbuilding 90%\r{text}");
        let s = read(&redrawn, false, false);
        assert_eq!(
            (s.reader, s.passed, s.failed),
            (truth.reader, truth.passed, truth.failed),
            "{file} after a redraw"
        );
        for width in [20, 40, 60, 80] {
            no_more_than_the_truth(
                file,
                &truth,
                &wrapped(&text, width),
                &format!("at {width} columns"),
            );
        }
    }
}

#[test]
fn jests_summary_wrapped_at_the_consoles_width_is_read_whole() {
    // The shape of a public project's committed log (issue 43): once read
    // as 1 passed, 0 failed.
    let log = "Test Suites: 1 failed, 1 total\nTests:       10\nfailed, 1 passed, 11\ntotal\nSnapshots:   0 total\nTime:        4.2 s\n";
    let s = read(log, false, false);
    assert_eq!(
        (s.reader, s.passed, s.failed),
        (Runner::Jest, 1, 10),
        "{s:?}"
    );
    // A break inside a number joins back without the space.
    let log = "Test Suites: 1 failed, 1 total\nTests:       1\n0 failed, 1 passed, 11 total\nSnapshots:   0 total\n";
    let s = read(log, false, false);
    assert_eq!((s.passed, s.failed), (1, 10), "{s:?}");
    // Cut before `total`: no count, and no plain line read from the pieces.
    let s = read(
        "Test Suites: 1 failed, 1 total\nTests:       10\nfailed, 1 passed, 11\n",
        false,
        false,
    );
    assert_eq!(s.reader, Runner::Unread, "{s:?}");
}

#[test]
fn a_plain_summary_line_is_read_alone_and_once() {
    let s = read(
        "building...\nINFO 3 workers\n12 passed, 3 failed\n",
        false,
        false,
    );
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Plain, 12, 3));
    assert!(!s.names_every_test());
    let s = read("compiling\nRESULT: 7 passed\n", true, false);
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Plain, 7, 0));
    let s = read("99 passed\n12 passed, 3 failed\n", false, false);
    assert_eq!(
        s.reader,
        Runner::Unread,
        "two closing lines: which is the runner's?"
    );
    let s = read("note: 12 passed, 3 failed in 2 runs\n", false, false);
    assert_eq!(s.reader, Runner::Exit, "not alone on its line");
}

#[test]
fn without_a_runner_a_score_command_counts_its_last_number_and_a_check_its_exit() {
    let s = read("measuring\ncoverage: 87.5%\n", true, true);
    assert_eq!((s.reader, s.milli), (Runner::Number, Some(87_500)));
    let s = read("loading 3 files\nscore = 0.25\n", false, true);
    assert_eq!(s.milli, Some(250));
    let s = read("done in 3 files\n", true, false);
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Exit, 1, 0));
    let s = read("", false, false);
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Exit, 0, 1));
    let s = read(
        "\u{1b}[32m5 passed\u{1b}[0m, \u{1b}[31m1 failed\u{1b}[0m\n",
        false,
        false,
    );
    assert_eq!((s.passed, s.failed), (5, 1));
    // A runner's words that do not add up are no count, and the last
    // number is not read from them either.
    let s = read(
        "running 3 tests\ntest a ... ok\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
        false,
        true,
    );
    assert_eq!(s.reader, Runner::Unread, "{s:?}");
}

#[test]
fn a_suite_of_fifty_thousand_is_named_whole() {
    let mut out = String::from("running 50000 tests\n");
    for i in 0..50_000 {
        out.push_str(&format!("test t{i} ... ok\n"));
    }
    out.push_str("test result: ok. 50000 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s\n");
    let s = read(&out, true, false);
    assert_eq!((s.passed, s.cases.len()), (50_000, 50_000));
    assert!(s.names_every_test());
}
