//! Built-in protection of the loop's own files (and of the PRD against
//! deletion) for Bash commands.
//!
//! A command is read into simple commands ([`crate::shell`]), each one is
//! unwrapped from the prefixes that only change *how* it runs (`sudo`, `env`,
//! `command`, `xargs`, `nohup`, ...; `sh -c` and `eval` are read as commands
//! of their own), and then a per-program table says which of its operands it
//! removes or writes. Reading (`cat`, `grep`, `head`, `cp` *from*) is never
//! judged, so a benign look-alike stays allowed.

use std::path::{Component, Path, PathBuf};

use crate::LoopContext;
use crate::glob;
use crate::shell::{self, Segment};

/// How deep `sh -c "eval \"...\""` nesting is followed.
const MAX_DEPTH: usize = 8;

/// What a command does to a path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Deletes, moves away or empties it (`rm`, `mv` source, `truncate`,
    /// `find -delete`, `git clean`). Naming a folder holding a file counts.
    Remove,
    /// Replaces or alters its content (`>`, `tee`, `sed -i`, `dd of=`).
    Write,
    /// Like `Write`, but naming the project root itself does not count
    /// (`git checkout .` only reverts tracked files; the loop files are not).
    WriteBelowRoot,
    /// Replaces exactly this path; a folder above does not count (`cp x
    /// .claude/` puts a new file beside the loop files, it does not touch them).
    Onto,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Effect {
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FindEffect {
    starts: Vec<String>,
    names: Vec<(String, bool)>,
    paths: Vec<String>,
}

/// Which protected file a command reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// A loop file (state, log, lock, last-injected, policy), relative display path.
    Loop(String),
    /// The PRD, about to be deleted or moved away.
    Prd(String),
}

/// How a simple command is really run, once its wrappers are peeled off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Exec {
        name: String,
        args: Vec<String>,
        via_xargs: bool,
    },
    /// A string run as a script: `sh -c S`, `eval ARGS`, `env -S S`.
    Script(String),
    /// A shell reading its script from stdin (a pipe or a heredoc).
    ShellStdin,
    Nothing,
}

/// A program's or file's own name (`/bin/rm` -> `rm`). A word computed at
/// run time (`$(echo rm)`, `$X/rm`) is kept whole so that it stays visibly
/// dynamic.
fn base(w: &str) -> &str {
    if w.contains('$') || w.contains('`') {
        return w;
    }
    w.rsplit('/').next().unwrap_or(w)
}

fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh"
    )
}

