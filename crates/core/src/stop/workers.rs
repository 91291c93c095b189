//! When a Stop waits for the loop's workers (`--fresh`, `--parallel`):
//! the one rule. Pure.

use crate::state::LoopState;

/// How busy a worker loop's workers are: the one rule for when a Stop waits
/// for them. `plan` works it out, `judge` follows it (its first rule, or
/// when no other story can go out), and `apply` carries out the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workers {
    /// No worker runs (or the loop has none).
    Idle,
    /// `--parallel`: workers run and places are free: the rules decide; the
    /// Stop waits only when no other story can go out.
    Some,
    /// Every place is taken (`--parallel`), or the `--fresh` worker runs in
    /// the background (the model's turn ended before its worker's): the
    /// Stop waits before any rule, nothing advances, and the worker's report
    /// (or merge) brings the next Stop; a second worker is never fed the
    /// same story, and the worker's run counts as one iteration.
    AllBusy,
}

impl Workers {
    /// From the running workers: `in_flight` (`--parallel`), `fresh_worker`
    /// (a `--fresh` worker runs).
    pub(crate) fn of(
        state: &LoopState,
        in_flight: &[Option<String>],
        fresh_worker: bool,
    ) -> Workers {
        let all_busy = if state.parallel > 0 {
            in_flight.len() >= state.parallel as usize
        } else {
            fresh_worker
        };
        if state.fresh && state.active && all_busy {
            Workers::AllBusy
        } else if state.parallel > 0 && !in_flight.is_empty() {
            Workers::Some
        } else {
            Workers::Idle
        }
    }
}
