//! The activity log `.claude/ralph-loop.log.jsonl`: one JSON object per
//! decision (time, session, iteration, decision, reason code, story, and the
//! message the user saw). It outlives the loop so `status` can say why the
//! last loop ended. Its vocabulary is typed: an [`Action`] and a reason
//! [`Code`]. Does I/O (appends, and reads the tail).

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// What a log line records: the `decision` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A Stop was blocked and the loop fed again.
    Block,
    /// The loop ended at a Stop.
    End,
    /// A session claimed a loop no session owned yet.
    Claim,
    /// The user cancelled the loop.
    Cancel,
    /// A loop was started.
    Start,
    /// A Stop let the turn end so the model could answer a message the user
    /// typed meanwhile; the loop goes on at the next Stop.
    Yield,
    /// The loop waits: a turn ended on an API error (`StopFailure`), or a
    /// blocker asks for a human (each Stop then lets the session stop).
    Pause,
    /// The loop goes on after a pause: the next prompt or Stop after an API
    /// error, `/ralph-resume` after a blocker.
    Resume,
    /// `ralph run` waited (a usage limit, a failing client) before going on.
    Wait,
    /// `ralph run` ran an iteration again after the client failed.
    Retry,
    /// A second Stop for a turn already answered: answered again, nothing advanced.
    Repeat,
    /// `/clear` gave the owner's terminal a new session id, which took the loop over.
    Rebind,
    /// The project's copy of the state had been edited or deleted; restored.
    Tamper,
    /// `--fresh`: a worker subagent's stop was judged (`SubagentStop`).
    Worker,
    /// `--parallel`: a story's work was merged, or sent back (see `parallel`).
    Merge,
    /// `--parallel`: the loop's worker worktrees and branches were removed.
    Cleanup,
    /// Pinned files that differed from their pins were put back before a
    /// check ran (see `pins`).
    Pin,
    /// The user accepted the removal of tests from the suite (`ralph accept`).
    Accept,
    /// A process of the agent's held the loop's lock and was stopped.
    Lock,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Block => "block",
            Action::End => "end",
            Action::Claim => "claim",
            Action::Cancel => "cancel",
            Action::Start => "start",
            Action::Yield => "yield",
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Wait => "wait",
            Action::Retry => "retry",
            Action::Repeat => "repeat",
            Action::Rebind => "rebind",
            Action::Tamper => "tamper",
            Action::Worker => "worker",
            Action::Merge => "merge",
            Action::Cleanup => "cleanup",
            Action::Pin => "pin",
            Action::Accept => "accept",
            Action::Lock => "lock",
        }
    }
}

