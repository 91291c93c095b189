//! ralph-core: every decision of the Ralph loop as plain types and functions.
//!
//! The binaries (`ralph-stop-hook`, `ralph-guard`, `ralph-setup`, `ralph`)
//! read their input, hold the lock, run the long work and print; the rules
//! are here. The modules sit on five layers (base, records, the loop's
//! files, features, hooks and commands: docs/architecture.md, held by
//! `tests/it/design.rs`), and each says at its top whether it is pure or
//! does I/O.

pub mod activity;
pub mod ancestry;
pub mod args;
pub mod blocker;
pub mod bounded;
pub mod budget;
pub mod clock;
pub mod continuity;
pub mod control;
pub mod exit_signals;
pub mod fmt;
pub mod fresh;
pub mod fresh_stop;
pub mod frontmatter;
pub mod git;
pub mod git_config;
pub mod glance;
pub mod glance_install;
pub mod hook_input;
pub mod hook_output;
pub mod loop_report;
pub mod names;
pub mod notify;
pub mod parallel;
pub mod paths;
pub mod pause;
pub mod pins;
pub mod prd;
pub mod prd_edit;
pub mod progress;
pub mod promise;
pub mod queue;
pub mod reinject;
pub mod review;
pub mod review_settings;
pub mod run;
pub mod seal;
pub mod setup;
pub mod standaside;
pub mod state;
pub mod stop;
pub mod store;
pub mod tamper;
pub mod transcript;
pub mod turn_tools;
pub mod verify;
pub mod worktree;
