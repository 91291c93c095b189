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
//! Pure.

mod argv;
mod control;
mod cwd;
mod effects;
mod foreign;
mod matching;
mod scope;
mod wrappers;
mod writes;

use std::path::{Path, PathBuf};

use crate::context::LoopContext;
pub use crate::context::normalize;
use crate::shell::{self, Segment};
use cwd::{next_cwd, run_dir};
use effects::{Effect, effects, find_effect};
use matching::{Checker, classify, classify_except, classify_find, classify_into, excluded};
use scope::Scope;
pub use wrappers::Invocation;
use wrappers::is_shell;
pub use wrappers::unwrap;
pub(crate) use wrappers::{Unwrapped, unwrap_full};
pub(crate) use writes::{Writes, bash_writes};

/// How deep `sh -c "eval \"...\""` nesting is followed.
const MAX_DEPTH: usize = 8;

/// Stands for the operand `find -exec` (`{}`) or `xargs` hands a command:
/// a command is checked with it in place, and a hit on it ([`Hit::Arg`])
/// says the command removes or writes its operands, so what `find` finds or
/// what is piped into `xargs` is judged instead.
const ARG: &str = "__ralph_guard_operand__";

/// What a command does to a path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Deletes, moves away or empties it (`rm`, `mv` source, `truncate`,
    /// `find -delete`). Naming a folder holding a file counts.
    Remove,
    /// Like `Remove`, but naming the project root itself does not count
    /// (`git clean -fdx .`, `git stash -u -- :/` take the whole tree, which
    /// is allowed once the state lives outside it; `git clean -fd .claude`
    /// is not).
    RemoveBelowRoot,
    /// Replaces or alters its content (`>`, `tee`, `sed -i`, `dd of=`).
    Write,
    /// Like `Write`, but naming the project root itself does not count
    /// (`git checkout .` only reverts tracked files; the loop files are not).
    WriteBelowRoot,
    /// Replaces exactly this path; a folder above does not count (`cp x
    /// .claude/` puts a new file beside the loop files, it does not touch them).
    Onto,
    /// Gives it a second name (`ln FILE other`, `cp -l`): the file tools
    /// could then change it through the other name.
    HardLink,
    /// Makes it when it is missing, and leaves an existing one's content
    /// as it is (`touch`, `mkdir -p`, `mkfifo`): only creating a loop file
    /// under its own name counts.
    Create,
}

/// Which protected file a command reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// A loop file (state, log, lock, last-injected, verify, policy) or the
    /// loop's data folder, relative display path.
    Loop(String),
    /// A hard link made to a loop file.
    Link(String),
    /// The PRD, about to be deleted or moved away.
    Prd(String),
    /// One of ralph's own commands that ends, starts or takes over a loop.
    Control(String),
    /// A file pinned by the loop (part of a check, or pinned by the user):
    /// its relative path and what pinned it.
    Pinned { path: String, why: String },
    /// A link or copy made of one of ralph's programs (by name, or found to
    /// be one): a second name the guard would not know it by.
    ProgramCopy(String),
    /// The command acts on its operands this way (internal: see [`ARG`];
    /// never returned by [`check_bash`]).
    Arg(Kind),
}

/// Gathers the hits of several checks: a real hit stops the checking, an
/// [`Hit::Arg`] is kept (the strongest) while looking on.
#[derive(Default)]
struct Found(Option<Hit>);

impl Found {
    /// Record `h`; true when it is a real hit.
    fn add(&mut self, h: Option<Hit>) -> bool {
        match h {
            None => false,
            Some(Hit::Arg(k)) => {
                if !matches!(self.0, Some(Hit::Arg(Kind::Remove))) {
                    self.0 = Some(Hit::Arg(k));
                }
                false
            }
            Some(real) => {
                self.0 = Some(real);
                true
            }
        }
    }
}

