//! Tests changed to pass: a test that failed at the baseline and passes
//! now while the file that holds it changed (its body emptied, its
//! assertion loosened, its expected value rewritten) cannot be told from
//! an honest fix by ralph, so each is named, with its file's diff since
//! the baseline, in the end message, the report and to the reviewers, for
//! a person or a reviewer to judge. Not a refusal. The same for the files
//! a test runner loads into its own process (`conftest.py`, a Jest setup
//! file, `.cargo/config.toml`'s runner): one of them can rewrite every
//! result the runner reports, its own report included, with no test file
//! touched, so when a test turned to pass they are named too. Does I/O
//! (git, through `git`, bounded and hermetic).

use crate::git::Git;
use std::path::Path;

/// Lines of a file's diff kept at most.
const DIFF_LINES: usize = 60;

/// A test that failed at the baseline and passes now, its file changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Turned {
    pub test: String,
    pub change: FileChange,
}

/// One file's change since the baseline's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileChange {
    pub file: String,
    pub added: u32,
    pub removed: u32,
    /// The file's diff since the baseline's tree, cut at [`DIFF_LINES`].
    pub diff: String,
}

/// What a claim's tests that turned to pass come with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SinceBaseline {
    /// The tests whose own file changed.
    pub turned: Vec<Turned>,
    /// The runner's own files that changed (named whenever a test turned,
    /// its file changed or not).
    pub runner_files: Vec<FileChange>,
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
/// the working tree of `root`, and the runner's files that do. The working
/// tree is committed as the baseline's tree was (`score::tree::snapshot`:
/// ralph's own index, the files git does not track yet included), so a
/// file the user never added reads as it is, not as deleted, and a new one
/// as added.
pub(crate) fn since_baseline(root: &Path, candidates: &[Candidate]) -> SinceBaseline {
    let Some(first) = candidates.first() else {
        return SinceBaseline::default();
    };
    let Some((_, now)) = crate::score::tree::snapshot(root, "ralph: the tree a claim ends on")
    else {
        return SinceBaseline::default();
    };
    let turned = candidates
        .iter()
        .filter_map(|c| {
            let change = file_change(root, &c.commit, &now, c.file.as_deref()?)?;
            Some(Turned {
                test: c.test.clone(),
                change,
            })
        })
        .collect();
    SinceBaseline {
        turned,
        runner_files: runner_files(root, &first.commit, &now),
    }
}

/// `file`'s change between two commits; `None` when it did not change.
fn file_change(root: &Path, from: &str, to: &str, file: &str) -> Option<FileChange> {
    let numstat = Git::read(root)
        .text(&["diff", "--no-renames", "--numstat", from, to, "--", file])
        .ok()?;
    let (added, removed) = counts(&numstat)?;
    let diff = Git::read(root)
        .text(&["diff", "--no-renames", from, to, "--", file])
        .unwrap_or_default();
    Some(FileChange {
        file: file.to_string(),
        added,
        removed,
        diff: cut(&diff),
    })
}

/// The runner's files changed between two commits (one listing; a diff
/// for each that is one).
fn runner_files(root: &Path, from: &str, to: &str) -> Vec<FileChange> {
    let Ok(names) = Git::read(root).run(&["diff", "--no-renames", "--name-only", "-z", from, to])
    else {
        return Vec::new();
    };
    names
        .split(|b| *b == 0)
        .filter_map(|name| std::str::from_utf8(name).ok())
        .filter(|name| is_runner_file(name))
        .filter_map(|name| file_change(root, from, to, name))
        .collect()
}

