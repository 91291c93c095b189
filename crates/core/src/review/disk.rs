//! The reviewers' verdicts on disk (`review.json` in the loop's folder,
//! sealed): the typed read beside its type. Does I/O.

use super::ReviewLog;
use crate::state_file::OwnRecords;
use crate::store;
use std::path::Path;

/// The reviewers' verdicts on file at `path`.
pub(crate) fn read_log(path: &Path) -> Option<ReviewLog> {
    store::read_hint(path).and_then(|t| ReviewLog::parse(&t))
}

/// The reviewers' verdicts as `records` read them with their seal (none,
/// or not a log: an empty one).
pub(crate) fn log_of(records: &OwnRecords) -> ReviewLog {
    (records.review.text.as_deref())
        .and_then(ReviewLog::parse)
        .unwrap_or_default()
}
