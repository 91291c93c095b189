//! `git`: what a subcommand does to the paths it names (loop-file
//! protection), and whether it changes the repository or the refs every
//! worktree shares (the `--fresh` and `--parallel` rules). Pure.

use super::{Effect, on};
use crate::protect::Kind;
use crate::protect::argv::{has_opt, operands};

/// `git [-C DIR]... [-c K=V] SUBCOMMAND ARGS`: what the subcommand does to
/// the paths it names, relative to the `-C` folders.
///
/// Explicit paths count. `git stash` (any form), `git reset --hard` and
/// `git clean` of the whole tree (no path, `.` at the root, `:/`) are allowed
/// while a loop runs once its state lives outside the project tree (its
/// mirror is restored at the next Stop); while the state is in the tree, the
/// forms that take untracked files away are judged (docs/guard.md, "git").
pub(super) fn git_effects(args: &[String]) -> Vec<Effect> {
    let mut i = 0;
    let mut dir: Option<String> = None;
    // `--work-tree` or `--git-dir`: the repository the command changes.
    let mut repo: Option<String> = None;
    while i < args.len() && args[i].starts_with('-') {
        let a = args[i].as_str();
        if let Some(v) = a
            .strip_prefix("--work-tree=")
            .or_else(|| a.strip_prefix("--git-dir="))
        {
            repo = Some(v.to_string());
            i += 1;
            continue;
        }
        match a {
            "-C" => {
                let d = args.get(i + 1).cloned().unwrap_or_default();
                dir = Some(match dir {
                    Some(prev) if !d.starts_with('/') => format!("{prev}/{d}"),
                    _ => d,
                });
                i += 2;
            }
            "--git-dir" | "--work-tree" => {
                repo = args.get(i + 1).cloned();
                i += 2;
            }
            "-c" | "--namespace" | "--super-prefix" | "--config-env" => i += 2,
            _ => i += 1,
        }
    }
    let Some(sub) = args.get(i) else {
        return Vec::new();
    };
    let rest = &args[(i + 1).min(args.len())..];
    let mut out = git_path_effects(sub, rest);
    out.extend(git_repo_effects(sub, rest));
    if sub == "config" {
        out.extend(config_sets(rest));
    }
    let here = |p: String| match &dir {
        Some(d) if !p.starts_with('/') && !p.starts_with('$') && !p.starts_with('~') => {
            format!("{d}/{p}")
        }
        _ => p,
    };
    out.into_iter()
        .map(|e| match e {
            Effect::Repo(_) => Effect::Repo(here(repo.clone().unwrap_or_else(|| ".".into()))),
            other => match &dir {
                Some(d) => under_dir(other, d),
                None => other,
            },
        })
        .collect()
}

/// What a git subcommand does to the paths it names (loop-file protection).
fn git_path_effects(sub: &str, rest: &[String]) -> Vec<Effect> {
    match sub {
        "rm" => {
            let (ops, opts) = operands(rest, "", &["--pathspec-from-file"]);
            if has_opt(&opts, &["--cached"]) {
                return Vec::new();
            }
            on(Kind::Remove, pathspecs(ops))
        }
        "mv" => super::copy::mv_effects(rest),
        "checkout" | "restore" => on(
            Kind::WriteBelowRoot,
            pathspecs(
                operands(
                    rest,
                    "bBsU",
                    &["--source", "--conflict", "--pathspec-from-file"],
                )
                .0,
            ),
        ),
        "clean" => git_clean(rest),
        "stash" => git_stash(rest),
        "worktree" => {
            let ops = operands(rest, "bB", &["--reason"]).0;
            match ops.first().map(String::as_str) {
                Some("add" | "remove" | "move") => on(Kind::Write, ops[1..].to_vec()),
                _ => Vec::new(),
            }
        }
        "init" | "clone" => {
            let ops = operands(
                rest,
                "bcou",
                &[
                    "--template",
                    "--separate-git-dir",
                    "--branch",
                    "--origin",
                    "--depth",
                    "--reference",
                    "--config",
                    "--upload-pack",
                ],
            )
            .0;
            let target = if sub == "init" {
                ops.first()
            } else {
                ops.get(1)
            };
            on(Kind::Onto, target.cloned().into_iter().collect())
        }
        "format-patch" | "archive" | "diff" | "log" | "show" | "bundle" => git_outputs(sub, rest),
        _ => Vec::new(),
    }
}

/// Files a reading git command writes when told to (`--output`, `-o`).
fn git_outputs(sub: &str, rest: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(rest, "o", &["--output", "--output-directory"]);
    let mut files: Vec<String> = opts
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "-o" | "--output" | "--output-directory"))
        .map(|(_, v)| v.clone())
        .collect();
    match sub {
        // format-patch writes its patches into the folder it runs in.
        "format-patch" if files.is_empty() => files.push(".".into()),
        "bundle" if ops.first().is_some_and(|o| o == "create") => files.extend(ops.get(1).cloned()),
        _ => {}
    }
    on(Kind::Write, files)
}

