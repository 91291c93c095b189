//! The integration tests, as one test binary (ripgrep's and just's layout):
//! each module drives the real binaries, and `support` is what they share.
//! The end-to-end scenarios in the real Claude Code client are their own
//! binary, `tests/e2e.rs`.
//!
//!     cargo test --test integration                      # all of these
//!     cargo test --test integration hardening_corpus     # one module

// These drive the real binaries with Unix tools (sh, git, symlinks, modes,
// /proc) on a Unix host: not built elsewhere. The Windows slice of these
// tests, run under Wine here, is tests/windows.
#![cfg(unix)]

mod support;
// Shared with the scenarios (`tests/e2e.rs`): headless Chromium.
#[path = "../shared/browser.rs"]
mod browser;

mod ci;
mod coexist;
mod config_seen;
mod continuity;
mod design;
mod fresh;
mod git_config_cache;
mod git_watch;
mod guard;
mod guard_windows;
mod hardening_concurrency;
mod hardening_corpus;
mod hardening_crash;
mod hardening_files;
mod hardening_guard;
mod hardening_lock;
mod hardening_stdin;
mod hermetic_git;
mod launcher;
mod loop_report;
mod loop_state;
mod no_off_switch;
mod notify;
mod options_doc;
mod parallel;
mod parallel_strays;
mod pins;
mod ralph_cli;
mod readme;
mod review;
mod score;
mod setup_cli;
mod shapes;
mod statusline;
mod statusline_install;
mod stop_hook;
mod suite;
mod verify;
mod workflow;
