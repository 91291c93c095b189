//! The per-program table: what a program, run with these arguments, does to
//! the paths it names (removes, writes, copies into, finds and deletes,
//! changes folder to). Reading is never an effect, so `cat`, `grep` or `cp`
//! *from* a protected file stay allowed.

use super::Kind;
use super::argv::{has_opt, operands, opt};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Effect {
    On(Kind, String),
    /// `cp`/`mv`/`install`/`ln` onto `dest`, which may be a folder that then
    /// receives each source under its own name.
    Into {
        dest: String,
        sources: Vec<String>,
    },
    Find(FindEffect),
    /// `git clean`: removes under each path, except what `-e` excludes.
    Clean {
        paths: Vec<String>,
        excludes: Vec<String>,
    },

    Cd(Option<String>),
    /// A git command that changes a repository (its index, refs, config,
    /// objects or work tree): the folder it is run for (`-C`, `--work-tree`,
    /// `--git-dir`, else `.`). Loop-file protection judges git by the paths
    /// it names; the `--fresh` and `--parallel` rules by this.
    Repo(String),
    /// A git command that changes refs every worktree of the repository
    /// shares, not just its own branch (`update-ref`, `branch -D/-f/-m`,
    /// `tag -d`, `symbolic-ref NAME REF`): a `--parallel` worker may not.
    SharedRefs,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FindEffect {
    pub(super) starts: Vec<String>,
    pub(super) names: Vec<(String, bool)>,
    pub(super) paths: Vec<String>,
    pub(super) delete: bool,
    pub(super) execs: Vec<FindExec>,
    /// `-fprint FILE` and the like write FILE.
    pub(super) writes: Vec<String>,
}

/// One `-exec` command of `find`, with `{}` where the found file goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FindExec {
    pub(super) words: Vec<String>,
    /// `-execdir`/`-okdir`: it runs in the found file's folder.
    pub(super) in_found_dir: bool,
}

