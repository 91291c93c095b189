//! Notifications when a loop ends: `--notify CMD` (a shell command run with
//! `RALPH_OUTCOME`, `RALPH_ITERATIONS`, `RALPH_MESSAGE` and `RALPH_REASON` in
//! its environment) or `--notify desktop` (what the OS has: `notify-send`,
//! `osascript`, PowerShell; silently nothing where none exists).
//!
//! Which command: the loop's own `--notify`, else the project's default,
//! `notify = "..."` in `.claude/ralph.toml`, resolved once at the loop's
//! start and kept in its state (the file is not read during the loop). `ralph run`
//! runs it once at the end of a run (its own `--notify` first); in a session
//! the Stop hook (and the StopFailure hook, for a pause on a usage limit)
//! runs it once per loop end, after the lock is released, for at most
//! [`HOOK_LIMIT`].
//!
//! Which log entries are a loop's end ([`ending`]) is pure; reading the
//! project's file and running the command do I/O.

use crate::activity::Entry;
use crate::paths::LoopPaths;
use crate::store;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The project's settings file (one key is read: `notify`).
pub(crate) const SETTINGS_FILE: &str = crate::paths::SETTINGS_FILE;
/// How long a hook lets the notify command run before stopping it.
pub(crate) const HOOK_LIMIT: Duration = Duration::from_secs(5);

/// A loop's end, as the notify command is told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// `complete`, `ended` (cap, stall, budget, ...) or `paused` (a blocker,
    /// an API error or a usage limit): `RALPH_OUTCOME`.
    pub outcome: &'static str,
    /// The log's reason code (`max_iterations`, `stalled`, `token_budget`,
    /// `blocked`, `rate_limit`, ...): `RALPH_REASON`.
    pub reason: String,
    pub iterations: u64,
    pub message: String,
}

/// Is `entry` a loop's end worth telling the user about? A cancel is not
/// (the user did it); a pause is (the loop waits for them).
pub(crate) fn ending(entry: &Entry) -> Option<Ending> {
    let outcome = match entry.decision.as_str() {
        "end" if crate::run::end::is_complete(&entry.reason) => "complete",
        "end" => "ended",
        "pause" => "paused",
        _ => return None,
    };
    let message = entry
        .message
        .clone()
        .unwrap_or_else(|| format!("the loop {outcome} ({})", entry.reason));
    Some(Ending {
        outcome,
        reason: entry.reason.clone(),
        iterations: entry.iteration,
        message,
    })
}

impl Ending {
    /// The notify command's environment.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("RALPH_OUTCOME".into(), self.outcome.into()),
            ("RALPH_REASON".into(), self.reason.clone()),
            ("RALPH_ITERATIONS".into(), self.iterations.to_string()),
            ("RALPH_MESSAGE".into(), self.message.clone()),
        ]
    }
}

/// The shell command for a `--notify` value: `desktop` is the OS's own
/// notifier; empty or `off` is none.
pub fn command_for(spec: &str) -> Option<String> {
    match spec.trim() {
        "" | "off" | "none" => None,
        "desktop" => Some(DESKTOP.to_string()),
        cmd => Some(cmd.to_string()),
    }
}

/// `--notify desktop`: the first notifier the system has; none, nothing.
pub(crate) const DESKTOP: &str = r#"t="ralph: $RALPH_OUTCOME"
if command -v notify-send >/dev/null 2>&1; then notify-send -a ralph "$t" "$RALPH_MESSAGE"
elif command -v osascript >/dev/null 2>&1; then osascript -e 'on run a' -e 'display notification (item 2 of a) with title (item 1 of a)' -e 'end run' "$t" "$RALPH_MESSAGE"
elif command -v powershell.exe >/dev/null 2>&1; then powershell.exe -NoProfile -Command "[Windows.UI.Notifications.ToastNotificationManager,Windows.UI.Notifications,ContentType=WindowsRuntime]>\$null; \$x=[Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent(1); \$x.GetElementsByTagName('text')[0].AppendChild(\$x.CreateTextNode(\$env:RALPH_MESSAGE))>\$null; [Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('ralph').Show([Windows.UI.Notifications.ToastNotification]::new(\$x))"
fi
exit 0"#;

/// `notify = "..."` in the project's `.claude/ralph.toml` (a basic TOML
/// string on one line; anything else in the file is left to other readers).
pub(crate) fn project_default(root: &Path) -> Option<String> {
    let text = store::read_optional(&root.join(SETTINGS_FILE)).ok()??;
    setting(&text, "notify")
}

/// The value of `key = "..."` (or `'...'`) at the top of a TOML text.
pub(crate) fn setting(toml: &str, key: &str) -> Option<String> {
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            return None;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k.trim() != key {
            continue;
        }
        let v = v.trim();
        if let Some(rest) = v.strip_prefix('\'') {
            return rest.split_once('\'').map(|(s, _)| s.to_string());
        }
        let rest = v.strip_prefix('"')?;
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => match chars.next()? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    other => out.push(other),
                },
                c => out.push(c),
            }
        }
        return None;
    }
    None
}

