//! Matching against the protected paths: whether a word a command removes,
//! writes or copies onto reaches a loop file (or the PRD, or the loop's data
//! folder), read as a path relative to the command's folder, through globs,
//! braces, the values the guard knows (`$PWD`, `$CLAUDE_PROJECT_DIR`, `~`,
//! `$HOME`, `$(pwd)`, `/proc/self/cwd`) and a folder above the file.
//!
//! A path whose value depends on anything else (`$TMPDIR/x`, `"$OUT"/*`, a
//! relative path after `cd "$X"`) is not assumed to point into the project:
//! it is not judged.
//! Does I/O: whether a named target exists.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::effects::FindEffect;
use super::{ARG, Hit, Kind, MAX_DEPTH};
use crate::context::{LoopContext, normalize};
use crate::{glob, shell, winpath};

/// The loop context with the protected files worked out once per command:
/// every check of every word needs them.
pub(super) struct Checker<'a> {
    ctx: &'a LoopContext,
    roots: Vec<PathBuf>,
    /// Loop files under every root, then the PRD under every root.
    targets: Vec<Target>,
    loop_count: usize,
    /// On Windows: the protected paths and the places above them, in
    /// `winpath`'s spelling, for reading 8.3 short names.
    known: Vec<String>,
}

impl std::ops::Deref for Checker<'_> {
    type Target = LoopContext;
    fn deref(&self) -> &LoopContext {
        self.ctx
    }
}

impl<'a> Checker<'a> {
    pub(super) fn new(ctx: &'a LoopContext) -> Checker<'a> {
        let mut roots = vec![ctx.root.clone()];
        if let Some(real) = ctx.real_root.as_ref().filter(|r| **r != ctx.root) {
            roots.push(real.clone());
        }
        let mut targets = Vec::new();
        for root in &roots {
            targets.extend(in_root(root, ctx));
        }
        targets.extend(outside_roots(ctx));
        let loop_count = targets.len();
        if let Some(prd) = &ctx.prd_file {
            for root in &roots {
                targets.push(Target {
                    is_prd: true,
                    exists: !ctx.missing.contains(prd),
                    kept_from_whole_tree: ctx.kept_from_whole_tree.contains(prd),
                    ..Target::file(root.join(prd), prd.display().to_string())
                });
            }
        }
        // Normalized as every word's path is (see `classify_except`).
        for t in &mut targets {
            t.abs = normalize(&t.abs);
        }
        let known = if ctx.windows {
            targets
                .iter()
                .map(|t| winpath::canonical(&t.abs.to_string_lossy()))
                .collect()
        } else {
            Vec::new()
        };
        Checker {
            ctx,
            roots,
            targets,
            loop_count,
            known,
        }
    }

    /// How a folder's word (`cd DIR`) is read.
    pub(super) fn reading(&self) -> super::cwd::Reading<'_> {
        super::cwd::Reading {
            windows: self.ctx.windows,
            home: self.ctx.home.as_deref(),
        }
    }

