//! Unwrapping: the prefixes that only change *how* a program runs (`sudo`,
//! `env`, `command`, `xargs`, `nohup`, `timeout`, `flock`, ...) are peeled off
//! to find the program really run; `sh -c`, `eval`, `env -S`, `flock -c`,
//! `script -c`, `su -c` and `watch` hand back the string they run as a script
//! of its own.
//!
//! Each wrapper's options are read by its own table (which short and long
//! options take a value, how many operands come before the command), the
//! way its getopt does: a wrapper stops reading options at its first operand.
//! The wrappers that only change how their command runs are rows of
//! [`table::WRAPPERS`]; those that hand over a string to run are in
//! [`handover`].
//! Pure.

mod handover;
mod table;

use super::argv::{has_opt, long_with_value, opt, short_cluster};
use crate::shell;

/// How a simple command is really run, once its wrappers are peeled off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Exec {
        name: String,
        args: Vec<String>,
        via_xargs: bool,
    },
    /// A string run as a script: `sh -c S [ARG0 ARGS...]`, `eval ARGS`,
    /// `env -S S`, `flock F -c S`, `script -c S`, `su -c S`, `watch S`.
    /// `args` are the script's `$0`, `$1`, ...
    Script {
        text: String,
        args: Vec<String>,
        via_xargs: bool,
    },
    /// A shell reading its script from stdin (a pipe, a heredoc, a
    /// here-string, `< FILE`).
    ShellStdin,
    Nothing,
}

/// An invocation with what its wrappers do besides running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unwrapped {
    pub invocation: Invocation,
    /// Folders the program is run in (`env -C DIR`, `sudo -D DIR`), in order,
    /// each relative to the one before.
    pub chdir: Vec<String>,
    /// Files a wrapper writes itself (`script`'s typescript, `time -o`,
    /// `strace -o`).
    pub writes: Vec<String>,
    /// `xargs -I R` / `-i`: the text each input line replaces.
    pub xargs_repl: Option<String>,
    /// `xargs -a FILE`: the operands come from a file, not from stdin.
    pub xargs_from_file: bool,
    /// The word naming the program run, as written (`/tmp/x` for `x`): a
    /// path is looked at for what it is.
    pub program_word: Option<String>,
}

/// A program's or file's own name (`/bin/rm` -> `rm`; Windows' spellings
/// too: `C:\\Git\\usr\\bin\\rm.exe` -> `rm`). A word computed at run time
/// (`$(echo rm)`, `$X/rm`) is kept whole so that it stays visibly dynamic.
pub(super) fn base(w: &str) -> &str {
    if w.contains('$') || w.contains('`') {
        return w;
    }
    let name = w.rsplit(['/', '\\']).next().unwrap_or(w);
    match name.len().checked_sub(4) {
        Some(cut)
            if cut > 0
                && name.is_char_boundary(cut)
                && name[cut..].eq_ignore_ascii_case(".exe") =>
        {
            &name[..cut]
        }
        _ => name,
    }
}

pub(super) fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh" | "yash" | "posh"
    )
}

/// What one word of the prefix does to the scan.
enum Step {
    /// A wrapper (with its options): the program is named at this index or later.
    Next(usize),
    /// The invocation is known.
    Done(Invocation),
}

/// Peel off assignments and wrappers to find the program really run.
pub fn unwrap(words: &[String]) -> Invocation {
    unwrap_full(words).invocation
}

/// [`unwrap`], with the folders, files and `xargs` settings the wrappers add.
pub(crate) fn unwrap_full(words: &[String]) -> Unwrapped {
    let mut u = Unwrapped {
        invocation: Invocation::Nothing,
        chdir: Vec::new(),
        writes: Vec::new(),
        xargs_repl: None,
        xargs_from_file: false,
        program_word: None,
    };
    let mut i = 0;
    let mut via_xargs = false;
    while i < words.len() {
        let w = words[i].as_str();
        if shell::is_assignment(w) {
            i += 1;
            continue;
        }
        let name = base(w);
        via_xargs |= name == "xargs";
        match peel(words, i, name, via_xargs, &mut u) {
            Step::Next(next) => i = next,
            Step::Done(invocation) => {
                if let Invocation::Exec { name: n, .. } = &invocation
                    && n == name
                {
                    u.program_word = Some(w.to_string());
                }
                u.invocation = invocation;
                return u;
            }
        }
    }
    u
}

