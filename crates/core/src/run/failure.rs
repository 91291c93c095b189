//! How one client run ended, and the waits before trying again.
//!
//! Measured on Claude Code 2.1.328 against the scripted model: the client
//! retries a 429 or 529 by itself (10 times by default, honouring
//! `retry-after`, reporting each as `system/api_retry`), and only when it
//! gives up ends the turn with a `result` whose `is_error` is true,
//! `api_error_status` the HTTP status and `result` the message
//! (`API Error: Request rejected (429) · ...`), then exits 1. A refused
//! connection ends the same way with `api_error: "connection_failed"` and no
//! status. With an API key the client passes on no reset time for a usage
//! limit; subscription accounts get a `rate_limit_event` with `resetsAt`
//! (read from the client's code, not measured here), and older clients wrote
//! `Claude AI usage limit reached|<unix time>`.
//! Pure.

use super::events::TurnResult;
use std::time::Duration;

/// Why the runner itself stopped a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// The context passed `--rotate-hard`.
    Rotation,
    /// The iteration ran longer than `--iteration-timeout`.
    Timeout,
}

/// What the runner saw of one client run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnd {
    /// The last `result` line.
    pub result: Option<TurnResult>,
    /// Whether any `result` line was a success (a session may hold two
    /// turns: the work, then the hand-off asked for mid-way).
    pub any_success: bool,
    pub exit_code: Option<i32>,
    /// The signal that ended the client, when one did.
    pub signal: Option<i32>,
    pub stopped_by_runner: Option<StopCause>,
    /// The last `rate_limit_event`: its status and reset time.
    pub rate_limit: Option<(String, Option<u64>)>,
    /// The end of the client's stderr.
    pub stderr_tail: String,
    /// Lines of stdout that were not stream JSON (a wrapper's messages).
    pub stdout_other: String,
}

/// What to do after a client run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextTry {
    /// The iteration ran: the Stop hook decides what comes next.
    Iteration,
    /// Rate limited or overloaded after the client's own retries: wait
    /// (backoff) and run the iteration again; not a failure.
    RateLimited { message: String },
    /// A usage limit: wait until it resets (when known), then again.
    UsageLimit {
        resets_at: Option<u64>,
        message: String,
    },
    /// Anything else: counts toward `--max-failures` in a row.
    Failed { message: String },
}

pub fn classify(end: &ChildEnd) -> NextTry {
    if end.stopped_by_runner.is_some() || end.any_success {
        return NextTry::Iteration;
    }
    if let Some(r) = &end.result {
        if !r.is_error || r.subtype == "error_max_turns" {
            return NextTry::Iteration;
        }
        let message = r
            .text
            .clone()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| describe_error(r));
        let rejected = end
            .rate_limit
            .as_ref()
            .filter(|(status, _)| status == "rejected");
        let lower = message.to_lowercase();
        if rejected.is_some() || lower.contains("usage limit") || lower.contains("hit your") {
            let resets_at = rejected
                .and_then(|(_, at)| *at)
                .or_else(|| reset_from_text(&message));
            return NextTry::UsageLimit { resets_at, message };
        }
        let transient = matches!(r.api_error_status, Some(429 | 529))
            || matches!(r.api_error.as_deref(), Some("rate_limit" | "overloaded"));
        if transient {
            return NextTry::RateLimited { message };
        }
        return NextTry::Failed { message };
    }
    let how = match (end.exit_code, end.signal) {
        (_, Some(sig)) => format!("the client was killed by signal {sig}"),
        (Some(0), _) => "the client exited without finishing its turn (no result)".to_string(),
        (Some(code), _) => format!("the client exited with status {code}"),
        (None, None) => "the client ended without an exit status".to_string(),
    };
    let said = last_lines(&end.stderr_tail, 3).or_else(|| last_lines(&end.stdout_other, 3));
    NextTry::Failed {
        message: match said {
            Some(s) => format!("{how}: {s}"),
            None => how,
        },
    }
}

fn describe_error(r: &TurnResult) -> String {
    match (r.api_error_status, &r.api_error) {
        (Some(s), _) => format!("API error {s}"),
        (None, Some(e)) => format!("API error ({e})"),
        _ => format!("the turn ended with an error ({})", r.subtype),
    }
}

/// The last `n` non-empty lines of `text`, joined with ` / `.
fn last_lines(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines[lines.len().saturating_sub(n)..].join(" / "))
}

/// A reset time written `...|1735689600` (Unix seconds) in a message.
pub(crate) fn reset_from_text(text: &str) -> Option<u64> {
    text.split('|').skip(1).find_map(|part| {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        (digits.len() >= 9).then(|| digits.parse().ok()).flatten()
    })
}

/// The unit of every wait below: one second (tests shrink it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    pub unit: Duration,
}

impl Default for Pacing {
    fn default() -> Pacing {
        Pacing {
            unit: Duration::from_secs(1),
        }
    }
}

