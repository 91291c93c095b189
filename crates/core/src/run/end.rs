//! The Stop hook's answer after an iteration, how a run ended, and its exit
//! code. The hook is the real `ralph-stop-hook`: a feed, `{"decision":"block",
//! "reason":R}` or `{"hookSpecificOutput":{"hookEventName":"Stop",
//! "additionalContext":R}}` (the form depends on the client named in
//! `AI_AGENT`: `hook_output::FeedForm`), means the loop goes on with R as the
//! next prompt, as it is; anything else means the loop stopped, and the entry
//! the hook appended to the activity log says why.
//! Pure.

use crate::activity::Entry;

/// Exit codes of `ralph run`.
pub(crate) const EXIT_COMPLETE: u8 = 0;
pub(crate) const EXIT_NOT_COMPLETE: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// Client runs in a row the Stop hook may count as none before the run
/// stops: a second delivery of one turn happens once, not three times.
const MAX_UNCOUNTED_RUNS: u32 = 3;

/// The client runs in a row counted as none, after one more whose Stop
/// logged `entry`: a `repeat` (the same turn again) adds one, anything
/// else starts over.
pub fn uncounted_after(before: u32, entry: Option<&Entry>) -> u32 {
    let repeat = entry.is_some_and(|e| e.decision == crate::activity::Action::Repeat.as_str());
    if repeat { before + 1 } else { 0 }
}

/// Why a run stops whose client's turns are not counted (`runs` in a row),
/// once there are enough of them. A client that writes no transcript and
/// says the same words each run is answered "the same turn again" by every
/// Stop: the cap never comes near, and each run costs a turn.
pub fn not_counted(runs: u32) -> Option<String> {
    (runs >= MAX_UNCOUNTED_RUNS).then(|| {
        format!(
            "the Stop hook counted none of the client's last {runs} runs (each was the same turn again: the client wrote no transcript and said the same words), so no iteration moved; ralph run stops rather than spend more. Look at the client's output in .claude/ralph-runs/"
        )
    })
}

/// What the Stop hook printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAnswer {
    /// The loop goes on: `reason` is the next iteration's prompt.
    Block {
        reason: String,
        message: Option<String>,
    },
    /// The stop is allowed (the loop ended, or the hook failed open).
    Stop { message: Option<String> },
}

/// Read the hook's stdout (one JSON object; empty means "stop").
pub fn parse_hook_output(stdout: &str) -> HookAnswer {
    let value = stdout
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok());
    let text = |k: &str| {
        value
            .as_ref()
            .and_then(|v| v.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let message = text("systemMessage");
    let specific = |k: &str| {
        value
            .as_ref()
            .and_then(|v| v.get("hookSpecificOutput")?.get(k)?.as_str())
            .map(str::to_string)
    };
    let context = match specific("hookEventName").as_deref() {
        Some("Stop") => specific("additionalContext"),
        _ => None,
    };
    match (text("decision").as_deref(), text("reason"), context) {
        (Some("block"), Some(reason), _) | (_, _, Some(reason)) => {
            HookAnswer::Block { reason, message }
        }
        _ => HookAnswer::Stop { message },
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The promise (verified) or every story passes.
    Complete { message: String },
    /// The loop stopped without completion: its `reason` code from the log
    /// (`max_iterations`, `stalled`, `blocked`, `deadlock`, `story_stuck`, ...).
    Ended { reason: String, message: String },
    /// Cancelled from outside (`ralph cancel`, `/cancel-ralph`) or replaced.
    Cancelled { message: String },
    /// The loop waits for the user (a blocker, its files changed outside
    /// ralph): its `reason` code; the message says how to go on.
    Paused { reason: String, message: String },
    /// The client kept failing, a wait went past `--max-wait`, or the Stop
    /// hook could not decide.
    Failed { message: String },
    /// SIGINT or SIGTERM.
    Interrupted { message: String },
}

impl RunEnd {
    pub fn exit_code(&self) -> u8 {
        match self {
            RunEnd::Complete { .. } => EXIT_COMPLETE,
            RunEnd::Interrupted { .. } => EXIT_INTERRUPTED,
            _ => EXIT_NOT_COMPLETE,
        }
    }

    /// `RALPH_OUTCOME` for `--notify`.
    pub fn name(&self) -> &'static str {
        match self {
            RunEnd::Complete { .. } => "complete",
            RunEnd::Ended { .. } => "ended",
            RunEnd::Cancelled { .. } => "cancelled",
            RunEnd::Paused { .. } => "paused",
            RunEnd::Failed { .. } => "failed",
            RunEnd::Interrupted { .. } => "interrupted",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            RunEnd::Complete { message }
            | RunEnd::Ended { message, .. }
            | RunEnd::Cancelled { message }
            | RunEnd::Paused { message, .. }
            | RunEnd::Failed { message }
            | RunEnd::Interrupted { message } => message,
        }
    }
}

/// What a log decision means for the runner, when the Stop hook did not block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterStop {
    /// The loop ended: stop the run.
    Done(RunEnd),
    /// The hook paused the loop (a `yield`: a queued message in the
    /// transcript): run the next iteration with the same prompt.
    Again,
}