/// The notify setting of a new loop, resolved once at its start: the
/// loop's own `--notify`, else the project's default (`notify` in
/// `.claude/ralph.toml`). Kept in the state: the file is not read again
/// while the loop runs, so a command planted there mid-loop never runs.
pub fn resolve_at_start(own: Option<&str>, root: &Path) -> Option<String> {
    own.map(str::to_string)
        .or_else(|| project_default(root))
        .filter(|n| !n.trim().is_empty())
}

/// The command of a loop whose state says `loop_notify` (resolved at its
/// start, see [`resolve_at_start`]). Reads no file.
pub(crate) fn configured(_paths: &LoopPaths, loop_notify: Option<&str>) -> Option<String> {
    loop_notify.and_then(command_for)
}

/// Run `cmd` once with `env`, in `root`, for at most `limit` (then its
/// process group is stopped); stdin, stdout and stderr are not the caller's.
pub fn run(
    cmd: &str,
    env: &[(String, String)],
    root: &Path,
    limit: Duration,
) -> Result<(), String> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run the --notify command: {e}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("the --notify command failed ({status})")),
            Ok(None) if Instant::now() >= deadline => {
                stop_group(&mut child);
                return Err(format!(
                    "the --notify command ran longer than {} s and was stopped",
                    limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("the --notify command: {e}")),
        }
    }
}

fn stop_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    for signal in ["TERM", "KILL"] {
        let _ = Command::new("kill")
            .args(["-s", signal, "--", &group])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if signal == "TERM" {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A hook that may end a loop with a notify command: noted before the hook
/// decides (the command, the activity log's last entry), fired after it
/// answered and released the lock.
#[derive(Debug, Clone)]
pub struct Pending {
    paths: LoopPaths,
    cmd: String,
    before: Option<Entry>,
}

impl Pending {
    /// The loop at `paths` has a notify command (its own or the project's);
    /// `None` under `ralph run`, which notifies at the end of the run.
    pub fn note(paths: &LoopPaths) -> Option<Pending> {
        if crate::passes::run_session(paths).is_some() {
            return None;
        }
        let own = match crate::state_file::read(paths) {
            crate::state_file::StateFile::Loop { state, .. } => state.notify,
            _ => None,
        };
        Pending::for_loop(paths, own.as_deref())
    }

    /// [`Pending::note`] for a loop whose state was read already (the Stop
    /// notes it from the state it gathered, under the lock, before applying).
    pub(crate) fn for_loop(paths: &LoopPaths, notify: Option<&str>) -> Option<Pending> {
        let cmd = configured(paths, notify)?;
        if crate::passes::run_session(paths).is_some() {
            return None;
        }
        Some(Pending {
            paths: paths.clone(),
            cmd,
            before: crate::activity::last_entry(&paths.log),
        })
    }

    /// When the log's last entry is now a new end of the loop, run the
    /// command (at most [`HOOK_LIMIT`]); why it failed, if it did.
    pub fn fire(&self) -> Option<String> {
        let last = crate::activity::last_entry(&self.paths.log)?;
        if self.before.as_ref() == Some(&last) {
            return None;
        }
        let end = ending(&last)?;
        run(&self.cmd, &end.env(), &self.paths.root, HOOK_LIMIT).err()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::Action;

    #[test]
    fn which_entries_are_ends() {
        let e = |a, r: &str| Entry::now("s", 4, a, r).with_message(Some("said"));
        let end = ending(&e(Action::End, "all_stories_pass")).unwrap();
        assert_eq!((end.outcome, end.iterations), ("complete", 4));
        assert_eq!(end.message, "said");
        assert_eq!(
            ending(&e(Action::End, "max_iterations")).unwrap().outcome,
            "ended"
        );
        assert_eq!(
            ending(&e(Action::Pause, "blocked")).unwrap().outcome,
            "paused"
        );
        assert_eq!(
            ending(&e(Action::Pause, "rate_limit")).unwrap().reason,
            "rate_limit"
        );
        for a in [
            Action::Block,
            Action::Cancel,
            Action::Yield,
            Action::Start,
            Action::Resume,
        ] {
            assert_eq!(ending(&e(a, "x")), None);
        }
        let env = end.env();
        assert!(env.contains(&("RALPH_OUTCOME".into(), "complete".into())));
        assert!(env.contains(&("RALPH_ITERATIONS".into(), "4".into())));
    }

    #[test]
    fn commands_and_the_project_default() {
        assert_eq!(command_for("desktop").as_deref(), Some(DESKTOP));
        assert_eq!(command_for(" off "), None);
        assert_eq!(command_for("./n.sh").as_deref(), Some("./n.sh"));
        let toml = "# mine\nother = 1\nnotify = \"notify-send \\\"$RALPH_MESSAGE\\\"\" # end\n[x]\nnotify = 'no'\n";
        assert_eq!(
            setting(toml, "notify").as_deref(),
            Some("notify-send \"$RALPH_MESSAGE\"")
        );
        assert_eq!(
            setting("notify = 'desktop'", "notify").as_deref(),
            Some("desktop")
        );
        assert_eq!(setting("[t]\nnotify = 'desktop'", "notify"), None);
        assert_eq!(setting("notifyx = 'a'", "notify"), None);
    }
}
