//! Who started this process: the client's hook runner, or the agent's
//! shell? I/O (reads `/proc`), over a pure rule ([`judge`]).
//!
//! The environment a process is given can be forged by whoever starts it
//! (`env -u AI_AGENT ralph-setup hook-event`), but a running process's
//! initial environment (`/proc/PID/environ`) cannot be changed by its
//! children. Measured on the pinned client (2.1.328, docs/client-measurements.md):
//! a hook is `ralph-*` ← `/bin/sh -c sh ".../plugin/ralph" VERB` (initial
//! environment `AI_AGENT=…_harness`, `CLAUDE_PID=<the client>`) ← the client;
//! a Bash tool call is `COMMAND` ← `/bin/bash -c source …/shell-snapshots/…`
//! (`AI_AGENT=…_agent`) ← the client. So a process with the agent's shell
//! among its ancestors was started by the agent, whatever its own
//! environment says. Linux only: where `/proc` cannot be read, the
//! environment check alone applies.

use std::path::Path;

/// How far up the walk goes (a hook is two steps below its client).
const MAX_DEPTH: usize = 32;

/// One process of the chain, as far as the rule needs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    /// The program's short name (`comm`).
    pub name: String,
    /// `AI_AGENT` in its initial environment.
    pub ai_agent: Option<String>,
    /// `CLAUDE_PID` in its initial environment.
    pub claude_pid: Option<u32>,
    /// When it started (clock ticks since boot; 0 when not read): with the
    /// pid, names one process for good.
    pub start: u64,
}

/// What the chain says about who started the first process of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Below the client's hook runner (the walk found the client).
    ClientHook,
    /// The agent's shell is an ancestor, or the process was left to init
    /// (a detached `setsid`/`nohup … &`: a hook's runner waits for it).
    Agent(String),
    /// Neither: the user's terminal, a test, `ralph run`'s own hook.
    Other,
}

/// How Claude Code begins its marks: `claude-code_2-1-328_agent` for its
/// Bash tool's commands, `…_harness` for its hooks (measured on 2.1.328
/// and 2.1.332).
const CLIENT_MARK: &str = "claude-code_";

/// Claude Code's mark on its agent's commands. Only the client's own: a
/// client started from another agent tool's terminal keeps that tool's
/// mark (`cursor-cli_1-2_agent`) in its own initial environment, where it
/// says nothing of who runs what in this session (read as the agent's, it
/// had made every hook of that session the agent's, and `/ralph-loop` do
/// nothing: docs/client-measurements.md).
pub(crate) fn is_agents_mark(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.starts_with(CLIENT_MARK) && v.ends_with("_agent"))
}

fn is_agent(v: Option<&str>) -> bool {
    is_agents_mark(v)
}

fn is_harness(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.starts_with(CLIENT_MARK) && v.ends_with("_harness"))
}

/// Init, or the user's service manager: where a detached process ends up.
fn is_init(p: &Proc) -> bool {
    p.pid == 1 || p.name == "systemd" || p.name == "init"
}

/// One step of the rule: `parent` above `child`, `me` at the bottom.
fn step(child: &Proc, parent: &Proc) -> Option<Origin> {
    if is_agent(parent.ai_agent.as_deref()) {
        return Some(Origin::Agent(format!(
            "the agent's shell (process {}, {}) started it",
            parent.pid, parent.name
        )));
    }
    // The client: the process every hook runner names as its own
    // (`CLAUDE_PID`), the parent of a harness-marked child (the `sh -c`,
    // or the hook itself where that shell `exec`s it). Checked after the
    // agent's marks: a forged `CLAUDE_PID` naming the agent's own shell is
    // found out above; one naming init, here.
    let named = is_harness(child.ai_agent.as_deref()) && child.claude_pid == Some(parent.pid);
    (named && !is_init(parent)).then_some(Origin::ClientHook)
}

/// The top of a chain that ends inside bubblewrap's pid namespace: its
/// init, `bwrap`, with no parent to be seen. The client's sandbox runs each
/// of the agent's Bash commands so (measured on 2.1.328:
/// docs/client-measurements.md), and nothing inside can leave that
/// namespace or rename its init; the user's terminal, the client and its
/// hooks are outside it.
fn is_sandbox_top(p: &Proc) -> bool {
    p.pid == 1 && p.ppid == 0 && p.name == "bwrap"
}

