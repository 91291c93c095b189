//! `ralph merge --audit`: whether the loop branch's history from BASE to
//! TIP is exactly what `ralph merge` makes, and nothing else. Run where no
//! story code ran (the workflow's push job), it catches a commit a process
//! left behind by a story's check made on the loop branch after `ralph
//! merge` ended. Per story, `Base::merge` makes two commits on the first
//! parent chain: a merge of the story branch's tip X (`ralph: merge story
//! ID ...`), then the PRD with that story's `passes` set (`ralph: story ID
//! passes ...`). Accepted: the merge's tree is the one git computes for
//! merging the previous commit and X (nothing slipped in); X changes none
//! of the paths `merge::refusals` fences; the next commit changes the PRD
//! only, by `prd_edit::mark_passing` of the story the merge names, which
//! could run then (`story::may_run`); or, for a merge whose check failed
//! and could not be reset away, git's revert of it back to the previous
//! tree (`git::undo_merge`). Does I/O (git through
//! `crate::parallel::branches`: bounded, nothing of the repository's
//! configuration runs).

use super::merge::{refusals, story_of_branch};
use super::merge_queue::{Base, changed_paths};
use super::story::may_run;
use crate::git::Git;
use crate::parallel::branches;
use crate::prd::Prd;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The history is ralph's merges and passes flips only.
pub(crate) const EXIT_CLEAN: u8 = 0;
/// A commit ralph did not make (or not so): see the report.
pub(crate) const EXIT_TAMPERED: u8 = 1;

/// A commit the audit does not accept, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Objection {
    pub commit: String,
    pub why: String,
}

/// What the audit found between `base` and `tip`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Audit {
    pub base: String,
    pub tip: String,
    /// The stories merged and marked passing, in order, as far as accepted.
    pub stories: Vec<String>,
    /// Empty when the history is accepted; else the first commit refused.
    pub refused: Option<Objection>,
}

impl Audit {
    pub fn exit_code(&self) -> u8 {
        if self.refused.is_none() {
            EXIT_CLEAN
        } else {
            EXIT_TAMPERED
        }
    }

    pub fn text(&self) -> String {
        match &self.refused {
            None => format!(
                "ralph merge --audit: {}..{} is ralph's merges only ({} stories: {})\n",
                short(&self.base),
                short(&self.tip),
                self.stories.len(),
                self.stories.join(", ")
            ),
            Some(f) => format!(
                "ralph merge --audit: refused at {}: {}\n",
                short(&f.commit),
                f.why
            ),
        }
    }
}

fn short(c: &str) -> &str {
    &c[..c.len().min(12)]
}

/// One commit of the first-parent chain: its id, parents, message.
struct Commit {
    id: String,
    parents: Vec<String>,
    message: String,
}

/// Audit `base..tip` in `root`, which has `base` checked out (the pinned
/// files are read from its tree, as `ralph merge` read them). `Err`: a
/// usage error (no such revision, no PRD at `base`, another checkout).
/// `branches`: when given, the story branches offered to `ralph merge`
/// (as the story jobs handed them on): each merge must merge the tip of
/// the one named after its story (`merge::story_of_branch`).
pub fn audit(
    root: &Path,
    prd_file: &str,
    base: &str,
    tip: &str,
    branches: Option<&[String]>,
) -> Result<Audit, String> {
    let base = rev(root, base)?;
    let tip = rev(root, tip)?;
    if branches::head(root)? != base {
        return Err(format!(
            "check out {base} first: the pinned files are read from its tree"
        ));
    }
    let start = Base::read(root, prd_file, git_timeout())?;
    let mut audit = Audit {
        base: base.clone(),
        tip: tip.clone(),
        stories: Vec::new(),
        refused: None,
    };
    let chain = match chain(root, &base, &tip) {
        Ok(c) => c,
        Err(f) => {
            audit.refused = Some(f);
            return Ok(audit);
        }
    };
    let tips: Option<BTreeMap<String, String>> = branches.map(|list| {
        list.iter()
            .filter_map(|b| Some((story_of_branch(&start.prd, b)?, rev(root, b).ok()?)))
            .collect()
    });
    let mut prev = base;
    let mut prd = start.prd.clone();
    let pins = start.pins().clone();
    let mut commits = chain.into_iter();
    while let Some(merge) = commits.next() {
        let step = judge_merge(root, prd_file, &pins, &prev, &merge).and_then(|()| {
            let after = commits.next().ok_or_else(|| Objection {
                commit: merge.id.clone(),
                why: "a merge with no commit marking its story passing after it".into(),
            })?;
            if is_undo(root, &prev, &merge, &after) {
                return Ok((None, prd.clone(), after));
            }
            let (id, next) = judge_flip(root, prd_file, &prd, &merge, &after)?;
            offered(tips.as_ref(), &id, &merge)?;
            Ok((Some(id), next, after))
        });
        match step {
            Ok((id, next, after)) => {
                audit.stories.extend(id);
                prd = next;
                prev = after.id;
            }
            Err(f) => {
                audit.refused = Some(f);
                break;
            }
        }
    }
    Ok(audit)
}

fn git_timeout() -> std::time::Duration {
    crate::git::WRITE_TIMEOUT
}

fn rev(root: &Path, name: &str) -> Result<String, String> {
    branches::git(
        root,
        &["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")],
    )
    .map(|s| s.trim().to_string())
    .map_err(|_| format!("no commit {name} here"))
}

