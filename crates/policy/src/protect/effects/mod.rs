//! The per-program table: what a program, run with these arguments, does to
//! the paths it names (removes, writes, copies into, finds and deletes,
//! changes folder to). Reading is never an effect, so `cat`, `grep` or `cp`
//! *from* a protected file stay allowed.
//!
//! One arm per program here; the families with options of their own live in
//! their own modules: [`copy`] (`mv`, `cp`, `ln`, `rsync`, ...), [`editors`]
//! (in-place editors), [`archives`] (`tar`, `unzip`, `patch`) and [`git`].
//! Pure.

mod archives;
mod copy;
mod editors;
mod git;

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
    /// A symbolic link made at `link` (as written, relative to the folder
    /// the command runs in) pointing to `target` (as written: relative to
    /// the link's folder, or to the command's with `from_cwd`, `ln -r`).
    /// The destination is also an [`Effect::Into`]; this says what later
    /// paths through `link` reach.
    Symlink {
        link: String,
        target: String,
        from_cwd: bool,
    },
    /// `git config` sets `key` (as written; `*` for `--edit`, whose keys
    /// are not seen; `SECTION.*` for a section renamed onto SECTION) to
    /// `value`, in whichever file it writes (`--local`, `--global`, `-f`).
    ConfigSet {
        key: String,
        value: Option<String>,
    },
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

/// `kind` applied to each of `paths`.
fn on(kind: Kind, paths: Vec<String>) -> Vec<Effect> {
    paths.into_iter().map(|p| Effect::On(kind, p)).collect()
}

/// What one program, run with these arguments, does to the paths it names:
/// one arm per program, or per family of programs in its own module.
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
        "mv" => copy::mv_effects(args),
        "cp" | "install" | "ln" | "rsync" => copy::copy_effects(name, args),
        "link" => copy::link_effects(args),
        "sed" => on(Kind::Write, editors::sed_files(args)),
        "awk" | "gawk" => on(Kind::Write, editors::awk_inplace_files(args)),
        "ed" | "ex" | "vi" | "vim" | "nvim" => on(Kind::Write, editors::script_editor_files(args)),
        "perl" => on(Kind::Write, editors::perl_files(args)),
        "dd" => on(
            Kind::Write,
            args.iter()
                .filter_map(|a| a.strip_prefix("of="))
                .map(str::to_string)
                .collect(),
        ),
        "chmod" => on(Kind::Write, chmod_files(args)),
        "chown" | "chgrp" => on(Kind::Write, chown_files(args)),
        "sort" => on(Kind::Write, sort_output(args)),
        "curl" | "wget" => on(Kind::Write, downloads(name, args)),
        "find" => find_effects(args),
        "git" => git::git_effects(args),
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
        "tar" | "bsdtar" | "gtar" => archives::tar_effects(args),
        "unzip" => archives::unzip_effects(args),
        "patch" => archives::patch_effects(args),
        "cd" | "pushd" => vec![Effect::Cd(operands(args, "", &[]).0.into_iter().next())],
        _ => Vec::new(),
    }
}

/// The files `chown OWNER FILE...` (or `--reference=R FILE...`) changes.
fn chown_files(args: &[String]) -> Vec<String> {
    let (ops, opts) = operands(args, "", &["--reference", "--from"]);
    let skip = usize::from(!has_opt(&opts, &["--reference"]));
    ops.into_iter().skip(skip).collect()
}

/// `find` writes the files of `-fprint` and the like; with `-delete` or
/// `-exec` it acts on what it finds.
fn find_effects(args: &[String]) -> Vec<Effect> {
    let f = find_effect(args);
    let mut out = on(Kind::Write, f.writes.clone());
    if f.delete || !f.execs.is_empty() {
        out.push(Effect::Find(f));
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
