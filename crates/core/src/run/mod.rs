//! `ralph run`, the headless loop: one fresh `claude -p` per iteration,
//! driven from outside the client. These are its rules, without I/O; the
//! `ralph` binary spawns the client, reads its stream, runs the real Stop
//! hook after each iteration and applies what these functions say.
//!
//! * [`events`]: the client's `--output-format stream-json` lines, as events.
//! * [`tokens`]: token accounting from the stream's `usage`.
//! * [`rotation`]: when an iteration's context is too large, ask for a
//!   hand-off, then force the end.
//! * [`handoff`]: the hand-off file and each iteration's prompt.
//! * [`failure`]: how one client run ended (an iteration, a rate limit to wait
//!   out, a failure), and the waits between retries.
//! * [`outcome`]: the Stop hook's answer, how the run ended, exit codes.
//! * [`progress`]: the lines shown on the terminal.
//! * [`options`]: durations and token counts as the user types them.

pub mod display;
pub mod end;
pub mod events;
pub mod failure;
pub mod handoff;
pub mod rotation;
pub mod tokens;
pub mod units;