/// Peel off assignments and wrappers to find the program really run.
pub fn unwrap(words: &[String]) -> Invocation {
    let mut i = 0;
    let mut via_xargs = false;
    while i < words.len() {
        let w = words[i].as_str();
        if shell::is_assignment(w) {
            i += 1;
            continue;
        }
        let name = base(w);
        match name {
            "{" | "}" | "!" | "then" | "do" | "else" | "elif" | "if" | "while" | "until" => {
                i += 1;
            }
            "time" | "nohup" | "builtin" | "setsid" | "chronic" | "unbuffer" => {
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    i += 1;
                }
            }
            "exec" => {
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    i += if words[i] == "-a" { 2 } else { 1 };
                }
            }
            "command" => {
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    // `command -v rm` only prints where rm is.
                    if words[i].contains('v') || words[i].contains('V') {
                        return Invocation::Nothing;
                    }
                    i += 1;
                }
            }
            "env" => {
                i += 1;
                while i < words.len() {
                    let a = words[i].as_str();
                    if a == "-S" || a == "--split-string" {
                        let mut script = words.get(i + 1).cloned().unwrap_or_default();
                        for rest in words.iter().skip(i + 2) {
                            script.push(' ');
                            script.push_str(rest);
                        }
                        return Invocation::Script(script);
                    } else if let Some(s) = a.strip_prefix("--split-string=") {
                        return Invocation::Script(s.to_string());
                    } else if a == "-u" || a == "-C" || a == "--unset" || a == "--chdir" {
                        i += 2;
                    } else if a.starts_with('-') || shell::is_assignment(a) {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "sudo" | "doas" => {
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    let a = words[i].as_str();
                    if a == "--" {
                        i += 1;
                        break;
                    }
                    let takes_arg = a.len() == 2 && "ugCDhprtUT".contains(&a[1..]);
                    i += if takes_arg { 2 } else { 1 };
                }
            }
            "nice" | "ionice" | "stdbuf" | "timeout" | "flock" | "watch" => {
                let wrapper = name;
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    let a = words[i].as_str();
                    let takes_arg = a.len() == 2 && "nciIoeskw".contains(&a[1..]);
                    i += if takes_arg { 2 } else { 1 };
                }
                // `timeout 5 cmd`, `flock FILE cmd`: one positional before the command.
                if matches!(wrapper, "timeout" | "flock") {
                    i += 1;
                }
            }
            "busybox" => i += 1,
            "xargs" => {
                via_xargs = true;
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    let a = words[i].as_str();
                    let takes_arg = a.len() == 2 && "IinLPdEsa".contains(&a[1..]);
                    i += if takes_arg { 2 } else { 1 };
                }
            }
            "eval" => return Invocation::Script(words[i + 1..].join(" ")),
            _ if is_shell(name) => {
                let mut j = i + 1;
                while j < words.len() && words[j].starts_with('-') && words[j] != "-" {
                    let a = words[j].as_str();
                    if !a.starts_with("--") && a[1..].contains('c') {
                        return match words.get(j + 1) {
                            Some(s) => Invocation::Script(s.clone()),
                            None => Invocation::Nothing,
                        };
                    }
                    j += if a == "-o" || a == "-O" { 2 } else { 1 };
                }
                if j >= words.len() {
                    return Invocation::ShellStdin;
                }
                // `bash script.sh`: the script's content is out of sight.
                return Invocation::Exec {
                    name: name.to_string(),
                    args: words[i + 1..].to_vec(),
                    via_xargs,
                };
            }
            _ => {
                return Invocation::Exec {
                    name: name.to_string(),
                    args: words[i + 1..].to_vec(),
                    via_xargs,
                };
            }
        }
    }
    Invocation::Nothing
}

/// Split arguments into operands and option values. `short` lists the short
/// options taking a value, `long` the long ones (given as `--name`).
fn operands(args: &[String], short: &str, long: &[&str]) -> (Vec<String>, Vec<(String, String)>) {
    let mut ops = Vec::new();
    let mut opts = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = &args[i];
        if only_operands || !a.starts_with('-') || a == "-" {
            ops.push(a.clone());
        } else if a == "--" {
            only_operands = true;
        } else if let Some(l) = a.strip_prefix("--") {
            if let Some((k, v)) = l.split_once('=') {
                opts.push((format!("--{k}"), v.to_string()));
            } else if long.contains(&a.as_str()) {
                opts.push((a.clone(), args.get(i + 1).cloned().unwrap_or_default()));
                i += 1;
            } else {
                opts.push((a.clone(), String::new()));
            }
        } else {
            for (k, ch) in a[1..].char_indices() {
                if short.contains(ch) {
                    let rest = &a[1 + k + ch.len_utf8()..];
                    if rest.is_empty() {
                        opts.push((
                            format!("-{ch}"),
                            args.get(i + 1).cloned().unwrap_or_default(),
                        ));
                        i += 1;
                    } else {
                        opts.push((format!("-{ch}"), rest.to_string()));
                    }
                    break;
                }
                opts.push((format!("-{ch}"), String::new()));
            }
        }
        i += 1;
    }
    (ops, opts)
}

fn opt<'a>(opts: &'a [(String, String)], names: &[&str]) -> Option<&'a str> {
    opts.iter()
        .find(|(k, _)| names.contains(&k.as_str()))
        .map(|(_, v)| v.as_str())
}

fn has_opt(opts: &[(String, String)], names: &[&str]) -> bool {
    opts.iter().any(|(k, _)| names.contains(&k.as_str()))
}

/// `mv`/`cp`/`ln`/`install` targets: destination and sources.
fn copy_like(args: &[String], ln: bool) -> (Option<String>, Vec<String>) {
    let (ops, opts) = operands(
        args,
        "tSmogb",
        &[
            "--target-directory",
            "--suffix",
            "--mode",
            "--owner",
            "--group",
        ],
    );
    if let Some(t) = opt(&opts, &["-t", "--target-directory"]) {
        return (Some(t.to_string()), ops);
    }
    match ops.split_last() {
        Some((only, [])) if ln => (Some(".".to_string()), vec![only.clone()]),
        Some((_, [])) | None => (None, Vec::new()),
        Some((dest, sources)) => (Some(dest.clone()), sources.to_vec()),
    }
}

