//! The signals `ralph run` takes (SIGINT, SIGTERM, SIGHUP set a flag the
//! runner polls) and sends (a client's process group stopped).
//!
//! A signal's sender (`si_pid`) is read on a thread of its own, and only the
//! user's stops the run: a terminal's Ctrl-C or hang-up (from the kernel,
//! pid 0), a `kill` from the user's shell (the shell itself sends it), the
//! service manager or the CI runner stopping its job (long-lived processes
//! of their own). Ignored, and noted for the runner to print and log: a
//! process below the runner (its client, the agent's commands: `kill -TERM
//! $(ps -o ppid= -p $PPID)`); one the agent started and detached (`setsid
//! … &`, `nohup`, `disown`: reparented to init, or carrying the Bash tool's
//! mark in its own environment: `ancestry::origin_of`); and one gone before
//! its `/proc` entry could be read, which may have been either (the user's
//! Ctrl-C, their shell's `kill` or `ralph cancel` stop the run; `pkill` and
//! `/bin/kill`, which exit at once, are not known to be the user's). A
//! sender in a pid namespace nested in the runner's (the client's sandbox)
//! is given by its pid in the runner's namespace, so it is found below the
//! runner like any other; and a sandboxed command cannot name the runner's
//! pid at all, the runner being outside its namespace
//! (docs/client-measurements.md). A sender in a namespace the runner cannot
//! see comes as pid 0: honoured.

use std::process::Child;
#[cfg(unix)]
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// Signals sent by the run's own descendants, ignored: what the runner prints.
static IGNORED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How far up a sender's parents are followed to find the runner.
#[cfg(unix)]
const MAX_DEPTH: usize = 64;

/// SIGINT, SIGTERM and SIGHUP set a flag the runner polls (at least every
/// 250 ms): the child is stopped and the loop cancelled by the runner itself;
/// unless the sender is one of the run's own processes (see the module).
#[cfg(unix)]
pub(crate) fn install_signal_flags() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::iterator::SignalsInfo;
    use signal_hook::iterator::exfiltrator::WithOrigin;
    let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("ralph-signals".into())
        .spawn(move || {
            for origin in signals.forever() {
                let sender = origin.process.map(|p| p.pid.unsigned_abs());
                match sender.and_then(|pid| not_the_users(pid, std::process::id())) {
                    Some(who) => ignored(origin.signal, &who),
                    None => SIGNAL.store(origin.signal as usize, Ordering::SeqCst),
                }
            }
        })?;
    Ok(())
}

/// Windows: the C runtime's SIGINT (Ctrl-C) and SIGTERM set the flag. No
/// sender can be read there, so every one is honoured as the user's.
#[cfg(not(unix))]
pub(crate) fn install_signal_flags() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_usize(sig, &SIGNAL, sig as usize)?;
    }
    Ok(())
}

/// The signal received, if any.
pub(crate) fn pending_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

/// The signals ignored since the last call, worded for the user.
pub(crate) fn take_ignored() -> Vec<String> {
    std::mem::take(
        &mut *IGNORED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

#[cfg(unix)]
fn ignored(sig: i32, who: &str) {
    let note = format!(
        "ignored {} from {who}: only you stop the run, not a process of its agent's; the run goes on (Ctrl-C, your shell's `kill`, or `ralph cancel` in your terminal stops it)",
        signal_name(sig)
    );
    IGNORED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(note);
}

/// Why the signal from `pid` is not the user's (see the module), in words;
/// `None`: it is (the kernel's, init's, or a live process that is neither
/// the run's nor the agent's).
#[cfg(unix)]
fn not_the_users(pid: u32, me: u32) -> Option<String> {
    if pid <= 1 {
        return None;
    }
    if let Some(below) = from_descendant(pid, me) {
        return Some(below);
    }
    if parent_of(pid).is_none() {
        return Some(format!(
            "process {pid}, gone before ralph could see who it was"
        ));
    }
    match ralph_core::ancestry::origin_of(pid) {
        ralph_core::ancestry::Origin::Agent(why) => Some(format!("process {pid} ({why})")),
        _ => None,
    }
}

/// `pid` (named, with its parents up to the runner) when it is a process
/// below the runner `me`, read from `/proc`; `None` when it is not, is the
/// runner itself, is gone, or `/proc` cannot be read.
#[cfg(unix)]
fn from_descendant(pid: u32, me: u32) -> Option<String> {
    let mut names = Vec::new();
    let mut at = pid;
    for _ in 0..MAX_DEPTH {
        if at == me {
            return (!names.is_empty()).then(|| format!("process {pid} ({})", names.join(" < ")));
        }
        if at <= 1 {
            return None;
        }
        let (ppid, name) = parent_of(at)?;
        names.push(name);
        at = ppid;
    }
    None
}

/// A process's parent and name, from `/proc/PID/stat`.
#[cfg(unix)]
fn parent_of(pid: u32) -> Option<(u32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMM) STATE PPID …`; COMM may hold spaces and parentheses.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let ppid = stat
        .get(close + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ppid, name))
}

pub(crate) fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// Send `signal` (a name: TERM, KILL) to the process group `pgid`.
#[cfg(unix)]
fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stop a child started in its own process group: TERM to the group, up to
/// `grace` to exit, then KILL. Returns once the child is reaped.
#[cfg(unix)]
pub(crate) fn stop_group(child: &mut Child, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        // The leader is gone; its group may still hold the tools it ran.
        signal_group(child.id(), "KILL");
        return;
    }
    signal_group(child.id(), "TERM");
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            signal_group(child.id(), "KILL");
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    signal_group(child.id(), "KILL");
    let _ = child.kill();
    let _ = child.wait();
}

/// Windows: no process group and no TERM to send. The child is ended at
/// once (`TerminateProcess`) and waited for; the processes it started are
/// not reached.
#[cfg(not(unix))]
pub(crate) fn stop_group(child: &mut Child, _grace: Duration) {
    let _ = child.kill();
    let _ = child.wait();
}
