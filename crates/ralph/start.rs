//! `ralph start` and the start of `ralph run`: the same start as
//! `/ralph-loop` (`start::commands::start`), with what a terminal knows
//! besides the arguments (the command policy's `full` gate, the model from
//! the environment or settings, the client a run drives).

use ralph_core::args::StartArgs;
use ralph_core::paths::LoopPaths;
use ralph_core::start::{StartError, Started, commands};

/// Start a loop for `session` ("": the first session to stop claims it).
/// Without `--verify`, the command policy's `[gates] full` row is its check.
pub(crate) fn start(
    paths: &LoopPaths,
    session: &str,
    a: &StartArgs,
    claude: Option<&str>,
) -> Result<Started, StartError> {
    let gate = a
        .verify
        .is_none()
        .then(|| ralph_policy::gather::full_gate(&paths.root))
        .flatten();
    // No transcript in a terminal: the model from the environment or settings.
    let model = a
        .max_cost
        .and_then(|_| commands::session_model(None, &paths.root));
    let starter = commands::Starter {
        session,
        gate,
        model,
        claude,
    };
    commands::start(paths, a, starter)
}
