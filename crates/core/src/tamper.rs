//! A loop's folder changed outside ralph (`seal`): which file, what in it,
//! and the Stop's answer. `found` reads (under the loop lock); `describe`
//! is pure; `answer` writes one log line.
//!
//! The project's copy of the state is what ralph wrote last, as long as it
//! still matches the state's seal: then the change is told field by field
//! (`iteration: 7 -> 1`), and whose loop it is comes from that copy (a
//! forged `session_id` does not silence the owner's Stop). Nothing is
//! rewritten from a state that failed its seal: the loop pauses (every Stop
//! lets the session stop and says why) until the user resumes it
//! (`/ralph-resume` accepts the files as they are now) or cancels it.
//! Does I/O (the seals, the log).

use crate::activity::{self, Action, Entry};
use crate::frontmatter;
use crate::hook_output::{HookOutput, Reader};
use crate::paths::LoopPaths;
use crate::records::{self, LoopRecord, RecordGens, RecordStanding};
use crate::seal::Seal;
use crate::state_file::{OwnRecords, OwnState};
use crate::store;

/// The loop's files that failed their seal, told for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tamper {
    /// Whose loop it is, by ralph's last record where there is one.
    pub owner: String,
    pub iteration: u64,
    /// One line per changed file.
    pub changes: Vec<String>,
}

/// The changes to the loop's folder ralph did not make, if any.
pub(crate) fn found(paths: &LoopPaths) -> Option<Tamper> {
    found_in(
        paths,
        &crate::state_file::read_own(paths),
        &crate::state_file::read_records(paths),
    )
}

/// [`found`], with the state file, the records and their seals as read
/// already.
pub(crate) fn found_in(paths: &LoopPaths, own: &OwnState, records: &OwnRecords) -> Option<Tamper> {
    let mut changes = Vec::new();
    let mut owner = String::new();
    let mut iteration = 0;
    // A state that no longer parses is the corrupt path's (kept aside, the
    // loop stopped, the field named), whoever wrote it.
    // The seal first: a digest is cheap, a parse is not, and an intact seal
    // (every Stop but a tampered one) needs no parse.
    if let Ok(Some(now)) = &own.text
        && own.seal == Seal::Broken
        && crate::state::LoopState::parse(now).is_ok()
    {
        let last = store::read_optional(&paths.mirror)
            .ok()
            .flatten()
            .filter(|m| {
                own.judged
                    .as_ref()
                    .is_some_and(|j| j.sealed_as(&paths.state, m))
            });
        let record = last.as_deref().unwrap_or(now);
        owner = frontmatter::scan(record, "session_id")
            .unwrap_or("")
            .to_string();
        iteration = frontmatter::scan(record, "iteration")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        changes.push(describe(last.as_deref(), now));
    }
    for (record, what) in [
        (&records.verify, LoopRecord::Verify.described()),
        (&records.review, LoopRecord::Review.described()),
        (&records.scores, LoopRecord::Scores.described()),
        (
            &records.injected,
            "last-injected (how many times in a row the story was fed)",
        ),
    ] {
        if record.seal == Seal::Broken {
            changes.push(format!("{what} was written by something other than ralph"));
        }
    }
    // Only a state ralph sealed says which records it wrote.
    if let Ok(Some(text)) = &own.text
        && own.seal != Seal::Broken
    {
        changes.extend(records_not_left(text, records));
    }
    if changes.is_empty() {
        return None;
    }
    if owner.is_empty()
        && let Ok(Some(now)) = store::read_optional(&paths.state)
    {
        owner = frontmatter::scan(&now, "session_id")
            .unwrap_or("")
            .to_string();
        iteration = frontmatter::scan(&now, "iteration")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
    }
    Some(Tamper {
        owner,
        iteration,
        changes,
    })
}

/// The suite's record (`suite.json`, read only when a Stop needs it) as
/// ralph left it, against the state's word for it: the change, in words.
pub(crate) fn of_suite(
    state: &crate::state::LoopState,
    read: &crate::seal::SealedText,
) -> Option<Tamper> {
    let what = LoopRecord::Suite.described();
    let change = if read.seal == Seal::Broken {
        Some(format!("{what} was written by something other than ralph"))
    } else {
        let expected = state.records.get(LoopRecord::Suite);
        standing_words(
            what,
            records::judge(expected, read.text.is_some(), read.generation),
        )
    }?;
    Some(Tamper {
        owner: state.session_id.clone(),
        iteration: state.iteration,
        changes: vec![change],
    })
}

/// A record's standing, in words (`None`: as ralph left it).
fn standing_words(what: &str, standing: RecordStanding) -> Option<String> {
    match standing {
        RecordStanding::Current => None,
        RecordStanding::Deleted => Some(format!(
            "{what} was deleted outside ralph (the loop's memory of it is kept there)"
        )),
        RecordStanding::Older { found, expected } => Some(format!(
            "{what} was put back from an older copy (generation {found}; ralph last wrote generation {expected})"
        )),
    }
}

