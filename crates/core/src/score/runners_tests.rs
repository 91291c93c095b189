//! Each runner's real output (tests/fixtures/score: made by running the
//! runner on a small project with a pass, a failure, a skip and log lines
//! mixed in), read as a score.

use super::*;

/// A fixture's text.
fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/score/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(fixture, runner, passed, failed, a failing name, a passing name)`.
const CASES: &[(&str, Runner, u32, u32, &str, &str)] = &[
    (
        "cargo.txt",
        Runner::Cargo,
        3,
        2,
        "tests::parse_date_handles_leap_years",
        "tests::adds",
    ),
    (
        "nextest.txt",
        Runner::Nextest,
        3,
        2,
        "crt::api api_rejects_overflow",
        "crt tests::adds",
    ),
    (
        "pytest.txt",
        Runner::Pytest,
        2,
        2,
        "test_dates.py::TestApi::test_error",
        "",
    ),
    (
        "pytest-v.txt",
        Runner::Pytest,
        2,
        2,
        "test_dates.py::test_parse_date",
        "test_dates.py::TestApi::test_ok",
    ),
    (
        "jest.txt",
        Runner::Jest,
        2,
        1,
        "sum › parses a date",
        "adds",
    ),
    (
        "jest-verbose.txt",
        Runner::Jest,
        2,
        1,
        "sum › parses a date",
        "top level ok",
    ),
    (
        "vitest.txt",
        Runner::Vitest,
        2,
        1,
        "v/sum.test.mjs > sum > parses a date",
        "adds",
    ),
    (
        "node-test-tap.txt",
        Runner::NodeTest,
        3,
        1,
        "parses a date",
        "inner ok",
    ),
    (
        "node-test-spec.txt",
        Runner::NodeTest,
        3,
        1,
        "parses a date",
        "adds",
    ),
    ("mocha.txt", Runner::Mocha, 1, 1, "parses a date", "adds"),
    (
        "go-test-v.txt",
        Runner::GoTest,
        2,
        3,
        "TestSuite/inner_bad",
        "TestSuite/inner_ok",
    ),
    (
        "go-test-json.txt",
        Runner::GoTest,
        2,
        3,
        "TestParseDate",
        "TestAdds",
    ),
    ("go-test.txt", Runner::GoTest, 0, 3, "TestParseDate", ""),
    ("rspec.txt", Runner::Rspec, 1, 2, "dates parses a date", ""),
    (
        "phpunit.txt",
        Runner::Phpunit,
        1,
        2,
        "DatesTest::testParseDate",
        "",
    ),
    ("phpunit-ok.txt", Runner::Phpunit, 2, 0, "", ""),
    ("ctest.txt", Runner::Ctest, 2, 1, "parse_date", "api_ok"),
];

#[test]
fn each_runners_own_words_are_read() {
    for (file, runner, passed, failed, failing, passing) in CASES {
        let s = read(&fixture(file), *failed == 0, false);
        assert_eq!(
            (s.reader, s.passed, s.failed),
            (*runner, *passed, *failed),
            "{file}: {s:?}"
        );
        if !failing.is_empty() {
            assert!(
                s.failing.iter().any(|n| n == failing),
                "{file}: {:?}",
                s.failing
            );
        }
        if !passing.is_empty() {
            assert!(
                s.passing.iter().any(|n| n == passing),
                "{file}: {:?}",
                s.passing
            );
        }
        assert!(
            s.failing.iter().all(|f| !s.passing.contains(f)),
            "{file}: a name both passes and fails: {s:?}"
        );
    }
}

#[test]
fn a_junit_report_is_read_with_its_class_names() {
    let s = junit(&fixture("junit-pytest.xml")).expect("test cases");
    assert_eq!(
        (s.reader, s.passed, s.failed),
        (Runner::Junit, 2, 2),
        "{s:?}"
    );
    assert!(
        s.failing
            .contains(&"test_dates::test_parse_date".to_string()),
        "{s:?}"
    );
    assert!(
        s.passing
            .contains(&"test_dates.TestApi::test_ok".to_string()),
        "{s:?}"
    );
    assert_eq!(junit("<testsuites></testsuites>"), None);
}

#[test]
fn a_plain_summary_line_is_read_among_logs() {
    let s = read(
        "building...\nINFO 3 workers\n12 passed, 3 failed\n",
        false,
        false,
    );
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Plain, 12, 3));
    let s = read("compiling\nRESULT: 7 passed\n", true, false);
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Plain, 7, 0));
}

#[test]
fn without_a_runner_a_score_command_counts_its_last_number_and_a_check_its_exit() {
    let s = read("measuring\ncoverage: 87.5%\n", true, true);
    assert_eq!((s.reader, s.milli), (Runner::Number, Some(87_500)));
    let s = read("loading 3 files\nscore = 0.25\n", false, true);
    assert_eq!(s.milli, Some(250));
    // A check (not --score) that prints nothing a runner says: its exit.
    let s = read("done in 3 files\n", true, false);
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Exit, 1, 0));
    let s = read("", false, false);
    assert_eq!((s.reader, s.passed, s.failed), (Runner::Exit, 0, 1));
    // Colour codes are no part of the words.
    let s = read(
        "\u{1b}[32m5 passed\u{1b}[0m, \u{1b}[31m1 failed\u{1b}[0m\n",
        false,
        false,
    );
    assert_eq!((s.passed, s.failed), (5, 1));
}
