//! The measure at a glance, as status, the status line and the report show
//! it: the score now and its trend, the best and when it was reached, how
//! many scored iterations since, what a point of score cost, and the curve
//! as a line of blocks. Pure.

use super::history::History;
use super::{Runner, trend};
use serde::Serialize;

/// Where the loop's measure stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreSummary {
    /// The command that measures, and for which story (PRD mode).
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub story: Option<String>,
    /// `tests 41/50`, `score 87.5`, `check fails`.
    pub now: String,
    /// Tests passed and failed now (a runner's count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<u32>,
    /// `↑3`, `↓1`, `=`, or empty (first score, a pass/fail check).
    pub trend: String,
    pub best: String,
    pub best_iteration: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_commit: Option<String>,
    /// Scored iterations since the best that did not beat it.
    pub since_best: u32,
    /// The plateau rule's limit (0: off); whether it applies to this measure.
    pub max_plateau: u32,
    pub plateau_applies: bool,
    /// Iterations scored by this measure.
    pub scored: usize,
    /// Tokens spent per point gained from the first score to the best
    /// (when the client reports usage and something was gained).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_point: Option<u64>,
    /// Dollars per point, the same way (`--max-cost` with known prices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_point: Option<String>,
    /// Tokens spent since the best: what bought nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_since_best: Option<u64>,
    /// The measure's curve, one block per scored iteration.
    pub curve: String,
}

impl ScoreSummary {
    /// The summary of `history`'s current measure (`None`: nothing scored).
    pub fn of(history: &History, max_plateau: u32) -> Option<ScoreSummary> {
        let s = history.standing()?;
        let run = history.measure();
        let newest = &s.newest.score;
        let counts = newest.reader.counts_tests() || newest.reader == Runner::Exit;
        let first = &run[0];
        let gained = s.best.score.points() - first.score.points();
        let spent = s.best.tokens.saturating_sub(first.tokens);
        Some(ScoreSummary {
            command: s.newest.command.clone(),
            story: s.newest.story.clone(),
            now: newest.label(),
            passed: counts.then_some(newest.passed),
            failed: counts.then_some(newest.failed),
            trend: trend(newest, s.previous.map(|p| &p.score)),
            best: s.best.score.label(),
            best_iteration: s.best.iteration,
            best_commit: s.best.commit.clone(),
            since_best: s.since_best,
            max_plateau,
            plateau_applies: max_plateau > 0 && s.best.score.reader.graded(),
            scored: run.len(),
            tokens_per_point: (gained > 0.0 && spent > 0).then(|| (spent as f64 / gained) as u64),
            cost_per_point: cost_per_point(first, s.best, gained),
            tokens_since_best: Some(s.newest.tokens.saturating_sub(s.best.tokens))
                .filter(|t| *t > 0),
            curve: sparkline(&run.iter().map(|e| e.score.points()).collect::<Vec<_>>()),
        })
    }

    /// `tests 41/50 ↑3`: the status line's words.
    pub(crate) fn glance(&self) -> String {
        if self.trend.is_empty() {
            self.now.clone()
        } else {
            format!("{} {}", self.now, self.trend)
        }
    }

    /// The lines `ralph status` prints.
    pub fn text(&self) -> String {
        let mut out = format!("  score:     {} ({})\n", self.glance(), self.command);
        let mut best = format!(
            "  best:      {} at iteration {}",
            self.best, self.best_iteration
        );
        if self.since_best > 0 {
            best.push_str(&format!(", {} scored since", self.since_best));
            if self.plateau_applies {
                best.push_str(&format!(" (stops at {}: --max-plateau)", self.max_plateau));
            }
        }
        out.push_str(&best);
        out.push('\n');
        let mut curve = format!("  curve:     {}", self.curve);
        if let Some(t) = self.tokens_per_point {
            curve.push_str(&format!(" · {} tokens a point", crate::fmt::tokens(t)));
        }
        if let Some(c) = &self.cost_per_point {
            curve.push_str(&format!(" ({c} a point)"));
        }
        if let Some(t) = self.tokens_since_best {
            curve.push_str(&format!(" · {} since the best", crate::fmt::tokens(t)));
        }
        out.push_str(&curve);
        out.push('\n');
        out
    }
}

/// `$0.42` per point gained from `first` to `best`, when both have a cost.
fn cost_per_point(
    first: &super::history::IterationScore,
    best: &super::history::IterationScore,
    gained: f64,
) -> Option<String> {
    let dollars = |e: &super::history::IterationScore| e.cost.as_deref()?.parse::<f64>().ok();
    let spent = dollars(best)? - dollars(first)?;
    (gained > 0.0 && spent > 0.0).then(|| format!("${:.2}", spent / gained))
}

/// One block per value, from `▁` (the lowest) to `█` (the highest).
pub(crate) fn sparkline(values: &[f64]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|v| {
            if hi - lo < 1e-9 {
                BLOCKS[3]
            } else {
                BLOCKS[(((v - lo) / (hi - lo)) * 7.0).round() as usize]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_is_one_block_per_score() {
        assert_eq!(sparkline(&[1.0, 2.0, 3.0, 8.0]), "▁▂▃█");
        assert_eq!(sparkline(&[4.0, 4.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }
}
