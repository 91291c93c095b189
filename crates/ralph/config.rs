//! A `ralph run`'s settings, as the command line gave them: read by the
//! preparation and the runner alike.

use ralph_core::run::failure::Pacing;
use ralph_core::run::rotation::Thresholds;
use std::time::Duration;

/// A `ralph run`'s settings.
pub(crate) struct Config {
    /// The loop's options and prompt, as `ralph start` takes them.
    pub start_args: Vec<String>,
    pub claude: String,
    pub client_args: Vec<String>,
    /// Run the clients in Claude Code's sandbox when this machine has it
    /// (not `--no-sandbox`).
    pub sandbox: bool,
    pub max_failures: u32,
    pub max_wait: Duration,
    pub notify: Option<String>,
    pub thresholds: Thresholds,
    pub iteration_timeout: Option<Duration>,
    pub pacing: Pacing,
}