/// Whether a git subcommand changes the repository: its work tree, index,
/// refs, objects or config. Judged by what it writes, not by its name: a
/// listing form (`branch --show-current`, `stash list`, `tag -l`,
/// `worktree list`, `config --get`) only reads. An unknown subcommand (an
/// alias) may do anything, so it counts as writing.
fn git_repo_effects(sub: &str, rest: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(rest, "", &[]);
    let writes = git_writes(sub, &ops, &opts);
    let flag = |names: &[&str]| has_opt(&opts, names);
    let shared = match sub {
        "update-ref" => true,
        "symbolic-ref" => writes,
        "branch" => flag(BRANCH_SHARED),
        "tag" => flag(&["-d", "--delete", "-f", "--force"]),
        _ => false,
    };
    match (writes, shared) {
        (false, _) => Vec::new(),
        (true, false) => vec![Effect::Repo(".".into())],
        (true, true) => vec![Effect::Repo(".".into()), Effect::SharedRefs],
    }
}

/// Subcommands that only read the repository, whatever their options.
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "grep",
    "ls-files",
    "ls-tree",
    "ls-remote",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "cat-file",
    "for-each-ref",
    "show-ref",
    "name-rev",
    "merge-base",
    "whatchanged",
    "help",
    "version",
    "var",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "cherry",
    "count-objects",
    "fsck",
    "diff-tree",
    "diff-index",
    "diff-files",
    "range-diff",
    "verify-commit",
    "verify-tag",
    "show-branch",
    "annotate",
    "archive",
    "format-patch",
    "bugreport",
    "fetch-pack",
    "get-tar-commit-id",
];

/// `git branch` only lists with no operand or with one of these.
const BRANCH_LISTS: &[&str] = &[
    "--list",
    "-l",
    "--show-current",
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
];

/// `git branch` changes a branch with one of these, listing or not.
const BRANCH_CHANGES: &[&str] = &[
    "-d",
    "-D",
    "--delete",
    "-m",
    "-M",
    "--move",
    "-c",
    "-C",
    "--copy",
    "-u",
    "--set-upstream-to",
    "--unset-upstream",
    "--edit-description",
    "-f",
    "--force",
];

/// The `git branch` changes that reach other worktrees' branches.
const BRANCH_SHARED: &[&str] = &[
    "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
];

/// `git config` reads with one of these (else, with one operand and none of
/// [`CONFIG_CHANGES`]).
const CONFIG_READS: &[&str] = &[
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "--list",
    "-l",
    "--show-origin",
    "--show-scope",
    "--name-only",
];

/// `git config` with one operand still writes with one of these.
const CONFIG_CHANGES: &[&str] = &[
    "--unset",
    "--unset-all",
    "--add",
    "--replace-all",
    "-e",
    "--edit",
    "--remove-section",
    "--rename-section",
];

/// The keys `git config ARGS` sets (with the value when given): the old
/// form `[--add|--replace-all] KEY VALUE`, the new `set KEY VALUE`;
/// `--edit` (or `edit`, which opens the file in `$GIT_EDITOR`) and a
/// section renamed onto another (`--rename-section OLD NEW`) set keys the
/// guard cannot see: named `NEW.*`, and `*` for an edit. Reads and unsets
/// set nothing.
fn config_sets(rest: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(
        rest,
        "ft",
        &[
            "--file",
            "--blob",
            "--type",
            "--default",
            "--comment",
            "--value",
        ],
    );
    let flag = |names: &[&str]| has_opt(&opts, names);
    let set = |key: &str, value: Option<&String>| Effect::ConfigSet {
        key: key.to_string(),
        value: value.cloned(),
    };
    let first = ops.first().map(String::as_str);
    if flag(&["-e", "--edit"]) || first == Some("edit") {
        return vec![set("*", None)];
    }
    if flag(&["--rename-section"]) || first == Some("rename-section") {
        let new = if first == Some("rename-section") {
            ops.get(2)
        } else {
            ops.get(1)
        };
        return new
            .map(|n| set(&format!("{n}.*"), None))
            .into_iter()
            .collect();
    }
    if flag(CONFIG_READS) || flag(&["--unset", "--unset-all", "--remove-section"]) {
        return Vec::new();
    }
    match ops.as_slice() {
        [verb, key, value, ..] if verb == "set" => vec![set(key, Some(value))],
        [verb, ..] if matches!(verb.as_str(), "get" | "list" | "unset" | "remove-section") => {
            Vec::new()
        }
        [key, value, ..] => vec![set(key, Some(value))],
        _ => Vec::new(),
    }
}