/// The word at `i`, whose own name is `name`: a wrapper to step over, or the
/// program itself.
fn peel(words: &[String], i: usize, name: &str, via_xargs: bool, u: &mut Unwrapped) -> Step {
    let next = i + 1;
    if let Some(w) = table::WRAPPERS.iter().find(|w| w.names.contains(&name)) {
        return table::plain(w, words, next, u);
    }
    match name {
        "flock" => handover::flock(words, next),
        "script" => handover::script(words, next, u),
        "watch" => handover::watch(words, next),
        "su" => handover::su(words, next),
        "trap" => handover::trap(words, next, via_xargs),
        "npx" => handover::npx(words, next, via_xargs),
        "xargs" => xargs(words, next, u),
        "command" => command_options(words, next),
        "env" => handover::env_options(words, next, via_xargs, u),
        "eval" => Step::Done(Invocation::Script {
            text: words[next..].join(" "),
            args: Vec::new(),
            via_xargs,
        }),
        _ if is_shell(name) => Step::Done(handover::shell_invocation(words, i, name, via_xargs)),
        _ => Step::Done(exec(name, &words[next..], via_xargs)),
    }
}

fn exec(name: &str, args: &[String], via_xargs: bool) -> Invocation {
    Invocation::Exec {
        name: name.to_string(),
        args: args.to_vec(),
        via_xargs,
    }
}

