//! Which story a `--parallel` worker works: ralph's record, never the
//! worker's word. I/O (one small file per worker in the loop's folder,
//! `workers/<agent id>`).
//!
//! The story is in the task the main thread gave the worker, the first line
//! of the worker's own transcript, which the worker can rewrite (`sed -i
//! '1s/US-1/US-3/'`) and then claim another story. The client tells the
//! hooks nothing else: `SubagentStart` carries no task, comes before the
//! transcript exists, and in no fixed order among workers started at once
//! (measured on 2.1.328, docs/client-measurements.md). So ralph reads the
//! task at the worker's first guarded tool call (`ralph-guard`, before that
//! call runs: the worker has changed nothing yet) and keeps it here; the
//! worker's stop, the Stop's count of stories in flight and status read
//! this record. A worker with no record made no guarded call, so could not
//! have touched its transcript: its task is read there. A task that could
//! not be read at the first call is recorded as unknown (an empty file), so
//! a rewritten transcript is never read later.

use crate::hook_input::HookInput;
use crate::paths::LoopPaths;
use crate::seal::{self, Seal};
use crate::store;
use crate::transcript::{self, Awaited};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a worker's first call waits for its task line (0.5 s: the
/// client writes it before the worker runs anything, measured within
/// 20 ms; once in five runs it came after the first call).
const TASK_LINE_BOUND: Duration = Duration::from_millis(500);

/// The records' folder, in the loop's folder.
const DIR: &str = "workers";

/// What ralph knows of a worker's story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// No guarded call yet: nothing recorded.
    None,
    /// Recorded at its first call: the story, or `None` when its task named
    /// none or could not be read.
    Bound(Option<String>),
}

fn file(paths: &LoopPaths, agent: &str) -> Option<PathBuf> {
    let safe = !agent.is_empty()
        && agent.len() <= 64
        && agent
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    safe.then(|| paths.dir.join(DIR).join(agent))
}

/// The record of worker `agent`.
pub(crate) fn record(paths: &LoopPaths, agent: &str) -> Record {
    let Some(f) = file(paths, agent) else {
        return Record::None;
    };
    // Sealed (`seal`): a record rewritten or removed past the guard (an
    // interpreter, a path known only at run time) binds the worker to no
    // story at all, never to the one it wrote.
    match store::read_optional(&f) {
        Ok(Some(text)) if seal::check(&f, &text) == Seal::Intact => {
            let id = text.trim();
            Record::Bound((!id.is_empty()).then(|| id.to_string()))
        }
        Ok(Some(_)) => Record::Bound(None),
        Ok(None) if seal::seal_path(&f).exists() => Record::Bound(None),
        _ => Record::None,
    }
}

/// At a worker's guarded tool call (before it runs): its task's story is
/// recorded, once. `session_transcript` is the hook's `transcript_path`.
pub fn bind_at_first_call(paths: &LoopPaths, session_transcript: Option<&str>, agent: &str) {
    let Some(f) = file(paths, agent) else {
        return;
    };
    if f.exists() || seal::seal_path(&f).exists() {
        return;
    }
    let own = session_transcript
        .and_then(|s| crate::transcript::subagent_transcript(Path::new(s), agent));
    // The client may not have written the worker's task line yet when its
    // first call comes (seen once in 5 fresh-clone runs of
    // `parallel_stories_run_at_once_in_worktrees_and_are_merged`, once the
    // guard started faster): it is waited for before binding the worker to
    // no story, which would abandon its work. Still before the call runs,
    // so the agent has had no turn to write its transcript.
    let task = transcript::written(own.as_deref(), Awaited::FirstLine, TASK_LINE_BOUND).task();
    let story = task.and_then(|task| super::story_in_task(&task));
    let _ = seal::write(&f, story.unwrap_or_default().as_bytes());
}