/// The options of `mv`, `cp`, `ln`, `install` and `rsync` that take a value.
/// `-b` / `--backup[=CONTROL]` takes none (its value only ever comes after `=`).
fn copy_spec(name: &str) -> (&'static str, &'static [&'static str]) {
    match name {
        "install" => (
            "Stmog",
            &[
                "--suffix",
                "--target-directory",
                "--mode",
                "--owner",
                "--group",
                "--strip-program",
            ],
        ),
        "cp" => (
            "St",
            &[
                "--suffix",
                "--target-directory",
                "--no-preserve",
                "--sparse",
            ],
        ),
        "rsync" => ("efBMT@", RSYNC_LONG),
        _ => ("St", &["--suffix", "--target-directory"]),
    }
}

const RSYNC_LONG: &[&str] = &[
    "--exclude",
    "--include",
    "--filter",
    "--rsh",
    "--temp-dir",
    "--compare-dest",
    "--copy-dest",
    "--link-dest",
    "--partial-dir",
    "--backup-dir",
    "--suffix",
    "--exclude-from",
    "--include-from",
    "--files-from",
    "--chmod",
    "--chown",
    "--usermap",
    "--groupmap",
    "--log-file",
    "--log-file-format",
    "--out-format",
    "--password-file",
    "--max-size",
    "--min-size",
    "--max-delete",
    "--timeout",
    "--contimeout",
    "--port",
    "--bwlimit",
    "--block-size",
    "--modify-window",
    "--rsync-path",
    "--remote-option",
    "--sockopts",
    "--iconv",
    "--checksum-choice",
    "--compress-choice",
    "--compress-level",
    "--skip-compress",
    "--write-batch",
    "--only-write-batch",
    "--read-batch",
    "--info",
    "--debug",
];

/// `mv`/`cp`/`ln`/`install`/`rsync`: destination, sources, and the options.
fn copy_like(name: &str, args: &[String]) -> CopyArgs {
    let (short, long) = copy_spec(name);
    let (ops, opts) = operands(args, short, long);
    let (dest, sources) = if let Some(t) = opt(&opts, &["-t", "--target-directory"]) {
        (Some(t.to_string()), ops)
    } else {
        match ops.split_last() {
            Some((only, [])) if name == "ln" => (Some(".".to_string()), vec![only.clone()]),
            Some((_, [])) | None => (None, Vec::new()),
            Some((dest, sources)) => (Some(dest.clone()), sources.to_vec()),
        }
    };
    CopyArgs {
        dest,
        sources,
        opts,
    }
}

struct CopyArgs {
    dest: Option<String>,
    sources: Vec<String>,
    opts: Vec<(String, String)>,
}

/// `kind` applied to each of `paths`.
fn on(kind: Kind, paths: Vec<String>) -> Vec<Effect> {
    paths.into_iter().map(|p| Effect::On(kind, p)).collect()
}

/// What one program, run with these arguments, does to the paths it names.
pub(super) fn effects(name: &str, args: &[String]) -> Vec<Effect> {
    match name {
        "rm" | "unlink" | "rmdir" | "srm" | "rimraf" => on(Kind::Remove, operands(args, "", &[]).0),
        "shred" => on(
            Kind::Remove,
            operands(args, "ns", &["--iterations", "--size", "--random-source"]).0,
        ),
        "truncate" => on(
            Kind::Remove,
            operands(args, "sr", &["--size", "--reference"]).0,
        ),
        "tee" => on(Kind::Write, operands(args, "", &[]).0),
        "mv" => {
            let c = copy_like(name, args);
            let mut out = on(Kind::Remove, c.sources.clone());
            if let Some(dest) = c.dest {
                out.push(Effect::Into {
                    dest,
                    sources: c.sources,
                });
            }
            out
        }
        "cp" | "install" | "ln" | "rsync" => copy_effects(name, args),
        // `link FILE1 FILE2`: a hard link, like `ln` without options.
        "link" => {
            let ops = operands(args, "", &[]).0;
            let mut out = on(Kind::HardLink, ops.iter().take(1).cloned().collect());
            out.extend(ops.get(1).map(|d| Effect::On(Kind::Onto, d.clone())));
            out
        }
        "sed" => on(Kind::Write, sed_files(args)),
        "awk" | "gawk" => on(Kind::Write, awk_inplace_files(args)),
        // Script-driven editors (there is no terminal for an interactive one):
        // any file they are given may be written.
        "ed" | "ex" | "vi" | "vim" | "nvim" => {
            let (ops, _) = operands(args, "cSuUiTwW", &["--cmd"]);
            on(
                Kind::Write,
                ops.into_iter().filter(|o| !o.starts_with('+')).collect(),
            )
        }
        "perl" => on(Kind::Write, perl_files(args)),
        "dd" => on(
            Kind::Write,
            args.iter()
                .filter_map(|a| a.strip_prefix("of="))
                .map(str::to_string)
                .collect(),
        ),
        "chmod" => on(Kind::Write, chmod_files(args)),
        "chown" | "chgrp" => {
            let (ops, opts) = operands(args, "", &["--reference", "--from"]);
            let skip = usize::from(!has_opt(&opts, &["--reference"]));
            on(Kind::Write, ops.into_iter().skip(skip).collect())
        }
        "sort" => on(Kind::Write, sort_output(args)),
        "curl" | "wget" => on(Kind::Write, downloads(name, args)),
        "find" => {
            let f = find_effect(args);
            let mut out = on(Kind::Write, f.writes.clone());
            if f.delete || !f.execs.is_empty() {
                out.push(Effect::Find(f));
            }
            out
        }
        "git" => git_effects(args),
        // Creators: a new file or folder under exactly this name.
        "touch" => on(
            Kind::Create,
            operands(args, "rdt", &["--reference", "--date"]).0,
        ),
        "mkdir" => on(Kind::Onto, operands(args, "m", &["--mode", "--context"]).0),
        "mkfifo" | "mknod" => on(
            Kind::Create,
            operands(args, "mZ", &["--mode", "--context"]).0,
        ),
        "tar" | "bsdtar" | "gtar" => tar_effects(args),
        "unzip" => {
            let (ops, opts) = operands(args, "dxP", &[]);
            let dir = opt(&opts, &["-d"]).map_or_else(|| ".".to_string(), str::to_string);
            if has_opt(&opts, &["-l", "-t", "-v", "-Z"]) || ops.is_empty() {
                Vec::new()
            } else {
                vec![Effect::On(Kind::WriteBelowRoot, dir)]
            }
        }
        "patch" => {
            let (ops, opts) = operands(
                args,
                "dipBoDrVYzFg",
                &["--directory", "--input", "--output", "--reject-file"],
            );
            if has_opt(&opts, &["--dry-run"]) {
                return Vec::new();
            }
            let dir = opt(&opts, &["-d", "--directory"]).unwrap_or(".");
            let mut out = on(
                Kind::Write,
                ops.into_iter().take(1).map(|f| join_dir(dir, &f)).collect(),
            );
            out.extend(
                opt(&opts, &["-o", "--output"]).map(|o| Effect::On(Kind::Write, o.to_string())),
            );
            if out.is_empty() {
                out.push(Effect::On(Kind::WriteBelowRoot, dir.to_string()));
            }
            out
        }
        "cd" | "pushd" => vec![Effect::Cd(operands(args, "", &[]).0.into_iter().next())],
        _ => Vec::new(),
    }
}

/// `cp`, `install`, `ln` and `rsync`: onto (or into) their destination; a
/// hard link (`ln` without `-s`, `cp -l`) gives its sources a second name.
fn copy_effects(name: &str, args: &[String]) -> Vec<Effect> {
    if name == "install" && args.iter().any(|a| a == "-d" || a == "--directory") {
        return Vec::new();
    }
    let c = copy_like(name, args);
    let hard = match name {
        "ln" => !has_opt(&c.opts, &["-s", "--symbolic"]),
        "cp" => has_opt(&c.opts, &["-l", "--link"]),
        _ => false,
    };
    let mut out = if hard {
        on(Kind::HardLink, c.sources.clone())
    } else {
        Vec::new()
    };
    match c.dest {
        // `rsync --delete src/ dest/` empties dest of what src lacks.
        Some(dest) if name == "rsync" && c.opts.iter().any(|(k, _)| k.starts_with("--del")) => {
            out.push(Effect::On(Kind::Remove, dest));
        }
        Some(dest) => out.push(Effect::Into {
            dest,
            sources: c.sources,
        }),
        None => {}
    }
    out
}

/// The files `chmod` changes. Its mode may look like an option (`-w`,
/// `-rwx`, `-x+r`): GNU chmod reads a word starting with `-` and a mode
/// letter as the mode, not as options.
fn chmod_files(args: &[String]) -> Vec<String> {
    let mut mode_seen = false;
    let mut files = Vec::new();
    let mut only_operands = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if only_operands || !a.starts_with('-') || a == "-" {
            if mode_seen {
                files.push(a.to_string());
            } else {
                mode_seen = true;
            }
        } else if a == "--" {
            only_operands = true;
        } else if let Some(l) = a.strip_prefix("--") {
            if l.starts_with("reference") {
                mode_seen = true;
                i += usize::from(!l.contains('='));
            }
        } else if !mode_seen && a[1..].starts_with(|c: char| "rwxXstugoa,+=-01234567".contains(c)) {
            mode_seen = true;
        }
        i += 1;
    }
    files
}