    /// A word that names a path, as the rules compare it: on Windows in
    /// `winpath`'s one spelling, with the 8.3 short names it may hold read
    /// as the protected names they could stand for.
    /// Elsewhere the word as it is (no copy: every word meets this).
    pub(super) fn spell<'w>(&self, word: &'w str) -> Cow<'w, str> {
        if self.ctx.windows {
            Cow::Owned(winpath::expand_short_names(
                &winpath::canonical(word),
                &self.known,
            ))
        } else {
            Cow::Borrowed(word)
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

/// One protected file, or folder (the loop's data folder, all of whose
/// content is protected). A file that does not exist is still guarded
/// against being created under its name, but removing the folder it would
/// live in (or a glob that could only match existing files) does not reach it.
// Four independent facts about one path, each read on its own.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone)]
struct Target {
    abs: PathBuf,
    is_prd: bool,
    is_dir: bool,
    display: String,
    exists: bool,
    /// A `git stash -u` or `git clean` of the whole tree may not take it.
    kept_from_whole_tree: bool,
    /// A pinned file: what pinned it.
    pin: Option<String>,
}

impl Target {
    fn hit(&self) -> Hit {
        match &self.pin {
            Some(why) => Hit::Pinned {
                path: self.display.clone(),
                why: why.clone(),
            },
            None if self.is_prd => Hit::Prd(self.display.clone()),
            None => Hit::Loop(self.display.clone()),
        }
    }
}

impl Target {
    /// An existing file with nothing special about it.
    fn file(abs: PathBuf, display: String) -> Target {
        Target {
            abs,
            is_prd: false,
            is_dir: false,
            display,
            exists: true,
            kept_from_whole_tree: false,
            pin: None,
        }
    }
}

/// The protected files under one root: the loop's files, its configuration
/// folders (every file in them) and the pinned files.
fn in_root(root: &Path, ctx: &LoopContext) -> Vec<Target> {
    let exists = |rel: &PathBuf| !ctx.missing.contains(rel);
    let mut targets = Vec::new();
    for rel in &ctx.loop_files {
        targets.push(Target {
            exists: exists(rel),
            kept_from_whole_tree: ctx.kept_from_whole_tree.contains(rel),
            ..Target::file(root.join(rel), rel.display().to_string())
        });
    }
    for rel in &ctx.config_dirs {
        targets.push(Target {
            is_dir: true,
            exists: exists(rel),
            ..Target::file(root.join(rel), rel.display().to_string())
        });
    }
    // Pinned files exist (stat-ing thousands per call would cost more than
    // the guard); one the agent removed is put back anyway.
    for (rel, why) in &ctx.pins {
        targets.push(Target {
            pin: Some(why.clone()),
            ..Target::file(root.join(rel), rel.display().to_string())
        });
    }
    targets
}

/// The protected folders and the client's settings files (no Bash write:
/// their content can't be judged), wherever they are.
fn outside_roots(ctx: &LoopContext) -> Vec<Target> {
    let display = |p: &Path| match ctx.home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
        Some(rel) => format!("~/{}", rel.display()),
        None => p.display().to_string(),
    };
    let mut targets = Vec::new();
    for dir in &ctx.protected_dirs {
        targets.push(Target {
            is_dir: true,
            ..Target::file(dir.clone(), display(dir))
        });
    }
    for file in &ctx.settings_files {
        targets.push(Target {
            exists: file.exists(),
            ..Target::file(file.clone(), display(file))
        });
    }
    targets
}

/// Expand the values the guard knows: `$PWD` and `$(pwd)` (the command's
/// folder), `$CLAUDE_PROJECT_DIR` and `$(git rev-parse --show-toplevel)` (the
/// root), `~` and `$HOME`, and `/proc/self/cwd` (the folder of the process
/// that opens the path: the command's). On Windows ([`LoopContext::windows`])
/// the word is read in lower case with `/` for `\` first, and the profile
/// folder's names (`$USERPROFILE`, `%USERPROFILE%`, `$env:USERPROFILE`,
/// `%HOMEDRIVE%%HOMEPATH%`, ...) are the home folder too.
pub(super) fn expand_known(word: &str, cwd: Option<&Path>, ctx: &Checker) -> String {
    let windows = ctx.windows;
    // Most words name nothing to expand: no allocation per key for them.
    let marks: &[char] = if windows {
        &['$', '`', '~', '%']
    } else {
        &['$', '`', '~']
    };
    if !word.contains(marks) && !word.starts_with("/proc/") {
        return word.to_string();
    }
    let mut w = if windows {
        word.replace('\\', "/").to_lowercase()
    } else {
        word.to_string()
    };
    // On Windows the word is in lower case: so are the names looked for.
    let key = |k: &str| {
        if windows {
            k.to_lowercase()
        } else {
            k.to_string()
        }
    };
    if let Some(cwd) = cwd {
        let c = cwd.display().to_string();
        for k in [
            "${PWD}",
            "$PWD",
            "$(pwd)",
            "$(pwd -P)",
            "$(pwd -L)",
            "`pwd`",
            "~+",
        ]
        .iter()
        .chain(if windows { winpath::CWD_NAMES } else { &[] })
        .map(|k| key(k))
        {
            if w.contains(&k) && (k != "~+" || w == "~+" || w.starts_with("~+/")) {
                w = w.replace(&k, &c);
            }
        }
        w = proc_cwd(w, &c);
    }
    let r = ctx.root.display().to_string();
    for k in [
        "${CLAUDE_PROJECT_DIR}",
        "$CLAUDE_PROJECT_DIR",
        "$(git rev-parse --show-toplevel)",
    ]
    .iter()
    .chain(if windows { winpath::ROOT_NAMES } else { &[] })
    {
        w = w.replace(&key(k), &r);
    }
    w = proc_other(w, &r);
    if let Some(home) = ctx.home.as_deref() {
        let h = home.display().to_string();
        if w == "~" || w.starts_with("~/") {
            w = format!("{h}{}", &w[1..]);
        }
        for k in ["${HOME}", "$HOME"]
            .iter()
            .chain(if windows { winpath::HOME_NAMES } else { &[] })
        {
            w = w.replace(&key(k), &h);
        }
    }
    w
}