/// The records the state (`text`) says ralph wrote that are gone, or older
/// than its last write of them (`records`).
fn records_not_left(text: &str, found: &OwnRecords) -> Vec<String> {
    let expected = frontmatter::scan(text, "records")
        .and_then(RecordGens::parse)
        .unwrap_or_default();
    [
        (LoopRecord::Verify, &found.verify),
        (LoopRecord::Review, &found.review),
        (LoopRecord::Scores, &found.scores),
    ]
    .into_iter()
    .filter(|(_, read)| read.seal != Seal::Broken)
    .filter_map(|(record, read)| {
        let standing = records::judge(expected.get(record), read.text.is_some(), read.generation);
        standing_words(record.described(), standing)
    })
    .collect()
}

/// What changed in the state from ralph's last write `last` (unknown when
/// its copy was changed too) to `now`: the frontmatter's fields, the prompt.
pub(crate) fn describe(last: Option<&str>, now: &str) -> String {
    let Some(last) = last else {
        return "state.md (the loop's state) was changed outside ralph, and its copy in the project too: what it was is not known".into();
    };
    let fields = |text: &str| -> Vec<(String, String)> {
        frontmatter::split(text)
            .map(|s| {
                s.yaml
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .filter(|(k, _)| !k.starts_with(' ') && !k.trim().is_empty())
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (before, after) = (fields(last), fields(now));
    let value = |list: &[(String, String)], key: &str| {
        list.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| clip(v))
            .unwrap_or_else(|| "(none)".into())
    };
    let mut keys: Vec<&str> = before
        .iter()
        .chain(&after)
        .map(|(k, _)| k.as_str())
        .collect();
    keys.dedup();
    let mut seen = Vec::new();
    let mut diffs = Vec::new();
    for key in keys {
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let (b, a) = (value(&before, key), value(&after, key));
        if b != a {
            diffs.push(format!("{key}: {b} -> {a}"));
        }
    }
    let body = |t: &str| frontmatter::split(t).map(|s| s.body.to_string());
    if body(last) != body(now) {
        diffs.push("the prompt".into());
    }
    if frontmatter::split(now).is_none() {
        diffs = vec!["it is no longer a loop state (no frontmatter)".into()];
    }
    format!(
        "state.md (the loop's state) was changed outside ralph: {}",
        if diffs.is_empty() {
            "its layout".to_string()
        } else {
            diffs.join(", ")
        }
    )
}

fn clip(v: &str) -> String {
    let mut s: String = v.chars().take(60).collect();
    if s.len() < v.len() {
        s.push('…');
    }
    s
}

/// The words for the user, where they read them.
pub(crate) fn message(t: &Tamper, reader: Reader) -> String {
    format!(
        "⏸ Ralph loop paused: its files in ralph's data folder were changed by something other than ralph (not by you through ralph's commands): {}. Nothing was rewritten from them. If you made this change, {} accepts the files as they are now; otherwise {}.",
        t.changes.join("; "),
        reader.resume(),
        reader.cancel(),
    )
}

/// The Stop's answer: the session stops, the user is told; logged once
/// for the same change.
pub(crate) fn answer(paths: &LoopPaths, session: &str, t: &Tamper, reader: Reader) -> HookOutput {
    let text = message(t, reader);
    let last = activity::last_entry(&paths.log);
    let same = last.is_some_and(|e| e.message.as_deref() == Some(text.as_str()));
    if !same {
        let entry = Entry::now(session, t.iteration, Action::Tamper, "data_tampered");
        let _ = activity::append(&paths.log, &entry.with_message(Some(&text)));
    }
    HookOutput::allow(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAST: &str = "---\nactive: true\niteration: 7\nsession_id: \"s1\"\nmax_iterations: 20\n---\n\nBuild it.\n";

    #[test]
    fn the_way_on_is_named_where_the_user_reads_it() {
        let t = Tamper {
            owner: "s1".into(),
            iteration: 3,
            changes: vec!["state.md (the loop's state) was changed outside ralph".into()],
        };
        let session = message(&t, Reader::Session);
        assert!(session.contains("/ralph-resume accepts") && session.contains("/cancel-ralph"));
        let terminal = message(&t, Reader::Terminal);
        assert!(
            terminal.contains("`ralph resume` accepts") && terminal.contains("`ralph cancel`"),
            "{terminal}"
        );
        assert!(!terminal.contains("/ralph-resume") && !terminal.contains("/cancel-ralph"));
    }

    #[test]
    fn the_change_is_told_field_by_field() {
        let now = LAST
            .replace("iteration: 7", "iteration: 1")
            .replace("\"s1\"", "\"thief\"");
        let d = describe(Some(LAST), &now);
        assert!(d.contains("iteration: 7 -> 1"), "{d}");
        assert!(d.contains("session_id: \"s1\" -> \"thief\""), "{d}");
        assert!(!d.contains("max_iterations"), "{d}");
        let d = describe(Some(LAST), &LAST.replace("Build it.", "Do nothing."));
        assert!(d.contains("the prompt"), "{d}");
        let d = describe(Some(LAST), "<html>report</html>");
        assert!(d.contains("no longer a loop state"), "{d}");
        assert!(describe(None, LAST).contains("not known"));
    }
}
