//! The loop at a glance: the status line (`ralph-setup statusline`), one
//! short coloured line Claude Code shows under the input box. Pure, but for
//! [`StatusLine::gather`], which reads the loop's small files.
//!
//! The client runs the command at start and after each message, so the path
//! without a loop is two stats after reading the client's JSON: no regex, no
//! git, no large file (the activity log is not read at all).

use crate::budget::elapsed_secs;
use crate::paths::LoopPaths;
use crate::state::LoopState;
use crate::state_file::StateFile;
use serde::Deserialize;

/// The part of the status-line JSON Claude Code sends on stdin that ralph
/// uses (measured on client 2.1.328: docs/client-measurements.md).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LineInput {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub(crate) workspace: Option<Workspace>,
    #[serde(default)]
    pub(crate) context_window: Option<ContextWindow>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Workspace {
    #[serde(default)]
    pub current_dir: Option<String>,
    #[serde(default)]
    pub project_dir: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ContextWindow {
    /// `null` before the first reply.
    #[serde(default)]
    pub used_percentage: Option<f64>,
}

impl LineInput {
    /// The JSON as sent; anything unreadable is an empty input (no loop shown
    /// unless the process's own folder has one).
    pub fn parse(bytes: &[u8]) -> LineInput {
        serde_json::from_slice(bytes).unwrap_or_default()
    }

    /// The project folder the client names (`workspace.project_dir`, what
    /// it gives hooks as `CLAUDE_PROJECT_DIR`).
    pub fn project_dir(&self) -> Option<&str> {
        let ws = self.workspace.as_ref()?;
        ws.project_dir.as_deref().filter(|d| !d.is_empty())
    }

    /// The folder the session is in: `cwd`, else `workspace.current_dir`.
    pub fn cwd(&self) -> Option<&str> {
        let ws = self.workspace.as_ref();
        self.cwd
            .as_deref()
            .or_else(|| ws.and_then(|w| w.current_dir.as_deref()))
            .filter(|d| !d.is_empty())
    }

    pub(crate) fn context_percent(&self) -> Option<f64> {
        self.context_window.as_ref()?.used_percentage
    }
}

/// How near the loop is to a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Green,
    /// From 70 % of the cap or of a budget.
    Yellow,
    /// From 90 %.
    Red,
}

impl Level {
    /// The level for the largest share `percent` (0-100+) spent of any limit.
    pub(crate) fn of(percent: u64) -> Level {
        match percent {
            p if p >= 90 => Level::Red,
            p if p >= 70 => Level::Yellow,
            _ => Level::Green,
        }
    }

    fn ansi(self) -> &'static str {
        match self {
            Level::Green => "\x1b[32m",
            Level::Yellow => "\x1b[33m",
            Level::Red => "\x1b[31m",
        }
    }
}

/// What the line shows, read from the loop's files.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusLine {
    pub iteration: u64,
    /// 0: no cap.
    pub max_iterations: u64,
    /// `paused` (API error, usage limit) or `blocked` (waits for a human).
    pub waiting: Option<&'static str>,
    /// The story fed next, with the stories passing and their number.
    pub stories: Option<(Option<String>, usize, usize)>,
    /// The loop's check: did its last run pass?
    pub verify: Option<bool>,
    /// Its last run was against the files pinned at start (`verify ✔📌`).
    pub verify_pinned: bool,
    /// The largest share of a limit spent (cap or budget), in percent.
    pub spent_percent: u64,
    pub context_percent: Option<f64>,
    /// The agent's commands run in Claude Code's sandbox (`🔒`), as seen at
    /// the start.
    pub sandboxed: bool,
    /// The loop's score and its trend (`tests 41/50 ↑3`).
    pub score: Option<String>,
}

