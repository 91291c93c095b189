//! The wrappers that hand over a string to run as a script of its own
//! (`sh -c`, `env -S`, `flock -c`, `script -c`, `su -c`, `watch`, `trap`,
//! `npx -c`), or a shell reading its script from stdin or a file. Pure.

use super::{Invocation, Step, Unwrapped, exec};
use crate::protect::argv::{
    Spec, has_opt, leading_opts, long_name, long_with_value, operands, opt, short_cluster,
};
use crate::shell;

/// `trap 'COMMANDS' SIGNAL...`: the commands run (on a signal, or at exit).
pub(super) fn trap(words: &[String], next: usize, via_xargs: bool) -> Step {
    match words.get(next) {
        Some(s) if !s.starts_with('-') => Step::Done(Invocation::Script {
            text: s.clone(),
            args: Vec::new(),
            via_xargs,
        }),
        _ => Step::Done(Invocation::Nothing),
    }
}

/// `npx [options] COMMAND...`, or `npx -c STRING` (run as a script).
pub(super) fn npx(words: &[String], next: usize, via_xargs: bool) -> Step {
    let (at, o) = leading_opts(
        words,
        next,
        &Spec {
            short: "pc",
            long: &["--package", "--call"],
        },
    );
    match opt(&o, &["-c", "--call"]) {
        Some(text) => Step::Done(Invocation::Script {
            text: text.to_string(),
            args: Vec::new(),
            via_xargs,
        }),
        None => Step::Next(at),
    }
}

/// `flock [options] FILE command...`, `flock [options] FILE -c STRING`,
/// `flock [options] FD` (no command).
pub(super) fn flock(words: &[String], next: usize) -> Step {
    let (file, _) = leading_opts(
        words,
        next,
        &Spec {
            short: "wE",
            long: &["--timeout", "--wait", "--conflict-exit-code"],
        },
    );
    let cmd = file + 1;
    match words.get(cmd).map(String::as_str) {
        None => Step::Done(Invocation::Nothing),
        Some("-c" | "--command") => match words.get(cmd + 1) {
            Some(text) => Step::Done(Invocation::Script {
                text: text.clone(),
                args: Vec::new(),
                via_xargs: false,
            }),
            None => Step::Done(Invocation::Nothing),
        },
        Some(_) => Step::Next(cmd),
    }
}

/// `script [options] [FILE]`: runs `-c STRING` (else an interactive shell)
/// and writes FILE (default `typescript`) and the `-O`/`-B`/`-I`/`-T` logs.
pub(super) fn script(words: &[String], next: usize, u: &mut Unwrapped) -> Step {
    const LONG: &[&str] = &[
        "--command",
        "--echo",
        "--log-in",
        "--log-out",
        "--log-io",
        "--log-timing",
        "--logging-format",
        "--output-limit",
    ];
    // util-linux script permutes its arguments: options may follow FILE.
    let (ops, o) = operands(&words[next..], "cEIOBTmo", LONG);
    u.writes.push(
        ops.first()
            .cloned()
            .unwrap_or_else(|| "typescript".to_string()),
    );
    u.writes.extend(
        o.iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "-I" | "-O"
                        | "-B"
                        | "-T"
                        | "--log-in"
                        | "--log-out"
                        | "--log-io"
                        | "--log-timing"
                )
            })
            .map(|(_, v)| v.clone()),
    );
    command_option(&o)
}

/// `watch [options] COMMAND...` joins its words and runs them with `sh -c`
/// (with `-x`, runs them directly).
pub(super) fn watch(words: &[String], next: usize) -> Step {
    let (at, o) = leading_opts(
        words,
        next,
        &Spec {
            short: "nq",
            long: &["--interval", "--equexit"],
        },
    );
    if at >= words.len() {
        return Step::Done(Invocation::Nothing);
    }
    if has_opt(&o, &["-x", "--exec"]) {
        return Step::Next(at);
    }
    Step::Done(Invocation::Script {
        text: words[at..].join(" "),
        args: Vec::new(),
        via_xargs: false,
    })
}

