//! Starting a loop, and showing it to the model's first turn: what
//! `ralph-setup start`, `show` and the UserPromptSubmit hook's start do.
//! (Cancel, status and help, which the Stop hook shares, are `control`.)
//!
//! - [`rules`]: pure; may a loop start over what is there, the prompt, the
//!   PRD's checks at start, the new loop's state (and the `[gates] full`
//!   default for `verify`).
//! - [`report`]: every word a start and `show` say.
//! - [`coexist`]: the official Ralph plugin enabled too, said at the start.
//! - [`commands`]: reads, takes the lock, applies the rules, writes. Does I/O.
//!
//! The command policy is not read here (ralph-core does not depend on the
//! policy crate): the binary finds the `[gates] full` row and passes it in
//! as a [`FullGate`].

pub(crate) mod coexist;
pub mod commands;
pub(crate) mod rules;
pub mod text;

use crate::args::ArgsError;
use crate::prd::PrdReadError;
use crate::store::FileError;
use crate::store::StoreError;
use thiserror::Error;

/// What a prompt the user typed asks of ralph (the UserPromptSubmit hook),
/// decided before anything is read: the hook carries it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptAsks<'a> {
    /// `/ralph-statusline [on|off]`: `Ok(true)` removes ralph's status line,
    /// `Ok(false)` installs it; `Err` holds what else was typed after it.
    Statusline(Result<bool, &'a str>),
    Status,
    Cancel,
    Help,
    Resume,
    /// `/ralph-accept ARGS`: the user accepts the removal of tests.
    Accept(&'a str),
    /// `/ralph-loop ARGS`: a start, with its arguments as typed.
    Start(&'a str),
    /// Anything else (the owner's prompt resumes a paused loop).
    Other,
}

/// What `prompt` asks; `statusline` names the status line's commands (the
/// binary's). Pure.
pub fn prompt_asks<'a>(prompt: &'a str, statusline: &[&str]) -> PromptAsks<'a> {
    use crate::queued::Typed;
    if let Some(rest) = crate::args::command_args(prompt, statusline) {
        return PromptAsks::Statusline(match rest.trim() {
            "" | "on" => Ok(false),
            "off" => Ok(true),
            other => Err(other),
        });
    }
    if let Some(rest) = crate::args::command_args(prompt, crate::args::ACCEPT_COMMANDS) {
        return PromptAsks::Accept(rest);
    }
    match crate::queued::classify(prompt) {
        Typed::Status => PromptAsks::Status,
        Typed::Cancel => PromptAsks::Cancel,
        Typed::Help => PromptAsks::Help,
        Typed::Resume => PromptAsks::Resume,
        Typed::Other | Typed::Notification => match crate::args::loop_command_args(prompt) {
            Some(raw) => PromptAsks::Start(raw),
            None => PromptAsks::Other,
        },
    }
}

/// The command policy's `[gates] full` row: the default `verify` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullGate {
    /// The policy file it was found in.
    pub file: &'static str,
    pub command: String,
}

