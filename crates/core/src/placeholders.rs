//! The client sandbox's placeholders: the names it binds `/dev/null` over
//! in the folder a command runs in, and ralph's own `git add` of a tree (a
//! worker's commit, a score's tree, a runner's story), which leaves them
//! out. Does I/O (reads the names' metadata, runs git through `git`).

use crate::git::{Git, GitError};
use std::path::Path;

/// The names the client's sandbox always protects in the working folder
/// and its `.claude/` (measured, 2.1.328): one that does not exist there
/// shows inside a sandboxed command as `/dev/null` bound in its place, an
/// untracked character device that `git add -A` refuses.
pub(crate) const ALWAYS_PROTECTED: [&str; 23] = [
    ".bash_profile",
    ".bashrc",
    ".gitconfig",
    ".gitmodules",
    ".idea",
    ".mcp.json",
    ".profile",
    ".ripgreprc",
    ".vscode",
    ".zprofile",
    ".zshrc",
    ".claude/agents",
    ".claude/commands",
    ".claude/hooks",
    ".claude/launch.json",
    ".claude/loop.md",
    ".claude/output-styles",
    ".claude/routines",
    ".claude/scheduled_tasks.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/skills",
    ".claude/workflows",
];

/// Whether the untracked `path` in `dir` is one of the sandbox's
/// placeholders (a fingerprint passes over it: it comes and goes with the
/// agent's commands, and is not the work).
pub(crate) fn is_placeholder(dir: &Path, path: &str) -> bool {
    ALWAYS_PROTECTED.contains(&path) && stands_in(dir, path)
}

/// Absent, or empty as a mount point is (or the device bound over it).
fn stands_in(dir: &Path, name: &str) -> bool {
    match std::fs::symlink_metadata(dir.join(name)) {
        Err(_) => true,
        Ok(m) => (m.is_file() && m.len() == 0) || is_device(&m),
    }
}

/// `git add -A` of everything in `dir` through `git` (the repository's
/// index, or ralph's own copy of it), the client sandbox's placeholders
/// left out: the work of a tree that started from commit `base`.
///
/// Outside the sandbox a placeholder is the empty file its mount stands
/// on, which the client takes away after the command, not at once: an add
/// just then meets a name that is gone ("unable to stat": a worker's merge
/// failed in `ralph run`'s parallel test) or commits an empty file. So a
/// name is left out by pathspec (git never looks at it) when `base` has
/// nothing of it and it is absent or empty now: the work never holds such
/// a file. A name the user's ignore rules already keep out is not named:
/// git refuses an exclude under an ignored folder that exists ("paths are
/// ignored by one of your .gitignore files", measured on git 2.47), which
/// failed every commit of a checkout that ignores `.claude/`.
pub(crate) fn add_work(git: &Git<'_>, dir: &Path, base: &str) -> Result<(), GitError> {
    let mut tracked = vec!["ls-tree", "-r", "--name-only", base, "--"];
    tracked.extend(ALWAYS_PROTECTED);
    let tracked = Git::read(dir).text(&tracked).unwrap_or_default();
    let standing_in = standing_in(dir, &tracked);
    let ignored = if standing_in.is_empty() {
        String::new()
    } else {
        let mut ask = vec!["check-ignore", "--"];
        ask.extend(standing_in.iter().copied());
        // Exit 1: none is ignored.
        Git::read(dir).text(&ask).unwrap_or_default()
    };
    let mut add = vec!["add", "-A", "--", "."];
    let leave_out = excludes(&standing_in, &ignored);
    add.extend(leave_out.iter().map(String::as_str));
    git.run(&add).map(|_| ())
}

/// The names standing in for a placeholder in `dir`: not in `tracked`
/// (git's names under them in the base commit), and absent or empty now.
fn standing_in<'n>(dir: &Path, tracked: &str) -> Vec<&'n str> {
    let is_tracked = |name: &str| {
        tracked
            .lines()
            .any(|t| t == name || t.starts_with(&format!("{name}/")))
    };
    ALWAYS_PROTECTED
        .iter()
        .copied()
        .filter(|name| !is_tracked(name))
        .filter(|name| stands_in(dir, name))
        .collect()
}

/// The pathspecs that leave out each of `names` but those git reports
/// `ignored` (one a line): relative to the folder the add runs in, where
/// the sandbox binds them.
fn excludes(names: &[&str], ignored: &str) -> Vec<String> {
    names
        .iter()
        .filter(|name| !ignored.lines().any(|i| i == **name))
        .map(|name| format!(":(exclude,literal){name}"))
        .collect()
}

