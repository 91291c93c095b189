//! The user accepts the removal of tests from the suite (`/ralph-accept
//! ID...`, `ralph accept ID...`, `--all` for every test gone now): a claim
//! is then no longer refused for them. Only the user: the guard refuses the
//! agent's use, and the binaries refuse it below the agent's shell. Does I/O
//! (the suite's record, under the loop lock; the log).

use crate::activity::{self, Action, Entry};
use crate::loop_lock::{LOCK_WAIT, LoopLock};
use crate::paths::LoopPaths;
use crate::records::LoopRecord;
use crate::state_file::StateFile;
use crate::store::StoreError;
use crate::suite::{self, Accepted, Suite, inventory};

/// What an accept did, with the message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptOutcome {
    Accepted(String),
    /// Nothing was accepted: why.
    Not(String),
}

impl AcceptOutcome {
    pub fn message(&self) -> &str {
        match self {
            AcceptOutcome::Accepted(m) | AcceptOutcome::Not(m) => m,
        }
    }
}

/// Accept the removal of the tests `args` names (ids, quoted when they
/// hold spaces), or of every test gone from the newest runs (`--all`).
pub fn accept(paths: &LoopPaths, args: &str) -> Result<AcceptOutcome, StoreError> {
    let asked = words(args);
    if asked.is_empty() {
        return Ok(AcceptOutcome::Not(USAGE.into()));
    }
    let _lock = LoopLock::acquire(&paths.lock, LOCK_WAIT)?;
    let StateFile::Loop { state, .. } = crate::state_file::read(paths) else {
        return Ok(AcceptOutcome::Not(format!(
            "No Ralph loop is active in {}: nothing to accept.",
            paths.root.display()
        )));
    };
    let read = crate::seal::read_sealed(&paths.suite);
    let Ok(current) = suite::of_sealed(&read) else {
        return Ok(AcceptOutcome::Not(
            "suite.json (the tests at the loop's start) was changed outside ralph: resume the loop first (/ralph-resume), then accept.".into(),
        ));
    };
    let all = asked.iter().any(|w| w == "--all");
    let (next, named) = if all {
        accept_all(&current, state.iteration)
    } else {
        match accept_named(&current, &asked, state.iteration) {
            Ok(done) => done,
            Err(unknown) => return Ok(AcceptOutcome::Not(unknown)),
        }
    };
    if named.is_empty() {
        return Ok(AcceptOutcome::Not(
            "No test is gone from the suite now: nothing to accept.".into(),
        ));
    }
    let found =
        crate::records::RecordGens::default().with(LoopRecord::Suite, read.generation.unwrap_or(0));
    suite::write(&paths.suite, &next, state.records.max(found).next())?;
    let what = named.join(", ");
    let entry = Entry::now(&state.session_id, state.iteration, Action::Accept, "user");
    let _ = activity::append(&paths.log, &entry.with_message(Some(&what)));
    Ok(AcceptOutcome::Accepted(format!(
        "✅ Accepted the removal of {what}: a claim is no longer refused for it. The loop goes on."
    )))
}

const USAGE: &str = "Name the tests whose removal you accept, as /ralph-status or the refusal names them (quoted when they hold spaces): /ralph-accept tests/test_dates.py::test_leap, or /ralph-accept --all for every test gone now.";

/// Every test gone from each command's newest run, and the counts of a
/// suite read without names, accepted.
fn accept_all(current: &Suite, iteration: u64) -> (Suite, Vec<String>) {
    let mut next = current.clone();
    let mut named = Vec::new();
    for (command, newest) in &current.newest {
        let found = inventory::judge(current, command, &newest.run);
        for v in found.vanished {
            named.push(format!("`{}`", v.test));
            next.accepted.insert(v.test, accepted_now(iteration));
        }
        if found.unread.is_some() {
            named.push(format!("an output of `{command}` that counts no test"));
            next.accepted_unread.insert(command.clone());
        }
        if found.unnamed.is_some() {
            named.push(format!(
                "a run of `{command}` that names no test (counted instead)"
            ));
            next.accepted_unread.insert(command.clone());
        }
        if found.fewer.is_some() || found.more_skipped.is_some() {
            named.push(format!(
                "the count of `{command}` ({} tests, {} skipped)",
                newest.run.total(),
                newest.run.skipped
            ));
            let floor = (newest.run.total(), newest.run.skipped);
            next.accepted_counts.insert(command.clone(), floor);
        }
    }
    (next, named)
}

/// The tests named, each one the suite knows (from a baseline, or seen
/// passing), accepted; `Err`: the ones it does not know, said.
fn accept_named(
    current: &Suite,
    asked: &[String],
    iteration: u64,
) -> Result<(Suite, Vec<String>), String> {
    let known = |id: &str| {
        current.baselines.keys().any(|c| {
            current
                .baseline_of(c)
                .is_some_and(|b| b.tests.contains_key(id))
        }) || current.passed.values().any(|p| p.contains_key(id))
    };
    let unknown: Vec<&String> = asked.iter().filter(|id| !known(id)).collect();
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|u| format!("`{u}`")).collect();
        return Err(format!(
            "Not a test of this loop's suite: {}. Name them as /ralph-status or the refusal does (quoted when they hold spaces); nothing was accepted.",
            list.join(", ")
        ));
    }
    let mut next = current.clone();
    for id in asked {
        next.accepted.insert(id.clone(), accepted_now(iteration));
    }
    Ok((next, asked.iter().map(|id| format!("`{id}`")).collect()))
}

fn accepted_now(iteration: u64) -> Accepted {
    Accepted {
        iteration,
        time: crate::clock::now_rfc3339(),
    }
}

/// The words of `args`: runs of non-blank text, or text in double or
/// single quotes (a test's id may hold spaces: `"sum › adds"`). Nothing is
/// expanded.
fn words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            word.extend(chars.by_ref().take_while(|&ch| ch != c));
        } else {
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                word.push(ch);
                chars.next();
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_quoted_ids_whole_and_expand_nothing() {
        assert_eq!(
            words(r#"  t/a.py::test_x[1] "sum › adds" '$HOME' --all "#),
            ["t/a.py::test_x[1]", "sum › adds", "$HOME", "--all"]
        );
        assert!(words("   ").is_empty());
    }
}
