//! The per-program table: what a program, run with these arguments, does to
//! the paths it names (removes, writes, copies into, finds and deletes,
//! changes folder to). Reading is never an effect, so `cat`, `grep` or `cp`
//! *from* a protected file stay allowed.

use super::Kind;
use super::wrappers::base;

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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FindEffect {
    pub(super) starts: Vec<String>,
    pub(super) names: Vec<(String, bool)>,
    pub(super) paths: Vec<String>,
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

/// Programs that, fed their operands by `xargs`, remove or write them.
pub(super) const DESTRUCTIVE: &[&str] = &[
    "rm", "unlink", "rmdir", "shred", "srm", "mv", "truncate", "tee", "cp", "install", "ln",
    "chmod", "chown", "chgrp", "dd",
];

/// `kind` applied to each of `paths`.
fn on(kind: Kind, paths: Vec<String>) -> Vec<Effect> {
    paths.into_iter().map(|p| Effect::On(kind, p)).collect()
}

/// What one program, run with these arguments, does to the paths it names.
pub(super) fn effects(name: &str, args: &[String]) -> Vec<Effect> {
    match name {
        "rm" | "unlink" | "rmdir" | "srm" => on(Kind::Remove, operands(args, "", &[]).0),
        "shred" => on(
            Kind::Remove,
            operands(args, "ns", &["--iterations", "--size"]).0,
        ),
        "truncate" => on(
            Kind::Remove,
            operands(args, "sr", &["--size", "--reference"]).0,
        ),
        "tee" => on(Kind::Write, operands(args, "", &[]).0),
        "mv" => {
            let (dest, sources) = copy_like(args, false);
            let mut out = on(Kind::Remove, sources.clone());
            if let Some(dest) = dest {
                out.push(Effect::Into { dest, sources });
            }
            out
        }
        "cp" | "install" | "ln" | "rsync" => copy_effects(name, args),
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
        "chmod" | "chown" | "chgrp" => {
            let (ops, opts) = operands(args, "", &[]);
            let skip = usize::from(!has_opt(&opts, &["--reference"]));
            on(Kind::Write, ops.into_iter().skip(skip).collect())
        }
        "sort" => on(Kind::Write, sort_output(args)),
        "curl" | "wget" => on(Kind::Write, downloads(name, args)),
        "find" => find_effect(args, false)
            .map(Effect::Find)
            .into_iter()
            .collect(),
        "git" => git_effects(args),
        "cd" | "pushd" => vec![Effect::Cd(operands(args, "", &[]).0.into_iter().next())],
        _ => Vec::new(),
    }
}

/// `cp`, `install`, `ln` and `rsync`: onto (or into) their destination.
fn copy_effects(name: &str, args: &[String]) -> Vec<Effect> {
    if name == "install" && args.iter().any(|a| a == "-d" || a == "--directory") {
        return Vec::new();
    }
    match copy_like(args, name == "ln") {
        // `rsync --delete src/ dest/` empties dest of what src lacks.
        (Some(dest), _) if name == "rsync" && args.iter().any(|a| a.starts_with("--del")) => {
            vec![Effect::On(Kind::Remove, dest)]
        }
        (Some(dest), sources) => vec![Effect::Into { dest, sources }],
        _ => Vec::new(),
    }
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

/// What `find ARGS` removes itself (`-delete`, `-exec rm`), or, with
/// `listed_for_removal`, what it lists for a removing `xargs` to act on.
pub(super) fn find_effect(args: &[String], listed_for_removal: bool) -> Option<FindEffect> {
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
            on(Kind::Remove, ops)
        }
        "mv" => effects("mv", rest),
        "checkout" | "restore" => on(
            Kind::WriteBelowRoot,
            operands(rest, "bBsU", &["--source", "--conflict"]).0,
        ),
        "clean" => git_clean(rest),
        "stash" => git_stash(rest),
        _ => Vec::new(),
    }
}

/// `git clean`: removes untracked files under its paths, except what `-e` keeps.
fn git_clean(rest: &[String]) -> Vec<Effect> {
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

/// `git stash -u` takes untracked files away (the loop files among them).
fn git_stash(rest: &[String]) -> Vec<Effect> {
    let (ops, opts) = operands(rest, "m", &["--message"]);
    let untracked = has_opt(&opts, &["-u", "-a", "--include-untracked", "--all"]);
    let reads_only = matches!(
        ops.first().map(String::as_str),
        Some("list" | "show" | "apply" | "pop" | "drop" | "branch" | "clear" | "create" | "store")
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
        on(Kind::Remove, paths)
    }
}
