//! Tests changed to pass: a test that failed at the baseline and passes
//! now while the file that holds it changed (its body emptied, its
//! assertion loosened, its expected value rewritten) cannot be told from
//! an honest fix by ralph, so each is named, with its file's diff since
//! the baseline, in the end message, the report and to the reviewers, for
//! a person or a reviewer to judge. Not a refusal. Does I/O (git, through
//! `git`, bounded and hermetic).

use crate::git::Git;
use std::path::Path;

/// Lines of a file's diff kept at most.
const DIFF_LINES: usize = 60;

/// A test that failed at the baseline and passes now, its file changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Turned {
    pub test: String,
    pub file: String,
    pub added: u32,
    pub removed: u32,
    /// The file's diff since the baseline's tree, cut at [`DIFF_LINES`].
    pub diff: String,
}

/// A candidate: a test that failed at the baseline and passes now, the
/// file that holds it (when the runner said), the baseline's commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub test: String,
    pub file: Option<String>,
    pub commit: String,
}

/// The candidates whose file differs between the baseline's commit and
/// the working tree of `root`. The working tree is committed as the
/// baseline's tree was (`score::tree::snapshot`: ralph's own index, the
/// files git does not track yet included), so a file the user never added
/// reads as it is, not as deleted, and a new one as added.
pub(crate) fn in_changed_files(root: &Path, candidates: &[Candidate]) -> Vec<Turned> {
    if candidates.iter().all(|c| c.file.is_none()) {
        return Vec::new();
    }
    let Some((_, now)) = crate::score::tree::snapshot(root, "ralph: the tree a claim ends on")
    else {
        return Vec::new();
    };
    candidates
        .iter()
        .filter_map(|c| {
            let file = c.file.as_deref()?;
            let numstat = Git::read(root)
                .text(&["diff", "--numstat", &c.commit, &now, "--", file])
                .ok()?;
            let (added, removed) = counts(&numstat)?;
            let diff = Git::read(root)
                .text(&["diff", &c.commit, &now, "--", file])
                .unwrap_or_default();
            Some(Turned {
                test: c.test.clone(),
                file: file.to_string(),
                added,
                removed,
                diff: cut(&diff),
            })
        })
        .collect()
}

/// `3\t1\tpath` → (3, 1); nothing changed (no line) → `None`.
fn counts(numstat: &str) -> Option<(u32, u32)> {
    let mut parts = numstat.lines().next()?.split('\t');
    let added = parts.next()?.parse().unwrap_or(0);
    let removed = parts.next()?.parse().unwrap_or(0);
    Some((added, removed))
}

fn cut(diff: &str) -> String {
    let lines: Vec<&str> = diff.lines().collect();
    if lines.len() <= DIFF_LINES {
        return diff.to_string();
    }
    let mut out = lines[..DIFF_LINES].join("\n");
    out.push_str(&format!("\n... ({} more lines)", lines.len() - DIFF_LINES));
    out
}

/// The end message's note: each test, its file and the size of the
/// change; empty when there is none.
pub(crate) fn note(turned: &[Turned]) -> String {
    if turned.is_empty() {
        return String::new();
    }
    let names: Vec<String> = turned
        .iter()
        .map(|t| format!("{} ({}: +{} −{})", t.test, t.file, t.added, t.removed))
        .collect();
    format!(
        "\n⚠️ Look at these: they failed at the loop's start and pass now, and the file that holds each was changed (a fix, or a test changed to pass: ralph cannot tell): {}.",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_and_the_note_read_as_the_user_sees_them() {
        assert_eq!(counts("3\t1\ttests/t.py\n"), Some((3, 1)));
        assert_eq!(counts(""), None);
        let t = Turned {
            test: "tests/t.py::test_leap".into(),
            file: "tests/t.py".into(),
            added: 1,
            removed: 3,
            diff: String::new(),
        };
        assert!(note(&[t]).contains("tests/t.py::test_leap (tests/t.py: +1 −3)"));
        assert_eq!(note(&[]), "");
        let long: String = (0..100).map(|i| format!("+{i}\n")).collect();
        assert!(cut(&long).ends_with("... (40 more lines)"));
    }
}