/// `sort -o FILE`.
fn sort_output(args: &[String]) -> Vec<String> {
    let (_, opts) = operands(
        args,
        "okStT",
        &[
            "--output",
            "--key",
            "--buffer-size",
            "--field-separator",
            "--temporary-directory",
        ],
    );
    opt(&opts, &["-o", "--output"])
        .map(str::to_string)
        .into_iter()
        .collect()
}

/// The files `curl -o` and `wget -O` write.
fn downloads(name: &str, args: &[String]) -> Vec<String> {
    let (short, names): (&str, &[&str]) = if name == "curl" {
        ("oHdXuAeEbcKrTwxy", &["-o", "--output"])
    } else {
        ("OoaPe", &["-O", "--output-document"])
    };
    let (_, opts) = operands(args, short, &["--output", "--output-document"]);
    opts.into_iter()
        .filter(|(k, _)| names.contains(&k.as_str()))
        .map(|(_, v)| v)
        .collect()
}

/// The files an in-place editor changes: none without in-place editing, and
/// without a script given by option (`-e`, `-f`) the first operand is the
/// script itself.
fn in_place_files(in_place: bool, script_given: bool, ops: Vec<String>) -> Vec<String> {
    if !in_place {
        return Vec::new();
    }
    ops.into_iter().skip(usize::from(!script_given)).collect()
}

/// What one cluster of short options of an in-place editor says (`-ni`,
/// `-pe`; given without its dash).
struct Cluster {
    /// `-i`; whatever follows it in the cluster is the backup suffix.
    in_place: bool,
    /// A script is given by option (one of the `script` letters).
    script: bool,
    /// The next word is the value of the cluster's last option.
    value_next: bool,
}

