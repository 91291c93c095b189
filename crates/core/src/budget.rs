//! Budgets: how many tokens, how much wall time and how many dollars a loop
//! may spend, what it has spent, and the price table the cost is counted
//! with. Pure.
//!
//! Tokens are counted from the `usage` the transcript records for each
//! assistant message of a turn (input, output, cache reads and cache writes;
//! one message spans several lines with the same `message.id` and is counted
//! once), added up at each Stop from the turn that Stop already reads. The
//! runtime is the wall time since the loop started. The cost is the tokens
//! priced by [`PRICES`].

use crate::run::events::Usage;
use std::fmt;

/// The date of [`PRICES`].
pub(crate) const PRICES_DATE: &str = "2026-12-01";

/// US dollars per million tokens, for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Price {
    pub input: Usd,
    pub output: Usd,
    pub cache_read: Usd,
    pub cache_write: Usd,
}

const fn per_mtok(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Price {
    // Arguments in micro-dollars per million tokens.
    Price {
        input: Usd(input),
        output: Usd(output),
        cache_read: Usd(cache_read),
        cache_write: Usd(cache_write),
    }
}

/// What Claude Code 2.1.328 charges per million tokens (measured on
/// [`PRICES_DATE`] from the client's own `total_cost_usd`, one scripted reply
/// of a million tokens of each kind per model). A dated id
/// (`claude-sonnet-4-5-20250929`) is priced as its family.
pub(crate) const PRICES: &[(&str, Price)] = &[
    (
        "claude-opus-5-5",
        per_mtok(4_000_000, 20_000_000, 200_000, 5_000_000),
    ),
    (
        "claude-opus-5",
        per_mtok(5_000_000, 25_000_000, 500_000, 6_250_000),
    ),
    (
        "claude-sonnet-5-5",
        per_mtok(2_000_000, 10_000_000, 100_000, 2_500_000),
    ),
    (
        "claude-sonnet-5",
        per_mtok(2_000_000, 10_000_000, 200_000, 2_500_000),
    ),
    (
        "claude-haiku-5-5",
        per_mtok(500_000, 500_000, 50_000, 625_000),
    ),
    (
        "claude-fable-5-2",
        per_mtok(8_000_000, 40_000_000, 200_000, 10_000_000),
    ),
    (
        "claude-opus-4-5",
        per_mtok(5_000_000, 25_000_000, 500_000, 6_250_000),
    ),
    (
        "claude-sonnet-4-5",
        per_mtok(3_000_000, 15_000_000, 300_000, 3_750_000),
    ),
    (
        "claude-haiku-4-5",
        per_mtok(1_000_000, 5_000_000, 100_000, 1_250_000),
    ),
];

/// The price of `model`: its own row, or the row of the id without a date
/// suffix (`-20250929`, `-20250929-v1`).
pub(crate) fn price(model: &str) -> Option<Price> {
    let find = |id: &str| PRICES.iter().find(|(m, _)| *m == id).map(|(_, p)| *p);
    find(model).or_else(|| {
        let base = model.strip_suffix("-v1").unwrap_or(model);
        let (family, date) = base.rsplit_once('-')?;
        (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()))
            .then(|| find(family))
            .flatten()
    })
}

/// The models [`PRICES`] knows, for an error message.
pub(crate) fn priced_models() -> String {
    let ids: Vec<&str> = PRICES.iter().map(|(m, _)| *m).collect();
    ids.join(", ")
}

/// An amount of US dollars, in millionths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Usd(pub u64);