impl StatusLine {
    /// The loop of `paths`, if one runs (a readable state). Reads the state,
    /// the PRD (when the loop has one) and the check results.
    pub fn gather(paths: &LoopPaths, input: &LineInput, now: u64) -> Option<StatusLine> {
        if !paths.has_loop() {
            return None;
        }
        let StateFile::Loop { state, .. } = crate::state_file::read(paths) else {
            return None;
        };
        if !state.active {
            return None;
        }
        let stories = state.prd_file.as_deref().and_then(|file| {
            let prd = crate::prd::read(&paths.root, file).ok()?;
            let (passing, total) = prd.progress();
            // --parallel: the stories the workers have now (`US-1+US-3`).
            let working = (state.parallel > 0)
                .then(|| {
                    crate::parallel::disk::read_board(&paths.board)
                        .working()
                        .join("+")
                })
                .filter(|w| !w.is_empty());
            let name = working.or_else(|| prd.next_runnable().map(|s| s.id.clone()));
            Some((name, passing, total))
        });
        let last = state.verify.as_ref().and_then(|cmd| {
            let log = crate::verify::read_log(&paths.verify)?;
            log.r#loop.filter(|r| &r.command == cmd)
        });
        let verify = last.as_ref().map(crate::verify::CheckResult::passed);
        let mut line = StatusLine::of(&state, stories, verify, input.context_percent(), now);
        line.verify_pinned = last.is_some_and(|r| r.pinned);
        // A loop with a measure has scores once an iteration changed the tree.
        if state.verify.is_some() || state.score.is_some() || state.prd_file.is_some() {
            let history = crate::score::history::read(&paths.scores);
            line.score = crate::score::summary::ScoreSummary::of(&history, state.max_plateau)
                .map(|s| s.glance());
        }
        Some(line)
    }

    /// The status line of `state` (pure).
    pub fn of(
        state: &LoopState,
        stories: Option<(Option<String>, usize, usize)>,
        verify: Option<bool>,
        context_percent: Option<f64>,
        now: u64,
    ) -> StatusLine {
        let waiting = if state.blocked.is_some() {
            Some("blocked")
        } else if state.api_error_pause.is_some() {
            Some("paused")
        } else {
            None
        };
        StatusLine {
            iteration: state.iteration,
            max_iterations: state.max_iterations,
            waiting,
            stories,
            verify,
            verify_pinned: false,
            spent_percent: spent_percent(state, now),
            context_percent,
            sandboxed: state.sandbox == Some(true),
            score: None,
        }
    }

    /// `ralph 3/30 · US-002 2/5 · verify ✔ · 41 % ctx`, coloured by how much
    /// of the cap or a budget is spent when `color`.
    pub fn line(&self, color: bool) -> String {
        let mut parts = Vec::with_capacity(4);
        let mut head = if self.max_iterations > 0 {
            format!("ralph {}/{}", self.iteration, self.max_iterations)
        } else {
            format!("ralph {}", self.iteration)
        };
        if self.sandboxed {
            head.push_str(" 🔒");
        }
        if let Some(w) = self.waiting {
            head.push(' ');
            head.push_str(w);
        }
        parts.push(head);
        if let Some((next, passing, total)) = &self.stories {
            let name = next.as_deref().unwrap_or("stories");
            parts.push(format!("{name} {passing}/{total}"));
        }
        if let Some(passed) = self.verify {
            let pin = if self.verify_pinned { "📌" } else { "" };
            parts.push(format!("verify {}{pin}", if passed { "✔" } else { "✘" }));
        }
        if let Some(score) = &self.score {
            parts.push(score.clone());
        }
        if let Some(pct) = self.context_percent {
            parts.push(format!("{} % ctx", pct.round() as u64));
        }
        let text = parts.join(" · ");
        if color {
            format!("{}{text}\x1b[0m", self.level().ansi())
        } else {
            text
        }
    }

    pub(crate) fn level(&self) -> Level {
        Level::of(self.spent_percent)
    }
}