/// A file a test runner reads or loads into its own process, where code
/// or a setting can change the results it reports: pytest's `conftest.py`
/// and configuration (`-p` plugins, `addopts`), Python's start-up hooks,
/// Jest's, Vitest's and Mocha's configuration and setup files, cargo's
/// configuration (a `runner` wrapping the test binary) and manifest
/// (`harness = false`), nextest's, RSpec's, PHPUnit's and CTest's. Pure.
pub(crate) fn is_runner_file(path: &str) -> bool {
    const NAMES: &[&str] = &[
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "sitecustomize.py",
        "usercustomize.py",
        "package.json",
        "Cargo.toml",
        "nextest.toml",
        ".rspec",
        "spec_helper.rb",
        "rails_helper.rb",
        "phpunit.xml",
        "phpunit.xml.dist",
        "phpunit.dist.xml",
        "CTestTestfile.cmake",
        "CTestCustom.cmake",
    ];
    const STEMS: &[&str] = &[
        "jest.config.",
        "jest.setup.",
        "jest.preset.",
        "vitest.config.",
        "vitest.setup.",
        "vitest.workspace.",
        "vite.config.",
        "setupTests.",
        ".mocharc.",
        "babel.config.",
        ".babelrc",
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    NAMES.contains(&name)
        || STEMS.iter().any(|stem| name.starts_with(stem))
        || path == ".cargo/config"
        || path.ends_with("/.cargo/config")
        || (name == "config.toml" && path.ends_with(".cargo/config.toml"))
        || name.ends_with(".pth")
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
/// change, then the runner's files; empty when there is none.
pub(crate) fn note(since: &SinceBaseline) -> String {
    let mut out = String::new();
    if !since.turned.is_empty() {
        let names: Vec<String> = since
            .turned
            .iter()
            .map(|t| format!("{} ({})", t.test, size(&t.change)))
            .collect();
        out.push_str(&format!(
            "\n⚠️ Look at these: they failed at the loop's start and pass now, and the file that holds each was changed (a fix, or a test changed to pass: ralph cannot tell): {}.",
            names.join(", ")
        ));
    }
    if !since.runner_files.is_empty() {
        let names: Vec<String> = since.runner_files.iter().map(size).collect();
        out.push_str(&format!(
            "\n⚠️ Look at these too: tests that failed at the loop's start pass now, and files the test runner loads into its own process changed (a fix, or results rewritten before the runner reports them: ralph cannot tell): {}.",
            names.join(", ")
        ));
    }
    out
}

/// `tests/t.py: +1 −3`.
fn size(change: &FileChange) -> String {
    format!("{}: +{} −{}", change.file, change.added, change.removed)
}

/// What the reviewers are told: each test (or runner's file) with its
/// file's diff.
pub(crate) fn for_reviewers(since: &SinceBaseline) -> (Vec<String>, Vec<String>) {
    let shown = |title: String, c: &FileChange| format!("{title}\n```diff\n{}\n```", c.diff);
    let turned = since
        .turned
        .iter()
        .map(|t| shown(format!("{} ({})", t.test, t.change.file), &t.change))
        .collect();
    let runner = since
        .runner_files
        .iter()
        .map(|c| shown(c.file.clone(), c))
        .collect();
    (turned, runner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(file: &str, added: u32, removed: u32) -> FileChange {
        FileChange {
            file: file.into(),
            added,
            removed,
            diff: String::new(),
        }
    }

    #[test]
    fn numstat_and_the_note_read_as_the_user_sees_them() {
        assert_eq!(counts("3\t1\ttests/t.py\n"), Some((3, 1)));
        assert_eq!(counts(""), None);
        let t = Turned {
            test: "tests/t.py::test_leap".into(),
            change: change("tests/t.py", 1, 3),
        };
        let since = SinceBaseline {
            turned: vec![t],
            runner_files: Vec::new(),
        };
        assert!(note(&since).contains("tests/t.py::test_leap (tests/t.py: +1 −3)"));
        assert!(!note(&since).contains("too"));
        assert_eq!(note(&SinceBaseline::default()), "");
        let runner = SinceBaseline {
            turned: Vec::new(),
            runner_files: vec![change("conftest.py", 7, 0)],
        };
        assert!(note(&runner).contains("files the test runner loads"));
        assert!(note(&runner).contains("conftest.py: +7 −0"));
        let long: String = (0..100).map(|i| format!("+{i}\n")).collect();
        assert!(cut(&long).ends_with("... (40 more lines)"));
    }

    #[test]
    fn the_runners_own_files_are_known_by_name_wherever_they_are() {
        for runner in [
            "conftest.py",
            "tests/unit/conftest.py",
            "pytest.ini",
            "pyproject.toml",
            "jest.config.js",
            "web/jest.config.ts",
            "src/setupTests.ts",
            "vitest.config.mts",
            ".mocharc.yml",
            ".cargo/config.toml",
            "crates/x/.cargo/config",
            "Cargo.toml",
            "spec/spec_helper.rb",
            "phpunit.xml.dist",
        ] {
            assert!(is_runner_file(runner), "{runner}");
        }
        for work in [
            "src/lib.rs",
            "tests/test_x.py",
            "src/config.toml",
            "conftest.py.bak",
            "docs/jest.md",
            "package-lock.json",
        ] {
            assert!(!is_runner_file(work), "{work}");
        }
    }
}