/// Whether the subcommand, with these operands and options, writes.
fn git_writes(sub: &str, ops: &[String], opts: &[(String, String)]) -> bool {
    let flag = |names: &[&str]| has_opt(opts, names);
    let first = ops.first().map(String::as_str);
    match sub {
        _ if GIT_READERS.contains(&sub) => false,
        "branch" => !(ops.is_empty() || flag(BRANCH_LISTS)) || flag(BRANCH_CHANGES),
        "tag" => {
            !(ops.is_empty()
                || flag(&[
                    "-l",
                    "--list",
                    "-v",
                    "--verify",
                    "--contains",
                    "--points-at",
                ]))
                || flag(&["-d", "--delete", "-a", "-s", "-f", "-m", "-F"])
        }
        "stash" => !matches!(first, Some("list" | "show")),
        "worktree" | "remote" | "notes" | "submodule" | "reflog" | "replace"
        | "sparse-checkout" | "bisect" => !matches!(
            first,
            None | Some("list" | "show" | "-v" | "--verbose" | "get-url" | "status" | "summary")
        ),
        "config" => {
            let reads = flag(CONFIG_READS)
                || matches!(first, Some("get" | "list"))
                || (ops.len() == 1 && !flag(CONFIG_CHANGES));
            !reads
        }
        "symbolic-ref" => ops.len() > 1 || flag(&["-d", "--delete"]),
        "apply" => !flag(&["--check", "--stat", "--numstat", "--summary"]),
        _ => true,
    }
}

/// Pathspecs as paths: `:/x` is relative to the top of the tree (the guard
/// reads it as the project root); exclusions (`:!x`, `:^x`, `:(exclude)x`)
/// name nothing taken; other magic is dropped.
fn pathspecs(ops: Vec<String>) -> Vec<String> {
    ops.into_iter()
        .filter_map(|p| {
            if let Some(top) = p.strip_prefix(":/") {
                return Some(format!("${{CLAUDE_PROJECT_DIR}}/{top}"));
            }
            if p.starts_with(":!") || p.starts_with(":^") || p.starts_with(":(exclude") {
                return None;
            }
            if let Some(rest) = p.strip_prefix(":(")
                && let Some((magic, path)) = rest.split_once(')')
            {
                return Some(if magic.split(',').any(|m| m == "top") {
                    format!("${{CLAUDE_PROJECT_DIR}}/{path}")
                } else {
                    path.to_string()
                });
            }
            Some(p)
        })
        .collect()
}

/// A path of a `git -C DIR` command, as seen from the shell's folder.
fn under_dir(e: Effect, dir: &str) -> Effect {
    let join = |p: String| {
        if p.starts_with('/') || p.starts_with('$') || p.starts_with('~') {
            p
        } else {
            format!("{dir}/{p}")
        }
    };
    match e {
        Effect::On(k, p) => Effect::On(k, join(p)),
        Effect::Into { dest, sources } => Effect::Into {
            dest: join(dest),
            sources: sources.into_iter().map(join).collect(),
        },
        Effect::Clean { paths, excludes } => Effect::Clean {
            paths: paths.into_iter().map(join).collect(),
            excludes,
        },
        other => other,
    }
}

/// `git clean PATH...`: removes untracked files under each path, except what
/// `-e` keeps. Without a path it is the whole tree.
fn git_clean(rest: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(rest, "e", &["--exclude", "--pathspec-from-file"]);
    if has_opt(&opts, &["-n", "--dry-run"]) {
        return Vec::new();
    }
    let excludes = opts
        .iter()
        .filter(|(k, _)| k == "-e" || k == "--exclude")
        .map(|(_, v)| v.clone())
        .collect();
    // Without a path: the command's folder (the whole tree from the root).
    let paths = if ops.is_empty() {
        vec![".".to_string()]
    } else {
        pathspecs(ops)
    };
    vec![Effect::Clean { paths, excludes }]
}

/// `git stash push -u -- PATH...` takes the untracked files under the paths
/// away (without a path, the whole tree's). Without `-u`/`-a` nothing is
/// judged: the loop files are untracked.
fn git_stash(rest: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(rest, "m", &["--message", "--pathspec-from-file"]);
    let untracked = has_opt(&opts, &["-u", "-a", "--include-untracked", "--all"]);
    let mut ops = ops.into_iter();
    let paths: Vec<String> = match ops.as_slice().first().map(String::as_str) {
        Some("push") => ops.skip(1).collect(),
        // `save` takes a message, the others no pathspec.
        Some(
            "save" | "list" | "show" | "apply" | "pop" | "drop" | "branch" | "clear" | "create"
            | "store",
        ) => Vec::new(),
        _ => ops.by_ref().collect(),
    };
    if !untracked {
        return Vec::new();
    }
    // Without a path: the whole tree, wherever the command runs.
    if paths.is_empty() {
        return vec![Effect::On(
            Kind::RemoveBelowRoot,
            "${CLAUDE_PROJECT_DIR}".to_string(),
        )];
    }
    on(Kind::RemoveBelowRoot, pathspecs(paths))
}