/// Read a cluster up to its first `-i` or option taking a value (one of
/// `valued`; the rest of the cluster, if any, is that value).
fn editor_cluster(cluster: &str, script: &str, valued: &str) -> Cluster {
    for (k, ch) in cluster.char_indices() {
        if ch == 'i' {
            return Cluster {
                in_place: true,
                script: false,
                value_next: false,
            };
        }
        if valued.contains(ch) {
            return Cluster {
                in_place: false,
                script: script.contains(ch),
                value_next: k + 1 == cluster.len(),
            };
        }
    }
    Cluster {
        in_place: false,
        script: false,
        value_next: false,
    }
}

/// Files `sed` edits in place (none without `-i`).
fn sed_files(args: &[String]) -> Vec<String> {
    let mut in_place = false;
    let mut script_given = false;
    let mut ops = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = args[i].as_str();
        if only_operands || !a.starts_with('-') || a == "-" {
            ops.push(args[i].clone());
        } else if a == "--" {
            only_operands = true;
        } else if let Some(l) = a.strip_prefix("--") {
            if l == "in-place" || l.starts_with("in-place=") {
                in_place = true;
            } else if l == "expression" || l == "file" {
                script_given = true;
                i += 1;
            } else if l.starts_with("expression=") || l.starts_with("file=") {
                script_given = true;
            }
        } else {
            let c = editor_cluster(&a[1..], "ef", "efl");
            in_place |= c.in_place;
            script_given |= c.script;
            i += usize::from(c.value_next);
        }
        i += 1;
    }
    in_place_files(in_place, script_given, ops)
}

/// Files `gawk -i inplace` edits in place (none without it).
fn awk_inplace_files(args: &[String]) -> Vec<String> {
    let (ops, opts) = operands(
        args,
        "fvFilEe",
        &[
            "--file",
            "--assign",
            "--field-separator",
            "--include",
            "--load",
            "--exec",
            "--source",
        ],
    );
    let in_place = opts.iter().any(|(k, v)| {
        matches!(k.as_str(), "-i" | "--include") && v.trim_end_matches(".awk") == "inplace"
    });
    // Without -f/-e/--source the first operand is the program text.
    let program_given = has_opt(&opts, &["-f", "--file", "-e", "--source", "-E", "--exec"]);
    in_place_files(in_place, program_given, ops)
}

/// Files `perl -i` edits in place.
fn perl_files(args: &[String]) -> Vec<String> {
    let mut in_place = false;
    let mut script_given = false;
    let mut ops = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a.starts_with('-') && a.len() > 1 && ops.is_empty() {
            let c = editor_cluster(&a[1..], "eE", "eE");
            in_place |= c.in_place;
            script_given |= c.script;
            i += usize::from(c.value_next);
        } else {
            ops.push(args[i].clone());
        }
        i += 1;
    }
    in_place_files(in_place, script_given, ops)
}

/// What `find ARGS` lists, deletes and runs: its starting points and the
/// name and path tests that select files, `-delete`, and each `-exec` /
/// `-execdir` / `-ok` / `-okdir` command (up to its `;` or `+`).
pub(super) fn find_effect(args: &[String]) -> FindEffect {
    let mut i = 0;
    while i < args.len() && matches!(args[i].as_str(), "-H" | "-L" | "-P") {
        i += 1;
    }
    let mut starts = Vec::new();
    while i < args.len() && !args[i].starts_with('-') && args[i] != "(" && args[i] != "!" {
        starts.push(args[i].clone());
        i += 1;
    }
    if starts.is_empty() {
        starts.push(".".to_string());
    }
    let expr = &args[i..];
    let mut f = FindEffect {
        starts,
        names: Vec::new(),
        paths: Vec::new(),
        delete: false,
        execs: Vec::new(),
        writes: Vec::new(),
    };
    let mut k = 0;
    while k < expr.len() {
        let next = expr.get(k + 1).cloned().unwrap_or_default();
        match expr[k].as_str() {
            "-delete" => f.delete = true,
            exec @ ("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let end = expr[k + 1..]
                    .iter()
                    .position(|w| w == ";" || w == "+")
                    .map_or(expr.len(), |p| k + 1 + p);
                f.execs.push(FindExec {
                    words: expr[k + 1..end].to_vec(),
                    in_found_dir: exec.ends_with("dir"),
                });
                k = end;
            }
            "-name" => f.names.push((next, false)),
            "-iname" => f.names.push((next.to_lowercase(), true)),
            "-path" | "-wholename" | "-ipath" | "-iwholename" => f.paths.push(next),
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => f.writes.push(next),
            _ => {}
        }
        k += 1;
    }
    f
}