/// `xargs [options] COMMAND...`; `-I R` / `-i[R]` / `--replace[=R]` put each
/// input line where R is; `-a FILE` reads the lines from FILE.
fn xargs(words: &[String], mut i: usize, u: &mut Unwrapped) -> Step {
    const LONG: &[&str] = &[
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ];
    while i < words.len() {
        let a = words[i].as_str();
        if a == "--" {
            return Step::Next(i + 1);
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if let Some(l) = a.strip_prefix("--") {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            let k = format!("--{k}");
            if k == "--replace" {
                u.xargs_repl = Some(if v.is_empty() { "{}" } else { v }.to_string());
            } else if k == "--arg-file" || long_with_value(&k, &["--arg-file"]).is_some() {
                u.xargs_from_file = true;
            }
            if !l.contains('=') && long_with_value(a, LONG).is_some() {
                i += 1;
            }
        } else if let Some(r) = a.strip_prefix("-i") {
            // `-i` takes its value only when attached.
            u.xargs_repl = Some(if r.is_empty() { "{}" } else { r }.to_string());
        } else {
            let mut o = Vec::new();
            i += short_cluster(&a[1..], words.get(i + 1), "IEdLnPsa", &mut o);
            if let Some(r) = opt(&o, &["-I"]) {
                u.xargs_repl = Some(r.to_string());
            }
            u.xargs_from_file |= has_opt(&o, &["-a"]);
        }
        i += 1;
    }
    Step::Next(i)
}

fn command_options(words: &[String], mut i: usize) -> Step {
    while i < words.len() && words[i].starts_with('-') {
        if words[i] == "--" {
            return Step::Next(i + 1);
        }
        // `command -v rm` only prints where rm is.
        if words[i].contains('v') || words[i].contains('V') {
            return Step::Done(Invocation::Nothing);
        }
        i += 1;
    }
    Step::Next(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    fn name_args(s: &str) -> (String, Vec<String>) {
        match unwrap(&w(s)) {
            Invocation::Exec { name, args, .. } => (name, args),
            other => panic!("{s}: {other:?}"),
        }
    }

    fn script_of(s: &str) -> (String, Vec<String>) {
        match unwrap(&w(s)) {
            Invocation::Script { text, args, .. } => (text, args),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn wrappers_with_their_own_options() {
        for s in [
            "timeout 5 rm x",
            "timeout -s KILL 5 rm x",
            "timeout --signal KILL -k 2 5s rm x",
            "timeout --signal=KILL 5 rm x",
            "nice rm x",
            "nice -n 5 rm x",
            "nice -10 rm x",
            "nice --adjustment 3 rm x",
            "nohup rm x",
            "setsid -f rm x",
            "time -p rm x",
            "time -f %e -o t.txt rm x",
            "stdbuf -o L -eL rm x",
            "ionice -c 3 -n7 rm x",
            "chrt -f 10 rm x",
            "chrt --sched-runtime 5 -d 0 rm x",
            "taskset 0x3 rm x",
            "taskset -c 0,1 rm x",
            "flock /tmp/l rm x",
            "flock -w 5 -x /tmp/l rm x",
            "sudo -u root -- rm x",
            "env -i -u HOME FOO=1 rm x",
            "env -C /tmp rm x",
            "env --chdir=/tmp -- FOO=1 rm x",
            "xargs -n1 -I{} rm x",
            "watch -x rm x",
            "strace -f -o log rm x",
            "nice timeout 5 nohup env X=1 rm x",
        ] {
            assert_eq!(name_args(s), ("rm".into(), vec!["x".to_string()]), "{s}");
        }
    }

    #[test]
    fn scripts_handed_over_by_wrappers() {
        assert_eq!(script_of("sh -c 'rm x'").0, "rm x");
        assert_eq!(script_of("bash -ec 'rm x'").0, "rm x");
        assert_eq!(script_of("bash -c -x 'rm x'").0, "rm x");
        assert_eq!(
            script_of("sh -c 'rm \"$1\"' _ f"),
            ("rm \"$1\"".into(), vec!["_".into(), "f".into()])
        );
        assert_eq!(script_of("flock /tmp/l -c 'rm x'").0, "rm x");
        assert_eq!(script_of("flock -n /tmp/l --command 'rm x'").0, "rm x");
        assert_eq!(script_of("script -q -c 'rm x' /dev/null").0, "rm x");
        assert_eq!(script_of("watch -n 1 rm x").0, "rm x");
        assert_eq!(script_of("su -c 'rm x' root").0, "rm x");
        assert_eq!(script_of("env -S 'rm x'").0, "rm x");
        assert_eq!(script_of("eval rm x").0, "rm x");
        assert_eq!(script_of("trap 'rm x' EXIT").0, "rm x");
        assert_eq!(script_of("npx -c 'rm x'").0, "rm x");
    }

    #[test]
    fn shells_on_stdin_and_files() {
        assert_eq!(unwrap(&w("bash")), Invocation::ShellStdin);
        assert_eq!(unwrap(&w("sh -s -- a b")), Invocation::ShellStdin);
        assert_eq!(unwrap(&w("bash -x -o pipefail")), Invocation::ShellStdin);
        assert_eq!(
            name_args("bash -x run.sh a"),
            ("bash".into(), w("run.sh a"))
        );
    }

    #[test]
    fn no_command_forms() {
        for s in [
            "ionice -p 42",
            "chrt -p 42",
            "taskset -p 3 42",
            "flock 9",
            "command -v rm",
            "script -q log",
            "timeout 5",
        ] {
            assert_eq!(unwrap(&w(s)), Invocation::Nothing, "{s}");
        }
    }

    #[test]
    fn wrapper_side_effects() {
        let u = unwrap_full(&w("env -C sub sudo -D deeper rm x"));
        assert_eq!(u.chdir, ["sub", "deeper"]);
        let u = unwrap_full(&w("script -c 'ls' -O out.log t.txt"));
        assert_eq!(u.writes, ["t.txt", "out.log"]);
        let u = unwrap_full(&w("time -o t.txt ls"));
        assert_eq!(u.writes, ["t.txt"]);
        let u = unwrap_full(&w("xargs -I % mv % /tmp"));
        assert_eq!(u.xargs_repl.as_deref(), Some("%"));
        let u = unwrap_full(&w("xargs -i rm {}"));
        assert_eq!(u.xargs_repl.as_deref(), Some("{}"));
        assert!(unwrap_full(&w("xargs -a list rm")).xargs_from_file);
    }

    #[test]
    fn long_option_abbreviations() {
        let long = ["--target-directory", "--suffix"];
        assert_eq!(
            long_with_value("--target", &long),
            Some("--target-directory")
        );
        assert_eq!(long_with_value("--suf", &long), Some("--suffix"));
        assert_eq!(long_with_value("--s", &long), None, "too short to tell");
        assert_eq!(long_with_value("--backup", &long), None);
    }
}
