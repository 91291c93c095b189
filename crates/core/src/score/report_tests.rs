//! Reports made here by the real runners (tests/fixtures/score) and
//! reports nobody here wrote (tests/fixtures/score/public, see its README).

use super::*;
use crate::score::Outcome;

fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/score/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(fixture, format, runner, root, passed, failed, skipped, a failing id)`.
type Report = (
    &'static str,
    ReportFormat,
    Runner,
    &'static str,
    u32,
    u32,
    u32,
    &'static str,
);

const REPORTS: &[Report] = &[
    (
        "pytest-junit-xunit1.xml",
        ReportFormat::Junit,
        Runner::Pytest,
        "",
        2,
        2,
        2,
        "test_dates.py::TestApi::test_error",
    ),
    (
        "jest-report.json",
        ReportFormat::JestJson,
        Runner::Jest,
        "/work/fx/js",
        3,
        1,
        2,
        "t/sum.test.js › sum › parses a date",
    ),
    (
        "vitest-report.json",
        ReportFormat::JestJson,
        Runner::Vitest,
        "/work/fx/js",
        2,
        1,
        2,
        "v/sum.test.mjs › sum › parses a date",
    ),
    (
        "node-junit.xml",
        ReportFormat::Junit,
        Runner::NodeTest,
        "",
        3,
        1,
        2,
        "sum > parses a date",
    ),
    (
        "rspec-report.json",
        ReportFormat::RspecJson,
        Runner::Rspec,
        "",
        1,
        1,
        2,
        "dates parses a date",
    ),
    (
        "phpunit-junit.xml",
        ReportFormat::Junit,
        Runner::Phpunit,
        "/work/fx/php",
        2,
        2,
        2,
        "DatesTest::testError",
    ),
    (
        "ctest-junit.xml",
        ReportFormat::Junit,
        Runner::Ctest,
        "",
        2,
        1,
        2,
        "parse_date",
    ),
    (
        "nextest-junit.xml",
        ReportFormat::Junit,
        Runner::Nextest,
        "",
        3,
        2,
        0,
        "crt::api::api_rejects_overflow",
    ),
    (
        "go-test-json-fakes.txt",
        ReportFormat::GoEvents,
        Runner::GoTest,
        "",
        3,
        3,
        1,
        "example.com/fx/dates::TestSuite",
    ),
    (
        "public/go-test-json.jsonl",
        ReportFormat::GoEvents,
        Runner::GoTest,
        "",
        5,
        6,
        1,
        "_/home/james_t/git/test-reporter/reports/go::TestFailing",
    ),
    (
        "public/rspec.json",
        ReportFormat::RspecJson,
        Runner::Rspec,
        "",
        1,
        1,
        1,
        "CheckEnvVars#call when all env vars are defined behaves like success load fails in assertion",
    ),
    (
        "public/pytest-junit.xml",
        ReportFormat::Junit,
        Runner::Junit,
        "",
        6,
        2,
        2,
        "tests.test_lib::test_always_fail",
    ),
    (
        "public/jest-junit.xml",
        ReportFormat::Junit,
        Runner::Junit,
        "",
        1,
        4,
        1,
        "Test 2::Exception in test",
    ),
    (
        "public/jest-own-suite-junit.xml",
        ReportFormat::Junit,
        Runner::Junit,
        "",
        4207,
        2,
        30,
        "",
    ),
];

#[test]
fn each_report_names_every_test_it_holds() {
    for (file, format, runner, root, passed, failed, skipped, failing) in REPORTS {
        let s = read(*format, *runner, &fixture(file), root).unwrap_or_else(|| panic!("{file}"));
        assert_eq!(
            (s.passed, s.failed, s.skipped, s.reading),
            (*passed, *failed, *skipped, Reading::Report),
            "{file}"
        );
        assert!(s.names_every_test(), "{file}");
        if !failing.is_empty() {
            assert!(
                s.cases
                    .iter()
                    .any(|c| c.id == *failing && c.outcome == Outcome::Failed),
                "{file}: {:?}",
                s.cases
            );
        }
    }
}

#[test]
fn a_go_event_stream_cut_before_its_package_ended_is_no_reading() {
    let whole = fixture("go-test-json-fakes.txt");
    let lines: Vec<&str> = whole.lines().collect();
    let cut = lines[..lines.len() - 3].join("\n");
    assert!(read(ReportFormat::GoEvents, Runner::GoTest, &cut, "").is_none());
    assert!(go_words(&whole).contains("--- FAIL: TestParseDate"));
    assert_eq!(
        read(
            ReportFormat::Junit,
            Runner::Junit,
            "<testsuites></testsuites>",
            ""
        ),
        None
    );
}

#[test]
fn a_todo_test_that_fails_is_skipped_not_failed() {
    // node --test's JUnit for `test.todo` whose body fails (node 20).
    let xml = r#"<testsuites>
	<testcase name="subtracts" time="0.000985" classname="test"/>
	<testcase name="adds" time="0.001901" classname="test" failure="Expected values to be strictly equal">
		<skipped type="todo" message="true"/>
		<failure type="testCodeFailure" message="Expected values">trace</failure>
	</testcase>
</testsuites>"#;
    let s = read(ReportFormat::Junit, Runner::NodeTest, xml, "").unwrap();
    assert_eq!((s.passed, s.failed, s.skipped), (1, 0, 1));
    assert!(
        s.cases
            .iter()
            .any(|c| c.id.ends_with("adds") && c.outcome == Outcome::Skipped)
    );
}