/// `/proc/self/cwd` and its kin: the command's folder `c`.
fn proc_cwd(mut w: String, c: &str) -> String {
    for p in [
        "/proc/self/cwd",
        "/proc/thread-self/cwd",
        "/proc/$$/cwd",
        "/proc/${$}/cwd",
        "/proc/$BASHPID/cwd",
        "/proc/${BASHPID}/cwd",
    ] {
        if let Some(rest) = w.strip_prefix(p)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            w = format!("{c}{rest}");
            break;
        }
    }
    w
}

/// Another process's folder (the client's, whose folder is the project
/// `r`), and `/proc/self/root`.
fn proc_other(mut w: String, r: &str) -> String {
    if let Some(rest) = w.strip_prefix("/proc/")
        && let Some((pid, tail)) = rest.split_once("/cwd")
        && (tail.is_empty() || tail.starts_with('/'))
        && (pid.bytes().all(|b| b.is_ascii_digit()) || pid == "$PPID" || pid == "${PPID}")
    {
        w = format!("{r}{tail}");
    }
    if let Some(rest) = w.strip_prefix("/proc/self/root/") {
        w = format!("/{rest}");
    }
    w
}

/// Does `kind` applied to `word` reach a protected file?
/// Absolute paths a command writes, read through the links it made
/// (`writes::Writes`): judged as written there, when it made any.
pub(super) fn classify_linked(paths: &[PathBuf], linked: bool, ctx: &Checker) -> Option<Hit> {
    if !linked {
        return None;
    }
    paths
        .iter()
        .find_map(|p| classify(&p.to_string_lossy(), Kind::Write, None, ctx))
        .filter(|h| !matches!(h, Hit::Arg(_)))
}

pub(super) fn classify(word: &str, kind: Kind, cwd: Option<&Path>, ctx: &Checker) -> Option<Hit> {
    classify_except(word, kind, cwd, ctx, &|_| false, 0)
}

/// `classify`, ignoring the protected files for which `skip` says so.
pub(super) fn classify_except(
    word: &str,
    kind: Kind,
    cwd: Option<&Path>,
    ctx: &Checker,
    skip: &dyn Fn(&Path) -> bool,
    depth: usize,
) -> Option<Hit> {
    // The operand `find -exec` or `xargs` hands over (see protect::ARG).
    if word.contains(ARG) {
        return Some(Hit::Arg(kind));
    }
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
    let with_prd = matches!(kind, Kind::Remove | Kind::RemoveBelowRoot);
    let word = expand_known(word, cwd, ctx);
    for cand in glob::expand_braces(&word) {
        let spelled = ctx.spell(&cand);
        let cand: &str = &spelled;
        // A value known only at run time is not assumed to be in the project.
        let unknown = cand.contains('$') || cand.contains('`') || cand.starts_with('~');
        if unknown || (cwd.is_none() && !cand.starts_with('/')) {
            continue;
        }
        let base_dir = cwd.unwrap_or(Path::new("/"));
        let path = normalize(&base_dir.join(cand));
        for t in ctx.all(with_prd) {
            if skip(&t.abs) {
                continue;
            }
            let reaches = if kind == Kind::Create {
                // An existing file keeps its content; a folder of the
                // loop's own (its data folder) takes nothing new.
                (path == t.abs && !t.exists) || (t.is_dir && path.starts_with(&t.abs))
            } else if glob::has_glob(cand) {
                t.exists && glob_reaches(&path, t, kind, ctx)
            } else {
                // Both are normalized: a byte prefix is needed for a path
                // prefix, and far cheaper to rule one out (every word meets
                // every target).
                let (p, a) = (bytes(&path), bytes(&t.abs));
                p == a
                    || (t.is_dir && p.starts_with(a) && path.starts_with(&t.abs))
                    || (t.exists
                        && a.starts_with(p)
                        && t.abs.starts_with(&path)
                        && ancestor_counts(&path, kind, t, ctx))
            };
            // The client's auto-memory is in its protected `projects` folder.
            let reaches = reaches && !(t.is_dir && ctx.in_client_memory(&path));
            if reaches {
                return Some(t.hit());
            }
        }
    }
    None
}

fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

fn ancestor_counts(path: &Path, kind: Kind, t: &Target, ctx: &Checker) -> bool {
    match kind {
        Kind::Remove | Kind::Write | Kind::HardLink => true,
        Kind::Onto | Kind::Create => false,
        // A folder strictly inside the project (`git checkout .claude`), not
        // the project itself (`git checkout .`), under either spelling of the root.
        // For a file ralph cannot put back, the whole tree counts too.
        Kind::RemoveBelowRoot if t.kept_from_whole_tree => true,
        Kind::WriteBelowRoot | Kind::RemoveBelowRoot => {
            ctx.roots.iter().any(|r| path != r && path.starts_with(r))
        }
    }
}