/// Why a Bash command is denied, if it is.
pub fn check_bash(command: &str, ctx: &LoopContext) -> Option<Hit> {
    let ck = Checker::new(ctx);
    let mut scope = Scope::new(Some(ctx.cwd.clone()))
        .with_places(&ctx.root, ctx.home.as_deref())
        .on_windows(ctx.windows)
        .with_programs(&ctx.ralph_programs);
    match check_script(command, &ck, &mut scope, 0) {
        Some(Hit::Arg(_)) => None,
        h => h,
    }
}

/// The paths a command writes through a symbolic link it makes itself
/// (`ln -s .claude c && rm c/ralph-loop.lock`), judged where they land.
pub(crate) fn check_linked(writes: &Writes, ctx: &LoopContext) -> Option<Hit> {
    matching::classify_linked(&writes.paths, !writes.links.is_empty(), &Checker::new(ctx))
}

/// Each simple command of `command` in turn; a `cd` or an assignment holds
/// for the commands after it.
fn check_script(command: &str, ctx: &Checker, scope: &mut Scope, depth: usize) -> Option<Hit> {
    if depth > MAX_DEPTH {
        return None;
    }
    let segments = shell::split_chain(command);
    let mut found = Found::default();
    for (idx, seg) in segments.iter().enumerate() {
        if found.add(check_segment(seg, idx, &segments, ctx, scope, depth)) {
            break;
        }
    }
    found.0
}

/// A script run from within a command (a substitution, `sh -c`, a heredoc
/// fed to a shell): it starts in `cwd`, and a `cd` or an assignment inside
/// it does not reach the commands after it.
fn check_nested(
    script: &str,
    ctx: &Checker,
    scope: &Scope,
    cwd: Option<&Path>,
    positional: Option<&[String]>,
    depth: usize,
) -> Option<Hit> {
    let mut inner = scope.nested(cwd.map(Path::to_path_buf), positional);
    check_script(script, ctx, &mut inner, depth + 1)
}

/// One simple command being checked: `idx` is its place in `all`, the chain
/// it belongs to; `u` is how it runs.
struct At<'a> {
    seg: &'a Segment,
    idx: usize,
    all: &'a [Segment],
    u: &'a Unwrapped,
    ctx: &'a Checker<'a>,
    depth: usize,
}

/// One simple command: `idx` is its place in `all`, the chain it belongs to.
fn check_segment(
    seg: &Segment,
    idx: usize,
    all: &[Segment],
    ctx: &Checker,
    scope: &mut Scope,
    depth: usize,
) -> Option<Hit> {
    let mut found = Found::default();
    for sub in &seg.substitutions {
        if found.add(check_nested(
            sub,
            ctx,
            scope,
            scope.cwd.as_deref(),
            None,
            depth,
        )) {
            return found.0;
        }
    }
    let words = scope.expand_words(seg);
    if found.add(check_redirects(seg, words.is_empty(), ctx, scope)) {
        return found.0;
    }
    let u = unwrap_full(&words);
    let here = scope.cwd.clone();
    let dir = if u.chdir.is_empty() {
        here.clone()
    } else {
        run_dir(here.as_deref(), &u.chdir, ctx.reading())
    };
    for w in &u.writes {
        if found.add(classify(w, Kind::Write, dir.as_deref(), ctx)) {
            return found.0;
        }
    }
    let at = At {
        seg,
        idx,
        all,
        u: &u,
        ctx,
        depth,
    };
    let h = match &u.invocation {
        Invocation::Nothing => None,
        Invocation::Script {
            text,
            args,
            via_xargs,
        } => check_script_run(&at, text, args, *via_xargs, scope, dir.as_deref()),
        Invocation::ShellStdin => check_shell_stdin(&at, scope, dir.as_deref()),
        Invocation::Exec {
            name,
            args,
            via_xargs,
        } => {
            let mut cwd = dir.clone();
            let h = check_exec(&at, name, args, *via_xargs, scope, &mut cwd);
            // `cd DIR` moves the commands after it (not `env -C D cd X`).
            if u.chdir.is_empty() {
                scope.cwd = cwd;
            }
            h
        }
    };
    if found.add(h) {
        return found.0;
    }
    scope.record(&words, seg);
    found.0
}