const DESTRUCTIVE: &[&str] = &[
    "rm", "unlink", "rmdir", "shred", "srm", "mv", "truncate", "tee", "cp", "install", "ln",
    "chmod", "chown", "chgrp", "dd",
];

/// What one program, run with these arguments, does to the paths it names.
fn effects(name: &str, args: &[String]) -> Vec<Effect> {
    let on = |k: Kind, v: Vec<String>| v.into_iter().map(move |p| Effect::On(k, p));
    match name {
        "rm" | "unlink" | "rmdir" | "srm" => on(Kind::Remove, operands(args, "", &[]).0).collect(),
        "shred" => on(
            Kind::Remove,
            operands(args, "ns", &["--iterations", "--size"]).0,
        )
        .collect(),
        "truncate" => on(
            Kind::Remove,
            operands(args, "sr", &["--size", "--reference"]).0,
        )
        .collect(),
        "tee" => on(Kind::Write, operands(args, "", &[]).0).collect(),
        "mv" => {
            let (dest, sources) = copy_like(args, false);
            let mut out: Vec<Effect> = on(Kind::Remove, sources.clone()).collect();
            if let Some(dest) = dest {
                out.push(Effect::Into { dest, sources });
            }
            out
        }
        "cp" | "install" | "ln" | "rsync" => {
            if name == "install" && args.iter().any(|a| a == "-d" || a == "--directory") {
                return Vec::new();
            }
            match copy_like(args, name == "ln") {
                // `rsync --delete src/ dest/` empties dest of what src lacks.
                (Some(dest), _)
                    if name == "rsync" && args.iter().any(|a| a.starts_with("--del")) =>
                {
                    vec![Effect::On(Kind::Remove, dest)]
                }
                (Some(dest), sources) => vec![Effect::Into { dest, sources }],
                _ => Vec::new(),
            }
        }
        "sed" => sed_files(args)
            .into_iter()
            .map(|f| Effect::On(Kind::Write, f))
            .collect(),
        "awk" | "gawk" => awk_inplace_files(args)
            .into_iter()
            .map(|f| Effect::On(Kind::Write, f))
            .collect(),
        // Script-driven editors (there is no terminal for an interactive one):
        // any file they are given may be written.
        "ed" | "ex" | "vi" | "vim" | "nvim" => {
            let (ops, _) = operands(args, "cSuUiTwW", &["--cmd"]);
            ops.into_iter()
                .filter(|o| !o.starts_with('+'))
                .map(|f| Effect::On(Kind::Write, f))
                .collect()
        }
        "perl" => perl_files(args)
            .into_iter()
            .map(|f| Effect::On(Kind::Write, f))
            .collect(),
        "dd" => args
            .iter()
            .filter_map(|a| a.strip_prefix("of="))
            .map(|f| Effect::On(Kind::Write, f.to_string()))
            .collect(),
        "chmod" | "chown" | "chgrp" => {
            let (ops, opts) = operands(args, "", &[]);
            let skip = usize::from(!has_opt(&opts, &["--reference"]));
            on(Kind::Write, ops.into_iter().skip(skip).collect()).collect()
        }
        "sort" => {
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
                .map(|f| Effect::On(Kind::Write, f.to_string()))
                .into_iter()
                .collect()
        }
        "curl" | "wget" => {
            let (_, opts) = operands(
                args,
                if name == "curl" {
                    "oHdXuAeEbcKrTwxy"
                } else {
                    "OoaPe"
                },
                &["--output", "--output-document"],
            );
            let names: &[&str] = if name == "curl" {
                &["-o", "--output"]
            } else {
                &["-O", "--output-document"]
            };
            opts.iter()
                .filter(|(k, _)| names.contains(&k.as_str()))
                .map(|(_, v)| Effect::On(Kind::Write, v.clone()))
                .collect()
        }
        "find" => find_effect(args, false)
            .map(Effect::Find)
            .into_iter()
            .collect(),
        "git" => git_effects(args),
        "cd" | "pushd" => vec![Effect::Cd(operands(args, "", &[]).0.into_iter().next())],
        _ => Vec::new(),
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
            let cluster = &a[1..];
            for (k, ch) in cluster.char_indices() {
                match ch {
                    // GNU: whatever follows `i` in the cluster is the backup suffix.
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'e' | 'f' | 'l' => {
                        if ch != 'l' {
                            script_given = true;
                        }
                        if k + 1 == cluster.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
    if !in_place {
        return Vec::new();
    }
    if script_given {
        ops
    } else {
        ops.into_iter().skip(1).collect()
    }
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
    if !in_place {
        return Vec::new();
    }
    // Without -f/-e/--source the first operand is the program text.
    let program_given = has_opt(&opts, &["-f", "--file", "-e", "--source", "-E", "--exec"]);
    ops.into_iter().skip(usize::from(!program_given)).collect()
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
            let cluster = &a[1..];
            for (k, ch) in cluster.char_indices() {
                match ch {
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'e' | 'E' => {
                        script_given = true;
                        if k + 1 == cluster.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            ops.push(args[i].clone());
        }
        i += 1;
    }
    if !in_place {
        return Vec::new();
    }
    if script_given {
        ops
    } else {
        ops.into_iter().skip(1).collect()
    }
}

/// What `find ARGS` removes itself (`-delete`, `-exec rm`), or, with
/// `listed_for_removal`, what it lists for a removing `xargs` to act on.
fn find_effect(args: &[String], listed_for_removal: bool) -> Option<FindEffect> {
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
    let mut destructive = false;
    let mut names = Vec::new();
    let mut paths = Vec::new();
    for (k, a) in expr.iter().enumerate() {
        let next = expr.get(k + 1).cloned().unwrap_or_default();
        match a.as_str() {
            "-delete" => destructive = true,
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let cmd = base(&next);
                let rest = &expr[(k + 2).min(expr.len())..];
                if matches!(
                    cmd,
                    "rm" | "unlink" | "shred" | "mv" | "truncate" | "rmdir" | "srm" | "chmod"
                ) || (cmd == "sed"
                    && rest
                        .iter()
                        .any(|x| x.starts_with("-i") || x.starts_with("--in-place")))
                {
                    destructive = true;
                }
            }
            "-name" => names.push((next, false)),
            "-iname" => names.push((next.to_lowercase(), true)),
            "-path" | "-wholename" | "-ipath" | "-iwholename" => paths.push(next),
            _ => {}
        }
    }
    (destructive || listed_for_removal).then_some(FindEffect {
        starts,
        names,
        paths,
    })
}

fn git_effects(args: &[String]) -> Vec<Effect> {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        i += if matches!(args[i].as_str(), "-C" | "-c") {
            2
        } else {
            1
        };
    }
    let Some(sub) = args.get(i) else {
        return Vec::new();
    };
    let rest = &args[(i + 1).min(args.len())..];
    match sub.as_str() {
        "rm" => {
            let (ops, opts) = operands(rest, "", &[]);
            if has_opt(&opts, &["--cached"]) {
                return Vec::new();
            }
            ops.into_iter()
                .map(|p| Effect::On(Kind::Remove, p))
                .collect()
        }
        "mv" => effects("mv", rest),
        "checkout" | "restore" => {
            let (ops, _) = operands(rest, "bBsU", &["--source", "--conflict"]);
            ops.into_iter()
                .map(|p| Effect::On(Kind::WriteBelowRoot, p))
                .collect()
        }
        "clean" => {
            let (ops, opts) = operands(rest, "e", &["--exclude"]);
            if has_opt(&opts, &["-n", "--dry-run"]) {
                return Vec::new();
            }
            let excludes = opts
                .iter()
                .filter(|(k, _)| k == "-e" || k == "--exclude")
                .map(|(_, v)| v.clone())
                .collect();
            let paths = if ops.is_empty() {
                vec![".".to_string()]
            } else {
                ops
            };
            vec![Effect::Clean { paths, excludes }]
        }
        "stash" => {
            let (ops, opts) = operands(rest, "m", &["--message"]);
            let untracked = has_opt(&opts, &["-u", "-a", "--include-untracked", "--all"]);
            let reads_only = matches!(
                ops.first().map(String::as_str),
                Some(
                    "list"
                        | "show"
                        | "apply"
                        | "pop"
                        | "drop"
                        | "branch"
                        | "clear"
                        | "create"
                        | "store"
                )
            );
            if !untracked || reads_only {
                return Vec::new();
            }
            // `git stash push -u -- src`: only the pathspecs are stashed away.
            let paths: Vec<String> = ops
                .into_iter()
                .filter(|o| o != "push" && o != "save")
                .collect();
            if paths.is_empty() {
                vec![Effect::On(Kind::Remove, ".".to_string())]
            } else {
                paths
                    .into_iter()
                    .map(|p| Effect::On(Kind::Remove, p))
                    .collect()
            }
        }
        _ => Vec::new(),
    }
}

/// Lexically normalise: drop `.`, resolve `..`, keep it absolute.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The loop context with the protected files worked out once per command:
/// every check of every word needs them.
struct Checker<'a> {
    ctx: &'a LoopContext,
    roots: Vec<PathBuf>,
    /// Loop files under every root, then the PRD under every root.
    targets: Vec<Target>,
    loop_count: usize,
}

impl std::ops::Deref for Checker<'_> {
    type Target = LoopContext;
    fn deref(&self) -> &LoopContext {
        self.ctx
    }
}

impl<'a> Checker<'a> {
    fn new(ctx: &'a LoopContext) -> Checker<'a> {
        let mut roots = vec![ctx.root.clone()];
        if let Some(real) = ctx.real_root.as_ref().filter(|r| **r != ctx.root) {
            roots.push(real.clone());
        }
        let exists = |rel: &PathBuf| !ctx.missing.contains(rel);
        let mut targets = Vec::new();
        for root in &roots {
            for rel in &ctx.loop_files {
                targets.push(Target {
                    abs: root.join(rel),
                    is_prd: false,
                    display: rel.display().to_string(),
                    exists: exists(rel),
                });
            }
        }
        let loop_count = targets.len();
        if let Some(prd) = &ctx.prd_file {
            for root in &roots {
                targets.push(Target {
                    abs: root.join(prd),
                    is_prd: true,
                    display: prd.display().to_string(),
                    exists: exists(prd),
                });
            }
        }
        Checker {
            ctx,
            roots,
            targets,
            loop_count,
        }
    }

    /// The protected files; the PRD only where removal is judged.
    fn all(&self, with_prd: bool) -> &[Target] {
        if with_prd {
            &self.targets
        } else {
            &self.targets[..self.loop_count]
        }
    }
}

/// One protected file. A file that does not exist is still guarded against
/// being created under its name, but removing the folder it would live in
/// (or a glob that could only match existing files) does not reach it.
#[derive(Clone)]
struct Target {
    abs: PathBuf,
    is_prd: bool,
    display: String,
    exists: bool,
}

fn hit(is_prd: bool, display: &str) -> Hit {
    if is_prd {
        Hit::Prd(display.to_string())
    } else {
        Hit::Loop(display.to_string())
    }
}

/// Expand the variables whose value the guard knows.
fn expand_known(word: &str, cwd: Option<&Path>, ctx: &Checker) -> String {
    let mut w = word.to_string();
    if let Some(cwd) = cwd {
        let c = cwd.display().to_string();
        w = w.replace("${PWD}", &c).replace("$PWD", &c);
    }
    let r = ctx.root.display().to_string();
    w.replace("${CLAUDE_PROJECT_DIR}", &r)
        .replace("$CLAUDE_PROJECT_DIR", &r)
}

/// Does `kind` applied to `word` reach a protected file?
fn classify(word: &str, kind: Kind, cwd: Option<&Path>, ctx: &Checker) -> Option<Hit> {
    classify_except(word, kind, cwd, ctx, &|_| false, 0)
}

/// `classify`, ignoring the protected files for which `skip` says so.
fn classify_except(
    word: &str,
    kind: Kind,
    cwd: Option<&Path>,
    ctx: &Checker,
    skip: &dyn Fn(&Path) -> bool,
    depth: usize,
) -> Option<Hit> {
    // `rm $(ls .claude/*)`: the operands are computed from what the inner
    // command names, so judge those names as operands too.
    if depth < MAX_DEPTH && (word.contains("$(") || word.contains('`')) {
        for seg in shell::split_chain(word) {
            for sub in &seg.substitutions {
                for inner in shell::split_chain(sub) {
                    for w in inner.words.iter().skip(1) {
                        if let Some(h) = classify_except(w, kind, cwd, ctx, skip, depth + 1) {
                            return Some(h);
                        }
                    }
                }
            }
        }
    }
    let targets = ctx;
    let with_prd = kind == Kind::Remove;
    let word = expand_known(word, cwd, ctx);
    for cand in glob::expand_braces(&word) {
        let trimmed = cand.trim_end_matches('/');
        let dynamic = cand.contains('$') || cand.contains('`') || cand.starts_with('~');
        if dynamic || (cwd.is_none() && !cand.starts_with('/')) {
            // Unknown until run time: judge by the last component's name.
            let last = (if trimmed.is_empty() {
                cand.as_str()
            } else {
                trimmed
            })
            .rsplit('/')
            .next()
            .unwrap_or(trimmed);
            for t in targets.all(with_prd) {
                if skip(&t.abs) {
                    continue;
                }
                let mut names = vec![
                    t.abs
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default(),
                ];
                if kind != Kind::Onto && t.exists {
                    for root in &targets.roots {
                        if let Ok(rel) = t.abs.strip_prefix(root) {
                            let comps: Vec<_> = rel.components().collect();
                            for c in comps.iter().take(comps.len().saturating_sub(1)) {
                                names.push(c.as_os_str().to_string_lossy().to_string());
                            }
                        }
                    }
                }
                if names.iter().any(|n| {
                    !n.is_empty()
                        && (n == last || (glob::has_glob(last) && glob::match_component(last, n)))
                }) {
                    return Some(hit(t.is_prd, &t.display));
                }
            }
            continue;
        }
        let base_dir = cwd.unwrap_or(Path::new("/"));
        let path = normalize(&base_dir.join(&cand));
        for t in targets.all(with_prd) {
            if skip(&t.abs) {
                continue;
            }
            let reaches = if glob::has_glob(&cand) {
                t.exists && glob_reaches(&path, &t.abs, kind, ctx)
            } else {
                path == t.abs
                    || (t.exists && t.abs.starts_with(&path) && ancestor_counts(&path, kind, ctx))
            };
            if reaches {
                return Some(hit(t.is_prd, &t.display));
            }
        }
    }
    None
}

fn ancestor_counts(path: &Path, kind: Kind, ctx: &Checker) -> bool {
    match kind {
        Kind::Remove | Kind::Write => true,
        Kind::Onto => false,
        // A folder strictly inside the project (`git checkout .claude`), not
        // the project itself (`git checkout .`), under either spelling of the root.
        Kind::WriteBelowRoot => ctx.roots.iter().any(|r| path != r && path.starts_with(r)),
    }
}

/// Does the glob `pattern` (absolute, normalised) match `target` or, for a
/// removal, a folder above it?
fn glob_reaches(pattern: &Path, target: &Path, kind: Kind, ctx: &Checker) -> bool {
    let pc: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let tc: Vec<String> = target
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let ancestors_ok = match kind {
        Kind::Remove | Kind::Write => true,
        Kind::Onto => false,
        Kind::WriteBelowRoot => pc.len() > ctx.root.components().count(),
    };
    if pc.len() > tc.len() || (pc.len() < tc.len() && !ancestors_ok) {
        return false;
    }
    pc.iter()
        .zip(tc.iter())
        .all(|(p, t)| p == t || glob::match_component(p, t))
}

/// Does `find START... -delete` (or `-exec rm`) reach a protected file?
fn classify_find(f: &FindEffect, cwd: Option<&Path>, ctx: &Checker) -> Option<Hit> {
    let targets = ctx;
    for start in &f.starts {
        if classify(start, Kind::Remove, cwd, ctx).is_none() {
            continue;
        }
        let Some(cwd) = cwd else {
            return classify(start, Kind::Remove, None, ctx);
        };
        let s = normalize(&cwd.join(expand_known(start, Some(cwd), ctx)));
        // find only meets files that exist.
        for Target {
            abs,
            is_prd,
            display,
            exists,
        } in targets.all(true)
        {
            if !exists {
                continue;
            }
            let Ok(rel) = abs.strip_prefix(&s) else {
                if glob::has_glob(start) {
                    return Some(hit(*is_prd, display));
                }
                continue;
            };
            if f.names.is_empty() && f.paths.is_empty() {
                return Some(hit(*is_prd, display));
            }
            let comps: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect();
            let name_hit = f.names.iter().any(|(pat, ci)| {
                comps.iter().any(|c| {
                    if *ci {
                        glob::fnmatch(pat, &c.to_lowercase())
                    } else {
                        glob::fnmatch(pat, c)
                    }
                })
            });
            let printed = format!("{}/{}", start.trim_end_matches('/'), rel.display());
            let path_hit = f.paths.iter().any(|pat| glob::fnmatch(pat, &printed));
            if name_hit || path_hit {
                return Some(hit(*is_prd, display));
            }
        }
    }
    None
}

fn classify_into(dest: &str, sources: &[String], cwd: Option<&Path>, ctx: &Checker) -> Option<Hit> {
    // Onto the file itself (the PRD may be replaced: only its removal is guarded).
    if let Some(h @ Hit::Loop(_)) = classify(dest, Kind::Onto, cwd, ctx) {
        return Some(h);
    }
    // Into a folder, where `folder/basename(source)` lands on (or over) a loop file.
    for s in sources {
        let name = base(s.trim_end_matches('/'));
        if name.is_empty() || name == "." || name == ".." {
            continue;
        }
        let landed = format!("{}/{}", dest.trim_end_matches('/'), name);
        if let Some(h @ Hit::Loop(_)) = classify(&landed, Kind::Remove, cwd, ctx) {
            return Some(h);
        }
    }
    None
}

/// Is `abs` kept by one of `git clean -e PATTERN` (gitignore-style, read
/// simply: the pattern names the file, or a folder on its way)?
fn excluded(abs: &Path, excludes: &[String], ctx: &Checker) -> bool {
    let rel = abs
        .strip_prefix(&ctx.root)
        .or_else(|_| abs.strip_prefix(ctx.real_root.as_deref().unwrap_or(&ctx.root)));
    let Ok(rel) = rel else { return false };
    let rel_str = rel.to_string_lossy();
    excludes.iter().any(|e| {
        let e = e.trim_start_matches('/').trim_end_matches('/');
        glob::fnmatch(e, &rel_str)
            || rel
                .components()
                .any(|c| glob::fnmatch(e, &c.as_os_str().to_string_lossy()))
    })
}

/// Why a Bash command is denied, if it is.
pub fn check_bash(command: &str, ctx: &LoopContext) -> Option<Hit> {
    let ck = Checker::new(ctx);
    let mut cwd = Some(ctx.cwd.clone());
    check_script(command, &ck, &mut cwd, 0)
}

fn check_script(
    command: &str,
    ctx: &Checker,
    cwd: &mut Option<PathBuf>,
    depth: usize,
) -> Option<Hit> {
    if depth > MAX_DEPTH {
        return None;
    }
    let segments = shell::split_chain(command);
    for (idx, seg) in segments.iter().enumerate() {
        if let Some(h) = check_segment(seg, idx, &segments, ctx, cwd, depth) {
            return Some(h);
        }
    }
    None
}

fn check_segment(
    seg: &Segment,
    idx: usize,
    all: &[Segment],
    ctx: &Checker,
    cwd: &mut Option<PathBuf>,
    depth: usize,
) -> Option<Hit> {
    for sub in &seg.substitutions {
        // A substitution runs in a subshell: its `cd` does not leak out.
        let mut sub_cwd = cwd.clone();
        if let Some(h) = check_script(sub, ctx, &mut sub_cwd, depth + 1) {
            return Some(h);
        }
    }
    let here = cwd.clone();
    for r in &seg.redirects {
        if r.writes_file() {
            // `> prd.json` alone empties it: that counts as removing it.
            let kind = if seg.words.is_empty() {
                Kind::Remove
            } else {
                Kind::Write
            };
            if let Some(h) = classify(&r.target, kind, here.as_deref(), ctx) {
                return Some(h);
            }
        }
    }
    // Brace expansion makes several arguments of one unquoted word
    // (`mv FILE{,.bak}` is `mv FILE FILE.bak`).
    let expanded;
    let words = if seg.raw_words.iter().any(|r| r.contains('{')) {
        expanded = seg
            .raw_words
            .iter()
            .zip(&seg.words)
            .flat_map(|(raw, w)| {
                if raw.contains(['\'', '"', '\\']) {
                    vec![w.clone()]
                } else {
                    glob::expand_braces(w)
                }
            })
            .collect::<Vec<_>>();
        &expanded
    } else {
        &seg.words
    };
    match unwrap(words) {
        Invocation::Nothing => None,
        Invocation::Script(s) => {
            let mut inner = cwd.clone();
            check_script(&s, ctx, &mut inner, depth + 1)
        }
        Invocation::ShellStdin => {
            for body in &seg.heredocs {
                let mut inner = cwd.clone();
                if let Some(h) = check_script(body, ctx, &mut inner, depth + 1) {
                    return Some(h);
                }
            }
            // `echo "rm x" | sh`: the script is the echoed text.
            if seg.piped_in
                && idx > 0
                && let Invocation::Exec { name, args, .. } = unwrap(&all[idx - 1].words)
                && (name == "echo" || name == "printf")
            {
                let mut inner = cwd.clone();
                return check_script(&args.join(" "), ctx, &mut inner, depth + 1);
            }
            None
        }
        Invocation::Exec {
            name,
            args,
            via_xargs,
        } => {
            if name.contains('$') || name.contains('`') {
                // `$(echo rm) FILE`: when the name is echoed, the echoed text
                // plus the arguments is the command that runs.
                for sub in &seg.substitutions {
                    for inner in shell::split_chain(sub) {
                        if let Invocation::Exec {
                            name: n, args: a, ..
                        } = unwrap(&inner.words)
                            && (n == "echo" || n == "printf")
                        {
                            let script = format!("{} {}", a.join(" "), shell::join(&args));
                            let mut inner_cwd = cwd.clone();
                            if let Some(h) = check_script(&script, ctx, &mut inner_cwd, depth + 1) {
                                return Some(h);
                            }
                        }
                    }
                }
                // The program is chosen at run time: any loop file named is too close.
                return args
                    .iter()
                    .find_map(|a| classify(a, Kind::Remove, here.as_deref(), ctx));
            }
            if via_xargs && DESTRUCTIVE.contains(&name.as_str()) && seg.piped_in && idx > 0 {
                // Operands arrive on stdin: judge what the feeding command names.
                let feeder = &all[idx - 1];
                match unwrap(&feeder.words) {
                    // `find . -name '*.bak' | xargs rm`: what find lists, with its filters.
                    Invocation::Exec {
                        name: f, args: fa, ..
                    } if f == "find" => {
                        let listed = find_effect(&fa, true);
                        if let Some(h) =
                            listed.and_then(|fe| classify_find(&fe, here.as_deref(), ctx))
                        {
                            return Some(h);
                        }
                    }
                    _ => {
                        for w in feeder.words.iter().skip(1) {
                            if let Some(h) = classify(w, Kind::Remove, here.as_deref(), ctx) {
                                return Some(h);
                            }
                        }
                    }
                }
            }
            for e in effects(&name, &args) {
                let h = match &e {
                    Effect::On(kind, w) => classify(w, *kind, here.as_deref(), ctx),
                    Effect::Into { dest, sources } => {
                        classify_into(dest, sources, here.as_deref(), ctx)
                    }
                    Effect::Find(f) => classify_find(f, here.as_deref(), ctx),
                    Effect::Clean { paths, excludes } => {
                        let skip = |abs: &Path| excluded(abs, excludes, ctx);
                        paths.iter().find_map(|p| {
                            classify_except(p, Kind::Remove, here.as_deref(), ctx, &skip, 0)
                        })
                    }
                    Effect::Cd(dir) => {
                        *cwd = match dir {
                            Some(d)
                                if !d.contains('$')
                                    && !d.contains('`')
                                    && !d.starts_with('~')
                                    && d != "-" =>
                            {
                                here.as_ref().map(|c| normalize(&c.join(d)))
                            }
                            _ => None,
                        };
                        None
                    }
                };
                if h.is_some() {
                    return h;
                }
            }
            None
        }
    }
}