/// Why a Stop (or a cancel) decided what it did: the `reason` code of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Plain mode: the prompt is fed again.
    Continue,
    /// PRD mode: the next story is fed.
    Story,
    /// PRD mode: the promise was printed while stories still fail.
    PromiseRefused,
    /// PRD mode: prd.json cannot be read; the agent is asked to repair it.
    PrdInvalid,
    /// PRD mode: stories recorded at start are gone and nothing else can run.
    StoriesVanished,
    /// Completion (or a story) was claimed, and its check failed.
    VerifyFailed,
    /// The loop's lock was taken back: a process of the agent's held it
    /// (stopped at once), another held it the whole wait (stopped then), or
    /// something else had been put in its file's place (made again).
    LockTakenBack,
    /// Git's own files or the client's settings changed during the loop:
    /// named, and what runs a program put back (`git_watch`).
    GitFilesChanged,
    /// Completion was claimed, and tests of the suite are gone since its
    /// baseline (or since they passed): `suite::inventory`.
    TestsGone,
    Complete,
    AllStoriesPass,
    MaxIterations,
    Cancelled,
    Blocked,
    Deadlock,
    StoryStuck,
    /// The no-progress breaker: the tree did not change for `max_stalls` iterations.
    Stalled,
    /// The plateau rule: `max_plateau` iterations changed the tree without
    /// beating the best score.
    Plateau,
    /// The state file does not parse (decided from the file alone, before `decide`).
    Corrupt,
    /// A Stop let the turn end for a message the user typed meanwhile.
    UserMessage,
    /// `--max-tokens`, `--max-runtime`, `--max-cost`: a budget is spent.
    TokenBudget,
    RuntimeBudget,
    CostBudget,
    /// The Stop repeated one already answered (same turn key).
    DuplicateStop,
    /// The owner's session was cleared (`/clear`) and its successor took the loop.
    Cleared,
    /// `--fresh`: the main thread's turn ended while its worker still runs
    /// in the background; the Stop waits for the worker's report.
    WorkerRunning,
    /// `--fresh`: a worker's stop (see `fresh::WorkerVerdict`).
    WorkerPassed,
    WorkerCheckFailed,
    WorkerNotMarked,
    WorkerNoClaim,
    WorkerGaveUp,
    WorkerReported,
    /// `--parallel`: stories handed to workers at once.
    Dispatched,
    /// `--parallel`: merged into the loop's branch, and its check passed there.
    StoryMerged,
    /// `--parallel`: the merge conflicted; sent back on the new base.
    MergeConflict,
    /// `--parallel`: merged, but its check failed on the loop's branch; undone and sent back.
    MergeCheckFailed,
    /// `--parallel`: the merge could not be done (git failed); sent back.
    MergeFailed,
    /// `--parallel`: the user's uncommitted changes are in the merge's way.
    MergeBlocked,
    /// `--parallel`: the worker changed what it may not (the loop's
    /// configuration, the PRD beyond `passes`, a pinned file); sent back.
    MergeRefused,
    /// `--parallel`: the worker stopped without claiming its story.
    WorktreeAbandoned,
    /// `--parallel`: the loop ended, was cancelled, or a new one started: its worktrees went.
    WorktreesRemoved,
    /// `--parallel`: a branch Claude Code made for a worktree it failed to
    /// make (no worker ran there) was removed (`parallel::strays`).
    StrayBranchRemoved,
    /// `--parallel`: a merge into the main tree was cut short; it was aborted.
    MergeInterrupted,
    /// A reviewer rejected the work claimed complete (`--review`).
    ReviewRejected,
    /// Still rejected after `--max-reviews` rounds: the loop stopped.
    ReviewsExhausted,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Continue => "continue",
            Code::Story => "story",
            Code::PromiseRefused => "promise_refused",
            Code::PrdInvalid => "prd_invalid",
            Code::StoriesVanished => "stories_vanished",
            Code::VerifyFailed => "verify_failed",
            Code::TestsGone => "tests_gone",
            Code::LockTakenBack => "lock_taken_back",
            Code::GitFilesChanged => "git_files_changed",
            Code::Complete => "complete",
            Code::AllStoriesPass => "all_stories_pass",
            Code::MaxIterations => "max_iterations",
            Code::Cancelled => "cancelled",
            Code::Blocked => "blocked",
            Code::Deadlock => "deadlock",
            Code::StoryStuck => "story_stuck",
            Code::Stalled => "stalled",
            Code::Plateau => "plateau",
            Code::Corrupt => "corrupt",
            Code::UserMessage => "user_message",
            Code::TokenBudget => "token_budget",
            Code::RuntimeBudget => "runtime_budget",
            Code::CostBudget => "cost_budget",
            Code::DuplicateStop => "duplicate_stop",
            Code::Cleared => "clear",
            Code::WorkerRunning => "worker_running",
            Code::WorkerPassed => "worker_passed",
            Code::WorkerCheckFailed => "worker_check_failed",
            Code::WorkerNotMarked => "worker_not_marked",
            Code::WorkerNoClaim => "worker_no_claim",
            Code::WorkerGaveUp => "worker_gave_up",
            Code::WorkerReported => "worker_reported",
            Code::Dispatched => "dispatched",
            Code::StoryMerged => "story_merged",
            Code::MergeConflict => "merge_conflict",
            Code::MergeCheckFailed => "merge_check_failed",
            Code::MergeFailed => "merge_failed",
            Code::MergeBlocked => "merge_blocked",
            Code::MergeRefused => "merge_refused",
            Code::WorktreeAbandoned => "worktree_abandoned",
            Code::WorktreesRemoved => "worktrees_removed",
            Code::StrayBranchRemoved => "stray_branch_removed",
            Code::MergeInterrupted => "merge_interrupted",
            Code::ReviewRejected => "review_rejected",
            Code::ReviewsExhausted => "reviews_exhausted",
        }
    }
}