/// Files the command's own redirections write.
fn check_redirects(seg: &Segment, no_words: bool, ctx: &Checker, scope: &Scope) -> Option<Hit> {
    // `> prd.json` alone empties it: that counts as removing it.
    let kind = if no_words { Kind::Remove } else { Kind::Write };
    seg.redirects
        .iter()
        .filter(|r| r.writes_file())
        .flat_map(|r| scope.expand(&r.target))
        .find_map(|t| classify(&t, kind, scope.cwd.as_deref(), ctx))
}

/// A script given as a string (`sh -c S ARGS`, `eval`, `flock -c`, ...).
/// Run by `xargs`, its operands come from what is piped in.
fn check_script_run(
    at: &At,
    text: &str,
    args: &[String],
    via_xargs: bool,
    scope: &Scope,
    dir: Option<&Path>,
) -> Option<Hit> {
    let positional = (!args.is_empty() || via_xargs).then_some(args);
    let mut inner = scope.nested(dir.map(Path::to_path_buf), positional);
    let text = if via_xargs {
        inner.fill_positional(ARG);
        match &at.u.xargs_repl {
            Some(r) if !r.is_empty() => text.replace(r.as_str(), ARG),
            _ => text.to_string(),
        }
    } else {
        text.to_string()
    };
    match check_script(&text, at.ctx, &mut inner, at.depth + 1) {
        Some(Hit::Arg(kind)) if via_xargs => xargs_input(at, kind, scope),
        h => h,
    }
}

