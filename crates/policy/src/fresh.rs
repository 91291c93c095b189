//! `--fresh` loops: the main thread only dispatches to `ralph:ralph-worker`
//! subagents, so its own writes are refused (the worker's, which carry an
//! `agent_id`, are judged as usual). Pure.
//!
//! What counts as a write of a Bash command is read the way the rest of the
//! guard reads commands (chains, wrappers, `sh -c`, substitutions), and errs
//! on the side of "writes" for what it cannot see into (a shell reading its
//! script from stdin, `python -c`). Like the rest of the guard, a rail for a
//! cooperative model, not a sandbox.

use crate::protect::{Invocation, unwrap};
use crate::shell;

/// Nesting depth of `sh -c` and substitutions followed.
const MAX_DEPTH: usize = 8;

/// Why the main thread's write is refused.
pub fn delegate_reason(what: &str, worker: &str) -> String {
    format!(
        "ralph-guard: this Ralph loop runs with --fresh: the main thread only dispatches, so {what} is refused here. \
         Delegate the work as the loop's last message says (Agent tool, subagent_type \"{worker}\"); reading stays free."
    )
}

/// Whether running `command` may write a file.
pub fn bash_writes(command: &str) -> bool {
    writes_at(command, 0)
}

fn writes_at(command: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    shell::split_chain(command).iter().any(|seg| {
        seg.redirects
            .iter()
            .any(|r| r.writes_file() && !harmless_target(&r.target))
            || seg.substitutions.iter().any(|s| writes_at(s, depth + 1))
            || match unwrap(&seg.words) {
                Invocation::Exec { name, args, .. } => program_writes(&name, &args),
                Invocation::Script { text, .. } => writes_at(&text, depth + 1),
                // A pipe into a shell is out of sight: counted as a write.
                Invocation::ShellStdin => {
                    seg.heredocs.is_empty() || seg.heredocs.iter().any(|h| writes_at(h, depth + 1))
                }
                Invocation::Nothing => false,
            }
    })
}

/// Where a Bash command writes, as far as can be seen: the files its
/// redirections write, the paths a writing program is handed (for `cp`,
/// `install`, `rsync` and `ln` the destination only), and the folders of
/// `cd` and `git -C` (what follows them writes there). A script an
/// interpreter runs is out of sight.
pub fn write_targets(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    targets_at(command, 0, &mut out);
    out
}

fn targets_at(command: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    for seg in shell::split_chain(command) {
        out.extend(
            seg.redirects
                .iter()
                .filter(|r| r.writes_file() && !harmless_target(&r.target))
                .map(|r| r.target.clone()),
        );
        for sub in &seg.substitutions {
            targets_at(sub, depth + 1, out);
        }
        match unwrap(&seg.words) {
            Invocation::Exec { name, args, .. } => {
                let base = name.rsplit('/').next().unwrap_or(&name).to_string();
                let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                match base.as_str() {
                    "cd" | "pushd" => out.extend(operands.first().map(|a| (*a).clone())),
                    "git" => out.extend(
                        args.windows(2)
                            .filter(|w| w[0] == "-C")
                            .map(|w| w[1].clone()),
                    ),
                    "cp" | "install" | "rsync" | "ln" => {
                        out.extend(operands.last().map(|a| (*a).clone()))
                    }
                    _ if program_writes(&name, &args) => out.extend(operands.into_iter().cloned()),
                    _ => {}
                }
            }
            Invocation::Script { text, .. } => targets_at(&text, depth + 1, out),
            Invocation::ShellStdin | Invocation::Nothing => {}
        }
    }
}

fn harmless_target(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    )
}

/// Programs that write files as their job; `sed -i`, `perl -i` and the git
/// commands that change the tree or the repository; interpreters given a
/// script on the command line (what it does is out of sight).
fn program_writes(name: &str, args: &[String]) -> bool {
    let name = name.rsplit('/').next().unwrap_or(name);
    let has = |flag: &str| args.iter().any(|a| a == flag || a.starts_with(flag));
    match name {
        "rm" | "rmdir" | "mv" | "cp" | "touch" | "mkdir" | "tee" | "ln" | "install" | "dd"
        | "truncate" | "chmod" | "chown" | "chgrp" | "patch" | "rsync" | "unzip" | "shred"
        | "split" | "csplit" | "mkfifo" | "mktemp" => true,
        "sed" => has("-i") || has("--in-place"),
        "perl" => has("-i") || has("-e") || has("-E"),
        "python" | "python3" | "python2" | "ruby" => has("-c") || has("-e"),
        "node" | "deno" | "bun" => has("-e") || has("--eval"),
        "tar" => {
            args.first()
                .is_some_and(|a| !a.starts_with('-') && (a.contains('x') || a.contains('c')))
                || has("-x")
                || has("-c")
                || has("--extract")
                || has("--create")
        }
        "git" => git_writes(args),
        _ => false,
    }
}

fn git_writes(args: &[String]) -> bool {
    // The subcommand: the first word that is not an option (or an option's
    // value for -C / -c).
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-C" || a == "-c" {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        return matches!(
            a,
            "add"
                | "commit"
                | "checkout"
                | "switch"
                | "restore"
                | "reset"
                | "rm"
                | "mv"
                | "apply"
                | "am"
                | "merge"
                | "rebase"
                | "cherry-pick"
                | "revert"
                | "pull"
                | "stash"
                | "clean"
                | "init"
                | "clone"
                | "tag"
                | "branch"
                | "worktree"
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::bash_writes;

    #[test]
    fn writes_are_seen() {
        for c in [
            "echo hi > a.txt",
            "cat a >> b",
            "rm -f x",
            "sed -i s/a/b/ f",
            "sh -c 'touch x'",
            "cd src && mv a b",
            "echo $(tee x < y)",
            "git commit -am wip",
            "git -C sub checkout -- .",
            "python3 -c 'open(\"x\",\"w\")'",
            "sudo cp a b",
            "printf x | tee out",
        ] {
            assert!(bash_writes(c), "{c}");
        }
    }

    #[test]
    fn write_targets_are_what_is_written() {
        use super::write_targets;
        assert_eq!(
            write_targets("grep -c x /p/log; touch /h/m && echo a > b.txt 2>/dev/null"),
            ["/h/m", "b.txt"]
        );
        assert_eq!(write_targets("cp /p/prd.json ./x"), ["./x"]);
        assert_eq!(write_targets("cd /p && rm -f a"), ["/p", "a"]);
        assert_eq!(write_targets("git -C /p commit -am x"), ["/p"]);
        assert_eq!(write_targets("sh -c 'echo x >> /p/n'"), ["/p/n"]);
    }

    #[test]
    fn reading_stays_free() {
        for c in [
            "cat prd.json",
            "ls -la",
            "git status --short",
            "git log --oneline -5",
            "git diff",
            "grep -rn foo src 2>/dev/null",
            "test -f a.txt && echo yes",
            "echo done >&2",
            "sed -n 1,5p f",
            "head -c 100 progress.txt",
        ] {
            assert!(!bash_writes(c), "{c}");
        }
    }
}