/// The reason code of a claim.
pub(crate) const CLAIMED: &str = "claimed";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub time: String,
    pub session: String,
    pub iteration: u64,
    /// An [`Action`] as text (kept as text: older logs are read as they are).
    pub decision: String,
    /// A reason code (`continue`, `complete`, `max_iterations`, `corrupt`, ...).
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `--fresh`: the iteration ran in a worker subagent; its outcome
    /// (`passed`, `check_failed`, `no_claim`, ...), or `running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The checks this decision rests on ran against the files pinned at
    /// the loop's start (see `pins`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// The transcript did not hold the turn within the Stop's bound (see
    /// `transcript::written`): waited this long, then decided on the words the
    /// client handed over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_late_ms: Option<u64>,
    /// The iteration's score, when this Stop scored one, and the tokens
    /// spent by then: the report draws them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<LogScore>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// A score as a log line carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogScore {
    /// The iteration measured (a feed's line names the next one).
    pub at: u64,
    /// `tests 41/50`, `score 87.5`, `check fails`.
    pub text: String,
    /// Its points (tests passed, the number, 1 or 0), in thousandths.
    pub milli: i64,
    /// Tests that passed at an earlier iteration and fail now.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub regressions: u32,
    /// The measure's best so far.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub best: bool,
}

// serde's `skip_serializing_if` hands a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Entry {
    /// An entry stamped with the current time.
    pub fn now(session: &str, iteration: u64, action: Action, reason: &str) -> Entry {
        Entry {
            time: crate::clock::now_rfc3339(),
            session: session.to_string(),
            iteration,
            decision: action.as_str().into(),
            reason: reason.into(),
            story: None,
            message: None,
            worker: None,
            pinned: false,
            transcript_late_ms: None,
            score: None,
            tokens: None,
        }
    }

    /// The score this Stop measured, with the tokens spent by then.
    #[must_use]
    pub(crate) fn with_score(mut self, score: Option<LogScore>, tokens: u64) -> Entry {
        if score.is_some() {
            self.tokens = (tokens > 0).then_some(tokens);
        }
        self.score = score;
        self
    }

    #[must_use]
    pub(crate) fn with_pinned(mut self, pinned: bool) -> Entry {
        self.pinned = pinned;
        self
    }

    #[must_use]
    pub(crate) fn with_transcript_late(mut self, waited: Option<std::time::Duration>) -> Entry {
        self.transcript_late_ms = waited.map(|d| d.as_millis() as u64);
        self
    }

    pub(crate) fn with_worker(mut self, worker: Option<String>) -> Entry {
        self.worker = worker;
        self
    }

    pub(crate) fn with_story(mut self, story: Option<String>) -> Entry {
        self.story = story;
        self
    }

    pub fn with_message(mut self, message: Option<&str>) -> Entry {
        self.message = message.map(str::to_string);
        self
    }

    pub(crate) fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Append `entry` to the log at `path` (one line, one write).
pub fn append(path: &Path, entry: &Entry) -> Result<(), crate::store::StoreError> {
    crate::store::append_line(path, &entry.to_line())
}

/// The last parseable entry of the log, reading only its tail.
pub(crate) fn last_entry(path: &Path) -> Option<Entry> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(64 << 10);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    buf.split(|b| *b == b'\n')
        .rev()
        .find_map(|line| serde_json::from_slice(line).ok())
}
