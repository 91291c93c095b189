//! The reviewers' verdicts on disk (`review.json` in the loop's folder,
//! sealed): the typed read beside its type. Does I/O.

use super::ReviewLog;
use crate::paths::{LoopPaths, read_hint};

impl LoopPaths {
    /// The reviewers' verdicts on file.
    pub fn read_review_log(&self) -> Option<ReviewLog> {
        read_hint(&self.review).and_then(|t| ReviewLog::parse(&t))
    }
}