/// The largest share, in percent, of the cap and each budget the loop has spent.
pub(crate) fn spent_percent(state: &LoopState, now: u64) -> u64 {
    let share = |spent: u64, max: u64| (max > 0).then(|| spent.saturating_mul(100) / max);
    let b = &state.budgets;
    let elapsed = elapsed_secs(state.started_at.as_deref(), now);
    [
        share(state.iteration, state.max_iterations),
        b.max_tokens.and_then(|max| share(b.tokens, max)),
        b.max_cost.and_then(|max| share(b.cost.0, max.0)),
        b.max_runtime_secs
            .and_then(|max| share(elapsed.unwrap_or(0), max)),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(0)
}

/// Colour unless `NO_COLOR` is set to something (<https://no-color.org>).
/// The client shows the line's colours, so a pipe is no reason to drop them.
pub fn use_color(no_color: Option<&str>) -> bool {
    no_color.is_none_or(str::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Usd;

    fn state(iteration: u64, max: u64) -> LoopState {
        LoopState::parse(&format!(
            "---\nactive: true\niteration: {iteration}\nsession_id: s\nmax_iterations: {max}\ncompletion_promise: null\nstarted_at: \"2026-12-01T00:00:00Z\"\n---\n\nwork\n"
        ))
        .unwrap()
    }

    #[test]
    fn the_measured_input_parses() {
        let json = br#"{"session_id":"abc","transcript_path":"/t","cwd":"/tmp/meas/proj","prompt_id":"p",
 "model":{"id":"claude-opus-5-5","display_name":"Opus 5.5"},
 "workspace":{"current_dir":"/tmp/meas/proj/sub","project_dir":"/tmp/meas/proj","added_dirs":[]},"version":"2.1.328",
 "cost":{"total_cost_usd":0.00024,"total_duration_ms":11549,"total_api_duration_ms":49,"total_lines_added":0,"total_lines_removed":0},
 "context_window":{"total_input_tokens":10,"total_output_tokens":10,"context_window_size":1000000,
   "current_usage":{"input_tokens":10,"output_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},
   "used_percentage":41.4,"remaining_percentage":58.6},
 "exceeds_200k_tokens":false,"fast_mode":false,"thinking":{"enabled":true}}"#;
        let i = LineInput::parse(json);
        assert_eq!(i.session_id.as_deref(), Some("abc"));
        assert_eq!(i.project_dir(), Some("/tmp/meas/proj"));
        assert_eq!(i.context_percent(), Some(41.4));
        // Before the first reply the percentages are null.
        let i = LineInput::parse(br#"{"cwd":"/p","context_window":{"used_percentage":null}}"#);
        assert_eq!((i.project_dir(), i.cwd()), (None, Some("/p")));
        assert_eq!(i.context_percent(), None);
        assert_eq!(LineInput::parse(b"not json").project_dir(), None);
    }

    #[test]
    fn the_line_shows_what_applies() {
        let g = StatusLine::of(
            &state(3, 30),
            Some((Some("US-002".into()), 2, 5)),
            Some(true),
            Some(41.4),
            0,
        );
        assert_eq!(
            g.line(false),
            "ralph 3/30 · US-002 2/5 · verify ✔ · 41 % ctx"
        );
        assert_eq!(
            g.line(true),
            "\x1b[32mralph 3/30 · US-002 2/5 · verify ✔ · 41 % ctx\x1b[0m"
        );
        let g = StatusLine::of(&state(4, 0), None, Some(false), None, 0);
        assert_eq!(g.line(false), "ralph 4 · verify ✘");
        let g = StatusLine::of(&state(4, 0), Some((None, 5, 5)), None, None, 0);
        assert_eq!(g.line(false), "ralph 4 · stories 5/5");
        let mut s = state(2, 10);
        s.blocked = Some("US-001".into());
        assert_eq!(
            StatusLine::of(&s, None, None, None, 0).line(false),
            "ralph 2/10 blocked"
        );
        // A loop whose agent's commands run in the sandbox says so.
        s.sandbox = Some(true);
        assert_eq!(
            StatusLine::of(&s, None, None, None, 0).line(false),
            "ralph 2/10 🔒 blocked"
        );
    }

    #[test]
    fn colour_follows_the_cap_and_budgets() {
        let level = |s: &LoopState, now| StatusLine::of(s, None, None, None, now).level();
        assert_eq!(level(&state(6, 10), 0), Level::Green);
        assert_eq!(level(&state(7, 10), 0), Level::Yellow);
        assert_eq!(level(&state(8, 10), 0), Level::Yellow);
        assert_eq!(level(&state(9, 10), 0), Level::Red);
        assert_eq!(level(&state(12, 0), 0), Level::Green);
        let mut s = state(1, 100);
        s.budgets.max_tokens = Some(1000);
        s.budgets.tokens = 720;
        assert_eq!(level(&s, 0), Level::Yellow);
        s.budgets.max_cost = Some(Usd(1_000_000));
        s.budgets.cost = Usd(950_000);
        assert_eq!(level(&s, 0), Level::Red);
        let mut s = state(1, 100);
        s.budgets.max_runtime_secs = Some(100);
        let start = crate::clock::parse_rfc3339("2026-12-01T00:00:00Z").unwrap();
        assert_eq!(level(&s, start + 50), Level::Green);
        assert_eq!(level(&s, start + 75), Level::Yellow);
        assert_eq!(
            StatusLine::of(&s, None, None, None, start + 95).line(true),
            "\x1b[31mralph 1/100\x1b[0m"
        );
    }

    #[test]
    fn no_color_is_respected() {
        assert!(use_color(None));
        assert!(use_color(Some("")));
        assert!(!use_color(Some("1")));
    }
}
