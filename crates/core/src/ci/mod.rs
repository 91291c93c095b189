//! A PRD's stories fanned out over machines (GitHub Actions runners, or any
//! engine that runs a matrix of jobs): ralph supplies the decisions the
//! engine lacks, and the engine schedules. `plan` is which stories can run
//! now (a wave); `story` is what one runner's `ralph run --story` records;
//! `merge` is the merge queue over story branches, on the rules the
//! `--parallel` queue uses (`parallel::refuse`, `prd_edit::mark_passing`,
//! checks pinned from the base). Pure (this file); each submodule says
//! whether it is pure.

pub mod audit;
pub mod branch;
pub mod merge;
pub mod merge_queue;
pub mod story;
pub mod wave;
