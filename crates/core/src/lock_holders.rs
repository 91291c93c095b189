//! Who holds the loop's lock when ralph cannot take it: no process of the
//! agent's may hold it. The lock is a file in ralph's folder, and opening a
//! file (for reading is enough) is all `flock` needs: a process the agent
//! starts could hold it, and every Stop would wait and let the session
//! stop, and the user's cancel fail ("another ralph process holds the loop
//! lock"). So when the lock is busy, ralph reads who has the lock file open
//! (`/proc/*/fd`, its inode), and a holder that is the agent's (below the
//! agent's shell, inside the client's sandbox, or left to init: `ancestry`)
//! is stopped (`SIGKILL`) at once, which frees the lock; one of ralph's
//! programs is waited for, and any other holder only for the whole wait
//! (`LOCK_WAIT`), then stopped too.
//! Does I/O (reads `/proc`, signals the agent's holders). Linux only:
//! elsewhere no holder is known and the lock is waited for.

use crate::ancestry::Origin;
use std::fs::File;
use std::path::Path;

/// One process that has the lock file open.
// Off Linux no holder is ever found (`holders` is empty: no `/proc` to read
// who has a file open), so none is built there.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub pid: u32,
    /// Its parent's pid (0 when not read).
    pub ppid: u32,
    /// Its program's short name.
    pub name: String,
    /// Stopped (`SIGSTOP`) or traced: it holds the lock until someone
    /// resumes it, so even one of ralph's programs is not waited for.
    pub stopped: bool,
}

/// The processes other than this one with `lock` (open here) open.
#[cfg(target_os = "linux")]
pub(crate) fn holders(lock: &File) -> Vec<Holder> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = lock.metadata() else {
        return Vec::new();
    };
    let target = (meta.dev(), meta.ino());
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me && has_open(*pid, target))
        .map(holder)
        .collect()
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn holders(_lock: &File) -> Vec<Holder> {
    Vec::new()
}

/// Whether process `pid` has the file `(dev, ino)` open.
#[cfg(target_os = "linux")]
fn has_open(pid: u32, target: (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == target))
}

/// What process `pid` is: its name, parent and run state.
#[cfg(target_os = "linux")]
fn holder(pid: u32) -> Holder {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|n| n.trim().to_string())
        .unwrap_or_default();
    // `pid (comm) S ppid …`: the name may hold spaces and parentheses,
    // so the fields are read after the last `)`.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let mut fields = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace();
    let state = fields.next().unwrap_or("");
    let ppid = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Holder {
        pid,
        ppid,
        name,
        stopped: matches!(state, "T" | "t"),
    }
}

/// The holder that opened the lock for `h`'s family: its highest ancestor
/// that holds the lock too. A child inherits its parent's open files
/// (`flock FILE sleep`: the `sleep` holds what `flock` opened), so a
/// family is one hold, and whose it is is decided where it began: a
/// detached `flock` whose `sleep` has a parent, `flock`, that is not init.
fn family_top<'a>(h: &'a Holder, all: &'a [Holder]) -> &'a Holder {
    let mut top = h;
    for _ in 0..all.len() {
        match all.iter().find(|p| p.pid == top.ppid && p.pid != top.pid) {
            Some(parent) => top = parent,
            None => break,
        }
    }
    top
}

/// Why the family `top` began is stopped, after `waited` (`None`: it is
/// waited for). ralph's running programs are waited for (one holds the
/// lock for a moment only, none waits on anything under it, whoever
/// started it: the suite's baseline taker, left to init on purpose, among
/// them), the agent's then only after the whole wait; the agent's other
/// processes at once; any other after the whole wait (no ralph program
/// holds it that long, nobody else has a reason to hold ralph's lock, and
/// a process detached through a shell to init names nobody).
fn stopped_why(top: &Holder, waited: Waited) -> Option<String> {
    let ralph = is_ralph(top.pid) && !top.stopped;
    match (waited, ralph, crate::ancestry::origin_of(top.pid)) {
        (Waited::NotYet, true, _) | (Waited::Long, true, Origin::ClientHook | Origin::Other) => {
            None
        }
        (_, false, Origin::Agent(why)) => Some(why),
        (Waited::NotYet, false, _) => None,
        (Waited::Long, true, Origin::Agent(_)) => {
            Some("a ralph program the agent started, held longer than ralph holds it".into())
        }
        (Waited::Long, false, _) => {
            Some("it held the lock longer than any of ralph's programs does".into())
        }
    }
}

/// One of ralph's programs: the process runs a file of the folder this
/// one runs from (a program named like ralph's elsewhere is not).
fn is_ralph(pid: u32) -> bool {
    let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    else {
        return false;
    };
    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
        exe.parent() == Some(dir.as_path())
            && exe
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ralph"))
    })
}

/// How long the lock has been waited for, which decides whose holders
/// are stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// Not yet: the agent's holders are stopped, ralph's and any other
    /// are waited for.
    NotYet,
    /// The whole wait: any holder but one of ralph's the agent did not
    /// start is stopped too.
    Long,
}

/// Stop the holders of `lock` that `waited` allows: each family the agent
/// started (any, after a long wait, but ralph's own), and what they were,
/// in words (`None`: none stopped).
pub(crate) fn stop_holders(lock: &File, path: &Path, waited: Waited) -> Option<String> {
    let held = holders(lock);
    let words: Vec<String> = held
        .iter()
        .filter_map(|h| {
            let top = family_top(h, &held);
            let why = stopped_why(top, waited)?;
            kill(h.pid);
            Some(if top.pid == h.pid {
                format!("process {} ({}: {why})", h.pid, h.name)
            } else {
                format!("process {} ({}, started by {})", h.pid, h.name, top.pid)
            })
        })
        .collect();
    (!words.is_empty()).then(|| {
        format!(
            "{} held the loop's lock ({}); ralph stopped it and went on: no process but ralph's may hold it",
            words.join(", "),
            path.display()
        )
    })
}

#[cfg(target_os = "linux")]
fn kill(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(not(target_os = "linux"))]
fn kill(_pid: u32) {}
