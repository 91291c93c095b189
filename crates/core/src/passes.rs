//! Passes: how a process ralph starts proves it is ralph's, with something
//! the agent cannot produce. I/O (the pass files in the loop's folder).
//!
//! A reviewer's session (`--review`) must not drive the loop, so its hooks
//! stand aside; a `ralph run` client's hooks merge for the run's session and
//! leave the end's notification to the runner. An environment flag for
//! either (`RALPH_REVIEWER=1` before) is an off switch anyone can set: the
//! agent writes it into the project's settings (`env` reaches every hook)
//! and the loop stops for good. A pass is instead a random token ralph
//! creates just before it starts the process, as a file in the loop's
//! folder (outside the project) naming what it is for, handed only to that
//! process (in [`PASS_ENV`]) and removed when the process ends ([`Pass`]'s
//! drop). A hook honours a token only while its file is there: a stale, a
//! guessed or a forged value finds no file and the hook does its usual work.
//!
//! A pass file also names the process that issued it (pid and start
//! time), and holds only for that process and its descendants, with no
//! process of the agent's shell among their ancestors
//! ([`crate::ancestry::issued_above`]): a pass the agent plants in the
//! loop's folder past the guard (through a path known only at run time), for
//! a client it starts itself, has the agent's shell above that client.
//!
//! The limit: a program with the user's rights can read a running
//! process's environment or the loop's folder while the pass lives (the
//! reviewer's or the run's client's lifetime); the guard refuses the
//! settings edit that would carry it, and the pass dies with its process.

use crate::paths::LoopPaths;
use crate::store::{self, StoreError};
use std::path::PathBuf;

/// The environment variable that carries a pass to the process ralph starts.
pub const PASS_ENV: &str = "RALPH_PASS";
/// The passes' folder, in the loop's folder.
const PASSES_DIR: &str = "passes";
/// A token is this many hexadecimal digits (128 random bits).
const TOKEN_LEN: usize = 32;

/// What a pass lets its holder's hooks do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// A reviewer's own session: ralph's hooks stand aside in it.
    Reviewer,
    /// A `ralph run` client (or the Stop hook the runner runs itself) for
    /// the run's loop, owned by `session`.
    Run { session: String },
}

impl Purpose {
    fn to_line(&self) -> String {
        match self {
            Purpose::Reviewer => "reviewer\n".to_string(),
            Purpose::Run { session } => format!("run {session}\n"),
        }
    }

    fn parse(text: &str) -> Option<Purpose> {
        let line = text.lines().next()?.trim();
        match line.split_once(' ') {
            None if line == "reviewer" => Some(Purpose::Reviewer),
            Some(("run", session)) if !session.trim().is_empty() => Some(Purpose::Run {
                session: session.trim().to_string(),
            }),
            _ => None,
        }
    }
}

/// A live pass: its file exists until this is dropped (when the process it
/// was handed to has ended).
#[derive(Debug)]
pub struct Pass {
    token: String,
    file: PathBuf,
}

impl Pass {
    /// Creates a pass for `purpose` in the loop's folder of `paths`.
    pub fn issue(paths: &LoopPaths, purpose: &Purpose) -> Result<Pass, StoreError> {
        let token = new_token();
        let file = paths.dir.join(PASSES_DIR).join(&token);
        let (pid, start) = crate::ancestry::this_process_id().unwrap_or((std::process::id(), 0));
        let text = format!("{}issuer {pid} {start}\n", purpose.to_line());
        store::atomic_write(&file, text.as_bytes())?;
        Ok(Pass { token, file })
    }

