//! `ralph plan`: the wave that can run now. The stories not passing whose
//! every dependency passes, in the order the loop would feed them
//! (`Prd::runnable`: priority, then file order), as a GitHub Actions matrix,
//! with how many stories are done, waiting and left. Pure: the caller reads
//! the PRD.

use crate::prd::{Prd, PrdError};
use serde::Serialize;

/// Stories can run: the matrix has at least one entry.
pub(crate) const EXIT_RUN: u8 = 0;
/// A usage error: no PRD, or one that does not parse.
pub const EXIT_USAGE: u8 = 2;
/// Every story passes: nothing to run, the loop is done.
pub(crate) const EXIT_DONE: u8 = 3;
/// Stories are left but none can run (a dependency cycle, or one on no
/// story): no wave will ever change that; a person must.
pub(crate) const EXIT_BLOCKED: u8 = 4;

/// What the plan says of the PRD as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaveStatus {
    Run,
    Done,
    Blocked,
}

/// One matrix entry: a job's `matrix.story` and `matrix.title`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatrixJob {
    pub story: String,
    pub title: String,
}

/// The matrix, in GitHub Actions' shape (`strategy.matrix: ${{ fromJSON(..) }}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub include: Vec<MatrixJob>,
}

/// A story that cannot run, and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    pub story: String,
    pub waits_for: Vec<String>,
}

/// The plan of one wave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wave {
    pub status: WaveStatus,
    pub matrix: Matrix,
    /// Stories that pass.
    pub done: usize,
    /// Stories that do not pass and cannot run yet (a dependency not passing).
    pub blocked: usize,
    /// Stories that do not pass (the matrix's and the blocked ones).
    pub remaining: usize,
    pub total: usize,
    /// When `status` is `blocked`: each story left and what it waits for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deadlock: Vec<Waiting>,
    /// One line for a person (and a step summary).
    pub message: String,
}

impl Wave {
    /// The plan of `text`, a prd.json; an error only when it cannot be read
    /// as one (a dependency cycle or a dependency on no story is a plan:
    /// blocked, with the stories named).
    pub fn of_text(text: &str) -> Result<Wave, PrdError> {
        let prd = Prd::parse(text)?;
        match prd.validate() {
            Ok(()) => Ok(Wave::of(&prd, None)),
            Err(e @ (PrdError::Cycle(_) | PrdError::DanglingDependency { .. })) => {
                Ok(Wave::of(&prd, Some(e.to_string())))
            }
            Err(e) => Err(e),
        }
    }

