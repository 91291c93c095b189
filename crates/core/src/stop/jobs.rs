//! The work a Stop hands back to run outside the loop lock before it is
//! decided (`stop::Step::RunChecks`): story checks, the loop's check, the
//! iteration's score, reviewers, the baselines a claim waits for; and how
//! long the watchdog lets them take. Pure (they run in `stop::Jobs::run`).

use super::gather::StopInputs;
use super::measure::Measure;
use crate::review::reviewers::Brief;
use std::time::Duration;

/// Checks to run outside the lock, before the Stop is decided.
#[derive(Debug)]
pub struct Jobs {
    /// `(story id, command)`.
    pub stories: Vec<(String, String)>,
    /// The loop's own `verify`, when completion is claimed.
    pub loop_verify: Option<String>,
    pub timeout: Duration,
    /// The tree they run on, recorded with their results.
    pub fingerprint: Option<String>,
    /// Reviewers to run, once every check passed and completion stands.
    pub reviews: Option<ReviewJob>,
    /// The measure to score the tree with (`stop::measure`).
    pub(crate) score: Option<Measure>,
    /// The commands whose baseline a claim waits for (or takes) first.
    pub(crate) baselines: Vec<String>,
    /// The iteration the checks are for.
    pub(crate) iteration: u64,
}

/// The reviewers a Stop runs (see `review`).
#[derive(Debug)]
pub struct ReviewJob {
    /// Each reviewer with what it is told.
    pub reviews: Vec<(String, Brief)>,
    pub command: Option<String>,
    pub timeout: Duration,
    /// Stories' reviews (`--review story`), not the final review.
    pub stories: bool,
}

impl Jobs {
    /// How long they may take in all, for the watchdog: checks one after
    /// another, reviewers side by side.
    pub fn budget(&self) -> Duration {
        // The score may run twice: again when it names a regression.
        let checks = self.stories.len()
            + usize::from(self.loop_verify.is_some())
            + 2 * usize::from(self.score.is_some())
            + self.baselines.len();
        let reviews = self.reviews.as_ref().map_or(Duration::ZERO, |r| r.timeout);
        // A score's commit of the tree: a few git calls, each bounded.
        let snapshot = if self.score.is_some() {
            SNAPSHOT_MARGIN
        } else {
            Duration::ZERO
        };
        // A baseline's worktree, made and removed.
        let trees = crate::suite::baseline::WORKTREE_MARGIN * self.baselines.len() as u32;
        self.timeout * checks as u32 + reviews + snapshot + trees
    }
}

/// Time allowed, beside the score itself, for the commit of the scored tree.
const SNAPSHOT_MARGIN: Duration = Duration::from_secs(60);

/// What a Stop has to run before it is decided: story checks, the loop's
/// check, story reviews, the score, the claim's baselines.
type Due = (
    Vec<(String, String)>,
    Option<String>,
    Option<ReviewJob>,
    Option<Measure>,
    Vec<String>,
);

impl Jobs {
    /// The work due before this Stop is decided, if any.
    pub(super) fn of(inputs: &StopInputs, due: Due) -> Option<Jobs> {
        let (stories, loop_verify, reviews, score, baselines) = due;
        let any = !stories.is_empty() || loop_verify.is_some() || reviews.is_some();
        (any || score.is_some() || !baselines.is_empty()).then(|| Jobs {
            stories,
            loop_verify,
            score,
            baselines,
            iteration: inputs.state.iteration,
            timeout: Duration::from_secs(inputs.state.verify_timeout),
            fingerprint: inputs.fingerprint.clone(),
            reviews,
        })
    }
}
