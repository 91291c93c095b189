//! The reviewers' verdicts on disk (`review.json` in the loop's folder,
//! sealed): the typed read beside its type. Does I/O.

use super::ReviewLog;
use crate::paths::{LoopPaths, OwnRecords, read_hint};

impl LoopPaths {
    /// The reviewers' verdicts on file.
    pub(crate) fn read_review_log(&self) -> Option<ReviewLog> {
        read_hint(&self.review).and_then(|t| ReviewLog::parse(&t))
    }
}

impl OwnRecords {
    /// The reviewers' verdicts as read with their seal (none, or not a
    /// log: an empty one).
    pub(crate) fn review_log(&self) -> ReviewLog {
        (self.review.text.as_deref())
            .and_then(ReviewLog::parse)
            .unwrap_or_default()
    }
}