/// Why a loop did not start. Each is one line telling the user what to type.
#[derive(Debug, Error)]
pub enum StartError {
    #[error("{0}")]
    Args(#[from] ArgsError),
    #[error(
        "no prompt: type the task after the command, e.g. /ralph-loop \"Make the failing tests pass\" --max-iterations 20 (or give --prompt-file PATH or --prd-file PATH)"
    )]
    EmptyPrompt,
    #[error("give the prompt either as words or with --prompt-file, not both")]
    PromptTwice,
    #[error("cannot read the prompt file {path}: {why}")]
    PromptFile { path: String, why: FileError },
    #[error("{path}: {why}. Fix the PRD, then start again")]
    Prd { path: String, why: PrdReadError },
    #[error(
        "there is no PRD at {0}: write one with /ralph-prd (it turns a feature description into prd.json), then start again"
    )]
    PrdMissing(String),
    #[error(
        "a Ralph loop of another session ({session}, iteration {iteration}, last active {age} ago) is running in this project. Cancel it with /cancel-ralph, or start yours with --replace to take it over"
    )]
    OtherSessionLive {
        session: String,
        iteration: u64,
        age: String,
    },
    #[error(
        "--max-cost needs the price of the model this session uses, and which model that is is not known yet (no reply in this session, no ANTHROPIC_MODEL, no `model` setting); use --max-tokens N instead, or start the loop after a first exchange"
    )]
    CostModelUnknown,
    #[error(
        "--max-cost: ralph has no price for the model `{model}` (its table of {date} knows {known}); use --max-tokens N instead"
    )]
    CostModelUnpriced {
        model: String,
        date: &'static str,
        known: String,
    },
    #[error(
        "--review story reviews each story of a PRD as it is marked passing: give --prd-file PATH too (or review the whole work with --review acceptance)"
    )]
    StoryReviewWithoutPrd,
    #[error(
        "--parallel N works the stories of a PRD at once: give --prd-file PATH too (a plain task runs one iteration at a time; use --fresh)"
    )]
    ParallelWithoutPrd,
    #[error(
        "--parallel needs a git repository with at least one commit in {0} (each story is worked in its own git worktree and merged): run `git init && git add -A && git commit -m start` first"
    )]
    ParallelWithoutGit(String),
    #[error(
        "--parallel needs the project at the top of its git repository: Claude Code makes each worker's worktree of the whole repository in {top}/.claude/worktrees and starts the worker at its top, not in {below}: start Claude Code in {top} (the stories' checks then run there)"
    )]
    ParallelBelowTop { top: String, below: String },
    #[error(
        "{file} has Windows line endings (CRLF), which sh cannot run, so the check `{check}` would fail whatever the work: convert it to LF (sed -i 's/\\r$//' {file}), then start again"
    )]
    CrlfScript { file: String, check: String },
    #[error(
        "--sandbox=require: the agent's commands would not run in Claude Code's sandbox: {0}; nothing was started"
    )]
    SandboxRequired(String),
    /// The files the checks depend on cannot be pinned (see `pins`).
    #[error("{0}")]
    Pins(#[from] crate::pins::PinError),
    /// The loop's files could not be locked, read or written.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// What a start reports: to the user (header, notes, settings) and the
/// model's first task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub summary: String,
    pub task: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_asks_one_thing() {
        let asks = |p| prompt_asks(p, &["/ralph:statusline"]);
        assert_eq!(asks("/ralph:statusline"), PromptAsks::Statusline(Ok(false)));
        assert_eq!(
            asks("/ralph:statusline off"),
            PromptAsks::Statusline(Ok(true))
        );
        assert_eq!(
            asks("/ralph:statusline red"),
            PromptAsks::Statusline(Err("red"))
        );
        assert_eq!(asks("/cancel-ralph"), PromptAsks::Cancel);
        assert_eq!(asks("/ralph:ralph-status"), PromptAsks::Status);
        assert_eq!(
            asks("/ralph:ralph-loop fix it --max-iterations 3"),
            PromptAsks::Start(" fix it --max-iterations 3")
        );
        assert_eq!(asks("what now?"), PromptAsks::Other);
    }

    #[test]
    fn the_status_line_skill_answers_to_its_new_and_old_names() {
        fn asks(p: &str) -> PromptAsks<'_> {
            prompt_asks(p, crate::args::STATUSLINE_COMMANDS)
        }
        for typed in [
            "/ralph-statusline",
            "/ralph:ralph-statusline",
            "/ralph:statusline",
        ] {
            assert_eq!(asks(typed), PromptAsks::Statusline(Ok(false)), "{typed}");
            let off = format!("{typed} off");
            assert_eq!(asks(&off), PromptAsks::Statusline(Ok(true)), "{off}");
        }
        // The client's own `/statusline` is not ralph's.
        assert_eq!(asks("/statusline"), PromptAsks::Other);
    }
}
