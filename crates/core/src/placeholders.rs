//! The client sandbox's placeholders: the names it binds `/dev/null` over
//! in the folder a command runs in, and the pathspecs that leave them out
//! of ralph's own `git add` (a worker's commit, a score's tree). Does I/O
//! (reads the names' metadata).

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

/// Pathspecs that leave the client sandbox's placeholders out of ralph's
/// own `git add -A` in `dir` (a worker's commit, a score's tree). Outside
/// the sandbox a placeholder is the empty file its mount stands on, which
/// the client takes away after the command, not at once: an add just then
/// meets a name that is gone ("unable to stat": a worker's merge failed
/// in `ralph run`'s parallel test) or commits an empty file. A name is
/// left out when `tracked` (git's names under those names in the commit
/// the tree started from) has nothing of it and it is absent or empty
/// now: the work never holds such a file.
pub(crate) fn excludes(dir: &Path, tracked: &str) -> Vec<String> {
    let is_tracked = |name: &str| {
        tracked
            .lines()
            .any(|t| t == name || t.starts_with(&format!("{name}/")))
    };
    ALWAYS_PROTECTED
        .iter()
        .filter(|name| !is_tracked(name))
        .filter(|name| stands_in(dir, name))
        .map(|name| format!(":(exclude,top,literal){name}"))
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
        let out = excludes(&dir, tracked);
        let left_out = |name: &str| out.contains(&format!(":(exclude,top,literal){name}"));
        assert!(left_out(".bashrc") && left_out(".claude/commands") && left_out(".zshrc"));
        assert!(!left_out(".vscode") && !left_out(".mcp.json"), "{out:?}");
        assert!(
            !left_out(".gitmodules") && !left_out(".claude/skills"),
            "{out:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
