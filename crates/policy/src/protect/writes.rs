//! Where a Bash command writes: one walk of the command with the same parse,
//! scope and per-program table ([`super::effects`]) the loop-file
//! protection reads, returning every path it writes, removes or creates,
//! made absolute against the folder each part runs in (`cd`, `env -C`,
//! `git -C`, `--work-tree`, tracked in order; variables assigned earlier in
//! the command expanded). It serves the `--fresh` main-thread rule (does the
//! command write at all?) and the `--parallel` confinement (does it write
//! outside the worker's worktree?), so the three rules read a command one
//! way. Pure.

use std::path::{Component, Path, PathBuf};

use super::cwd::{Reading, next_cwd, run_dir};
use super::effects::{Effect, effects};
use super::scope::Scope;
use super::wrappers::{Invocation, is_shell, unwrap_full};
use super::{ARG, MAX_DEPTH};
use crate::context::normalize;
use crate::shell::{self, Segment};
use crate::winpath;

/// What a command writes, as far as the guard can read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Writes {
    /// Absolute, lexically normalised paths the command writes, removes,
    /// creates or gives another name; a git command that changes a
    /// repository (its index, refs, config or work tree) names the work
    /// tree's folder. In the order they are met.
    pub paths: Vec<PathBuf>,
    /// It writes somewhere the guard cannot place: an interpreter's inline
    /// code, a shell reading a script it cannot see, a target known only at
    /// run time (a variable, a relative path after `cd "$X"`).
    pub unseen: bool,
    /// A git command changes refs shared by every worktree (another
    /// branch, the loop's own): see `effects::Effect::SharedRefs`.
    pub shared_refs: bool,
    /// Paths the command replaces whole instead of writing into: made a
    /// link (`ln`, `cp -s`), moved or copied onto (`mv`, `cp`, `install`,
    /// `rsync`). A file shared as a regular file (the `--parallel` notes)
    /// may be written, never replaced by something that is not one.
    pub replaced: Vec<PathBuf>,
    /// Symbolic links the command makes: where each lands and where it
    /// points (`None`: a place known only at run time). Every path above is
    /// read through them, whatever the order or nesting of the commands
    /// (a link made in `sh -c` or after the write is followed too, erring
    /// towards judging where a write may land).
    pub links: Vec<(PathBuf, Option<PathBuf>)>,
    /// The keys `git config` sets, with their values (`effects::Effect::
    /// ConfigSet`): some make git run a program.
    pub config_sets: Vec<(String, Option<String>)>,
    /// Where the links themselves were made: judged as named (a link at a
    /// path is a write of that path, not of what it points to).
    made: Vec<PathBuf>,
    /// The words are Windows paths, read in `winpath`'s one spelling.
    windows: bool,
}

impl Writes {
    /// Nothing written yet; words read as Windows paths with `windows`.
    fn spelled(windows: bool) -> Writes {
        Writes {
            windows,
            ..Writes::default()
        }
    }

    /// Whether the command writes anything at all.
    pub(crate) fn any(&self) -> bool {
        self.unseen || !self.paths.is_empty()
    }
}

/// What `command`, run in `cwd` of the project `root`, writes.
/// With `windows`, every path is in `winpath`'s one spelling (as `cwd`,
/// `root` and `home` then are).
pub(crate) fn bash_writes(
    command: &str,
    cwd: &Path,
    root: &Path,
    home: Option<&Path>,
    windows: bool,
) -> Writes {
    let mut scope = Scope::new(Some(cwd.to_path_buf()))
        .with_places(root, home)
        .on_windows(windows);
    let mut out = Writes::spelled(windows);
    walk(command, &mut scope, home, 0, &mut out);
    out.follow_links();
    out
}

/// How many links one path is followed through before the guard stops
/// (a link pointing into itself).
const MAX_HOPS: usize = 16;