impl Usd {
    /// `5`, `2.5`, `0.25`, `$3.10` (at most six decimals).
    pub fn parse(text: &str) -> Option<Usd> {
        let t = text.trim();
        let t = t.strip_prefix('$').unwrap_or(t);
        let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 6
        {
            return None;
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let frac: u64 = format!("{frac:0<6}").parse().ok()?;
        whole.checked_mul(1_000_000)?.checked_add(frac).map(Usd)
    }

    /// As kept in the state file: `1.234567`.
    pub fn exact(self) -> String {
        format!("{}.{:06}", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

impl fmt::Display for Usd {
    /// `$1.23` (cents), `$0.0042` below a cent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 > 0 && self.0 < 10_000 {
            write!(f, "${}", self.exact().trim_end_matches('0'))
        } else {
            let cents = (self.0 + 5_000) / 10_000;
            write!(f, "${}.{:02}", cents / 100, cents % 100)
        }
    }
}

/// One assistant message's usage, as the transcript records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageUsage {
    pub id: String,
    pub model: Option<String>,
    pub usage: Usage,
}

/// Every token a message used: input, output, cache reads and writes.
pub(crate) fn tokens(u: &Usage) -> u64 {
    u.input
        .saturating_add(u.output)
        .saturating_add(u.cache_read)
        .saturating_add(u.cache_creation)
}

/// What `u` costs at `p`.
pub(crate) fn cost(u: &Usage, p: &Price) -> Usd {
    let part = |n: u64, per_mtok: Usd| u128::from(n) * u128::from(per_mtok.0);
    let total = part(u.input, p.input)
        + part(u.output, p.output)
        + part(u.cache_read, p.cache_read)
        + part(u.cache_creation, p.cache_write);
    Usd(u64::try_from(total.div_ceil(1_000_000)).unwrap_or(u64::MAX))
}

/// A loop's budgets and what it spent. Each is off (`None`) unless given at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budgets {
    pub max_tokens: Option<u64>,
    /// Tokens spent so far (counted while a token or cost budget is set,
    /// or the loop is measured: `LoopState::counts_tokens`).
    pub tokens: u64,
    pub max_runtime_secs: Option<u64>,
    pub max_cost: Option<Usd>,
    pub cost: Usd,
    /// The model the cost is priced as when a message names no known one.
    pub model: Option<String>,
    /// The last message whose usage was counted (`message.id`): the next
    /// Stop also counts the messages written after it that the transcript
    /// had not caught up with then.
    pub usage_seen: Option<String>,
}

/// Seconds from `started_at` (RFC 3339, the state's) to Unix time `now`.
pub(crate) fn elapsed_secs(started_at: Option<&str>, now: u64) -> Option<u64> {
    let start = crate::clock::parse_rfc3339(started_at?)?;
    Some(now.saturating_sub(start))
}

/// Which budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Tokens,
    Runtime,
    Cost,
}

impl Budget {
    /// The option that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Budget::Tokens => "--max-tokens",
            Budget::Runtime => "--max-runtime",
            Budget::Cost => "--max-cost",
        }
    }
}

impl Budgets {
    /// Any budget at all.
    pub fn any(&self) -> bool {
        self.max_tokens.is_some() || self.max_runtime_secs.is_some() || self.max_cost.is_some()
    }

    /// Are tokens counted (a token or a cost budget)?
    pub(crate) fn counts_tokens(&self) -> bool {
        self.max_tokens.is_some() || self.max_cost.is_some()
    }

    /// The budgets after a turn that used `messages`, counted when `count`
    /// (`LoopState::counts_tokens`).
    pub(crate) fn after_turn(&self, messages: &[MessageUsage], count: bool) -> Budgets {
        let mut next = self.clone();
        if !count {
            return next;
        }
        if let Some(last) = messages.last() {
            next.usage_seen = Some(last.id.clone());
        }
        // Each message once: a transcript read before the turn was written
        // (the wait's bound passed) may end with messages already counted.
        let seen = self.usage_seen.as_deref();
        let counted = seen.and_then(|id| messages.iter().position(|m| m.id == id));
        let fresh = counted.map_or(messages, |i| &messages[i + 1..]);
        for m in fresh {
            next.tokens = next.tokens.saturating_add(tokens(&m.usage));
            let model = m.model.as_deref().filter(|m| price(m).is_some());
            let priced = model.or(self.model.as_deref()).and_then(price);
            if let Some(p) = priced.filter(|_| self.max_cost.is_some()) {
                next.cost = Usd(next.cost.0.saturating_add(cost(&m.usage, &p).0));
            }
        }
        next
    }