/// Does the glob `pattern` (absolute, normalised) match the target, a file
/// inside a protected folder, or (when the kind allows) a folder above it?
fn glob_reaches(pattern: &Path, t: &Target, kind: Kind, ctx: &Checker) -> bool {
    let pc: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let tc: Vec<String> = t
        .abs
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let ancestors_ok = match kind {
        Kind::Remove | Kind::Write | Kind::HardLink => true,
        Kind::Onto | Kind::Create => false,
        Kind::RemoveBelowRoot if t.kept_from_whole_tree => true,
        Kind::WriteBelowRoot | Kind::RemoveBelowRoot => pc.len() > ctx.root.components().count(),
    };
    if (pc.len() > tc.len() && !t.is_dir) || (pc.len() < tc.len() && !ancestors_ok) {
        return false;
    }
    pc.iter()
        .zip(tc.iter())
        .all(|(p, t)| p == t || glob::match_component(p, t))
}

/// Does `find START...` acting on what it finds (`-delete`, `-exec rm`, a
/// removing `xargs`) with `kind` reach a protected file?
pub(super) fn classify_find(
    f: &FindEffect,
    kind: Kind,
    cwd: Option<&Path>,
    ctx: &Checker,
) -> Option<Hit> {
    let with_prd = matches!(kind, Kind::Remove | Kind::RemoveBelowRoot);
    let Some(cwd) = cwd else {
        return f
            .starts
            .iter()
            .find_map(|s| classify(s, Kind::Remove, None, ctx));
    };
    for start in &f.starts {
        if classify(start, Kind::Remove, Some(cwd), ctx).is_none() {
            continue;
        }
        let s = normalize(&cwd.join(&*ctx.spell(&expand_known(start, Some(cwd), ctx))));
        // find only meets files that exist.
        for t in ctx.all(with_prd) {
            if !t.exists {
                continue;
            }
            // Inside a protected folder, every file found is protected.
            if t.is_dir && s.starts_with(&t.abs) {
                return Some(t.hit());
            }
            let Ok(rel) = t.abs.strip_prefix(&s) else {
                if glob::has_glob(start) {
                    return Some(t.hit());
                }
                continue;
            };
            if f.names.is_empty() && f.paths.is_empty() {
                return Some(t.hit());
            }
            let comps: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect();
            let name_hit = f.names.iter().any(|(pat, ci)| {
                comps.iter().any(|c| {
                    if *ci || ctx.windows {
                        glob::fnmatch(&pat.to_lowercase(), &c.to_lowercase())
                    } else {
                        glob::fnmatch(pat, c)
                    }
                })
            });
            let printed = format!("{}/{}", start.trim_end_matches('/'), rel.display());
            let path_hit = f.paths.iter().any(|pat| glob::fnmatch(pat, &printed));
            if name_hit || path_hit || t.is_dir {
                return Some(t.hit());
            }
        }
    }
    None
}

pub(super) fn classify_into(
    dest: &str,
    sources: &[String],
    cwd: Option<&Path>,
    ctx: &Checker,
) -> Option<Hit> {
    // Onto the file itself (the PRD may be replaced: only its removal is guarded).
    if let Some(h @ (Hit::Loop(_) | Hit::Pinned { .. } | Hit::Arg(_))) =
        classify(dest, Kind::Onto, cwd, ctx)
    {
        return Some(h);
    }
    // Into a folder, where `folder/basename(source)` lands on (or over) a loop file.
    for s in sources {
        let name = file_name(s.trim_end_matches('/'));
        if name.is_empty() || name == "." || name == ".." || name.contains(ARG) {
            continue;
        }
        let landed = format!("{}/{}", dest.trim_end_matches('/'), name);
        if let Some(h @ (Hit::Loop(_) | Hit::Pinned { .. })) =
            classify(&landed, Kind::Remove, cwd, ctx)
        {
            return Some(h);
        }
    }
    None
}

/// Is `abs` kept by one of `git clean -e PATTERN` (gitignore-style, read
/// simply: the pattern names the file, or a folder on its way)?
pub(super) fn excluded(abs: &Path, excludes: &[String], ctx: &Checker) -> bool {
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

/// A file's own name (`a/b` -> `b`); a word computed at run time is kept
/// whole.
fn file_name(w: &str) -> &str {
    if w.contains(['$', '`']) {
        return w;
    }
    w.rsplit('/').next().unwrap_or(w)
}