/// Nothing above said who: a process inside bubblewrap's pid namespace
/// (`top`, the last process the walk read) is the agent's, and so is one
/// detached to init (a hook's runner waits for its hook); any other is
/// neither.
fn undecided(me: &Proc, parent: Option<&Proc>, top: Option<&Proc>) -> Origin {
    if top.is_some_and(is_sandbox_top) {
        return Origin::Agent(
            "it runs inside a bubblewrap sandbox (the client's, for the agent's commands)".into(),
        );
    }
    if parent.is_some_and(is_init) && me.pid != 1 {
        return Origin::Agent(
            "it was detached from whoever started it (its parent is init)".into(),
        );
    }
    Origin::Other
}

/// The rule, over the chain from this process (`chain[0]`) upward: what
/// [`this_origin`] decides reading the ancestors one at a time (the tests
/// hand it whole chains).
#[cfg(test)]
fn judge(chain: &[Proc]) -> Origin {
    let Some(me) = chain.first() else {
        return Origin::Other;
    };
    chain
        .windows(2)
        .find_map(|pair| step(&pair[0], &pair[1]))
        .unwrap_or_else(|| undecided(me, chain.get(1), chain.last()))
}

/// Who started this process (`step` a parent at a time, then `undecided`): the ancestors are read one at
/// a time, up to the first that decides (a hook: two).
pub(crate) fn this_origin() -> Origin {
    walk(this_process())
}

/// Who started process `pid` (the rule of [`this_origin`], for another
/// process: the loop lock's holder, a signal's sender), its own initial
/// environment counted too (a command the agent's shell started carries
/// the Bash tool's mark, whoever its parent is now). `Other` when it cannot
/// be read.
pub fn origin_of(pid: u32) -> Origin {
    let Some(proc) = read_proc(pid) else {
        return Origin::Other;
    };
    if is_agent(proc.ai_agent.as_deref()) {
        return Origin::Agent("its environment is the agent's Bash tool's".into());
    }
    walk(proc)
}

/// The rule over `me` and its ancestors, read one at a time up to the
/// first that decides.
fn walk(me: Proc) -> Origin {
    let mut child = me.clone();
    let mut first_parent = None;
    for _ in 0..MAX_DEPTH {
        if child.ppid == 0 {
            break;
        }
        let Some(parent) = read_proc(child.ppid) else {
            break;
        };
        if let Some(origin) = step(&child, &parent) {
            return origin;
        }
        first_parent.get_or_insert_with(|| parent.clone());
        child = parent;
        if child.pid == 1 {
            break;
        }
    }
    undecided(&me, first_parent.as_ref(), Some(&child))
}

/// This process, its environment read from its variables (the same as its
/// initial one for a hook, which never changes them), its pid and parent
/// read from `/proc/self/stat`: numbered as `/proc` numbers the others.
/// Inside the client's sandbox they differ from `getpid`'s: the agent's
/// command runs in a pid namespace nested in the one `/proc` was mounted
/// for (`NSpid: 23 16`, measured), so `/proc/<getpid()>` is another
/// process. Where `/proc` cannot be read, no parent is found and the origin
/// is undecided.
fn this_process() -> Proc {
    let var = |k: &str| std::env::var(k).ok();
    let me = read_stat(Path::new("/proc/self"));
    Proc {
        pid: me.as_ref().map_or_else(std::process::id, |m| m.0),
        ppid: me.as_ref().map_or_else(parent_id, |m| m.1),
        name: String::new(),
        ai_agent: var("AI_AGENT"),
        claude_pid: var("CLAUDE_PID").and_then(|v| v.parse().ok()),
        start: me.map_or(0, |m| m.3),
    }
}

/// This process and its ancestors (to init); only itself where `/proc` cannot be read.
pub(crate) fn this_chain() -> Vec<Proc> {
    let me = this_process();
    let mut chain = vec![me];
    while chain.len() < MAX_DEPTH {
        let ppid = chain.last().map_or(0, |p| p.ppid);
        if ppid == 0 {
            break;
        }
        match read_proc(ppid) {
            Some(p) => chain.push(p),
            None => break,
        }
        if ppid == 1 {
            break;
        }
    }
    chain
}

