//! The loop's configuration as the last loop saw it, and what changed since:
//! said at the next start. Does I/O (the record, the configuration files);
//! [`compare`] and [`lines`] are pure.
//!
//! The loop's configuration (`file_names::CONFIG_FILES` and every file in
//! `.claude/ralph-review/`) is read at a loop's start. While a loop runs
//! the guard keeps the agent's tools off it, but not an interpreter run
//! outside the sandbox: a `.ralph/command-policy` planted with `[gates]
//! full | true` is read by no one in this loop, and decides the user's
//! next one. So each loop's start and end record a digest of every
//! configuration file (`config-seen` in the project's loop folder, which
//! outlives its loops; sealed beside, written atomically), and the next
//! start names each file that appeared, changed or vanished since, one
//! line each. ralph cannot tell who wrote a change (the user edits these
//! between loops), so the words ask, they do not accuse. The first loop of
//! a project has no record and says nothing.
//!
//! Cost: a start and an end read the configuration files (three, and the
//! reviewers' folder) and the record; a steady Stop reads nothing of this.

use crate::file_names::{CONFIG_FILES, POLICY_FILE, POLICY_FILE_ALT, REVIEW_DIR, SETTINGS_FILE};
use crate::paths::LoopPaths;
use crate::seal::{self, Seal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Each configuration file there (path under the project root) and its digest.
pub(crate) type Digests = BTreeMap<String, String>;

/// `config-seen`: the configuration at the last loop's start and end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ConfigSeen {
    /// When the last loop started (RFC 3339), and what it read then.
    #[serde(default)]
    pub started: Option<String>,
    #[serde(default)]
    pub at_start: Option<Digests>,
    /// When it ended (ended, cancelled), and the files then.
    #[serde(default)]
    pub ended: Option<String>,
    #[serde(default)]
    pub at_end: Option<Digests>,
}

/// How a file differs from the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigDiff {
    Appeared,
    Changed,
    Vanished,
}

/// Since when it differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Since {
    /// Between the last loop's start and its end.
    During { started: String, ended: String },
    /// After the last loop ended.
    Ended(String),
    /// After the last loop started (it never ended through ralph: replaced,
    /// or its end was not recorded).
    Started(String),
}

/// One configuration file that is not as the last loop left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigChange {
    pub file: String,
    pub kind: ConfigDiff,
    pub since: Since,
}

fn diff(before: Option<&String>, now: Option<&String>) -> Option<ConfigDiff> {
    match (before, now) {
        (None, Some(_)) => Some(ConfigDiff::Appeared),
        (Some(_), None) => Some(ConfigDiff::Vanished),
        (Some(b), Some(n)) if b != n => Some(ConfigDiff::Changed),
        _ => None,
    }
}

/// The files of `now` that are not as `record` last saw them. A file
/// changed while the last loop ran is named as such (unless it is back as
/// the loop found it); one changed after its end, as such. Pure.
pub(crate) fn compare(record: &ConfigSeen, now: &Digests) -> Vec<ConfigChange> {
    let time = |t: &Option<String>| t.clone().unwrap_or_default();
    let mut names: Vec<&String> = now.keys().collect();
    for d in [&record.at_start, &record.at_end].into_iter().flatten() {
        names.extend(d.keys());
    }
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for file in names {
        let n = now.get(file);
        let s = record.at_start.as_ref().map(|d| d.get(file));
        let e = record.at_end.as_ref().map(|d| d.get(file));
        let found = match (s, e) {
            (Some(s), Some(e)) if s != e => diff(s, n).map(|k| {
                let since = Since::During {
                    started: time(&record.started),
                    ended: time(&record.ended),
                };
                (k, since)
            }),
            (_, Some(e)) => diff(e, n).map(|k| (k, Since::Ended(time(&record.ended)))),
            (Some(s), None) => diff(s, n).map(|k| (k, Since::Started(time(&record.started)))),
            (None, None) => None,
        };
        if let Some((kind, since)) = found {
            out.push(ConfigChange {
                file: file.clone(),
                kind,
                since,
            });
        }
    }
    out
}

/// `2026-12-04 17:00 UTC` of `2026-12-04T17:00:31Z`.
fn when(rfc3339: &str) -> String {
    match rfc3339.get(..16) {
        Some(t) if rfc3339.ends_with('Z') => format!("{} UTC", t.replace('T', " ")),
        _ => rfc3339.to_string(),
    }
}