/// What a removing (or writing) `xargs` acts on: the command piped into it.
fn xargs_input(at: &At, kind: Kind, scope: &Scope) -> Option<Hit> {
    let (ctx, here) = (at.ctx, scope.cwd.as_deref());
    if at.u.xargs_from_file {
        return None;
    }
    // Fed by its own here-string or heredoc.
    let own: String = at
        .seg
        .redirects
        .iter()
        .filter_map(|r| r.here_string())
        .chain(at.seg.heredocs.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    if !own.is_empty() {
        return own
            .split(|c: char| c.is_whitespace() || c == '\0')
            .filter(|w| !w.is_empty())
            .find_map(|w| classify(w, kind, here, ctx));
    }
    if !at.seg.piped_in || at.idx == 0 {
        return None;
    }
    let feeder = &at.all[at.idx - 1];
    let words = scope.expand_words(feeder);
    if let Invocation::Exec { name, args, .. } = unwrap(&words)
        && name == "find"
    {
        // `find . -name '*.bak' | xargs rm`: what find lists, with its filters.
        return classify_find(&find_effect(&args), kind, here, ctx);
    }
    // The text it prints when that is in sight (split as xargs does, also
    // on NUL for -0), and its own words in any case (`ls .claude | xargs rm`).
    let printed = scope.produced_text(&words, feeder).unwrap_or_default();
    printed
        .split(|c: char| c.is_whitespace() || c == '\0')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .chain(words.iter().skip(1).cloned())
        .find_map(|w| classify(&w, kind, here, ctx))
}

/// A shell reading its script from stdin: a heredoc, a here-string, a
/// script this command wrote (`sh < s.sh`), or the text a command visibly
/// prints into it (`echo "rm x" | sh`, `printf`, `cat <<EOF | sh`).
fn check_shell_stdin(at: &At, scope: &Scope, dir: Option<&Path>) -> Option<Hit> {
    let seg = at.seg;
    let mut found = Found::default();
    let mut texts: Vec<String> = seg.heredocs.clone();
    for r in &seg.redirects {
        if let Some(h) = r.here_string() {
            texts.push(h.to_string());
        }
        if let Some(t) = r.reads_stdin_from().and_then(|f| scope.script_named(f)) {
            texts.push(t.to_string());
        }
    }
    if seg.piped_in && at.idx > 0 {
        let feeder = &at.all[at.idx - 1];
        texts.extend(scope.produced_text(&scope.expand_words(feeder), feeder));
    }
    for t in &texts {
        if found.add(check_nested(t, at.ctx, scope, dir, None, at.depth)) {
            break;
        }
    }
    found.0
}

/// A program run with these arguments (its wrappers peeled off).
fn check_exec(
    at: &At,
    name: &str,
    args: &[String],
    via_xargs: bool,
    scope: &Scope,
    cwd: &mut Option<PathBuf>,
) -> Option<Hit> {
    let (ctx, depth) = (at.ctx, at.depth);
    // Windows finds `RM`, `Rm.exe` as `rm` (unwrap took off the `.exe`).
    let lowered;
    let name = if ctx.windows {
        lowered = name.to_lowercase();
        lowered.as_str()
    } else {
        name
    };
    let program = name.rsplit('/').next().unwrap_or(name);
    if let Some(h) = foreign::check(program, args, cwd.as_deref(), ctx) {
        return Some(h);
    }
    if let Some(c) = control::loop_control(program, args) {
        return Some(Hit::Control(c));
    }
    // A path to one of ralph's programs under another name (a link, a copy).
    let word = at.u.program_word.as_deref().unwrap_or(name);
    if let Some(real) = control::ralph_program(word, cwd.as_deref(), ctx)
        && let Some(c) = control::loop_control(&real, args)
    {
        return Some(Hit::Control(format!("{c} (run as {word})")));
    }
    if name.contains('$') || name.contains('`') {
        return check_dynamic_program(at.seg, args, ctx, scope, cwd.as_deref(), depth);
    }
    let mut found = Found::default();
    let fed = at.seg.piped_in
        || !at.seg.heredocs.is_empty()
        || at.seg.redirects.iter().any(|r| r.here_string().is_some());
    if via_xargs && fed && found.add(check_xargs_operands(at, name, args, scope, cwd.as_deref())) {
        return found.0;
    }
    if found.add(check_files_run(at, name, args, scope, cwd.as_deref())) {
        return found.0;
    }
    found.add(check_effects(name, args, ctx, scope, cwd, depth));
    found.0
}

/// What the program does to the operands `xargs` appends (or puts in place
/// of `-I R`): when it removes or writes them, what is piped in is judged.
fn check_xargs_operands(
    at: &At,
    name: &str,
    args: &[String],
    scope: &Scope,
    cwd: Option<&Path>,
) -> Option<Hit> {
    let mut w = vec![name.to_string()];
    match &at.u.xargs_repl {
        Some(r) if !r.is_empty() => {
            w.extend(args.iter().map(|a| a.replace(r.as_str(), ARG)));
        }
        _ => {
            w.extend(args.iter().cloned());
            w.push(ARG.to_string());
        }
    }
    match check_nested(&shell::join(&w), at.ctx, scope, cwd, None, at.depth) {
        Some(Hit::Arg(kind)) => xargs_input(at, kind, scope),
        h => h,
    }
}

/// A script this command wrote, run by a shell, `.`/`source`, or by path;
/// a shell's stdin (`source /dev/stdin`); the output of `<(...)`.
fn check_files_run(
    at: &At,
    name: &str,
    args: &[String],
    scope: &Scope,
    cwd: Option<&Path>,
) -> Option<Hit> {
    let (ctx, depth) = (at.ctx, at.depth);
    let mut found = Found::default();
    let runs_file = is_shell(name) || name == "." || name == "source";
    let operand = args.iter().position(|a| !a.starts_with('-'));
    if runs_file && let Some(i) = operand {
        let file = args[i].as_str();
        if matches!(file, "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
            && found.add(check_shell_stdin(at, scope, cwd))
        {
            return found.0;
        }
        if let Some(text) = scope.process_substitution_text(file)
            && found.add(check_nested(
                &text,
                ctx,
                scope,
                cwd,
                Some(&args[i..]),
                depth,
            ))
        {
            return found.0;
        }
    }
    let script = if runs_file {
        operand.and_then(|i| {
            scope
                .script_named(&args[i])
                .map(|t| (t.to_string(), &args[i..]))
        })
    } else {
        scope.script_named(name).map(|t| (t.to_string(), args))
    };
    if let Some((text, positional)) = script {
        found.add(check_nested(
            &text,
            ctx,
            scope,
            cwd,
            Some(positional),
            depth,
        ));
    }
    found.0
}

/// A program chosen at run time (`$(echo rm) FILE`).
fn check_dynamic_program(
    seg: &Segment,
    args: &[String],
    ctx: &Checker,
    scope: &Scope,
    cwd: Option<&Path>,
    depth: usize,
) -> Option<Hit> {
    // When the name is printed by a command in sight, that text plus the
    // arguments is the command that runs.
    for sub in &seg.substitutions {
        for inner in shell::split_chain(sub) {
            if let Some(text) = scope.produced_text(&inner.words, &inner) {
                let script = format!("{} {}", text.trim_end(), shell::join(args));
                if let Some(h) = check_nested(&script, ctx, scope, cwd, None, depth) {
                    return Some(h);
                }
            }
        }
    }
    // Otherwise any loop file named is too close.
    args.iter()
        .find_map(|a| classify(a, Kind::Remove, cwd, ctx))
}

/// The program's own effects, by the per-program table; a `cd` moves `cwd`.
fn check_effects(
    name: &str,
    args: &[String],
    ctx: &Checker,
    scope: &Scope,
    cwd: &mut Option<PathBuf>,
    depth: usize,
) -> Option<Hit> {
    let here = cwd.clone();
    let here = here.as_deref();
    let mut found = Found::default();
    for e in effects(name, args) {
        if let Effect::Into { sources, .. } = &e
            && found.add(control::copies_ralph(name, sources, here, ctx))
        {
            return found.0;
        }
        let h = match &e {
            Effect::On(Kind::HardLink, w) => match classify(w, Kind::HardLink, here, ctx) {
                Some(Hit::Loop(d) | Hit::Pinned { path: d, .. }) => Some(Hit::Link(d)),
                h => h,
            },
            Effect::On(kind, w) => classify(w, *kind, here, ctx),
            Effect::Into { dest, sources } => classify_into(dest, sources, here, ctx),
            Effect::Find(f) => check_find(f, ctx, scope, here, depth),
            Effect::Clean { paths, excludes } => {
                let skip = |abs: &Path| excluded(abs, excludes, ctx);
                paths
                    .iter()
                    .find_map(|p| classify_except(p, Kind::RemoveBelowRoot, here, ctx, &skip, 0))
            }
            Effect::Cd(dir) => {
                *cwd = next_cwd(here, dir.as_deref(), ctx.reading());
                None
            }
            // Judged over `writes` (the `--fresh` and `--parallel` rules,
            // links followed: `check_linked`, git's keys: `git_files`);
            // loop files are judged by the paths git names.
            Effect::Repo(_)
            | Effect::SharedRefs
            | Effect::Symlink { .. }
            | Effect::ConfigSet { .. } => None,
        };
        if found.add(h) {
            return found.0;
        }
    }
    found.0
}

/// `find` with `-delete` or `-exec`: each command it runs is checked with
/// the found file in place of `{}`; if one removes or writes it (or
/// `-delete`), what find finds is judged.
fn check_find(
    f: &effects::FindEffect,
    ctx: &Checker,
    scope: &Scope,
    here: Option<&Path>,
    depth: usize,
) -> Option<Hit> {
    let mut kind = f.delete.then_some(Kind::Remove);
    for exec in &f.execs {
        let words: Vec<String> = exec.words.iter().map(|w| w.replace("{}", ARG)).collect();
        // `-execdir` runs in the found file's folder, unknown here.
        let dir = if exec.in_found_dir { None } else { here };
        match check_nested(&shell::join(&words), ctx, scope, dir, None, depth) {
            Some(Hit::Arg(k)) if kind != Some(Kind::Remove) => kind = Some(k),
            Some(Hit::Arg(_)) | None => {}
            Some(h) => return Some(h),
        }
    }
    kind.and_then(|k| classify_find(f, k, here, ctx))
}
