//! ralph-policy: the decisions of `ralph-guard`, the PreToolUse hook that keeps
//! an unattended loop's agent away from the loop's own files and applies the
//! project's optional command policy.
//!
//! It is a guard-rail for a cooperative agent, not a sandbox: it reads the
//! command the way the shell will (quotes, chains, wrappers like `sudo` and
//! `sh -c`) so that a confused model cannot walk through it by accident or by
//! rewording, but what only exists at run time (a script written then run,
//! `python -c`, a variable) is out of its sight. See docs/guard.md.
//!
//! [`decide`] is pure: the binary gathers what it needs from the file system
//! into a [`LoopContext`] and turns the [`GuardDecision`] into hook output.
//! Pure.

// The crate's public face is what the guard binary, the bench, the tests
// and the fuzz targets use (the gathering, the decision, and the readers the
// fuzz targets drive); the rest is the decision's own business. The modules
// sit on floors (docs/architecture.md, "ralph-policy's floors"); none
// imports from this root, which only hands on.
#![warn(unreachable_pub)]

pub mod command_policy;
mod context;
mod decide;
mod file_tool;
mod fresh;
pub mod gather;
mod git_files;
mod glob;
mod parallel;
mod pinned;
mod prd;
pub mod protect;
mod settings;
pub mod shell;
mod winpath;

pub use command_policy::Tier;
pub use command_policy::{Policy, PolicyError};
pub use context::{
    GuardDecision, Identify, LoopContext, PolicySource, RalphProgram, ToolCall, Verdict,
};
pub use decide::decide;