/// The commits from `base` (exclusive) to `tip` along first parents,
/// oldest first; refused when `base` is not on that chain.
fn chain(root: &Path, base: &str, tip: &str) -> Result<Vec<Commit>, Objection> {
    let refuse = |why: String| Objection {
        commit: tip.to_string(),
        why,
    };
    let range = format!("{base}..{tip}");
    let out = branches::git(
        root,
        &[
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H %P%x00%B%x00",
            &range,
        ],
    )
    .map_err(refuse)?;
    let mut commits = Vec::new();
    let mut parts = out.split('\0');
    while let (Some(head), Some(message)) = (parts.next(), parts.next()) {
        let mut ids = head.split_whitespace().map(str::to_string);
        let Some(id) = ids.next() else { break };
        commits.push(Commit {
            id,
            parents: ids.collect(),
            message: message.trim().to_string(),
        });
    }
    let mut expected = base.to_string();
    for c in &commits {
        if c.parents.first() != Some(&expected) {
            return Err(Objection {
                commit: c.id.clone(),
                why: format!(
                    "its first parent is not {}: not built on the loop branch",
                    short(&expected)
                ),
            });
        }
        expected = c.id.clone();
    }
    if expected != tip {
        return Err(refuse(format!(
            "{} is not on its first-parent chain",
            short(base)
        )));
    }
    Ok(commits)
}

/// A merge as `ralph merge` makes it on `prev`: two parents, the first
/// `prev`; the tree git makes of merging the second; nothing fenced in it.
fn judge_merge(
    root: &Path,
    prd_file: &str,
    pins: &BTreeMap<String, String>,
    prev: &str,
    m: &Commit,
) -> Result<(), Objection> {
    let no = |why: String| Objection {
        commit: m.id.clone(),
        why,
    };
    if !m.message.starts_with("ralph: merge story ") || m.parents.len() != 2 {
        return Err(no("not a merge of a story branch by ralph".into()));
    }
    let x = &m.parents[1];
    let merged = branches::git(root, &["merge-tree", "--write-tree", prev, x])
        .map_err(|e| no(format!("{} does not merge cleanly: {e}", short(x))))?;
    let want = merged.lines().next().unwrap_or_default().trim().to_string();
    let tree = branches::git(root, &["rev-parse", &format!("{}^{{tree}}", m.id)])
        .map_err(no)?
        .trim()
        .to_string();
    if tree != want {
        return Err(no(format!(
            "its tree is not the merge of {} and {}: something was added to the merge",
            short(prev),
            short(x)
        )));
    }
    let changed = changed_paths(root, &format!("{prev}...{x}")).map_err(no)?;
    let refused = refusals(&changed, prd_file, pins);
    if !refused.is_empty() {
        return Err(no(format!(
            "it merges a branch that changes {}",
            crate::parallel::refuse::listed(&refused)
        )));
    }
    Ok(())
}

/// With the offered branches known: `m` merges the tip of story `id`'s.
fn offered(tips: Option<&BTreeMap<String, String>>, id: &str, m: &Commit) -> Result<(), Objection> {
    let Some(tips) = tips else { return Ok(()) };
    if tips.get(id) == m.parents.get(1) {
        return Ok(());
    }
    Err(Objection {
        commit: m.id.clone(),
        why: format!(
            "it merges {}, not the tip of story {id}'s branch as its story job handed it on",
            short(m.parents.get(1).map_or("", String::as_str))
        ),
    })
}

/// The commit after a merge whose check failed, when `git::undo_merge`
/// could not reset: git's revert of the merge, back to `prev`'s tree.
fn is_undo(root: &Path, prev: &str, m: &Commit, after: &Commit) -> bool {
    let tree = |c: &str| branches::git(root, &["rev-parse", &format!("{c}^{{tree}}")]).ok();
    after.parents == [m.id.clone()]
        && after.message.starts_with("Revert \"ralph: merge story ")
        && tree(&after.id).is_some_and(|t| Some(t) == tree(prev))
}

/// The commit after a merge: the PRD only, one story's `passes` set by
/// `mark_passing`, the story the merge names, runnable before it. The
/// story and the PRD after it.
fn judge_flip(
    root: &Path,
    prd_file: &str,
    prd: &Prd,
    m: &Commit,
    f: &Commit,
) -> Result<(String, Prd), Objection> {
    let no = |why: String| Objection {
        commit: f.id.clone(),
        why,
    };
    if f.parents.len() != 1 {
        return Err(no(
            "not ralph's commit marking a story passing (a merge)".into()
        ));
    }
    let changed = changed_paths(root, &format!("{}..{}", m.id, f.id)).map_err(no)?;
    if changed != [prd_file.to_string()] {
        return Err(no(format!(
            "it changes {} (ralph's commit after a merge changes {prd_file} only)",
            changed.join(", ")
        )));
    }
    let show = |c: &str| {
        Git::read(root)
            .text(&["show", &format!("{c}:{prd_file}")])
            .map_err(|e| no(e.to_string()))
    };
    let (before, after) = (show(&m.id)?, show(&f.id)?);
    let story = prd
        .stories
        .iter()
        .filter(|s| !s.passes)
        .find(|s| crate::prd_edit::mark_passing(&before, &s.id).as_deref() == Some(&after))
        .map(|s| s.id.clone())
        .ok_or_else(|| {
            no(format!(
                "its change to {prd_file} is not one story's `passes` set"
            ))
        })?;
    let named = m
        .message
        .strip_prefix(&format!("ralph: merge story {story}"))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '));
    let message = format!("ralph: story {story} passes (merged, its check passed)");
    if !named || f.message != message {
        return Err(no(format!(
            "it marks story {story} passing after {}, a merge of another story",
            short(&m.id)
        )));
    }
    if may_run(prd, &story) != Ok(false) {
        return Err(no(format!("story {story} could not run before it")));
    }
    let next = Prd::parse(&after).map_err(|e| no(e.to_string()))?;
    Ok((story, next))
}
