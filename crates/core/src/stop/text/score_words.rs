//! The words of the loop's measure: the score and its trend after each
//! scored iteration (one line for the user, a paragraph for the model with
//! the tests that passed before and fail now), and the plateau's end.
//! Pure.

use super::super::decide::StopContext;
use super::super::measure::Scored;
use crate::fmt::plural;
use crate::score::history::{IterationScore, ScoreStanding};
use crate::score::tree::BEST_REF;
use crate::score::trend;

/// Regressions named at most.
const MAX_REGRESSIONS: usize = 5;

/// `tests 41/50 ↑3`, after the user's line of a scored iteration.
pub(super) fn short(cx: &StopContext) -> Option<String> {
    let s = cx.scored?.standing()?;
    let trend = trend(&s.newest.score, s.previous.map(|p| &p.score));
    let trend = if trend.is_empty() {
        String::new()
    } else {
        format!(" {trend}")
    };
    Some(format!("{}{trend}", s.newest.score.label()))
}

/// What the model is told of the score: where it stands, what regressed and
/// what changed since, how close the plateau rule is.
pub(super) fn note(cx: &StopContext) -> Option<String> {
    let scored = cx.scored?;
    let s = scored.standing()?;
    let mut out = format!("Score (`{}`): {}", s.newest.command, s.newest.score.label());
    if let Some(previous) = s.previous {
        let t = trend(&s.newest.score, Some(&previous.score));
        if !t.is_empty() {
            out.push_str(&format!(" ({t} since iteration {})", previous.iteration));
        }
    }
    if !std::ptr::eq(s.best, s.newest) {
        out.push_str(&format!(
            "; best {} at iteration {}",
            s.best.score.label(),
            s.best.iteration
        ));
    }
    out.push('.');
    let max = cx.state.max_plateau;
    if max > 0 && s.since_best > 0 && s.best.score.reader.graded() {
        out.push_str(&format!(
            " {} of {max} that changed the code without beating the best: at {max} the loop stops (--max-plateau).",
            plural(u64::from(s.since_best), "iteration")
        ));
    }
    out.push_str(&regressions(scored));
    if !scored.flaky.is_empty() {
        out.push_str(&format!(
            "\nFlaky (failed, then passed when ralph ran the check again on the same tree; not a regression, and not counted toward the best): {}.",
            scored.flaky.join(", ")
        ));
    }
    Some(out)
}

/// `t_parse passed at iteration 5 and fails now; since then you changed
/// src/date.rs.`, one line per test.
fn regressions(scored: &Scored) -> String {
    if scored.regressions.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nPassed before, fails now:");
    for r in scored.regressions.iter().take(MAX_REGRESSIONS) {
        out.push_str(&format!(
            "\n- {} passed at iteration {} and fails now",
            r.test, r.passed_at
        ));
        match scored.changed.iter().find(|(i, _)| *i == r.passed_at) {
            Some((_, files)) if !files.is_empty() => {
                out.push_str(&format!("; since then you changed {}", files.join(", ")));
            }
            _ => {}
        }
        out.push('.');
    }
    let more = scored.regressions.len().saturating_sub(MAX_REGRESSIONS);
    if more > 0 {
        out.push_str(&format!("\n- and {}.", plural(more as u64, "more test")));
    }
    out.push_str(
        "\nFix them before you go on: the work is not done while a test that passed fails.",
    );
    out
}

/// The plateau's end, for the user: the best score, its iteration and its
/// commit, how to go back to it, and what the iterations since cost.
pub(super) fn plateau_end(cx: &StopContext, after: &str) -> String {
    let Some(s) = cx.scored.and_then(Scored::standing) else {
        return format!(
            "🛑 Ralph loop stopped after {after}: the score stopped improving (--max-plateau {}).",
            cx.state.max_plateau
        );
    };
    let best = s.best;
    // The commit by its id: the ref is the agent's to move too.
    let kept = match &best.commit {
        Some(c) => {
            let short = &c[..c.len().min(12)];
            format!(
                " Its tree is commit {short} (also {BEST_REF}); to go back to it: git restore --source={short} -- ."
            )
        }
        None => String::new(),
    };
    format!(
        "🛑 Ralph loop stopped after {after}: {} in a row changed the code without beating the best score, {} at iteration {} (plateau rule, --max-plateau {}).{kept}{}",
        plural(u64::from(s.since_best), "iteration"),
        best.score.label(),
        best.iteration,
        cx.state.max_plateau,
        spent_since(&s)
    )
}

/// ` Best score: tests 43/50 at iteration 4 (kept as refs/ralph/best).`,
/// after an end that is not the plateau's ("" without scores).
pub(super) fn best_at_end(cx: &StopContext) -> String {
    let history = cx.scored.map_or(cx.scores, |s| &s.history);
    let Some(s) = history.standing() else {
        return String::new();
    };
    let kept = if s.best.commit.is_some() {
        format!(" (kept as {BEST_REF})")
    } else {
        String::new()
    };
    format!(
        " Best score: {} at iteration {}{kept}.",
        s.best.score.label(),
        s.best.iteration
    )
}

/// ` The 5 iterations since spent 310k tokens.`, when tokens are counted.
fn spent_since(s: &ScoreStanding) -> String {
    let spent = |e: &IterationScore| e.tokens;
    let tokens = spent(s.newest).saturating_sub(spent(s.best));
    if tokens == 0 {
        return String::new();
    }
    format!(
        " The iterations since spent {} tokens.",
        crate::fmt::tokens(tokens)
    )
}