impl Writes {
    /// Every path as it lands: `.` and `..` taken and, for a link the
    /// command made, followed, one component at a time as the kernel does
    /// (so `up/../x` through a link `up` is the folder above the link's
    /// target, not the folder holding `up`).
    fn follow_links(&mut self) {
        let links = std::mem::take(&mut self.links);
        let mut paths = Vec::with_capacity(self.paths.len());
        for p in std::mem::take(&mut self.paths) {
            match through_links(&p, &links) {
                Some(real) => paths.push(real),
                None => self.unseen = true,
            }
        }
        // A replaced path is the entry itself: only its folder is followed.
        for r in &mut self.replaced {
            let name = r.file_name().map(std::ffi::OsStr::to_os_string);
            *r = match (r.parent().and_then(|d| through_links(d, &links)), name) {
                (Some(dir), Some(name)) => dir.join(name),
                _ => normalize(r),
            };
        }
        paths.extend(self.made.drain(..).map(|m| normalize(&m)));
        self.paths = paths;
        self.links = links;
    }
}

/// `path` (absolute, as written) with `.` and `..` taken and every link the
/// command made followed (the last one made at a path wins); `None` when
/// one points to a place known only at run time.
pub(crate) fn through_links(path: &Path, links: &[(PathBuf, Option<PathBuf>)]) -> Option<PathBuf> {
    let mut hops = 0;
    resolve(path, links, &mut hops)
}

fn resolve(path: &Path, links: &[(PathBuf, Option<PathBuf>)], hops: &mut usize) -> Option<PathBuf> {
    let mut cur = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                cur.pop();
            }
            Component::Normal(name) => {
                cur.push(name);
                if *hops < MAX_HOPS
                    && let Some((_, target)) = links.iter().rev().find(|(l, _)| *l == cur)
                {
                    *hops += 1;
                    cur = resolve(target.as_ref()?, links, hops)?;
                }
            }
            other => cur.push(other.as_os_str()),
        }
    }
    Some(cur)
}

fn walk(command: &str, scope: &mut Scope, home: Option<&Path>, depth: usize, out: &mut Writes) {
    if depth > MAX_DEPTH {
        out.unseen = true;
        return;
    }
    let segments = shell::split_chain(command);
    for (idx, seg) in segments.iter().enumerate() {
        segment(seg, idx, &segments, scope, home, depth, out);
    }
}

fn nested(
    script: &str,
    scope: &Scope,
    cwd: Option<&Path>,
    positional: Option<&[String]>,
    home: Option<&Path>,
    depth: usize,
    out: &mut Writes,
) {
    let mut inner = scope.nested(cwd.map(Path::to_path_buf), positional);
    walk(script, &mut inner, home, depth + 1, out);
}

fn segment(
    seg: &Segment,
    idx: usize,
    all: &[Segment],
    scope: &mut Scope,
    home: Option<&Path>,
    depth: usize,
    out: &mut Writes,
) {
    for sub in &seg.substitutions {
        nested(
            sub,
            scope,
            scope.cwd.clone().as_deref(),
            None,
            home,
            depth,
            out,
        );
    }
    let words = scope.expand_words(seg);
    for r in seg.redirects.iter().filter(|r| r.writes_file()) {
        for t in scope.expand(&r.target) {
            if !harmless(&t, scope.windows) {
                place(&t, scope.cwd.as_deref(), home, out);
            }
        }
    }
    let u = unwrap_full(&words);
    let dir = if u.chdir.is_empty() {
        scope.cwd.clone()
    } else {
        run_dir(scope.cwd.as_deref(), &u.chdir, reading(scope.windows, home))
    };
    for w in &u.writes {
        place(w, dir.as_deref(), home, out);
    }
    match &u.invocation {
        Invocation::Nothing => {}
        Invocation::Script { text, args, .. } => {
            let positional = (!args.is_empty()).then_some(args.as_slice());
            nested(text, scope, dir.as_deref(), positional, home, depth, out);
        }
        Invocation::ShellStdin => {
            let mut texts: Vec<String> = seg.heredocs.clone();
            texts.extend(
                seg.redirects
                    .iter()
                    .filter_map(|r| r.here_string())
                    .map(str::to_string),
            );
            if seg.piped_in && idx > 0 {
                let feeder = &all[idx - 1];
                match scope.produced_text(&scope.expand_words(feeder), feeder) {
                    Some(t) => texts.push(t),
                    None => out.unseen = true,
                }
            } else if texts.is_empty() {
                out.unseen = true;
            }
            for t in &texts {
                nested(t, scope, dir.as_deref(), None, home, depth, out);
            }
        }
        Invocation::Exec { name, args, .. } => {
            let mut cwd = dir.clone();
            exec(name, args, &words, scope, &mut cwd, home, depth, out);
            if u.chdir.is_empty() {
                scope.cwd = cwd;
            }
        }
    }
    scope.record(&words, seg);
}