/// After the Stop hook let the loop stop: what the entry it appended for
/// this loop says (`None` when it wrote none, i.e. it failed open).
pub fn after_stop(entry: Option<&Entry>, hook_message: Option<&str>) -> AfterStop {
    let said = |e: &Entry| {
        e.message
            .clone()
            .or_else(|| hook_message.map(str::to_string))
            .unwrap_or_else(|| format!("the loop ended ({})", e.reason))
    };
    AfterStop::Done(match entry {
        Some(e) if e.decision == "end" && is_complete(&e.reason) => {
            RunEnd::Complete { message: said(e) }
        }
        Some(e) if e.decision == "end" => RunEnd::Ended {
            reason: e.reason.clone(),
            message: said(e),
        },
        Some(e) if e.decision == "cancel" => RunEnd::Cancelled { message: said(e) },
        // Worded for the terminal by the hook (it held the run's pass).
        Some(e) if e.decision == "pause" || e.decision == "tamper" => RunEnd::Paused {
            reason: e.reason.clone(),
            message: said(e),
        },
        Some(e) if e.decision == "yield" => return AfterStop::Again,
        _ => RunEnd::Failed {
            message: format!(
                "the Stop hook did not decide: {}",
                hook_message.unwrap_or("it printed nothing and logged nothing")
            ),
        },
    })
}

/// The log reasons that mean the work is done.
pub(crate) fn is_complete(reason: &str) -> bool {
    matches!(reason, "complete" | "all_stories_pass")
}

/// The environment of the `--notify` command.
pub fn notify_env(outcome: &RunEnd, iterations: u64, run_id: &str) -> Vec<(String, String)> {
    let mut env = vec![
        ("RALPH_OUTCOME".to_string(), outcome.name().to_string()),
        ("RALPH_ITERATIONS".to_string(), iterations.to_string()),
        ("RALPH_MESSAGE".to_string(), outcome.message().to_string()),
        ("RALPH_RUN_ID".to_string(), run_id.to_string()),
        (
            "RALPH_EXIT_CODE".to_string(),
            outcome.exit_code().to_string(),
        ),
    ];
    if let RunEnd::Ended { reason, .. } | RunEnd::Paused { reason, .. } = outcome {
        env.push(("RALPH_REASON".to_string(), reason.clone()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::Action;

    fn entry(decision: Action, reason: &str, message: Option<&str>) -> Entry {
        Entry::now("ralph-run-x", 3, decision, reason).with_message(message)
    }

    #[test]
    fn hook_output() {
        assert_eq!(
            parse_hook_output(
                r#"{"decision":"block","reason":"Next.","systemMessage":"🔄 Ralph iteration 2/5"}"#
            ),
            HookAnswer::Block {
                reason: "Next.".into(),
                message: Some("🔄 Ralph iteration 2/5".into())
            }
        );
        assert_eq!(
            parse_hook_output("{\"systemMessage\":\"✅ done\"}\n"),
            HookAnswer::Stop {
                message: Some("✅ done".into())
            }
        );
        assert_eq!(parse_hook_output(""), HookAnswer::Stop { message: None });
        assert_eq!(
            parse_hook_output(
                r#"{"hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"Next."},"systemMessage":"m"}"#
            ),
            HookAnswer::Block {
                reason: "Next.".into(),
                message: Some("m".into())
            }
        );
        assert_eq!(
            parse_hook_output(
                r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"x"}}"#
            ),
            HookAnswer::Stop { message: None }
        );
    }

    #[test]
    fn log_entries_to_outcomes_and_exit_codes() {
        let done = after_stop(
            Some(&entry(Action::End, "complete", Some("✅ complete"))),
            None,
        );
        assert_eq!(
            done,
            AfterStop::Done(RunEnd::Complete {
                message: "✅ complete".into()
            })
        );
        let AfterStop::Done(prd) = after_stop(
            Some(&entry(Action::End, "all_stories_pass", None)),
            Some("m"),
        ) else {
            panic!()
        };
        assert_eq!(prd.exit_code(), 0);
        assert_eq!(prd.message(), "m");
        let AfterStop::Done(cap) = after_stop(
            Some(&entry(Action::End, "max_iterations", Some("🛑 cap"))),
            None,
        ) else {
            panic!()
        };
        assert_eq!(cap.exit_code(), 1);
        assert_eq!(cap.name(), "ended");
        let AfterStop::Done(c) = after_stop(Some(&entry(Action::Cancel, "cancelled", None)), None)
        else {
            panic!()
        };
        assert_eq!(c.name(), "cancelled");
        assert_eq!(
            after_stop(Some(&entry(Action::Yield, "user_message", None)), None),
            AfterStop::Again
        );
        // A pause is said as the hook logged it, not as a failure to decide
        // (issue 34).
        for (action, reason) in [
            (Action::Tamper, "data_tampered"),
            (Action::Pause, "blocked"),
        ] {
            let AfterStop::Done(paused) = after_stop(
                Some(&entry(action, reason, Some("⏸ paused: `ralph resume`"))),
                None,
            ) else {
                panic!()
            };
            assert_eq!(paused.name(), "paused");
            assert_eq!(paused.exit_code(), 1);
            assert_eq!(paused.message(), "⏸ paused: `ralph resume`");
            let env = notify_env(&paused, 2, "r");
            assert!(env.contains(&("RALPH_REASON".into(), reason.into())));
        }
        let AfterStop::Done(f) = after_stop(None, Some("ralph: lock busy")) else {
            panic!()
        };
        assert_eq!(
            f.message(),
            "the Stop hook did not decide: ralph: lock busy"
        );
        assert_eq!(
            RunEnd::Interrupted {
                message: String::new()
            }
            .exit_code(),
            130
        );
    }

    #[test]
    fn notify_environment() {
        let o = RunEnd::Ended {
            reason: "stalled".into(),
            message: "🛑 stalled".into(),
        };
        let env = notify_env(&o, 4, "r1");
        assert!(env.contains(&("RALPH_OUTCOME".into(), "ended".into())));
        assert!(env.contains(&("RALPH_ITERATIONS".into(), "4".into())));
        assert!(env.contains(&("RALPH_REASON".into(), "stalled".into())));
        assert!(env.contains(&("RALPH_EXIT_CODE".into(), "1".into())));
    }
}