    /// The token, to set as [`PASS_ENV`] in the started process only.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Is `token` the shape ralph issues (so that it can name no other file)?
pub(crate) fn well_formed(token: &str) -> bool {
    token.len() == TOKEN_LEN && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The purpose of a live pass `token` of the loop at `paths`; `None` for a
/// malformed, spent or unknown one.
pub(crate) fn check(paths: &LoopPaths, token: &str) -> Option<Purpose> {
    if !well_formed(token) {
        return None;
    }
    let file = paths.dir.join(PASSES_DIR).join(token);
    let text = store::read_optional(&file).ok()??;
    let purpose = Purpose::parse(&text)?;
    let issuer = issuer(&text)?;
    // Only the reviewer's pass makes hooks stand aside; a `ralph run` may
    // be started by init itself (a container's first process).
    let detached_ok = matches!(purpose, Purpose::Run { .. });
    let holds = issuer.0 == std::process::id()
        || crate::ancestry::issued_above(&crate::ancestry::this_chain(), issuer, detached_ok);
    holds.then_some(purpose)
}

/// The `issuer PID START` line of a pass file.
fn issuer(text: &str) -> Option<(u32, u64)> {
    let line = text.lines().find_map(|l| l.strip_prefix("issuer "))?;
    let (pid, start) = line.trim().split_once(' ')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// The pass this process was given, checked against the loop at `paths`.
/// Costs nothing when the variable is unset (every ordinary hook call).
pub(crate) fn presented(paths: &LoopPaths) -> Option<Purpose> {
    let token = std::env::var(PASS_ENV).ok().filter(|t| !t.is_empty())?;
    check(paths, &token)
}

/// Is this process a hook of a reviewer's session (a live reviewer pass)?
pub fn in_reviewer_session(paths: &LoopPaths) -> bool {
    presented(paths) == Some(Purpose::Reviewer)
}

/// The session of the `ralph run` this process belongs to (a live run pass).
pub(crate) fn run_session(paths: &LoopPaths) -> Option<String> {
    match presented(paths)? {
        Purpose::Run { session } => Some(session),
        Purpose::Reviewer => None,
    }
}

/// 128 bits from the system's random source; where it cannot be read, from
/// the standard library's randomly keyed hasher (seeded by the OS too).
fn new_token() -> String {
    use std::io::Read;
    let mut bytes = [0u8; TOKEN_LEN / 2];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u128(std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos()));
            h.write_u32(std::process::id());
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(dir: &std::path::Path) -> LoopPaths {
        LoopPaths::in_data_dir(&dir.join("data"), dir.join("proj"))
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ralph-pass-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("proj")).unwrap();
        d
    }

    #[test]
    fn a_pass_holds_while_it_lives_and_is_spent_with_its_process() {
        let d = temp("live");
        let p = paths(&d);
        let pass = Pass::issue(&p, &Purpose::Reviewer).unwrap();
        let token = pass.token().to_string();
        assert!(well_formed(&token));
        assert_eq!(check(&p, &token), Some(Purpose::Reviewer));
        drop(pass);
        assert_eq!(check(&p, &token), None, "a spent pass is stale");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_forged_or_guessed_token_is_no_pass() {
        let d = temp("forged");
        let p = paths(&d);
        let _live = Pass::issue(&p, &Purpose::Reviewer).unwrap();
        assert_eq!(check(&p, "1"), None);
        assert_eq!(check(&p, &"0".repeat(TOKEN_LEN)), None);
        assert_eq!(check(&p, "../state.md"), None);
        // A token cannot name a file outside the passes' folder.
        assert!(!well_formed("../../../../../../etc/passwd00000"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_run_pass_names_its_session_and_two_passes_differ() {
        let d = temp("run");
        let p = paths(&d);
        let run = Purpose::Run {
            session: "abc-1".into(),
        };
        let a = Pass::issue(&p, &run).unwrap();
        let b = Pass::issue(&p, &Purpose::Reviewer).unwrap();
        assert_ne!(a.token(), b.token());
        assert_eq!(check(&p, a.token()), Some(run));
        assert_eq!(Purpose::parse("run \n"), None);
        assert_eq!(Purpose::parse("reviewer x"), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
