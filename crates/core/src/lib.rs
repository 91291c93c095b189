//! ralph-core: every decision of the Ralph loop as plain types and functions.
//!
//! The binaries (`ralph-stop-hook`, `ralph-guard`, `ralph-setup`, `ralph`)
//! read their input, hold the lock, run the long work and print; the rules
//! are here. The modules sit on five layers (base, records, the loop's
//! files, features, hooks and commands: docs/architecture.md, held by
//! `tests/it/design.rs`), and each says at its top whether it is pure or
//! does I/O.

/// The allocator of the musl builds (the Linux release; see Cargo.toml):
/// musl's maps a fresh page for a short-lived buffer and unmaps it at free,
/// about 20 pairs of system calls and a page fault each per Stop. Declared
/// here, the one library every binary links, so all four get it.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

pub mod activity;
pub mod ancestry;
pub mod args;
pub(crate) mod blocker;
pub(crate) mod bounded;
pub(crate) mod breaker;
pub(crate) mod budget;
pub mod ci;
pub mod clock;
pub mod config_seen;
pub mod continuity;
pub mod control;
pub mod exit_signals;
pub(crate) mod file_names;
pub mod fmt;
pub mod fresh;
pub mod fresh_stop;
pub mod frontmatter;
pub mod git;
pub mod git_config;
pub mod git_program_keys;
pub(crate) mod git_watch;
pub mod hook_input;
pub mod hook_output;
pub(crate) mod lock_holders;
pub mod loop_lock;
pub mod loop_report;
pub mod notify;
pub mod parallel;
pub mod passes;
pub mod paths;
pub(crate) mod pause;
pub mod pins;
pub(crate) mod placeholders;
pub mod prd;
pub(crate) mod prd_edit;
pub(crate) mod promise;
pub(crate) mod queued;
pub(crate) mod records;
pub(crate) mod reinject;
pub mod review;
pub(crate) mod review_settings;
pub mod run;
pub mod sandbox;
pub mod score;
pub mod seal;
pub(crate) mod shell_split;
pub mod start;
pub mod state;
pub mod state_file;
pub mod statusline;
pub mod statusline_install;
pub mod stop;
pub mod store;
pub mod suite;
pub(crate) mod tamper;
#[cfg(test)]
pub(crate) mod test_git;
pub mod transcript;
pub(crate) mod transient;
pub mod turn_tools;
pub mod verify;
pub mod worktree;
