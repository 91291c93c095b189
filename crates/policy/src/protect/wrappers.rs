//! Unwrapping: the prefixes that only change *how* a program runs (`sudo`,
//! `env`, `command`, `xargs`, `nohup`, `timeout`, ...) are peeled off to find
//! the program really run; `sh -c`, `eval` and `env -S` hand back the string
//! they run as a script of its own.

use crate::shell;

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
pub(super) fn base(w: &str) -> &str {
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

/// What one word of the prefix does to the scan.
enum Step {
    /// A wrapper (with its options): the program is named at this index or later.
    Next(usize),
    /// The invocation is known.
    Done(Invocation),
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
        via_xargs |= name == "xargs";
        match peel(words, i, name, via_xargs) {
            Step::Next(next) => i = next,
            Step::Done(invocation) => return invocation,
        }
    }
    Invocation::Nothing
}

/// The word at `i`, whose own name is `name`: a wrapper to step over, or the
/// program itself.
fn peel(words: &[String], i: usize, name: &str, via_xargs: bool) -> Step {
    let next = i + 1;
    match name {
        "{" | "}" | "!" | "then" | "do" | "else" | "elif" | "if" | "while" | "until"
        | "busybox" => Step::Next(next),
        "time" | "nohup" | "builtin" | "setsid" | "chronic" | "unbuffer" => {
            Step::Next(skip_options(words, next, "", false))
        }
        "exec" => Step::Next(skip_options(words, next, "a", false)),
        "sudo" | "doas" => Step::Next(skip_options(words, next, "ugCDhprtUT", true)),
        "nice" | "ionice" | "stdbuf" | "watch" => {
            Step::Next(skip_options(words, next, "nciIoeskw", false))
        }
        // `timeout 5 cmd`, `flock FILE cmd`: one positional before the command.
        "timeout" | "flock" => Step::Next(skip_options(words, next, "nciIoeskw", false) + 1),
        "xargs" => Step::Next(skip_options(words, next, "IinLPdEsa", false)),
        "command" => command_options(words, next),
        "env" => env_options(words, next),
        "eval" => Step::Done(Invocation::Script(words[next..].join(" "))),
        _ if is_shell(name) => Step::Done(shell_invocation(words, i, name, via_xargs)),
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

/// Skip the option words from `i` on. A short option whose letter is in
/// `with_value` takes the next word as its value; with `dashdash_ends`, a
/// `--` is the last option word.
fn skip_options(words: &[String], mut i: usize, with_value: &str, dashdash_ends: bool) -> usize {
    while i < words.len() && words[i].starts_with('-') {
        let a = words[i].as_str();
        if dashdash_ends && a == "--" {
            return i + 1;
        }
        let takes_arg = a.len() == 2 && with_value.contains(&a[1..]);
        i += if takes_arg { 2 } else { 1 };
    }
    i
}

fn command_options(words: &[String], mut i: usize) -> Step {
    while i < words.len() && words[i].starts_with('-') {
        // `command -v rm` only prints where rm is.
        if words[i].contains('v') || words[i].contains('V') {
            return Step::Done(Invocation::Nothing);
        }
        i += 1;
    }
    Step::Next(i)
}

fn env_options(words: &[String], mut i: usize) -> Step {
    while i < words.len() {
        let a = words[i].as_str();
        if a == "-S" || a == "--split-string" {
            return Step::Done(Invocation::Script(words[i + 1..].join(" ")));
        } else if let Some(s) = a.strip_prefix("--split-string=") {
            return Step::Done(Invocation::Script(s.to_string()));
        } else if a == "-u" || a == "-C" || a == "--unset" || a == "--chdir" {
            i += 2;
        } else if a.starts_with('-') || shell::is_assignment(a) {
            i += 1;
        } else {
            break;
        }
    }
    Step::Next(i)
}

/// `sh -c S` runs S; `sh` alone (or `sh -s`) reads its script from stdin.
fn shell_invocation(words: &[String], i: usize, name: &str, via_xargs: bool) -> Invocation {
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
    exec(name, &words[i + 1..], via_xargs)
}