/// `su [options] [USER] -c STRING`: options may follow the user.
pub(super) fn su(words: &[String], next: usize) -> Step {
    let (_, o) = operands(
        &words[next..],
        "cgGsw",
        &[
            "--command",
            "--group",
            "--supp-group",
            "--shell",
            "--whitelist-environment",
        ],
    );
    command_option(&o)
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [COMMAND...]`.
pub(super) fn env_options(
    words: &[String],
    mut i: usize,
    via_xargs: bool,
    u: &mut Unwrapped,
) -> Step {
    const LONG: &[&str] = &["--unset", "--chdir", "--split-string"];
    while i < words.len() {
        let a = words[i].as_str();
        if a == "--" {
            i += 1;
            while i < words.len() && shell::is_assignment(&words[i]) {
                i += 1;
            }
            break;
        }
        if shell::is_assignment(a) {
            i += 1;
            continue;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let mut o = Vec::new();
        if let Some(l) = a.strip_prefix("--") {
            if let Some((k, v)) = l.split_once('=') {
                o.push((long_name(&format!("--{k}"), LONG), v.to_string()));
            } else if let Some(name) = long_with_value(a, LONG) {
                o.push((
                    name.to_string(),
                    words.get(i + 1).cloned().unwrap_or_default(),
                ));
                i += 1;
            }
        } else {
            i += short_cluster(&a[1..], words.get(i + 1), "uCS", &mut o);
        }
        if let Some(text) = opt(&o, &["-S", "--split-string"]) {
            // The string is split into words, then the rest follows it.
            let mut text = text.to_string();
            for w in &words[i + 1..] {
                text.push(' ');
                text.push_str(&shell::join(std::slice::from_ref(w)));
            }
            return Step::Done(Invocation::Script {
                text,
                args: Vec::new(),
                via_xargs,
            });
        }
        u.chdir
            .extend(opt(&o, &["-C", "--chdir"]).map(str::to_string));
        i += 1;
    }
    Step::Next(i)
}

/// `sh -c S [ARG0 ARGS...]` runs S (the first operand, wherever `-c` is in
/// the options); `sh`, `sh -s [ARGS]` read their script from stdin;
/// `sh FILE` runs a file.
pub(super) fn shell_invocation(
    words: &[String],
    i: usize,
    name: &str,
    via_xargs: bool,
) -> Invocation {
    let mut j = i + 1;
    let mut command = false;
    let mut stdin = false;
    while j < words.len() {
        let a = words[j].as_str();
        if a == "--" || a == "-" {
            j += 1;
            break;
        }
        let Some(flags) = a.strip_prefix('-').or_else(|| a.strip_prefix('+')) else {
            break;
        };
        if flags.is_empty() {
            break;
        }
        if a.starts_with("--") {
            j += if matches!(a, "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        command |= flags.contains('c');
        stdin |= flags.contains('s');
        // `-o OPTION`, `-O SHOPT` take the next word.
        j += if flags.ends_with('o') || flags.ends_with('O') {
            2
        } else {
            1
        };
    }
    if command {
        return match words.get(j) {
            Some(s) => Invocation::Script {
                text: s.clone(),
                args: words[j + 1..].to_vec(),
                via_xargs,
            },
            None => Invocation::Nothing,
        };
    }
    if stdin || j >= words.len() {
        return Invocation::ShellStdin;
    }
    // `bash script.sh`: run a file; its content is known only when this
    // command wrote it.
    exec(name, &words[j..], via_xargs)
}

/// `-c TEXT` / `--command TEXT` (`script`, `su`): the script they hand to a
/// shell, or nothing to run.
fn command_option(o: &[(String, String)]) -> Step {
    match opt(o, &["-c", "--command"]) {
        Some(text) => Step::Done(Invocation::Script {
            text: text.to_string(),
            args: Vec::new(),
            via_xargs: false,
        }),
        None => Step::Done(Invocation::Nothing),
    }
}
