//! The rules of a loop across its session's life: pure. When a reminder is
//! injected at a session start, and when the session that follows a
//! `/clear` may take the loop over.
//!
//! Measured on Claude Code 2.1.328 (docs/client-measurements.md):
//! compaction keeps the session id and fires `SessionStart` with source
//! `compact`; `--resume`/`--continue` keep it too (source `resume`);
//! `--fork-session` gives a new id; `/clear` fires `SessionEnd` with reason
//! `clear` for the old id and at once `SessionStart` with source `clear` and
//! a new id, in the same client process (`CLAUDE_PID`).
//! Pure.

/// How long after the owner's `/clear` its successor may claim the loop.
/// The two events come within milliseconds of each other.
pub(crate) const HANDOVER_SECS: u64 = 10;

/// Why a session started: `SessionStart`'s `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Startup,
    Resume,
    Clear,
    Compact,
    Other,
}

impl Source {
    pub(crate) fn parse(source: Option<&str>) -> Source {
        match source {
            Some("startup") => Source::Startup,
            Some("resume") => Source::Resume,
            Some("clear") => Source::Clear,
            Some("compact") => Source::Compact,
            _ => Source::Other,
        }
    }

    /// Does a session starting so lose what it knew of the loop? After a
    /// compaction or a resume it may not remember the loop's rules; a
    /// cleared session knows nothing (it is reminded once it took the loop).
    pub(crate) fn reminds(self) -> bool {
        matches!(self, Source::Compact | Source::Resume | Source::Clear)
    }
}

/// The owner's session ended with `/clear`: who, when, in which client process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handover {
    pub session: String,
    /// Unix time.
    pub at: u64,
    /// The client's process id (`CLAUDE_PID`), when the hook was told it.
    pub pid: Option<u32>,
}

impl Handover {
    /// `SESSION UNIX_TIME [PID]`.
    pub(crate) fn render(&self) -> String {
        match self.pid {
            Some(pid) => format!("{} {} {pid}\n", self.session, self.at),
            None => format!("{} {}\n", self.session, self.at),
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Handover> {
        let mut words = text.split_whitespace();
        let session = words.next()?.to_string();
        let at = words.next()?.parse().ok()?;
        let pid = words.next().and_then(|p| p.parse().ok());
        Some(Handover { session, at, pid })
    }
}

/// May the session starting after a `/clear` take over a loop owned by
/// `owner`? Only when the owner's own session ended with `/clear`
/// (`handover`) moments ago, in the same client process when both hooks
/// were told it. Anything else (another terminal, a stale hand-over, a
/// fork) cannot take a loop.
pub(crate) fn may_rebind(handover: &Handover, owner: &str, now: u64, pid: Option<u32>) -> bool {
    let fresh = now.saturating_sub(handover.at) <= HANDOVER_SECS && handover.at <= now + 1;
    let same_process = match (handover.pid, pid) {
        (Some(a), Some(b)) => a == b,
        (Some(_), None) => false,
        (None, _) => true,
    };
    !owner.is_empty() && handover.session == owner && fresh && same_process
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_owners_fresh_clear_in_the_same_process_hands_over() {
        let h = Handover {
            session: "old".into(),
            at: 100,
            pid: Some(42),
        };
        assert_eq!(Handover::parse(&h.render()), Some(h.clone()));
        assert!(may_rebind(&h, "old", 101, Some(42)));
        assert!(!may_rebind(&h, "old", 101, Some(43)), "another client");
        assert!(!may_rebind(&h, "old", 101, None));
        assert!(
            !may_rebind(&h, "old", 100 + HANDOVER_SECS + 1, Some(42)),
            "stale"
        );
        assert!(!may_rebind(&h, "other", 101, Some(42)), "not the owner's");
        assert!(!may_rebind(&h, "", 101, Some(42)));
        let no_pid = Handover { pid: None, ..h };
        assert!(may_rebind(&no_pid, "old", 105, Some(7)));
        assert_eq!(Handover::parse("x"), None);
    }

    #[test]
    fn sources() {
        assert!(Source::parse(Some("compact")).reminds());
        assert!(Source::parse(Some("resume")).reminds());
        assert!(!Source::parse(Some("startup")).reminds());
        assert_eq!(Source::parse(Some("new-kind")), Source::Other);
    }
}
