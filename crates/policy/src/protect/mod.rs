//! Built-in protection of the loop's own files (and of the PRD against
//! deletion) for Bash commands.
//!
//! A command is read into simple commands ([`crate::shell`]), each one is
//! unwrapped from the prefixes that only change *how* it runs (`sudo`, `env`,
//! `command`, `xargs`, `nohup`, ...; `sh -c` and `eval` are read as commands
//! of their own: [`wrappers`]), and then a per-program table ([`effects`])
//! says which of its operands it removes or writes, each judged against the
//! protected paths ([`matching`]). Reading (`cat`, `grep`, `head`, `cp`
//! *from*) is never judged, so a benign look-alike stays allowed.

mod effects;
mod matching;
mod wrappers;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::LoopContext;
use crate::glob;
use crate::shell::{self, Segment};
use effects::{DESTRUCTIVE, Effect, effects, find_effect};
pub use matching::normalize;
use matching::{Checker, classify, classify_except, classify_find, classify_into, excluded};
pub use wrappers::{Invocation, unwrap};

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

/// Which protected file a command reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// A loop file (state, log, lock, last-injected, policy), relative display path.
    Loop(String),
    /// The PRD, about to be deleted or moved away.
    Prd(String),
}

/// Why a Bash command is denied, if it is.
pub fn check_bash(command: &str, ctx: &LoopContext) -> Option<Hit> {
    let ck = Checker::new(ctx);
    let mut cwd = Some(ctx.cwd.clone());
    check_script(command, &ck, &mut cwd, 0)
}

/// Each simple command of `command` in turn; a `cd` moves `cwd` for the
/// commands after it.
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

/// A script run from within a command (a substitution, `sh -c`, a heredoc
/// fed to a shell): it starts in the current folder, and a `cd` inside it
/// does not move the commands after it.
fn check_nested(script: &str, ctx: &Checker, cwd: Option<&Path>, depth: usize) -> Option<Hit> {
    check_script(script, ctx, &mut cwd.map(Path::to_path_buf), depth + 1)
}

/// One simple command: `idx` is its place in `all`, the chain it belongs to.
fn check_segment(
    seg: &Segment,
    idx: usize,
    all: &[Segment],
    ctx: &Checker,
    cwd: &mut Option<PathBuf>,
    depth: usize,
) -> Option<Hit> {
    for sub in &seg.substitutions {
        if let Some(h) = check_nested(sub, ctx, cwd.as_deref(), depth) {
            return Some(h);
        }
    }
    if let Some(h) = check_redirects(seg, cwd.as_deref(), ctx) {
        return Some(h);
    }
    match unwrap(&expanded_words(seg)) {
        Invocation::Nothing => None,
        Invocation::Script(s) => check_nested(&s, ctx, cwd.as_deref(), depth),
        Invocation::ShellStdin => check_shell_stdin(seg, idx, all, ctx, cwd.as_deref(), depth),
        Invocation::Exec {
            name,
            args,
            via_xargs,
        } => {
            if name.contains('$') || name.contains('`') {
                return check_dynamic_program(seg, &args, ctx, cwd.as_deref(), depth);
            }
            if via_xargs && DESTRUCTIVE.contains(&name.as_str()) && seg.piped_in && idx > 0 {
                // Operands arrive on stdin: judge what the feeding command names.
                if let Some(h) = check_xargs_feeder(&all[idx - 1], cwd.as_deref(), ctx) {
                    return Some(h);
                }
            }
            check_effects(&name, &args, ctx, cwd)
        }
    }
}

/// Files the command's own redirections write.
fn check_redirects(seg: &Segment, here: Option<&Path>, ctx: &Checker) -> Option<Hit> {
    // `> prd.json` alone empties it: that counts as removing it.
    let kind = if seg.words.is_empty() {
        Kind::Remove
    } else {
        Kind::Write
    };
    seg.redirects
        .iter()
        .filter(|r| r.writes_file())
        .find_map(|r| classify(&r.target, kind, here, ctx))
}

