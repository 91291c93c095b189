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
/// `git -C`; each relative one taken from the folder the command's `cd`s
/// (in order) have reached by then, so `cd src && touch x && cd .. && git
/// status` writes `src/x` only. A folder that is not known (`cd "$X"`,
/// `cd -`) makes what follows start with `$`, which no rule resolves. A
/// script an interpreter runs is out of sight.
pub fn write_targets(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cwd = String::new();
    targets_at(command, 0, &mut cwd, &mut out);
    out
}

/// `word` as seen from `cwd` (empty: where the command started).
fn from_cwd(cwd: &str, word: &str) -> String {
    if cwd.is_empty() || word.starts_with('/') || word.starts_with('~') {
        word.to_string()
    } else {
        format!("{}/{word}", cwd.trim_end_matches('/'))
    }
}

fn targets_at(command: &str, depth: usize, cwd: &mut String, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    for seg in shell::split_chain(command) {
        let here = cwd.clone();
        out.extend(
            seg.redirects
                .iter()
                .filter(|r| r.writes_file() && !harmless_target(&r.target))
                .map(|r| from_cwd(&here, &r.target)),
        );
        for sub in &seg.substitutions {
            targets_at(sub, depth + 1, &mut here.clone(), out);
        }
        match unwrap(&seg.words) {
            Invocation::Exec { name, args, .. } => {
                let base = name.rsplit('/').next().unwrap_or(&name).to_string();
                let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                let mut put = |w: &String| out.push(from_cwd(&here, w));
                match base.as_str() {
                    "cd" | "pushd" => {
                        let dir = args.iter().find(|a| *a == "-" || !a.starts_with('-'));
                        *cwd = match dir {
                            Some(dir) if dir.as_str() != "-" => from_cwd(&here, dir),
                            Some(_) => "$OLDPWD".to_string(),
                            None => "~".to_string(),
                        };
                    }
                    "git" => args
                        .windows(2)
                        .filter(|w| w[0] == "-C")
                        .for_each(|w| put(&w[1])),
                    "cp" | "install" | "rsync" | "ln" => {
                        operands.last().into_iter().for_each(|a| put(a))
                    }
                    _ if program_writes(&name, &args) => operands.into_iter().for_each(put),
                    _ => {}
                }
            }
            Invocation::Script { text, .. } => targets_at(&text, depth + 1, &mut here.clone(), out),
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
        let rest = &args[i + 1..];
        // Subcommands that also list: judged by their form.
        match a {
            "branch" | "tag" => return !lists_refs(a, rest),
            "stash" => return !matches!(rest.first().map(String::as_str), Some("list" | "show")),
            "worktree" => return rest.first().map(String::as_str) != Some("list"),
            _ => {}
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

/// `git branch` / `git tag` that only list (`--show-current`, `-l`, no
/// name given): no flag that changes a ref, and a name only as a pattern
/// of `--list` or as the value of a listing option.
fn lists_refs(sub: &str, rest: &[String]) -> bool {
    const CHANGES: &[&str] = &[
        "-d",
        "-D",
        "-m",
        "-M",
        "-c",
        "-C",
        "-f",
        "-u",
        "--delete",
        "--move",
        "--copy",
        "--force",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "--track",
        "--no-track",
        "-a",
        "-s",
        "-F",
        "--annotate",
        "--sign",
        "--file",
        "--message",
    ];
    const VALUED: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--format",
        "--sort",
        "--column",
    ];
    let listing = rest
        .iter()
        .any(|a| a == "-l" || a == "--list" || a == "--show-current");
    let mut named = false;
    let mut skip = false;
    for a in rest {
        if skip {
            skip = false;
            continue;
        }
        let flag = a.split('=').next().unwrap_or(a);
        // `-a` lists all branches for `git branch`, annotates for `git tag`.
        let changes = CHANGES.contains(&flag) && !(sub == "branch" && matches!(flag, "-a"));
        if changes || (sub == "tag" && (flag == "-m" || flag == "-u")) {
            return false;
        }
        if VALUED.contains(&flag) && !a.contains('=') {
            skip = true;
        } else if !a.starts_with('-') {
            named = true;
        }
    }
    listing || !named
}

#[cfg(test)]
mod tests {
    use super::bash_writes;

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
            assert!(!bash_writes(c), "{c}");
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
            assert!(bash_writes(c), "{c}");
        }
    }

    #[test]
    fn each_cd_is_taken_from_where_the_last_one_left() {
        use super::write_targets;
        assert_eq!(
            write_targets("cd src && touch x && cd .. && git status"),
            ["src/x"]
        );
        assert_eq!(write_targets("cd a; cd b; touch y"), ["a/b/y"]);
        assert_eq!(write_targets("cd /p && rm -f a"), ["/p/a"]);
        assert_eq!(write_targets("cd \"$X\" && rm -f a"), ["$X/a"]);
        assert_eq!(write_targets("cd - && touch z"), ["$OLDPWD/z"]);
        assert_eq!(write_targets("cd src && echo x > out.txt"), ["src/out.txt"]);
    }

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
        assert_eq!(write_targets("cd /p && rm -f a"), ["/p/a"]);
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
