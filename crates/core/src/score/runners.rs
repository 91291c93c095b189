//! A check's output read as a score: the test runners people use, each by
//! its own words (`printed`: a summary counts only where the runner's
//! per-test lines agree with it), tried from the most particular to the
//! most general; then a plain `N passed, N failed` line; then, for a
//! `--score` command, the last number printed; else the exit code. A
//! runner whose words are there but do not add up (a summary a test
//! printed, output cut short) makes the output no count (`Runner::Unread`,
//! never a best): the plain line and the last number are not tried after
//! it, so what a test prints can never stand in for what its runner says.
//! Pure.

use super::printed::{self, Found};
use super::{Runner, Score};

/// One runner's reading of the output's lines.
type Reader = fn(&[String]) -> Found;

/// The runners' readers, the most particular first (nextest's output holds
/// libtest's words for each failure).
const READERS: [Reader; 12] = [
    printed::libtest::nextest,
    printed::libtest::cargo,
    printed::python::pytest,
    printed::javascript::jest,
    printed::javascript::vitest,
    printed::node::node_test,
    printed::node::mocha,
    printed::others::rspec,
    printed::others::phpunit,
    printed::others::ctest,
    printed::golang::go_text,
    printed::others::plain,
];

/// What a check printed, read as a score. `number`: the command is a
/// `--score` command, whose last number counts when no runner is found.
pub(crate) fn read(output: &str, passed: bool, number: bool) -> Score {
    match printed::golang::go_json(output) {
        Found::Counted(score) => return score,
        Found::Refused => return Score::unread(passed),
        Found::NotMine => {}
    }
    let lines = printed::screen_lines(output);
    for read in READERS {
        match read(&lines) {
            Found::Counted(score) => return score,
            Found::Refused => return Score::unread(passed),
            Found::NotMine => {}
        }
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

/// The last number of the output (`87.5`, `92%`, `score: 3`), in thousandths.
fn last_number(lines: &[String]) -> Option<i64> {
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

#[cfg(test)]
#[path = "runners_tests.rs"]
mod tests;
