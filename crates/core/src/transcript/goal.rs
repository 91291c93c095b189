//! The session's `/goal`, as the client records it in the transcript.
//! Does I/O: reads the transcript, backwards.

use super::walk_back;
use memchr::memmem;
use serde_json::Value;
use std::fs::File;

/// The condition of the session's `/goal` when one is active: the newest
/// `goal_status` attachment of `file` (its last `max_bytes`) neither met
/// nor failed. The client writes one as a goal is set (`sentinel`), at each
/// check that finds it unmet, and as it is met, found impossible (`failed`)
/// or cleared (`met` and `sentinel`): measured on 2.1.328,
/// docs/client-measurements.md.
pub(super) fn active_goal_of(file: &File, len: u64, max_bytes: u64) -> Option<String> {
    let mut goal = None;
    let _ = walk_back(file, len, max_bytes, |line| {
        if memmem::find(line, br#""goal_status""#).is_none() {
            return false;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return false;
        };
        let Some(status) = v.get("attachment").filter(|a| a["type"] == "goal_status") else {
            return false;
        };
        let open = status["met"] == false && status["failed"] != true;
        goal = open
            .then(|| status["condition"].as_str().map(str::to_string))
            .flatten();
        true
    });
    goal
}