/// A program run with these arguments; `cwd` moves with a `cd`.
#[allow(clippy::too_many_arguments)]
fn exec(
    name: &str,
    args: &[String],
    words: &[String],
    scope: &Scope,
    cwd: &mut Option<PathBuf>,
    home: Option<&Path>,
    depth: usize,
    out: &mut Writes,
) {
    // A program known only at run time (`$C` where `C=$(cat f)`, a script
    // `sh -c "$(cat f)"` or `eval "$(cat f)"`): whatever it writes is out
    // of sight.
    if name.contains(['$', '`']) {
        out.unseen = true;
        return;
    }
    let base = name.rsplit('/').next().unwrap_or(name);
    // A script the command wrote itself and then runs is read; another is
    // out of sight, as everywhere in the guard.
    if is_shell(base) {
        if let Some(text) = args.first().and_then(|a| scope.script_named(a)) {
            nested(text, scope, cwd.as_deref(), Some(args), home, depth, out);
        }
        return;
    }
    if inline_code(base, args) {
        out.unseen = true;
    }
    // `GIT_WORK_TREE=DIR git add`, `GIT_DIR=DIR git commit`: the repository
    // the git command changes is named by its environment.
    let git_env: Vec<&str> = words
        .iter()
        .take_while(|w| shell::is_assignment(w))
        .filter_map(|w| {
            w.strip_prefix("GIT_WORK_TREE=")
                .or_else(|| w.strip_prefix("GIT_DIR="))
        })
        .collect();
    let here = cwd.clone();
    let all = effects(base, args);
    let links_made = all.iter().any(|e| matches!(e, Effect::Symlink { .. }));
    for e in all {
        match e {
            Effect::On(_, w) => place(&w, here.as_deref(), home, out),
            Effect::Into { dest, .. } => {
                if let Some(p) = locate(&dest, here.as_deref(), home, out) {
                    out.replaced.push(p.clone());
                    if links_made {
                        out.made.push(p);
                    } else {
                        out.paths.push(p);
                    }
                }
            }
            Effect::Symlink {
                link,
                target,
                from_cwd,
            } => link_made(&link, &target, from_cwd, here.as_deref(), home, out),
            Effect::Clean { paths, .. } => {
                for p in &paths {
                    place(p, here.as_deref(), home, out);
                }
            }
            Effect::Find(f) => find(&f, scope, here.as_deref(), home, depth, out),
            Effect::Repo(dir) => {
                for d in git_env.iter().copied().chain(std::iter::once(dir.as_str())) {
                    place(d, here.as_deref(), home, out);
                }
            }
            Effect::Cd(d) => {
                *cwd = next_cwd(here.as_deref(), d.as_deref(), reading(out.windows, home))
            }
            Effect::SharedRefs => out.shared_refs = true,
            Effect::ConfigSet { key, value } => out.config_sets.push((key, value)),
        }
    }
}

/// How a folder's word is read here (`cd`, `env -C`).
fn reading(windows: bool, home: Option<&Path>) -> Reading<'_> {
    Reading { windows, home }
}