/// `git [-C DIR]... [-c K=V] SUBCOMMAND ARGS`: what the subcommand does to
/// the paths it names, relative to the `-C` folders.
///
/// Explicit paths count. `git stash` (any form), `git reset --hard` and
/// `git clean` of the whole tree (no path, `.` at the root, `:/`) are allowed
/// while a loop runs once its state lives outside the project tree (its
/// mirror is restored at the next Stop); while the state is in the tree, the
/// forms that take untracked files away are judged (docs/guard.md, "git").
fn git_effects(args: &[String]) -> Vec<Effect> {
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
        "mv" => effects("mv", rest),
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
    let flag = |names: &[&str]| opts.iter().any(|(k, _)| names.contains(&k.as_str()));
    let first = ops.first().map(String::as_str);
    let writes = match sub {
        "status" | "log" | "diff" | "show" | "blame" | "grep" | "ls-files" | "ls-tree"
        | "ls-remote" | "rev-parse" | "rev-list" | "describe" | "shortlog" | "cat-file"
        | "for-each-ref" | "show-ref" | "name-rev" | "merge-base" | "whatchanged" | "help"
        | "version" | "var" | "check-ignore" | "check-attr" | "check-ref-format" | "cherry"
        | "count-objects" | "fsck" | "diff-tree" | "diff-index" | "diff-files" | "range-diff"
        | "verify-commit" | "verify-tag" | "show-branch" | "annotate" | "archive"
        | "format-patch" | "bugreport" | "fetch-pack" | "get-tar-commit-id" => false,
        "branch" => {
            !(ops.is_empty()
                || flag(&[
                    "--list",
                    "-l",
                    "--show-current",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                ]))
                || flag(&[
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
                ])
        }
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
            let reads = flag(&[
                "--get",
                "--get-all",
                "--get-regexp",
                "--get-urlmatch",
                "--list",
                "-l",
                "--show-origin",
                "--show-scope",
                "--name-only",
            ]) || matches!(first, Some("get" | "list"))
                || (ops.len() == 1
                    && !flag(&[
                        "--unset",
                        "--unset-all",
                        "--add",
                        "--replace-all",
                        "-e",
                        "--edit",
                        "--remove-section",
                        "--rename-section",
                    ]));
            !reads
        }
        "symbolic-ref" => ops.len() > 1 || flag(&["-d", "--delete"]),
        "apply" => !flag(&["--check", "--stat", "--numstat", "--summary"]),
        _ => true,
    };
    let shared = match sub {
        "update-ref" => true,
        "symbolic-ref" => writes,
        "branch" => flag(&[
            "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force",
        ]),
        "tag" => flag(&["-d", "--delete", "-f", "--force"]),
        _ => false,
    };
    match (writes, shared) {
        (false, _) => Vec::new(),
        (true, false) => vec![Effect::Repo(".".into())],
        (true, true) => vec![Effect::Repo(".".into()), Effect::SharedRefs],
    }
}

/// `tar -x` writes into its folder (`-C`, `--directory`); `tar -c` writes
/// its archive (`-f`).
fn tar_effects(args: &[String]) -> Vec<Effect> {
    // An old-style first word without a dash (`tar xf a.tar`) is a cluster.
    let mut args = args.to_vec();
    if let Some(first) = args.first_mut()
        && !first.starts_with('-')
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        *first = format!("-{first}");
    }
    let (_, opts) = operands(
        &args,
        "fCbHKLNTVXg",
        &[
            "--file",
            "--directory",
            "--exclude",
            "--files-from",
            "--transform",
            "--strip-components",
        ],
    );
    let extract = has_opt(&opts, &["-x", "--extract", "--get"]);
    let create = has_opt(
        &opts,
        &["-c", "--create", "-r", "--append", "-u", "--update"],
    );
    let dir = opts
        .iter()
        .filter(|(k, _)| k == "-C" || k == "--directory")
        .map(|(_, v)| v.clone())
        .next_back();
    let mut out = Vec::new();
    if extract {
        out.push(Effect::On(
            Kind::WriteBelowRoot,
            dir.clone().unwrap_or_else(|| ".".into()),
        ));
    }
    if create && let Some(f) = opt(&opts, &["-f", "--file"]).filter(|f| *f != "-") {
        out.push(Effect::On(Kind::Onto, f.to_string()));
    }
    out
}

/// A path relative to `dir` (`patch -d DIR FILE`).
fn join_dir(dir: &str, p: &str) -> String {
    if dir == "." || p.starts_with('/') {
        p.to_string()
    } else {
        format!("{dir}/{p}")
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