/// `/dev/null` bound over a name, as a hook inside the sandbox would see it.
#[cfg(unix)]
fn is_device(m: &std::fs::Metadata) -> bool {
    std::os::unix::fs::FileTypeExt::is_char_device(&m.file_type())
}

#[cfg(not(unix))]
fn is_device(_: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_left_out_of_ralphs_adds_and_the_work_is_not() {
        let dir = std::env::temp_dir().join(format!("ralph-placeholders-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        std::fs::create_dir_all(dir.join(".vscode")).unwrap();
        // A mount point the client has not taken away yet, and real work.
        std::fs::write(dir.join(".bashrc"), "").unwrap();
        std::fs::write(dir.join(".vscode/settings.json"), "{}").unwrap();
        std::fs::write(dir.join(".mcp.json"), "{}").unwrap();
        // Tracked at the base: deleting it, or emptying it, is the work's.
        let tracked = ".gitmodules\n.claude/skills/x/SKILL.md\n";
        let names = standing_in(&dir, tracked);
        let out = excludes(&names, "");
        let left_out = |name: &str| out.contains(&format!(":(exclude,literal){name}"));
        assert!(left_out(".bashrc") && left_out(".claude/commands") && left_out(".zshrc"));
        assert!(!left_out(".vscode") && !left_out(".mcp.json"), "{out:?}");
        assert!(
            !left_out(".gitmodules") && !left_out(".claude/skills"),
            "{out:?}"
        );
        // What the user's ignore rules keep out is not named again.
        let out = excludes(&names, ".claude/commands\n.bashrc\n");
        assert!(
            !out.iter()
                .any(|p| p.ends_with(".claude/commands") || p.ends_with(".bashrc"))
        );
        assert!(out.iter().any(|p| p.ends_with(".zshrc")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A repository in a temp folder, its work file committed.
    fn repo(tag: &str) -> (std::path::PathBuf, impl Fn(&[&str]) -> String + use<>) {
        let dir = std::env::temp_dir().join(format!("ralph-ph-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        crate::test_git::repo_with_commit(&dir, "a.txt");
        let at = dir.clone();
        (dir, move |args: &[&str]| crate::test_git::git(&at, args))
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "needs git on PATH (Git for Windows), which Wine here has not"
    )]
    fn ralphs_add_goes_through_whatever_the_users_ignore_rules_say() {
        // (.gitignore, info/exclude, a core.excludesFile of the repository's config)
        let shapes: [(&str, &str, &str); 6] = [
            (".claude/\n", "", ""),
            (".claude/settings.local.json\n.claude/agents\n", "", ""),
            ("*\n!*.txt\n!.gitignore\n", "", ""),
            ("/*\n!/a.txt\n!/b.txt\n!/.gitignore\n", "", ""),
            ("", ".claude\n.bashrc\n", ""),
            ("", "", ".claude/\n.*rc\n"),
        ];
        for (n, (gitignore, info, global)) in shapes.into_iter().enumerate() {
            let (dir, git) = repo(&format!("ign{n}"));
            if !gitignore.is_empty() {
                std::fs::write(dir.join(".gitignore"), gitignore).unwrap();
            }
            std::fs::write(dir.join(".git/info/exclude"), info).unwrap();
            if !global.is_empty() {
                let file = dir.join("global-excludes");
                std::fs::write(&file, global).unwrap();
                git(&["config", "core.excludesFile", file.to_str().unwrap()]);
            }
            // The sandbox's mount points as a hook outside it meets them,
            // the user's own local settings, and the work.
            std::fs::create_dir_all(dir.join(".claude")).unwrap();
            std::fs::write(dir.join(".claude/agents"), "").unwrap();
            std::fs::write(dir.join(".bashrc"), "").unwrap();
            std::fs::write(dir.join(".claude/settings.local.json"), "").unwrap();
            std::fs::write(dir.join("b.txt"), "work\n").unwrap();
            let made = add_work(&Git::write(&dir), &dir, "HEAD");
            assert!(made.is_ok(), "shape {n}: {made:?}");
            let staged = git(&["diff", "--cached", "--name-only"]);
            assert!(staged.lines().any(|l| l == "b.txt"), "shape {n}: {staged}");
            assert!(
                !staged.contains(".claude/agents") && !staged.contains(".bashrc"),
                "shape {n}: {staged}"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