/// `find` with `-delete`, or `-exec` of a command that writes its operand:
/// it writes under the folders it starts from.
fn find(
    f: &super::effects::FindEffect,
    scope: &Scope,
    here: Option<&Path>,
    home: Option<&Path>,
    depth: usize,
    out: &mut Writes,
) {
    let mut writes_found = f.delete;
    for exec in &f.execs {
        let words: Vec<String> = exec.words.iter().map(|w| w.replace("{}", ARG)).collect();
        let dir = if exec.in_found_dir { None } else { here };
        let mut inner = Writes::spelled(out.windows);
        nested(
            &shell::join(&words),
            scope,
            dir,
            None,
            home,
            depth,
            &mut inner,
        );
        out.unseen |= inner.unseen;
        out.shared_refs |= inner.shared_refs;
        out.links.append(&mut inner.links);
        out.replaced.append(&mut inner.replaced);
        out.made.append(&mut inner.made);
        out.config_sets.append(&mut inner.config_sets);
        for p in inner.paths {
            if p.to_string_lossy().contains(ARG) {
                writes_found = true;
            } else {
                out.paths.push(p);
            }
        }
    }
    if writes_found {
        if f.starts.is_empty() {
            place(".", here, home, out);
        }
        for s in &f.starts {
            place(s, here, home, out);
        }
    }
}

/// An interpreter given its code on the command line: what it writes is
/// another language.
fn inline_code(name: &str, args: &[String]) -> bool {
    let has = |flags: &[&str]| {
        args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || (f.len() == 2 && a.starts_with(f)))
        })
    };
    match name {
        "python" | "python2" | "python3" | "pypy" | "pypy3" => has(&["-c"]),
        "ruby" | "perl" => has(&["-e", "-E"]),
        "node" | "nodejs" | "deno" | "bun" => has(&["-e", "--eval", "-p", "--print"]),
        "php" => has(&["-r"]),
        "Rscript" | "R" | "osascript" | "lua" => has(&["-e"]),
        _ => false,
    }
}

/// Where nothing is kept: writing there is not writing a file (on Windows
/// also its devices, `NUL`, `CON`, in any case).
fn harmless(target: &str, windows: bool) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || target.starts_with("/dev/fd/")
        || (windows && matches!(winpath::canonical(target).as_str(), "nul" | "con"))
}

/// A symbolic link made at `link` to `target`: remembered, so the paths
/// written through it are judged where they land.
fn link_made(
    link: &str,
    target: &str,
    from_cwd: bool,
    here: Option<&Path>,
    home: Option<&Path>,
    out: &mut Writes,
) {
    let Some(at) = locate(link, here, home, out) else {
        return;
    };
    // The target as written, from the link's folder (or the command's);
    // it is followed itself when a path goes through the link.
    let base = if from_cwd { here } else { at.parent() };
    let mut scratch = Writes::spelled(out.windows);
    let to = locate(target, base, home, &mut scratch);
    out.links.push((normalize(&at), to));
}

/// Record `word` as a path written from `here` (`~` against the home
/// folder); one whose place is known only at run time is unseen.
fn place(word: &str, here: Option<&Path>, home: Option<&Path>, out: &mut Writes) {
    if let Some(p) = locate(word, here, home, out) {
        out.paths.push(p);
    }
}