impl Pacing {
    /// The wait before the `attempt`-th rerun (1-based) of an iteration that
    /// was rate limited: 1 min, 2, 4, 8, 16, 32, then every 60 min. The
    /// client has already retried for minutes by then; waits in a row are
    /// bounded by `--max-wait`.
    pub fn rate_limit_wait(self, attempt: u32) -> Duration {
        let shift = attempt.saturating_sub(1).min(6);
        self.unit * (60u32 << shift).min(3600)
    }

    /// The wait before rerunning after the `failures`-th failure in a row:
    /// 5 s, 10 s, 20 s, 40 s, then 60 s.
    pub fn failure_wait(self, failures: u32) -> Duration {
        let shift = failures.saturating_sub(1).min(4);
        self.unit * (5u32 << shift).min(60)
    }

    /// The wait for a usage limit: until its reset time (plus 30 s, so the
    /// limit is really lifted), else as for a rate limit.
    pub fn usage_limit_wait(self, resets_at: Option<u64>, now: u64, attempt: u32) -> Duration {
        match resets_at {
            Some(at) if at > now => Duration::from_secs(at - now) + self.unit * 30,
            Some(_) => self.unit * 30,
            None => self.rate_limit_wait(attempt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(is_error: bool, status: Option<u16>, text: &str) -> ChildEnd {
        ChildEnd {
            result: Some(TurnResult {
                is_error,
                subtype: "success".into(),
                api_error_status: status,
                text: Some(text.into()),
                ..TurnResult::default()
            }),
            exit_code: Some(i32::from(is_error)),
            ..ChildEnd::default()
        }
    }

    #[test]
    fn a_turn_that_ended_is_an_iteration() {
        assert_eq!(classify(&result(false, None, "done")), NextTry::Iteration);
        // Stopped on purpose (rotation, timeout): the work so far is judged.
        let stopped = ChildEnd {
            stopped_by_runner: Some(StopCause::Rotation),
            signal: Some(15),
            ..ChildEnd::default()
        };
        assert_eq!(classify(&stopped), NextTry::Iteration);
        // The work turn succeeded; the hand-off turn after it hit an error.
        let mut two = result(true, Some(500), "API Error: 500");
        two.any_success = true;
        assert_eq!(classify(&two), NextTry::Iteration);
    }

    #[test]
    fn rate_limits_and_usage_limits_wait() {
        let msg = "API Error: Request rejected (429) · Rate limited";
        assert_eq!(
            classify(&result(true, Some(429), msg)),
            NextTry::RateLimited {
                message: msg.into()
            }
        );
        assert!(matches!(
            classify(&result(true, Some(529), "API Error: 529 Overloaded")),
            NextTry::RateLimited { .. }
        ));
        let old = "Claude AI usage limit reached|1900000000";
        assert_eq!(
            classify(&result(true, Some(429), old)),
            NextTry::UsageLimit {
                resets_at: Some(1_900_000_000),
                message: old.into()
            }
        );
        let mut event = result(
            true,
            Some(429),
            "You've hit your session limit · resets 3pm",
        );
        event.rate_limit = Some(("rejected".into(), Some(1_900_000_123)));
        assert!(matches!(
            classify(&event),
            NextTry::UsageLimit {
                resets_at: Some(1_900_000_123),
                ..
            }
        ));
    }

    #[test]
    fn other_errors_are_failures_with_the_clients_words() {
        assert_eq!(
            classify(&result(true, Some(500), "API Error: 500 Internal")),
            NextTry::Failed {
                message: "API Error: 500 Internal".into()
            }
        );
        let crashed = ChildEnd {
            exit_code: Some(3),
            stderr_tail: "warming up\n\nboom: no model here\n".into(),
            ..ChildEnd::default()
        };
        assert_eq!(
            classify(&crashed),
            NextTry::Failed {
                message: "the client exited with status 3: warming up / boom: no model here".into()
            }
        );
        let killed = ChildEnd {
            signal: Some(9),
            ..ChildEnd::default()
        };
        assert_eq!(
            classify(&killed),
            NextTry::Failed {
                message: "the client was killed by signal 9".into()
            }
        );
    }

    #[test]
    fn waits() {
        let p = Pacing::default();
        let mins = |d: Duration| d.as_secs() / 60;
        let schedule: Vec<u64> = (1..=8).map(|a| mins(p.rate_limit_wait(a))).collect();
        assert_eq!(schedule, [1, 2, 4, 8, 16, 32, 60, 60]);
        let fails: Vec<u64> = (1..=6).map(|f| p.failure_wait(f).as_secs()).collect();
        assert_eq!(fails, [5, 10, 20, 40, 60, 60]);
        assert_eq!(
            p.usage_limit_wait(Some(1_000), 900, 1),
            Duration::from_secs(130)
        );
        assert_eq!(
            p.usage_limit_wait(Some(800), 900, 1),
            Duration::from_secs(30)
        );
        assert_eq!(p.usage_limit_wait(None, 900, 2), Duration::from_secs(120));
        let fast = Pacing {
            unit: Duration::from_millis(10),
        };
        assert_eq!(fast.failure_wait(1), Duration::from_millis(50));
        assert_eq!(reset_from_text("limit|17356896"), None);
        assert_eq!(reset_from_text("no bar"), None);
    }
}
