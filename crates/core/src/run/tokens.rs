//! Token accounting from the stream's `usage`.
//!
//! Each `assistant` line repeats its message's usage (one line per content
//! block), as `message_start` reported it: the input side is exact, the
//! output is not final yet. The `result` line sums the whole turn exactly.
//! So: the context of the latest request comes from the assistant lines (it
//! drives rotation while the turn runs), and the totals from the `result`
//! lines, or, for a client that was stopped before its result, from the
//! assistant lines, one count per message.
//! Pure.

use super::events::Usage;
use std::collections::HashSet;

/// One iteration's tokens, as its stream goes by.
#[derive(Debug, Clone, Default)]
pub struct IterationTokens {
    seen: HashSet<String>,
    /// Usage of each distinct model request (first report of each message).
    streamed: Usage,
    /// Sum of the `result` lines (a session may have more than one turn).
    results: Usage,
    results_seen: u32,
    /// The context of the latest request.
    pub context: u64,
    /// The largest context any request of this iteration carried.
    pub peak_context: u64,
    /// Distinct model requests seen.
    pub requests: u64,
}

impl IterationTokens {
    /// A usage report from an assistant line. Returns the context when it is
    /// a request not seen before (the rotation check's input), else `None`.
    pub fn on_usage(&mut self, message_id: &str, usage: Usage) -> Option<u64> {
        if !self.seen.insert(message_id.to_string()) {
            return None;
        }
        self.streamed.add(usage);
        self.requests += 1;
        self.context = usage.context();
        self.peak_context = self.peak_context.max(self.context);
        Some(self.context)
    }

    /// A `result` line's usage.
    pub fn on_result(&mut self, usage: Usage) {
        self.results.add(usage);
        self.results_seen += 1;
    }

    /// The iteration's totals: exact from the results when there were any.
    pub fn totals(&self) -> Usage {
        if self.results_seen > 0 {
            self.results
        } else {
            self.streamed
        }
    }
}

/// `950`, `12.3k`, `1.2M`.
pub fn human(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => trim_point(format!("{:.1}", n as f64 / 1e3)) + "k",
        _ => trim_point(format!("{:.1}", n as f64 / 1e6)) + "M",
    }
}

fn trim_point(s: String) -> String {
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(input: u64, output: u64, cache_read: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_creation: 0,
        }
    }

    #[test]
    fn one_count_per_message_and_the_latest_context() {
        let mut t = IterationTokens::default();
        assert_eq!(t.on_usage("m1", u(10, 1, 90)), Some(100));
        // The same message again (its tool_use block): not counted twice.
        assert_eq!(t.on_usage("m1", u(10, 1, 90)), None);
        assert_eq!(t.on_usage("m2", u(5, 1, 40)), Some(45));
        assert_eq!(t.requests, 2);
        assert_eq!(t.context, 45);
        assert_eq!(t.peak_context, 100);
        assert_eq!(t.totals(), u(15, 2, 130));
        // The result's figures are exact and win.
        t.on_result(u(15, 40, 130));
        assert_eq!(t.totals(), u(15, 40, 130));
        t.on_result(u(1, 1, 0));
        assert_eq!(t.totals(), u(16, 41, 130));
    }

    #[test]
    fn human_counts() {
        assert_eq!(human(950), "950");
        assert_eq!(human(1_000), "1k");
        assert_eq!(human(12_345), "12.3k");
        assert_eq!(human(1_250_000), "1.2M");
    }
}
