//! `--fresh` loops: the main thread only dispatches to `ralph:ralph-worker`
//! subagents, so its own writes are refused (the worker's, which carry an
//! `agent_id`, are judged as usual). Pure.
//!
//! What counts as a write of a Bash command is read the way the rest of the
//! guard reads commands (chains, wrappers, `sh -c`, substitutions), and errs
//! on the side of "writes" for what it cannot see into (a shell reading its
//! script from stdin, `python -c`). Like the rest of the guard, a rail for a
//! cooperative model, not a sandbox.

use crate::LoopContext;
use crate::protect;

/// Why the main thread's write is refused.
pub fn delegate_reason(what: &str, worker: &str) -> String {
    format!(
        "ralph-guard: this Ralph loop runs with --fresh: the main thread only dispatches, so {what} is refused here. \
         Delegate the work as the loop's last message says (Agent tool, subagent_type \"{worker}\"); reading stays free."
    )
}

/// Whether running `command` (from the call's folder) may write a file:
/// the guard's one reading of where a command writes
/// ([`crate::protect::bash_writes`]), erring on the side of "writes" for
/// what it cannot see into (a shell reading its script from stdin,
/// `python -c`).
pub fn bash_writes(command: &str, ctx: &LoopContext) -> bool {
    protect::bash_writes(command, &ctx.cwd, &ctx.root, ctx.home.as_deref()).any()
}

#[cfg(test)]
mod tests {
    use super::bash_writes;
    use crate::LoopContext;

    fn writes(c: &str) -> bool {
        let ctx = LoopContext {
            root: "/p".into(),
            cwd: "/p".into(),
            ..LoopContext::default()
        };
        bash_writes(c, &ctx)
    }

    #[test]
    fn git_that_only_lists_does_not_write() {
        for c in [
            "git branch --show-current",
            "git branch",
            "git branch -a -v",
            "git branch --list 'ralph/*'",
            "git branch --contains HEAD",
            "git stash list",
            "git stash show -p",
            "git tag -l",
            "git tag",
            "git tag --points-at HEAD",
            "git worktree list",
            "git worktree list --porcelain",
        ] {
            assert!(!writes(c), "{c}");
        }
        for c in [
            "git branch new",
            "git branch -D old",
            "git branch -m a b",
            "git stash",
            "git stash pop",
            "git tag v1",
            "git tag -a v1 -m x",
            "git tag -d v1",
            "git worktree add ../x",
            "git worktree remove -f -f ../agent-other",
        ] {
            assert!(writes(c), "{c}");
        }
    }

    #[test]
    fn writes_are_seen() {
        for c in [
            "echo hi > a.txt",
            "cat a >> b",
            "rm -f x",
            "sed -i s/a/b/ f",
            "sed -ri s/a/b/ f",
            "sh -c 'touch x'",
            "cd src && mv a b",
            "echo $(tee x < y)",
            "git commit -am wip",
            "git config core.hooksPath x",
            "git -C sub checkout -- .",
            "python3 -c 'open(\"x\",\"w\")'",
            "sudo cp a b",
            "printf x | tee out",
            "find . -name '*.o' -delete",
            "find . -exec sed -i s/a/b/ {} +",
            "ex -sc '%s/a/b/|x' f",
            "printf '1d\\nw\\n' | ed -s f",
        ] {
            assert!(writes(c), "{c}");
        }
    }

    #[test]
    fn reading_stays_free() {
        for c in [
            "cat prd.json",
            "ls -la",
            "git status --short",
            "git log --oneline -5",
            "git diff",
            "git branch --show-current",
            "git stash list",
            "git tag -l",
            "git worktree list",
            "grep -rn foo src 2>/dev/null",
            "test -f a.txt && echo yes",
            "echo done >&2",
            "sed -n 1,5p f",
            "head -c 100 progress.txt",
        ] {
            assert!(!writes(c), "{c}");
        }
    }
}