/// A `/proc` file in one read: each read of another process's `environ`
/// walks its memory, and the standard readers start with 32 bytes.
#[cfg(not(unix))]
fn read_all(_path: &Path, _cap: usize) -> Vec<u8> {
    // No `/proc` here: nothing to read.
    Vec::new()
}

#[cfg(unix)]
fn read_all(path: &Path, cap: usize) -> Vec<u8> {
    // Plain reads into the spare room of a buffer of `cap`, grown when
    // full (`read_to_end` first asks the file's size and position: two more
    // calls per file, and a `/proc` file's size is 0 anyway). Not zeroed
    // first: the 8 KiB for an `environ` was a tenth of a Stop's
    // instructions and two page faults.
    let mut buf = Vec::with_capacity(cap);
    if let Ok(f) = std::fs::File::open(path) {
        loop {
            if buf.len() == buf.capacity() {
                buf.reserve(buf.len());
            }
            let room = buf.capacity() - buf.len();
            match rustix::io::read(&f, rustix::buffer::spare_capacity(&mut buf)) {
                // A `/proc` read stops short only at the end (`stat` is one
                // record, `environ` is copied page by page until the count
                // or its end): no read more to hear the end.
                Ok(n) if n < room => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => break,
            }
        }
    }
    buf
}

/// A process's `stat` under `dir`: its pid, parent, name and start time.
fn read_stat(dir: &Path) -> Option<(u32, u32, String, u64)> {
    let stat = String::from_utf8(read_all(&dir.join("stat"), 1024)).ok()?;
    // `PID (COMM) STATE PPID …`; COMM may hold spaces and parentheses.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat.get(..open)?.trim().parse().ok()?;
    let name = stat.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // Fields 4 (ppid) and 22 (starttime) of proc(5), counted after COMM.
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19).and_then(|s| s.parse().ok()).unwrap_or(0);
    Some((pid, ppid, name, start))
}

fn read_proc(pid: u32) -> Option<Proc> {
    let dir = Path::new("/proc").join(pid.to_string());
    let (_, ppid, name, start) = read_stat(&dir)?;
    let environ = read_all(&dir.join("environ"), 8 * 1024);
    let var = |key: &[u8]| env_var(&environ, key);
    Some(Proc {
        pid,
        ppid,
        name,
        ai_agent: var(b"AI_AGENT="),
        claude_pid: var(b"CLAUDE_PID=").and_then(|v| v.parse().ok()),
        start,
    })
}

