//! Who holds the loop's lock when ralph cannot take it: no process of the
//! agent's may hold it. The lock is a file in ralph's folder, and opening a
//! file (for reading is enough) is all `flock` needs: a process the agent
//! starts could hold it, and every Stop would wait and let the session
//! stop, and the user's cancel fail ("another ralph process holds the loop
//! lock"). So when the lock is busy, ralph reads who has the lock file open
//! (`/proc/*/fd`, its inode), and a holder that is the agent's (below the
//! agent's shell, inside the client's sandbox, or left to init: `ancestry`)
//! is stopped (`SIGKILL`), which frees the lock; a holder that is ralph's,
//! or the user's own, is waited for as before.
//! Does I/O (reads `/proc`, signals the agent's holders). Linux only:
//! elsewhere no holder is known and the lock is waited for.

use std::fs::File;
use std::path::Path;

/// One process that has the lock file open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub pid: u32,
    /// Its program's short name.
    pub name: String,
    pub whose: Whose,
}

/// Whose process a holder is.
// Off Linux no holder is ever found (`holders` is empty: no `/proc` to read
// who has a file open), so these are built on Linux only.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Whose {
    /// One of ralph's programs: it holds the lock for a moment, and is
    /// waited for.
    Ralph,
    /// The agent's (why, in words): stopped.
    Agent(String),
    /// Neither (the user's own tool): waited for, and named.
    Other,
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

/// What process `pid` is.
#[cfg(target_os = "linux")]
fn holder(pid: u32) -> Holder {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|n| n.trim().to_string())
        .unwrap_or_default();
    // ralph's own programs first: one of them holds the lock for a moment
    // only (none waits on anything under the lock), whoever started it:
    // the suite's baseline taker, left to init on purpose, among them.
    let whose = if is_ralph(pid) {
        Whose::Ralph
    } else {
        match crate::ancestry::origin_of(pid) {
            crate::ancestry::Origin::Agent(why) => Whose::Agent(why),
            _ => Whose::Other,
        }
    };
    Holder { pid, name, whose }
}

/// One of ralph's programs: the process runs a file of the folder this
/// one runs from (a program named like ralph's elsewhere is not).
#[cfg(target_os = "linux")]
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

/// When every holder of `lock` is the agent's: each stopped, and what they
/// were, in words (`None`: none is the agent's, or one is ralph's or the
/// user's, and is waited for).
pub(crate) fn stop_the_agents(lock: &File, path: &Path) -> Option<String> {
    let held = holders(lock);
    let agents: Vec<&Holder> = held
        .iter()
        .filter(|h| matches!(h.whose, Whose::Agent(_)))
        .collect();
    if agents.is_empty() || agents.len() < held.len() {
        return None;
    }
    let named: Vec<String> = agents
        .iter()
        .map(|h| {
            kill(h.pid);
            let why = match &h.whose {
                Whose::Agent(why) => why.as_str(),
                _ => "",
            };
            format!("process {} ({}: {why})", h.pid, h.name)
        })
        .collect();
    Some(format!(
        "{} held the loop's lock ({}); ralph stopped it and went on: no process of the agent's may hold it",
        named.join(", "),
        path.display()
    ))
}

#[cfg(target_os = "linux")]
fn kill(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(not(target_os = "linux"))]
fn kill(_pid: u32) {}