/// What the file decides in a loop, and what its absence means.
fn role(file: &str) -> (&'static str, &'static str) {
    match file {
        POLICY_FILE | POLICY_FILE_ALT => (
            "it decides this loop's checks and commands",
            "this loop runs without its gate and rules",
        ),
        SETTINGS_FILE => (
            "it sets the command this loop runs when it ends",
            "this loop has no notify command from it",
        ),
        _ => (
            "this loop's reviewers follow it",
            "its reviewer follows the built-in instructions",
        ),
    }
}

/// At most this many files named one by one.
const SHOWN: usize = 10;

/// One line per change, for the start's summary. Pure.
pub(crate) fn lines(changes: &[ConfigChange]) -> Vec<String> {
    let mut out: Vec<String> = changes
        .iter()
        .take(SHOWN)
        .map(|c| {
            let what = match c.kind {
                ConfigDiff::Appeared => "appeared",
                ConfigDiff::Changed => "changed",
                ConfigDiff::Vanished => "is gone",
            };
            let since = match &c.since {
                Since::During { started, ended } => format!(
                    "while the last loop ran ({} to {})",
                    when(started),
                    when(ended)
                ),
                Since::Ended(t) => format!("since the last loop ended ({})", when(t)),
                Since::Started(t) => format!("since the last loop started ({})", when(t)),
            };
            let (present, gone) = role(&c.file);
            let check = match c.kind {
                ConfigDiff::Vanished => format!("check you meant to remove it ({gone})"),
                _ => format!("check it is yours before it counts ({present})"),
            };
            format!(
                "⚠️ {} {what} {since}: ralph does not know who wrote it; {check}.",
                c.file
            )
        })
        .collect();
    if changes.len() > SHOWN {
        out.push(format!(
            "⚠️ ... and {} more files of the loop's configuration.",
            changes.len() - SHOWN
        ));
    }
    out
}

/// The digest of each configuration file of the project at `root`.
pub(crate) fn digests(root: &Path) -> Digests {
    let mut out = Digests::new();
    let mut add = |rel: String| {
        let path = root.join(&rel);
        // A link is read through (what ralph reads is its target's text).
        let digest = match std::fs::read(&path) {
            Ok(bytes) => seal::digest(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => format!("unreadable: {}", e.kind()),
        };
        out.insert(rel, digest);
    };
    for file in CONFIG_FILES {
        add(file.to_string());
    }
    let mut review = Vec::new();
    files_under(&root.join(REVIEW_DIR), REVIEW_DIR, 0, &mut review);
    review.into_iter().for_each(&mut add);
    out
}

/// The files below `dir` (named `rel` under the root), a few levels deep.
fn files_under(dir: &Path, rel: &str, depth: u8, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten().take(256) {
        let name = format!("{rel}/{}", entry.file_name().to_string_lossy());
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth < 4 => files_under(&entry.path(), &name, depth + 1, out),
            Ok(t) if t.is_dir() => {}
            _ => out.push(name),
        }
    }
}

/// The record and whether ralph wrote it: `None` when there is none.
fn read(paths: &LoopPaths) -> Option<(ConfigSeen, Seal)> {
    let read = seal::read_sealed(&paths.config_seen);
    let text = read.text?;
    let record = serde_json::from_str(&text).unwrap_or_default();
    // ralph seals every record it writes: one without a seal is not its own.
    let seal = match read.seal {
        Seal::Intact => Seal::Intact,
        Seal::Unsealed | Seal::Broken => Seal::Broken,
    };
    Some((record, seal))
}

fn write(paths: &LoopPaths, record: &ConfigSeen) {
    if let Ok(json) = serde_json::to_vec_pretty(record) {
        // A record that could not be written names nothing next time.
        let _ = seal::write(&paths.config_seen, &json);
    }
}

/// A loop starts (under the loop lock): what changed since the last loop,
/// one line each, and the configuration recorded as this loop reads it.
pub(crate) fn at_start(paths: &LoopPaths, now_rfc3339: &str) -> Vec<String> {
    let now = digests(&paths.root);
    let said = match read(paths) {
        None => Vec::new(),
        Some((_, Seal::Broken)) => vec![forged(&now)],
        Some((record, _)) => lines(&compare(&record, &now)),
    };
    let record = ConfigSeen {
        started: Some(now_rfc3339.to_string()),
        at_start: Some(now),
        ended: None,
        at_end: None,
    };
    write(paths, &record);
    said
}

/// The record itself was written by something other than ralph: nothing
/// can be said of what changed, so every file there is named.
fn forged(now: &Digests) -> String {
    let files: Vec<&str> = now.keys().map(String::as_str).collect();
    let which = if files.is_empty() {
        "there is none now".to_string()
    } else {
        format!("check these are yours: {}", files.join(", "))
    };
    format!(
        "⚠️ ralph's record of this project's loop configuration (in its data folder) was changed by something other than ralph, so it cannot say what changed since the last loop; {which}."
    )
}