/// The story of worker `agent`: ralph's record, else (no guarded call was
/// made) its task as its transcript still holds it.
pub(crate) fn story_of(
    paths: &LoopPaths,
    session_transcript: Option<&str>,
    agent: &str,
) -> Option<String> {
    match record(paths, agent) {
        Record::Bound(story) => story,
        Record::None => {
            // Its first line was there when it was handed out: no wait.
            let own = transcript::subagent_transcript(Path::new(session_transcript?), agent)?;
            let task =
                transcript::written(Some(&own), Awaited::FirstLine, Duration::ZERO).task()?;
            super::story_in_task(&task)
        }
    }
}

/// `--parallel`: the story of each running worker, one per worker (a
/// worker whose story is not known still takes a place: `None`): the
/// description the main thread gave its call (`story US-1`), else ralph's
/// record of it, else its task line ([`story_of`]).
pub(crate) fn stories_in_flight(paths: &LoopPaths, input: &HookInput) -> Vec<Option<String>> {
    let transcript = input.transcript_path.as_deref();
    super::running_workers(&input.background_tasks)
        .map(|t| {
            super::story_in_task(&t.description).or_else(|| story_of(paths, transcript, &t.id))
        })
        .collect()
}

/// The record goes with the worker's lane.
pub(crate) fn forget(paths: &LoopPaths, agent: &str) {
    if let Some(f) = file(paths, agent) {
        let _ = std::fs::remove_file(&f);
        let _ = seal::remove(&f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(name: &str) -> (PathBuf, LoopPaths, String) {
        let d = std::env::temp_dir().join(format!("ralph-bound-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("proj")).unwrap();
        let paths = LoopPaths::in_data_dir(&d.join("data"), d.join("proj"));
        let session = d.join("t/s1.jsonl");
        let sub = crate::transcript::subagent_transcript(&session, "a1").unwrap();
        std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
        std::fs::write(
            &sub,
            "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"Work story US-1 (One) of /p/prd.json.\"}}\n",
        )
        .unwrap();
        (d, paths, session.to_string_lossy().into_owned())
    }

    #[test]
    fn the_story_is_read_once_at_the_first_call_and_a_rewrite_after_is_ignored() {
        let (d, paths, session) = setup("rewrite");
        assert_eq!(record(&paths, "a1"), Record::None);
        assert_eq!(
            story_of(&paths, Some(&session), "a1").as_deref(),
            Some("US-1")
        );
        bind_at_first_call(&paths, Some(&session), "a1");
        assert_eq!(record(&paths, "a1"), Record::Bound(Some("US-1".into())));
        // The worker rewrites its transcript's first line.
        let sub = crate::transcript::subagent_transcript(Path::new(&session), "a1").unwrap();
        std::fs::write(
            &sub,
            "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"Work story US-3.\"}}\n",
        )
        .unwrap();
        bind_at_first_call(&paths, Some(&session), "a1");
        assert_eq!(
            story_of(&paths, Some(&session), "a1").as_deref(),
            Some("US-1")
        );
        forget(&paths, "a1");
        assert_eq!(record(&paths, "a1"), Record::None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_record_rewritten_or_removed_past_ralph_binds_no_story() {
        let (d, paths, session) = setup("forged");
        bind_at_first_call(&paths, Some(&session), "a1");
        let f = paths.dir.join(DIR).join("a1");
        std::fs::write(&f, "US-3").unwrap();
        assert_eq!(record(&paths, "a1"), Record::Bound(None));
        assert_eq!(story_of(&paths, Some(&session), "a1"), None);
        std::fs::remove_file(&f).unwrap();
        assert_eq!(record(&paths, "a1"), Record::Bound(None));
        bind_at_first_call(&paths, Some(&session), "a1");
        assert_eq!(story_of(&paths, Some(&session), "a1"), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_unreadable_task_is_recorded_unknown_and_never_read_later() {
        let (d, paths, session) = setup("unknown");
        bind_at_first_call(&paths, None, "a1");
        assert_eq!(record(&paths, "a1"), Record::Bound(None));
        assert_eq!(story_of(&paths, Some(&session), "a1"), None);
        // An agent id cannot name a file elsewhere.
        bind_at_first_call(&paths, Some(&session), "../state.md");
        assert!(!paths.dir.join("state.md").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
