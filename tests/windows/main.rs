//! The Windows slice of the integration tests: the real binaries built for
//! Windows (`x86_64-pc-windows-gnu`), run with hook input as the Windows
//! client sends it (`"cwd": "C:\\Users\\…"`, a transcript path under the
//! profile folder, CRLF where a Windows editor writes it) and the
//! environment Git Bash hands a program (HOME, USERPROFILE and
//! CLAUDE_PROJECT_DIR in Windows form). Here they run under Wine:
//!
//!     scripts/windows/test                 # builds, installs what it needs, runs these
//!
//! which is `cargo test --target x86_64-pc-windows-gnu --test windows` with
//! scripts/windows/wine-run as the runner (`RALPH_WINDOWS_BIN_DIR=DIR`:
//! the .exe's of another build instead). What Wine cannot show is in
//! docs/install.md ("Windows under Wine").
//!
//! - `guard`: tests/fixtures/guard/windows-cases.txt through ralph-guard.exe,
//!   in a loop started by ralph-setup.exe;
//! - `hooks`: start, Stop (feed, promise, cap), status and cancel, a
//!   transcript and a PRD with CRLF, two Stops at once (the lock), the
//!   state's atomic replace;
//! - `run`: `ralph run` with a stand-in client.

// Built for Windows only; elsewhere this binary holds no test.
#![cfg(windows)]

mod guard;
mod hooks;
mod run;
mod support;
#[path = "../shared/windows_table.rs"]
mod windows_table;