    /// The plan of a parsed PRD. `invalid`: why its dependencies can never
    /// be met (then nothing runs, whatever is runnable).
    pub fn of(prd: &Prd, invalid: Option<String>) -> Wave {
        let include: Vec<MatrixJob> = if invalid.is_some() {
            Vec::new()
        } else {
            prd.runnable()
                .into_iter()
                .map(|s| MatrixJob {
                    story: s.id.clone(),
                    title: s.title.clone(),
                })
                .collect()
        };
        let (done, total) = prd.progress();
        let remaining = total - done;
        let blocked = remaining - include.len();
        let status = if remaining == 0 {
            WaveStatus::Done
        } else if include.is_empty() {
            WaveStatus::Blocked
        } else {
            WaveStatus::Run
        };
        let deadlock = if status == WaveStatus::Blocked {
            prd.unmet_dependencies()
                .into_iter()
                .map(|(story, waits_for)| Waiting { story, waits_for })
                .collect()
        } else {
            Vec::new()
        };
        let message = message(status, &include, (done, total), &deadlock, invalid);
        Wave {
            status,
            matrix: Matrix { include },
            done,
            blocked,
            remaining,
            total,
            deadlock,
            message,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self.status {
            WaveStatus::Run => EXIT_RUN,
            WaveStatus::Done => EXIT_DONE,
            WaveStatus::Blocked => EXIT_BLOCKED,
        }
    }
}

fn message(
    status: WaveStatus,
    include: &[MatrixJob],
    (done, total): (usize, usize),
    deadlock: &[Waiting],
    invalid: Option<String>,
) -> String {
    match status {
        WaveStatus::Done => format!("every story passes ({done}/{total}): nothing to run"),
        WaveStatus::Run => format!(
            "{} to run now: {} ({done}/{total} pass)",
            crate::fmt::plural(include.len() as u64, "story"),
            include
                .iter()
                .map(|e| e.story.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        WaveStatus::Blocked => {
            let waits: Vec<String> = deadlock
                .iter()
                .map(|w| format!("{} waits for {}", w.story, w.waits_for.join(", ")))
                .collect();
            let why = invalid.map(|e| format!("{e}; ")).unwrap_or_default();
            format!(
                "blocked: no story can run ({done}/{total} pass): {why}{}",
                waits.join("; ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prd(stories: &str) -> String {
        format!(r#"{{"userStories":[{stories}]}}"#)
    }

    #[test]
    fn the_runnable_stories_in_priority_order_as_a_matrix() {
        let text = prd(r#"
            {"id":"A2","title":"a two","priority":1,"passes":false,"dependsOn":["A1"]},
            {"id":"A1","title":"a one","priority":3,"passes":false},
            {"id":"B1","title":"b one","priority":2,"passes":false},
            {"id":"C1","title":"c one","passes":true}"#);
        let plan = Wave::of_text(&text).unwrap();
        assert_eq!(plan.status, WaveStatus::Run);
        assert_eq!(plan.exit_code(), EXIT_RUN);
        let ids: Vec<&str> = plan
            .matrix
            .include
            .iter()
            .map(|e| e.story.as_str())
            .collect();
        assert_eq!(ids, ["B1", "A1"]);
        assert_eq!(
            (plan.done, plan.blocked, plan.remaining, plan.total),
            (1, 1, 3, 4)
        );
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["matrix"]["include"][0]["story"], "B1");
        assert_eq!(json["matrix"]["include"][1]["title"], "a one");
        assert_eq!(json["status"], "run");
        assert!(json.get("deadlock").is_none());
        assert_eq!(plan.message, "2 stories to run now: B1, A1 (1/4 pass)");
    }

    #[test]
    fn every_story_passing_is_done() {
        let plan = Wave::of_text(&prd(r#"{"id":"A","passes":true}"#)).unwrap();
        assert_eq!(plan.status, WaveStatus::Done);
        assert_eq!(plan.exit_code(), EXIT_DONE);
        assert!(plan.matrix.include.is_empty());
        assert_eq!(
            serde_json::to_value(&plan).unwrap()["matrix"]["include"],
            serde_json::json!([])
        );
    }

    #[test]
    fn a_cycle_is_blocked_and_named() {
        let text = prd(r#"
            {"id":"A","passes":true},
            {"id":"B","passes":false,"dependsOn":["C"]},
            {"id":"C","passes":false,"dependsOn":["B"]}"#);
        let plan = Wave::of_text(&text).unwrap();
        assert_eq!(plan.status, WaveStatus::Blocked);
        assert_eq!(plan.exit_code(), EXIT_BLOCKED);
        assert_eq!((plan.done, plan.blocked, plan.remaining), (1, 2, 2));
        assert_eq!(plan.deadlock[0].story, "B");
        assert_eq!(plan.deadlock[0].waits_for, ["C"]);
        assert!(plan.message.contains("cycle"), "{}", plan.message);
        assert!(plan.message.contains("B waits for C"), "{}", plan.message);
    }

    #[test]
    fn a_dependency_on_no_story_blocks_even_the_runnable_ones() {
        let text = prd(r#"
            {"id":"A","passes":false},
            {"id":"B","passes":false,"dependsOn":["Z"]}"#);
        let plan = Wave::of_text(&text).unwrap();
        assert_eq!(plan.status, WaveStatus::Blocked);
        assert!(
            plan.message.contains("Z (no such story)"),
            "{}",
            plan.message
        );
    }

    #[test]
    fn a_prd_that_does_not_parse_is_an_error() {
        assert!(Wave::of_text("{").is_err());
        assert!(Wave::of_text(r#"{"userStories":[{"id":"A"},{"id":"A"}]}"#).is_err());
    }
}
