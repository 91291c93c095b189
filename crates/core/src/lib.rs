//! ralph-core: every decision of the Ralph loop as plain types and functions.
//!
//! The binaries (`ralph-stop-hook`, `ralph-guard`, `ralph-setup`) read files and
//! stdin at the edges and call into here; nothing in the decision modules
//! touches the file system, so the rules are tested without I/O.

pub mod paths;
