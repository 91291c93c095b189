//! The loop's file names in the project, relative to its root: facts with no
//! I/O, below everything that reads or guards them (`paths` re-exports
//! them beside the absolute paths it makes of them). Pure.

/// The state file, relative to the project root (same name as the official plugin).
pub const STATE_FILE: &str = ".claude/ralph-loop.local.md";
/// One JSON object per decision, kept after the loop ends so `status` can say why.
pub const LOG_FILE: &str = ".claude/ralph-loop.log.jsonl";
/// `STORY_ID COUNT`: how many times in a row a PRD story was fed.
pub const LAST_INJECTED_FILE: &str = ".claude/ralph-loop.last-injected";
/// Lock taken around every read-modify-write of the state. A separate file,
/// because the state file itself is replaced by rename on every write.
pub const LOCK_FILE: &str = ".claude/ralph-loop.lock";
/// Results of verify commands, with the tree they ran on.
pub(crate) const VERIFY_FILE: &str = ".claude/ralph-loop.verify.json";
/// A blocker the agent writes when it cannot go on (frontmatter `story_id:`).
pub(crate) const BLOCKER_FILE: &str = ".ralph-blocker.md";
/// Optional command policy for the guard (lockstride's format).
pub const POLICY_FILE: &str = ".ralph/command-policy";
/// Second, documented policy location; `.ralph/command-policy` wins when both exist.
pub const POLICY_FILE_ALT: &str = ".claude/ralph-policy";

/// The project's settings file (`notify`), read at a loop's start only.
pub(crate) const SETTINGS_FILE: &str = ".claude/ralph.toml";
/// The custom reviewers' instructions (`NAME.md`).
pub const REVIEW_DIR: &str = ".claude/ralph-review";
/// The loop's configuration in the project, fixed at its start: while a loop
/// runs, the agent may not write these (the guard), and a `--parallel`
/// worker's change to them is not merged. The user edits them between loops.
pub(crate) const CONFIG_FILES: [&str; 3] = [SETTINGS_FILE, POLICY_FILE, POLICY_FILE_ALT];