/// Where `word` lands from `here`, as written (`.` and `..` are taken at
/// the end, with the links the command made: `Writes::follow_links`);
/// `None` (and the write unseen) when that is known only at run time.
fn locate(
    word: &str,
    here: Option<&Path>,
    home: Option<&Path>,
    out: &mut Writes,
) -> Option<PathBuf> {
    let spelled;
    let word = if out.windows {
        // `%TEMP%\x`: a place known at run time, as `$TEMP/x` is.
        if word.contains('%') {
            out.unseen = true;
            return None;
        }
        spelled = winpath::canonical(word);
        spelled.as_str()
    } else {
        word
    };
    if word.contains('$') || word.contains('`') {
        out.unseen = true;
        return None;
    }
    let path = if word.starts_with('/') {
        PathBuf::from(word)
    } else if let (Some(rest), Some(h)) = (
        word.strip_prefix("~/").or((word == "~").then_some("")),
        home,
    ) {
        h.join(rest)
    } else if let Some(dir) = here {
        dir.join(word)
    } else {
        out.unseen = true;
        return None;
    };
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(command: &str) -> Writes {
        bash_writes(
            command,
            Path::new("/p/wt"),
            Path::new("/p"),
            Some(Path::new("/h")),
            false,
        )
    }

    /// As written with `/` (on Windows a path made of these shows `\`).
    fn paths(command: &str) -> Vec<String> {
        w(command)
            .paths
            .iter()
            .map(|p| p.display().to_string().replace('\\', "/"))
            .collect()
    }

    #[test]
    fn windows_words_land_in_one_spelling() {
        let on_windows = |c: &str| -> Vec<String> {
            let w = bash_writes(
                c,
                Path::new("/c/users/me/proj"),
                Path::new("/c/users/me/proj"),
                Some(Path::new("/c/users/me")),
                true,
            );
            w.paths
                .iter()
                .map(|p| p.display().to_string().replace('\\', "/"))
                .collect()
        };
        assert_eq!(
            on_windows(r"echo x > 'C:\Users\Me\Proj\Out.txt'"),
            ["/c/users/me/proj/out.txt"]
        );
        assert_eq!(
            on_windows("rm -rf /C/Users/me/.claude/ralph"),
            ["/c/users/me/.claude/ralph"]
        );
        assert_eq!(
            on_windows(r"cd 'C:\Users\me' && touch a"),
            ["/c/users/me/a"]
        );
        assert_eq!(on_windows(r"rm -rf $USERPROFILE/x"), ["/c/users/me/x"]);
        assert!(on_windows("echo x > NUL && echo y > /dev/null").is_empty());
        assert!(
            bash_writes(
                r"rm %TEMP%\x",
                Path::new("/c/p"),
                Path::new("/c/p"),
                None,
                true
            )
            .unseen
        );
    }

    #[test]
    fn reading_writes_nothing() {
        for c in [
            "cat prd.json",
            "ls -la",
            "git status --short",
            "git log --oneline -5",
            "git diff",
            "git branch --show-current",
            "git branch",
            "git branch -a -v",
            "git stash list",
            "git stash show -p",
            "git tag -l",
            "git tag",
            "git worktree list",
            "git worktree list --porcelain",
            "git branch --list 'ralph/*'",
            "git branch --contains HEAD",
            "git tag --points-at HEAD",
            "head -c 100 progress.txt",
            "git remote -v",
            "git config --get user.name",
            "git config user.name",
            "git config --list --local",
            "git rev-parse --show-toplevel",
            "grep -rn foo src 2>/dev/null",
            "test -f a.txt && echo yes",
            "echo done >&2",
            "sed -n 1,5p f",
            "find . -name '*.rs'",
            "cd src && ls && cd .. && git status",
            "echo $HOME",
            "ls \"$TMPDIR\"",
        ] {
            assert!(!w(c).any(), "{c}: {:?}", w(c));
        }
    }

    #[test]
    fn writes_are_placed_where_they_land() {
        assert_eq!(
            paths("grep -c x /p/log; touch /h/m && echo a > b.txt 2>/dev/null"),
            ["/h/m", "/p/wt/b.txt"]
        );
        assert_eq!(paths("cp /p/prd.json ./x"), ["/p/wt/x"]);
        assert_eq!(paths("cd /p && rm -f a"), ["/p/a"]);
        assert_eq!(
            paths("cd src && touch x && cd .. && git status"),
            ["/p/wt/src/x"]
        );
        assert_eq!(paths("git -C /p commit -am x"), ["/p"]);
        assert_eq!(paths("sh -c 'echo x >> /p/n'"), ["/p/n"]);
        // A variable assigned earlier in the same command.
        assert_eq!(paths("M=/p; sed -i s/a/b/ $M/prd.json"), ["/p/prd.json"]);
        assert_eq!(paths("git --work-tree=/p add -A"), ["/p"]);
        assert_eq!(paths("git --work-tree /p add -A"), ["/p"]);
        assert_eq!(paths("GIT_WORK_TREE=/p git add -A"), ["/p", "/p/wt"]);
        assert_eq!(paths("env -C /p touch a"), ["/p/a"]);
        assert_eq!(paths("cp -t /p a b"), ["/p"]);
        assert_eq!(paths("tar -xf a.tar --directory=/p"), ["/p"]);
        assert_eq!(paths("tar -C /p -xf a.tar"), ["/p"]);
        assert_eq!(
            paths("git worktree remove -f -f ../agent-b"),
            ["/p/agent-b", "/p/wt"]
        );
        assert_eq!(paths("git config core.fsmonitor x"), ["/p/wt"]);
        assert_eq!(
            paths("ln /p/prd.json main-prd.json"),
            ["/p/prd.json", "/p/wt/main-prd.json"]
        );
    }

    #[test]
    fn writes_the_main_thread_must_not_make() {
        for c in [
            "sed -ri 's/a/b/' f",
            "sed -Ei 's/a/b/' f",
            // A program known only at run time.
            "sh -c \"$(cat f)\"",
            "eval \"$(cat f)\"",
            "C=$(cat f); $C",
            "`cat f`",
            "find . -name '*.tmp' -delete",
            "find . -name '*.rs' -exec sed -i s/a/b/ {} +",
            "ex -sc '%s/a/b/|x' f",
            "printf '1d\\nw\\n' | ed -s f",
            "git config core.fsmonitor x",
            "git branch feature",
            "git branch -D feature",
            "git tag v1",
            "git tag -a v1 -m x",
            "git tag -d v1",
            "git branch -m a b",
            "git worktree add ../x",
            "git stash",
            "git stash pop",
            "git commit -am wip",
            "git -C sub checkout -- .",
            "mkdir -p d",
            "python3 -c 'open(\"x\",\"w\")'",
            "sudo cp a b",
            "printf x | tee out",
            "echo 'rm x' | sh",
            "curl -o page.html http://localhost/",
        ] {
            assert!(w(c).any(), "{c}");
        }
    }

    #[test]
    fn links_made_in_the_command_are_followed() {
        // The link's own path as named; what is written through it where it lands.
        assert_eq!(
            paths("ln -s .. up && echo x >> up/src/lib.rs"),
            ["/p/src/lib.rs", "/p/wt/up"]
        );
        assert_eq!(paths("ln -sT /p/src s; touch s/a"), ["/p/src/a", "/p/wt/s"]);
        // `ln -r`: the target is read from the command's folder.
        assert_eq!(
            paths("mkdir -p d && ln -sr src d/l && touch d/l/x"),
            ["/p/wt/d", "/p/wt/src/x", "/p/wt/d/l"]
        );
        // Several sources, or `-t DIR`: each link is DIR/NAME.
        assert_eq!(
            paths("ln -s /p/a /p/b d && touch d/a/x d/b/y"),
            ["/p/a/x", "/p/b/y", "/p/wt/d"]
        );
        assert_eq!(
            paths("cp -s /p/src -t d; rm -f d/src/z"),
            ["/p/src/z", "/p/wt/d"]
        );
        // A link made inside `sh -c`, a write after it, and a chain of links.
        assert_eq!(
            paths("sh -c 'ln -s .. a' && ln -s a/sub b && echo x > b/f"),
            ["/p/sub/f", "/p/wt/a", "/p/wt/b"]
        );
        // `..` after a link climbs from where the link leads, as the kernel does.
        assert_eq!(
            paths("ln -s /p/src s && echo x > s/../lib.rs"),
            ["/p/lib.rs", "/p/wt/s"]
        );
        // A link to a place known only at run time: what goes through it is unseen.
        let unknown = w("ln -s \"$X\" up && echo x > up/f");
        assert!(unknown.unseen && unknown.paths == [PathBuf::from("/p/wt/up")]);
    }

    #[test]
    fn what_is_replaced_whole_is_told_apart() {
        let r = |c: &str| w(c).replaced;
        assert_eq!(r("ln -sf src/x /p/n"), [PathBuf::from("/p/n")]);
        assert_eq!(r("mv a /p/n"), [PathBuf::from("/p/n")]);
        assert_eq!(r("cp -P l /p/n"), [PathBuf::from("/p/n")]);
        // Its folder through a link made in the command.
        assert_eq!(
            r("ln -s /p up; mv a up/n"),
            [PathBuf::from("/p/wt/up"), PathBuf::from("/p/n")]
        );
        assert!(r("echo x >> /p/n && tee -a /p/n < f && sed -i s/a/b/ /p/n").is_empty());
    }
}
