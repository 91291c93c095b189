//! ralph-core: every decision of the Ralph loop as plain types and functions.
//!
//! The binaries (`ralph-stop-hook`, `ralph-guard`, `ralph-setup`) read files and
//! stdin at the edges and call into here; nothing in the decision modules
//! touches the file system, so the rules are tested without I/O. The modules
//! that do I/O say so at their top: `store`, `paths`, `transcript`,
//! `hook_input`, `hook_output` (prints), `activity` and `worktree` (which
//! spawns git and checks).

pub mod activity;
pub mod args;
pub mod blocker;
pub mod clock;
pub mod control;
pub mod fmt;
pub mod frontmatter;
pub mod hook_input;
pub mod hook_output;
pub mod paths;
pub mod prd;
pub mod progress;
pub mod promise;
pub mod queue;
pub mod reinject;
pub mod run;
pub mod setup;
pub mod state;
pub mod stop;
pub mod store;
pub mod transcript;
pub mod verify;
pub mod worktree;
