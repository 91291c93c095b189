//! A loop paused on an API error: the client fires `StopFailure` instead of
//! `Stop` when a turn ends on one (a rate limit, an overloaded or failing
//! server, a usage limit), and no Stop will come for that turn. The loop is
//! marked paused with the reason, not counted as an iteration or a stall,
//! and the next prompt or Stop of its session resumes it. Pure.
//!
//! Measured on Claude Code 2.1.328 (docs/client-measurements.md): the input
//! carries `error` (`rate_limit`, `server_error`, ...) and, in the schema,
//! an optional `error_details`; with an API key no reset time was given.

/// Why the client says the turn failed: the `error` of a `StopFailure`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PauseReason {
    RateLimit,
    Overloaded,
    ServerError,
    BillingError,
    AuthenticationFailed,
    MaxOutputTokens,
    /// Any other code the client sends, kept as sent.
    Other(String),
}

impl PauseReason {
    /// From the client's code (`unknown` when it sent none).
    pub fn parse(code: Option<&str>) -> PauseReason {
        match code.map(str::trim).filter(|c| !c.is_empty()) {
            Some("rate_limit") => PauseReason::RateLimit,
            Some("overloaded") => PauseReason::Overloaded,
            Some("server_error") => PauseReason::ServerError,
            Some("billing_error") => PauseReason::BillingError,
            Some("authentication_failed") => PauseReason::AuthenticationFailed,
            Some("max_output_tokens") => PauseReason::MaxOutputTokens,
            Some(other) => PauseReason::Other(other.chars().take(60).collect()),
            None => PauseReason::Other("unknown".into()),
        }
    }

    /// The client's code, as logged and kept in the state.
    pub fn as_str(&self) -> &str {
        match self {
            PauseReason::RateLimit => "rate_limit",
            PauseReason::Overloaded => "overloaded",
            PauseReason::ServerError => "server_error",
            PauseReason::BillingError => "billing_error",
            PauseReason::AuthenticationFailed => "authentication_failed",
            PauseReason::MaxOutputTokens => "max_output_tokens",
            PauseReason::Other(code) => code,
        }
    }
}

/// A paused loop: why, since when, and until when if the client said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub reason: PauseReason,
    /// RFC 3339.
    pub at: String,
    /// When the limit resets, as the client gave it.
    pub resets_at: Option<String>,
}

/// The reset time in a `StopFailure`'s `error_details`, when there is one: a
/// `resets_at`/`reset_at`/`resetsAt` field (text or a Unix time), else a
/// "resets at ..." phrase. The measured client sent none with an API key.
pub(crate) fn reset_time(details: Option<&serde_json::Value>) -> Option<String> {
    use serde_json::Value;
    let details = details?;
    if let Value::Object(map) = details {
        for key in ["resets_at", "reset_at", "resetsAt", "resetAt", "reset"] {
            match map.get(key) {
                Some(Value::String(s)) if !s.trim().is_empty() => return Some(one(s)),
                Some(Value::Number(n)) => {
                    return n.as_u64().map(crate::clock::rfc3339);
                }
                _ => {}
            }
        }
        return None;
    }
    let text = details.as_str()?;
    let at = text.to_ascii_lowercase().find("resets at ")?;
    Some(one(&text[at + "resets at ".len()..]))
}

fn one(s: &str) -> String {
    crate::fmt::one_line(s, 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in [
            "rate_limit",
            "overloaded",
            "server_error",
            "billing_error",
            "authentication_failed",
            "max_output_tokens",
            "model_not_found",
        ] {
            assert_eq!(PauseReason::parse(Some(code)).as_str(), code);
        }
        assert_eq!(PauseReason::parse(None).as_str(), "unknown");
        assert_eq!(
            PauseReason::parse(Some("rate_limit")),
            PauseReason::RateLimit
        );
    }

    #[test]
    fn reset_times() {
        let j = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(reset_time(None), None);
        assert_eq!(
            reset_time(Some(&j(r#"{"resets_at":"2026-12-01T05:00:00Z"}"#))).as_deref(),
            Some("2026-12-01T05:00:00Z")
        );
        assert_eq!(
            reset_time(Some(&j(r#"{"resetsAt":1796097600}"#))).as_deref(),
            Some("2026-12-01T04:00:00Z")
        );
        assert_eq!(
            reset_time(Some(&j(r#""Usage limit reached; resets at 5pm (UTC)""#))).as_deref(),
            Some("5pm (UTC)")
        );
        assert_eq!(reset_time(Some(&j(r#"{"other":1}"#))), None);
    }
}