/// A loop ends (ended, cancelled; under the loop lock): the configuration
/// as it leaves it, beside what it read at its start.
pub fn at_end(paths: &LoopPaths) {
    let mut record = match read(paths) {
        Some((record, Seal::Intact)) => record,
        // A forged record stays as it is: the next start says so.
        Some(_) => return,
        None => ConfigSeen::default(),
    };
    record.ended = Some(crate::clock::now_rfc3339());
    record.at_end = Some(digests(&paths.root));
    write(paths, &record);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(pairs: &[(&str, &str)]) -> Digests {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const S: &str = "2026-12-04T16:10:00Z";
    const E: &str = "2026-12-04T17:00:00Z";

    fn ended(start: Digests, end: Digests) -> ConfigSeen {
        ConfigSeen {
            started: Some(S.into()),
            at_start: Some(start),
            ended: Some(E.into()),
            at_end: Some(end),
        }
    }

    #[test]
    fn a_file_planted_while_the_loop_ran_is_named_as_such() {
        let planted = d(&[(POLICY_FILE, "x")]);
        let got = compare(&ended(d(&[]), planted.clone()), &planted);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].kind, ConfigDiff::Appeared);
        assert!(matches!(got[0].since, Since::During { .. }));
        let line = &lines(&got)[0];
        assert!(
            line.starts_with("⚠️ .ralph/command-policy appeared while the last loop ran (2026-12-04 16:10 UTC to 2026-12-04 17:00 UTC)"),
            "{line}"
        );
        assert!(line.contains("decides this loop's checks"), "{line}");
        assert!(!line.contains("agent"), "{line}");
    }

    #[test]
    fn a_change_after_the_end_is_named_since_the_end() {
        let rec = ended(d(&[(SETTINGS_FILE, "a")]), d(&[(SETTINGS_FILE, "a")]));
        let got = compare(&rec, &d(&[(SETTINGS_FILE, "b")]));
        assert_eq!(got[0].kind, ConfigDiff::Changed);
        assert_eq!(got[0].since, Since::Ended(E.into()));
        let line = &lines(&got)[0];
        assert!(line.contains("changed since the last loop ended (2026-12-04 17:00 UTC)"));
        let got = compare(&rec, &d(&[]));
        assert_eq!(got[0].kind, ConfigDiff::Vanished);
        assert!(lines(&got)[0].contains("is gone"), "{:?}", lines(&got));
    }

    #[test]
    fn nothing_changed_or_changed_back_says_nothing() {
        let same = d(&[(POLICY_FILE, "a"), (".claude/ralph-review/x.md", "r")]);
        assert!(compare(&ended(same.clone(), same.clone()), &same).is_empty());
        // Changed during the loop, then put back as the loop found it.
        let during = d(&[(POLICY_FILE, "b")]);
        assert!(
            compare(
                &ended(d(&[(POLICY_FILE, "a")]), during),
                &d(&[(POLICY_FILE, "a")])
            )
            .is_empty()
        );
        assert!(lines(&[]).is_empty());
    }

    #[test]
    fn a_loop_that_never_ended_is_compared_with_its_start() {
        let rec = ConfigSeen {
            started: Some(S.into()),
            at_start: Some(d(&[])),
            ..ConfigSeen::default()
        };
        let got = compare(&rec, &d(&[(".claude/ralph-review/acceptance.md", "x")]));
        assert_eq!(got[0].since, Since::Started(S.into()));
        assert!(lines(&got)[0].contains("reviewers follow it"));
    }

    #[test]
    fn the_record_is_sealed_and_a_first_loop_says_nothing() {
        let dir = std::env::temp_dir().join(format!("ralph-config-seen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("proj");
        std::fs::create_dir_all(root.join(".ralph")).unwrap();
        let paths = LoopPaths::in_data_dir(&dir.join("data"), &root);
        std::fs::create_dir_all(&paths.dir).unwrap();
        assert!(at_start(&paths, S).is_empty(), "the first loop ever");
        std::fs::write(root.join(POLICY_FILE), "[gates]\nfull | true\n").unwrap();
        at_end(&paths);
        let said = at_start(&paths, E);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("appeared while the last loop ran"),
            "{said:?}"
        );
        assert!(at_start(&paths, E).is_empty(), "named once");
        // The record rewritten by someone else: said, every file listed.
        std::fs::write(&paths.config_seen, "{}").unwrap();
        let said = at_start(&paths, E);
        assert!(
            said[0].contains("changed by something other than ralph"),
            "{said:?}"
        );
        assert!(said[0].contains(POLICY_FILE), "{said:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