    /// The first budget spent, `elapsed_secs` after the loop started
    /// (tokens, then cost, then time).
    pub fn spent(&self, elapsed_secs: Option<u64>) -> Option<Budget> {
        if self.max_tokens.is_some_and(|max| self.tokens >= max) {
            Some(Budget::Tokens)
        } else if self.max_cost.is_some_and(|max| self.cost >= max) {
            Some(Budget::Cost)
        } else if let (Some(max), Some(elapsed)) = (self.max_runtime_secs, elapsed_secs) {
            (elapsed >= max).then_some(Budget::Runtime)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cache_read: u64, cache_creation: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_creation,
        }
    }

    #[test]
    fn dollars_parse_and_print() {
        assert_eq!(Usd::parse("5"), Some(Usd(5_000_000)));
        assert_eq!(Usd::parse("$2.5"), Some(Usd(2_500_000)));
        assert_eq!(Usd::parse(".25"), Some(Usd(250_000)));
        assert_eq!(Usd::parse("0.000001"), Some(Usd(1)));
        for bad in ["", ".", "1.0000001", "-1", "1e3", "one", "1.2.3"] {
            assert_eq!(Usd::parse(bad), None, "{bad}");
        }
        assert_eq!(Usd(1_234_567).to_string(), "$1.23");
        assert_eq!(Usd(4_200).to_string(), "$0.0042");
        assert_eq!(Usd(0).to_string(), "$0.00");
        assert_eq!(Usd(1_234_567).exact(), "1.234567");
        assert_eq!(Usd::parse(&Usd(1_234_567).exact()), Some(Usd(1_234_567)));
    }

    #[test]
    fn prices_by_model_and_dated_ids() {
        let sonnet = price("claude-sonnet-4-5").unwrap();
        assert_eq!(price("claude-sonnet-4-5-20250929"), Some(sonnet));
        assert_eq!(price("claude-sonnet-4-5-20250929-v1"), Some(sonnet));
        assert_eq!(price("claude-foo-1"), None);
        assert_eq!(price("claude-sonnet-4-5-x"), None);
        // The client's own figure for 100 in + 7 out on claude-opus-5-5: $0.00054.
        let p = price("claude-opus-5-5").unwrap();
        assert_eq!(cost(&usage(100, 7, 0, 0), &p), Usd(540));
        assert_eq!(
            cost(&usage(0, 0, 1_000_000, 1_000_000), &sonnet),
            Usd(4_050_000)
        );
    }

    #[test]
    fn turns_add_up_and_budgets_run_out_in_order() {
        let b = Budgets {
            max_tokens: Some(1_000),
            max_cost: Some(Usd(1_000)),
            model: Some("claude-opus-5-5".into()),
            ..Budgets::default()
        };
        let turn = [
            MessageUsage {
                id: "m1".into(),
                model: None,
                usage: usage(100, 7, 0, 0),
            },
            MessageUsage {
                id: "m2".into(),
                model: Some("claude-sonnet-4-5".into()),
                usage: usage(300, 100, 50, 0),
            },
        ];
        let after = b.after_turn(&turn, b.counts_tokens());
        assert_eq!(after.tokens, 557);
        assert_eq!(after.usage_seen.as_deref(), Some("m2"));
        // 540 at the loop's model + 900 + 1500 + 15 at sonnet's.
        assert_eq!(after.cost, Usd(540 + 2_415));
        assert_eq!(after.spent(None), Some(Budget::Cost));
        // The same messages read again (a late transcript) count once.
        assert_eq!(after.after_turn(&turn, true).tokens, 557);
        let next_turn = turn.clone().map(|m| MessageUsage {
            id: format!("{}-next", m.id),
            ..m
        });
        let more = after.after_turn(&next_turn, true);
        assert_eq!(more.spent(None), Some(Budget::Tokens));
        let timed = Budgets {
            max_runtime_secs: Some(60),
            ..Budgets::default()
        };
        assert_eq!(timed.spent(Some(59)), None);
        assert_eq!(timed.spent(Some(60)), Some(Budget::Runtime));
        assert_eq!(
            timed.after_turn(&turn, timed.counts_tokens()).tokens,
            0,
            "not counted without a budget"
        );
    }
}
