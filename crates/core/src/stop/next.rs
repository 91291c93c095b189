//! What happens after a Stop: decided ([`Then`], from the judgement's
//! outcome), then worded ([`Next`], in a [`Decision`]) for `apply`. Pure.

use super::decide::{Judgement, StopOutcome};
use crate::activity::Code;
use crate::hook_output::HookOutput;
use crate::reinject::Injected;
use crate::state::LoopState;

/// What to do, and what to tell the model and the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub code: Code,
    pub system_message: String,
    pub story: Option<String>,
    pub remove_blocker: bool,
    pub next: Next,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Keep the turn going and feed `reason` for `iteration` ([`feed`]).
    Feed {
        iteration: u64,
        reason: String,
        /// The new re-injection counter (PRD mode), to be written.
        injected: Option<Injected>,
    },
    /// Yield to the user's message: let the turn end without advancing the
    /// loop (the message is the next turn); the loop goes on at the next Stop.
    Yield,
    /// Hold the loop for a blocker: let the session stop; the loop stays,
    /// held for the user (`why`, kept as `blocked:`), until the user resumes it.
    Hold { why: String },
    /// Let the session stop: the loop is over after `iterations`.
    End { iterations: u64 },
    /// Let the session stop: the user cancelled the loop.
    Cancel,
    /// Let the turn end while workers run (see [`Workers`]); nothing advances.
    Wait,
}

/// What happens after a Stop, as decided from its outcome; `text` words
/// it into a [`Next`] (the feed's text, the blocker's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Then {
    /// The loop goes on: the model is fed at `iteration`. `to_worker`: a
    /// `--fresh` feed other than a story's or a dispatch (which already are
    /// short dispatches): the main thread hands it to a worker as its task.
    Feed {
        iteration: u64,
        injected: Option<Injected>,
        to_worker: bool,
    },
    /// See [`Next::Yield`].
    Yield,
    /// See [`Next::Hold`].
    Hold,
    /// See [`Next::End`].
    End { iterations: u64 },
    /// See [`Next::Cancel`].
    Cancel,
    /// See [`Next::Wait`].
    Wait,
}

impl Judgement<'_> {
    /// What happens next, for a loop in `state`.
    pub(crate) fn then(&self, state: &LoopState) -> Then {
        match &self.outcome {
            StopOutcome::Yield => Then::Yield,
            StopOutcome::CancelledByUser(_) => Then::Cancel,
            StopOutcome::Blocked(_) | StopOutcome::StillBlocked(_) => Then::Hold,
            StopOutcome::WaitForWorkers => Then::Wait,
            end if end.ends() => Then::End {
                iterations: state.iteration,
            },
            feed => Then::Feed {
                iteration: state.iteration.saturating_add(1),
                injected: self.injected.clone(),
                to_worker: state.fresh
                    && !matches!(
                        feed,
                        StopOutcome::Story { .. } | StopOutcome::Dispatch { .. }
                    ),
            },
        }
    }
}

/// The Stop's answer that feeds `reason` to the main thread and shows the
/// user `message`: in the form the client does not label as a problem
/// (`additionalContext`, from 2.1.328), else a block (`FeedForm`). Either
/// way the turn goes on, and the client's cap of 8 continuations without a
/// tool call is the same (docs/client-measurements.md).
pub(crate) fn feed(reason: String, message: String) -> HookOutput {
    HookOutput::stop_feed(reason, message)
}
