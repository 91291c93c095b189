//! The lines `ralph run` prints while it works: one per event (an iteration
//! starts, a tool call, the model's words shortened to one line, a check
//! result or the loop's decision, a wait), and a summary per iteration.
//! Colour only when asked for ([`use_color`]).
//! Pure.

use super::events::{Event, Usage};
use super::tokens::human;
use super::units::human_duration;
use crate::fmt::one_line;
use std::time::Duration;

/// Whether to colour: stdout is a terminal and `NO_COLOR` is unset or empty
/// (<https://no-color.org>).
pub fn use_color(stdout_is_terminal: bool, no_color: Option<&str>) -> bool {
    stdout_is_terminal && no_color.is_none_or(str::is_empty)
}

/// `text` without its colour codes (for the log file).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// An iteration starts.
    Head,
    /// Tool calls and other detail.
    Dim,
    /// The model's words.
    Plain,
    /// Waits, rotation, refusals.
    Warn,
    /// Failures.
    Bad,
    /// Success.
    Good,
}

/// How lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn paint(self, tone: Tone, text: &str) -> String {
        let code = match tone {
            Tone::Head => "1;36",
            Tone::Dim => "2",
            Tone::Plain => return text.to_string(),
            Tone::Warn => "33",
            Tone::Bad => "31",
            Tone::Good => "32",
        };
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// `2/5`, or `2` without a cap.
pub fn iteration_label(iteration: u64, max_iterations: u64) -> String {
    if max_iterations > 0 {
        format!("{iteration}/{max_iterations}")
    } else {
        iteration.to_string()
    }
}

/// The line that opens an iteration.
pub fn iteration_start(style: Style, label: &str, story: Option<&str>) -> String {
    let story = story.map(|s| format!(" · story {s}")).unwrap_or_default();
    style.paint(Tone::Head, &format!("▶ iteration {label}{story}"))
}

/// The line for one stream event, if it is worth one.
pub fn event_line(style: Style, event: &Event) -> Option<String> {
    Some(match event {
        Event::Text { text, .. } if !text.trim().is_empty() => {
            format!(
                "  says › {}",
                style.paint(Tone::Plain, &one_line(text, 140))
            )
        }
        Event::ToolUse { name, summary } => style.paint(
            Tone::Dim,
            &format!("  tool › {name}: {}", one_line(summary, 120)),
        ),
        Event::ToolError { text } => {
            style.paint(Tone::Warn, &format!("  tool ✗ {}", one_line(text, 160)))
        }
        Event::ApiRetry {
            attempt,
            max_retries,
            delay_ms,
            status,
            error,
        } => {
            let what = match status {
                Some(429) => "rate limited (429)".to_string(),
                Some(529) => "overloaded (529)".to_string(),
                Some(s) => format!("API error {s}"),
                None => format!("API error ({error})"),
            };
            style.paint(
                Tone::Warn,
                &format!(
                    "  wait › {what}: the client retries in {:.1} s (attempt {attempt}/{max_retries})",
                    *delay_ms as f64 / 1000.0
                ),
            )
        }
        _ => return None,
    })
}

/// The loop's own words (the Stop hook's message), one line each.
pub fn ralph_lines(style: Style, message: &str) -> Vec<String> {
    message
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let tone = if l.contains("refused") || l.contains("FAILED") || l.contains("failed") {
                Tone::Warn
            } else {
                Tone::Plain
            };
            format!("  ralph › {}", style.paint(tone, &one_line(l, 200)))
        })
        .collect()
}

/// A note from the runner itself (rotation, waits, failures).
pub fn note(style: Style, tone: Tone, text: &str) -> String {
    style.paint(tone, &format!("  run › {text}"))
}

/// What the summary line of an iteration says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub label: String,
    /// `1/3 stories pass`, in PRD mode.
    pub stories: Option<String>,
    pub tokens: Usage,
    pub peak_context: u64,
    pub requests: u64,
    pub elapsed: Duration,
}

pub fn summary(style: Style, s: &Summary) -> String {
    let mut parts = vec![format!("■ iteration {} done", s.label)];
    if let Some(st) = &s.stories {
        parts.push(st.clone());
    }
    parts.push(format!(
        "{} requests, context {}",
        s.requests,
        human(s.peak_context)
    ));
    parts.push(format!(
        "tokens {} in ({} cached), {} out",
        human(s.tokens.input + s.tokens.cache_creation + s.tokens.cache_read),
        human(s.tokens.cache_read),
        human(s.tokens.output)
    ));
    parts.push(human_duration(s.elapsed));
    style.paint(Tone::Head, &parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_is_stripped_for_the_log() {
        assert_eq!(strip_ansi("\x1b[1;36m▶ it\x1b[0m x"), "▶ it x");
    }

    const PLAIN: Style = Style { color: false };

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_color(true, None));
        assert!(use_color(true, Some("")));
        assert!(!use_color(true, Some("1")));
        assert!(!use_color(false, None));
        assert_eq!(
            Style { color: true }.paint(Tone::Bad, "x"),
            "\x1b[31mx\x1b[0m"
        );
        assert_eq!(PLAIN.paint(Tone::Bad, "x"), "x");
    }

    #[test]
    fn event_lines() {
        let tool = Event::ToolUse {
            name: "Bash".into(),
            summary: "cargo test\n  --all".into(),
        };
        assert_eq!(
            event_line(PLAIN, &tool).unwrap(),
            "  tool › Bash: cargo test --all"
        );
        let said = Event::Text {
            message_id: "m".into(),
            text: format!("Line one\n\n{}", "x".repeat(300)),
        };
        let line = event_line(PLAIN, &said).unwrap();
        assert!(line.starts_with("  says › Line one xxx"));
        assert!(line.ends_with('…'));
        assert_eq!(line.chars().count(), "  says › ".chars().count() + 140);
        let retry = Event::ApiRetry {
            attempt: 1,
            max_retries: 10,
            delay_ms: 1172,
            status: Some(429),
            error: "rate_limit".into(),
        };
        assert_eq!(
            event_line(PLAIN, &retry).unwrap(),
            "  wait › rate limited (429): the client retries in 1.2 s (attempt 1/10)"
        );
        assert!(
            event_line(
                PLAIN,
                &Event::Init {
                    session_id: "s".into()
                }
            )
            .is_none()
        );
    }

    #[test]
    fn iteration_lines() {
        assert_eq!(iteration_label(2, 5), "2/5");
        assert_eq!(iteration_label(2, 0), "2");
        assert_eq!(
            iteration_start(PLAIN, "2/5", Some("US-2 Parser")),
            "▶ iteration 2/5 · story US-2 Parser"
        );
        let s = Summary {
            label: "2/5".into(),
            stories: Some("1/3 stories pass".into()),
            tokens: Usage {
                input: 1_000,
                output: 1_200,
                cache_read: 30_000,
                cache_creation: 4_000,
            },
            peak_context: 12_345,
            requests: 3,
            elapsed: Duration::from_secs(41),
        };
        assert_eq!(
            summary(PLAIN, &s),
            "■ iteration 2/5 done · 1/3 stories pass · 3 requests, context 12.3k · tokens 35k in (30k cached), 1.2k out · 41 s"
        );
        assert_eq!(
            ralph_lines(PLAIN, "🔄 Ralph iteration 3/5\n\n"),
            vec!["  ralph › 🔄 Ralph iteration 3/5"]
        );
    }
}