/// The words with brace expansion done: it makes several arguments of one
/// unquoted word (`mv FILE{,.bak}` is `mv FILE FILE.bak`).
fn expanded_words(seg: &Segment) -> Cow<'_, [String]> {
    if !seg.raw_words.iter().any(|r| r.contains('{')) {
        return Cow::Borrowed(&seg.words);
    }
    Cow::Owned(
        seg.raw_words
            .iter()
            .zip(&seg.words)
            .flat_map(|(raw, w)| {
                if raw.contains(['\'', '"', '\\']) {
                    vec![w.clone()]
                } else {
                    glob::expand_braces(w)
                }
            })
            .collect(),
    )
}

/// A shell reading its script from stdin: a heredoc, or the text echoed
/// into it (`echo "rm x" | sh`).
fn check_shell_stdin(
    seg: &Segment,
    idx: usize,
    all: &[Segment],
    ctx: &Checker,
    cwd: Option<&Path>,
    depth: usize,
) -> Option<Hit> {
    for body in &seg.heredocs {
        if let Some(h) = check_nested(body, ctx, cwd, depth) {
            return Some(h);
        }
    }
    if seg.piped_in
        && idx > 0
        && let Invocation::Exec { name, args, .. } = unwrap(&all[idx - 1].words)
        && (name == "echo" || name == "printf")
    {
        return check_nested(&args.join(" "), ctx, cwd, depth);
    }
    None
}

/// A program chosen at run time (`$(echo rm) FILE`).
fn check_dynamic_program(
    seg: &Segment,
    args: &[String],
    ctx: &Checker,
    cwd: Option<&Path>,
    depth: usize,
) -> Option<Hit> {
    // When the name is echoed, the echoed text plus the arguments is the
    // command that runs.
    for sub in &seg.substitutions {
        for inner in shell::split_chain(sub) {
            if let Invocation::Exec {
                name: n, args: a, ..
            } = unwrap(&inner.words)
                && (n == "echo" || n == "printf")
            {
                let script = format!("{} {}", a.join(" "), shell::join(args));
                if let Some(h) = check_nested(&script, ctx, cwd, depth) {
                    return Some(h);
                }
            }
        }
    }
    // Otherwise any loop file named is too close.
    args.iter()
        .find_map(|a| classify(a, Kind::Remove, cwd, ctx))
}

/// What the command piped into a removing `xargs` names.
fn check_xargs_feeder(feeder: &Segment, here: Option<&Path>, ctx: &Checker) -> Option<Hit> {
    match unwrap(&feeder.words) {
        // `find . -name '*.bak' | xargs rm`: what find lists, with its filters.
        Invocation::Exec {
            name: f, args: fa, ..
        } if f == "find" => find_effect(&fa, true).and_then(|fe| classify_find(&fe, here, ctx)),
        _ => feeder
            .words
            .iter()
            .skip(1)
            .find_map(|w| classify(w, Kind::Remove, here, ctx)),
    }
}

/// The program's own effects, by the per-program table; a `cd` moves `cwd`.
fn check_effects(
    name: &str,
    args: &[String],
    ctx: &Checker,
    cwd: &mut Option<PathBuf>,
) -> Option<Hit> {
    let here = cwd.clone();
    let here = here.as_deref();
    for e in effects(name, args) {
        let h = match &e {
            Effect::On(kind, w) => classify(w, *kind, here, ctx),
            Effect::Into { dest, sources } => classify_into(dest, sources, here, ctx),
            Effect::Find(f) => classify_find(f, here, ctx),
            Effect::Clean { paths, excludes } => {
                let skip = |abs: &Path| excluded(abs, excludes, ctx);
                paths
                    .iter()
                    .find_map(|p| classify_except(p, Kind::Remove, here, ctx, &skip, 0))
            }
            Effect::Cd(dir) => {
                *cwd = next_cwd(here, dir.as_deref());
                None
            }
        };
        if h.is_some() {
            return h;
        }
    }
    None
}

/// Where `cd DIR` leads, when that is known before run time.
fn next_cwd(here: Option<&Path>, dir: Option<&str>) -> Option<PathBuf> {
    match dir {
        Some(d) if !d.contains('$') && !d.contains('`') && !d.starts_with('~') && d != "-" => {
            here.map(|c| matching::normalize(&c.join(d)))
        }
        _ => None,
    }
}