/// The value of the first `KEY=` (`key` ends with `=`) in an `environ`
/// (`K=V` entries, each ended by a NUL), found with one substring search
/// rather than a split of every entry.
fn env_var(environ: &[u8], key: &[u8]) -> Option<String> {
    let start = if environ.starts_with(key) {
        key.len()
    } else {
        let mut nul_key = Vec::with_capacity(key.len() + 1);
        nul_key.push(0);
        nul_key.extend_from_slice(key);
        memchr::memmem::find(environ, &nul_key)? + nul_key.len()
    };
    let rest = &environ[start..];
    let end = memchr::memchr(0, rest).unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The parent's pid (0 where it is not known: no Unix).
fn parent_id() -> u32 {
    #[cfg(unix)]
    return std::os::unix::process::parent_id();
    #[cfg(not(unix))]
    return 0;
}

/// This process's pid and start time, as a pass names its issuer.
pub(crate) fn this_process_id() -> Option<(u32, u64)> {
    let me = this_process();
    (me.start > 0).then_some((me.pid, me.start))
}

/// Process `pid`'s id (pid and start time), while it runs.
pub(crate) fn process_id_of(pid: u32) -> Option<(u32, u64)> {
    let p = read_proc(pid)?;
    (p.start > 0).then_some((p.pid, p.start))
}

/// The pass rule (see `passes`): the process `issuer` (pid, start time)
/// is in `chain` (this process and its ancestors), no process of the chain
/// is the agent's shell (above the issuer as well as below it), and, unless
/// `detached_ok`, the issuer was not left to init. A pass the agent planted
/// for a client it started itself has the agent's shell above that client,
/// or, started detached (`setsid`), init right above it; ralph's own
/// issuers are a hook (below its client) or `ralph run` (below the user's
/// shell).
pub(crate) fn issued_above(chain: &[Proc], issuer: (u32, u64), detached_ok: bool) -> bool {
    if chain.iter().any(|p| is_agent(p.ai_agent.as_deref())) {
        return false;
    }
    let Some(at) = chain.iter().position(|p| (p.pid, p.start) == issuer) else {
        return false;
    };
    detached_ok || !chain.get(at + 1).is_some_and(is_init)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HARNESS: &str = "claude-code_2-1-328_harness";

    #[test]
    fn env_var_takes_the_first_whole_key() {
        let environ = b"AI_AGENT=first\0XAI_AGENT=no\0CLAUDE_PID=42\0AI_AGENT=second\0";
        assert_eq!(env_var(environ, b"AI_AGENT=").as_deref(), Some("first"));
        assert_eq!(env_var(environ, b"CLAUDE_PID=").as_deref(), Some("42"));
        assert_eq!(env_var(b"X_AI_AGENT=no\0", b"AI_AGENT="), None);
        assert_eq!(
            env_var(b"A=1\0AI_AGENT=last", b"AI_AGENT=").as_deref(),
            Some("last")
        );
        assert_eq!(env_var(b"", b"AI_AGENT="), None);
    }

    const AGENT: &str = "claude-code_2-1-328_agent";

    fn p(pid: u32, ppid: u32, name: &str, ai: Option<&str>, claude: Option<u32>) -> Proc {
        Proc {
            pid,
            ppid,
            name: name.into(),
            ai_agent: ai.map(str::to_string),
            claude_pid: claude,
            start: u64::from(pid) * 10,
        }
    }

    #[test]
    fn a_pass_holds_only_below_its_issuer_with_no_agent_on_the_way() {
        // A reviewer's hook: guard <- sh <- reviewer client <- ralph-stop-hook <- sh <- client.
        let reviewer = [
            p(500, 400, "ralph-guard", Some(HARNESS), Some(400)),
            p(400, 300, "claude", None, None),
            p(300, 250, "ralph-stop-hook", Some(HARNESS), Some(100)),
            p(250, 100, "sh", Some(HARNESS), Some(100)),
            client(),
            user_shell(),
        ];
        assert!(issued_above(&reviewer, (300, 3000), false));
        // Another start time: the pid was reused.
        assert!(!issued_above(&reviewer, (300, 3001), false));
        // Not an ancestor.
        assert!(!issued_above(&reviewer, (777, 7770), true));
        // The agent's own client with a planted pass: its shell is above.
        let planted = [
            p(900, 800, "ralph-guard", Some(HARNESS), Some(800)),
            p(800, 700, "claude", None, None),
            p(700, 600, "sh", None, None),
            p(600, 100, "bash", Some(AGENT), Some(100)),
            client(),
        ];
        assert!(!issued_above(&planted, (800, 8000), true));
        assert!(!issued_above(&planted, (700, 7000), true));
        // Started detached, with the agent's marks cleared: init above it.
        let detached = [
            p(900, 800, "ralph-guard", Some(HARNESS), Some(800)),
            p(800, 1, "claude", None, None),
            p(1, 0, "systemd", None, None),
        ];
        assert!(!issued_above(&detached, (800, 8000), false));
    }

    fn client() -> Proc {
        p(100, 50, "claude", None, None)
    }

    fn user_shell() -> Proc {
        p(50, 10, "bash", None, None)
    }

    #[test]
    fn a_hook_as_the_client_runs_it_is_the_clients() {
        // ralph-setup <- sh -c (harness) <- claude: measured on 2.1.328.
        let chain = [
            p(300, 200, "ralph-setup", Some(HARNESS), Some(100)),
            p(200, 100, "sh", Some(HARNESS), Some(100)),
            client(),
            user_shell(),
        ];
        assert_eq!(judge(&chain), Origin::ClientHook);
        // Above a client started inside an agent's shell (a nested client
        // would carry its parent's marks): the walk stops at the client.
        let mut nested = chain.to_vec();
        nested[2].ai_agent = None;
        nested[3].ai_agent = Some(AGENT.into());
        assert_eq!(judge(&nested), Origin::ClientHook);
        // Where the client's `sh -c` execs the hook (bash as /bin/sh).
        let direct = [
            p(300, 100, "ralph-setup", Some(HARNESS), Some(100)),
            client(),
        ];
        assert_eq!(judge(&direct), Origin::ClientHook);
    }

    #[test]
    fn the_agents_shell_anywhere_above_is_the_agent_whatever_the_process_says() {
        // env -u AI_AGENT ralph-setup hook-event, from the Bash tool.
        let bash = p(200, 100, "bash", Some(AGENT), Some(100));
        let chain = [
            p(300, 200, "ralph-setup", None, None),
            bash.clone(),
            client(),
        ];
        assert!(matches!(judge(&chain), Origin::Agent(_)));
        // Forged marks on the way: a fake harness shell, CLAUDE_PID naming
        // the agent's shell.
        let chain = [
            p(400, 300, "ralph-setup", Some(HARNESS), Some(200)),
            p(300, 200, "sh", Some(HARNESS), Some(200)),
            bash,
            client(),
        ];
        assert!(matches!(judge(&chain), Origin::Agent(_)));
    }

    #[test]
    fn a_detached_process_is_the_agents() {
        // setsid -f env -i ralph-setup hook-event: left to init.
        let chain = [
            p(300, 1, "ralph-setup", None, None),
            p(1, 0, "init", None, None),
        ];
        assert!(matches!(judge(&chain), Origin::Agent(_)));
        // Left to the user's service manager (a subreaper).
        let chain = [
            p(400, 300, "ralph-setup", Some(HARNESS), Some(100)),
            p(300, 1, "systemd", None, None),
        ];
        assert!(matches!(judge(&chain), Origin::Agent(_)));
        // Detached with a CLAUDE_PID naming init.
        let chain = [
            p(400, 1, "ralph-setup", Some(HARNESS), Some(1)),
            p(1, 0, "init", None, None),
        ];
        assert!(matches!(judge(&chain), Origin::Agent(_)));
    }

    #[test]
    fn inside_the_clients_sandbox_is_the_agents_even_detached() {
        // Measured on 2.1.328 (the client's bubblewrap): /proc is bwrap's
        // pid namespace; the agent's shell's initial environment is
        // readable there, its wrappers' are not.
        let wrappers = [
            p(8, 7, "3", None, None),
            p(7, 2, "3", None, None),
            p(2, 1, "bash", None, None),
            p(1, 0, "bwrap", None, None),
        ];
        let mut chain = vec![
            p(23, 9, "x", None, None),
            p(9, 8, "bash", Some(AGENT), None),
        ];
        chain.extend(wrappers.iter().cloned());
        assert!(matches!(judge(&chain), Origin::Agent(_)));
        // setsid -f env -i x cancel: left to the namespace's inner init.
        let mut chain = vec![p(11, 8, "x", None, None)];
        chain.extend(wrappers.iter().cloned());
        assert!(matches!(judge(&chain), Origin::Agent(why) if why.contains("sandbox")));
        // A container's own init is not bubblewrap: the user's `docker exec` shell.
        let chain = [p(40, 30, "ralph", None, None), p(30, 0, "bash", None, None)];
        assert_eq!(judge(&chain), Origin::Other);
    }

    #[test]
    fn the_users_terminal_and_tests_are_neither() {
        let chain = [p(300, 50, "ralph-setup", None, None), user_shell()];
        assert_eq!(judge(&chain), Origin::Other);
        assert_eq!(judge(&[]), Origin::Other);
    }

    // `/proc` is Linux's; elsewhere no ancestry is read (`origin_of`).
    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_from_proc() {
        let chain = this_chain();
        if Path::new("/proc/self/stat").exists() {
            assert_eq!(chain[0].pid, std::process::id());
            assert!(chain.len() >= 2);
        }
        // Read one ancestor at a time, the same answer.
        assert_eq!(this_origin(), judge(&chain));
    }
}
