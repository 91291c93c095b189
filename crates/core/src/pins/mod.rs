//! Pinned checks: the files a check depends on, fixed at the loop's start.
//!
//! A check's command is recorded at start (`story_checks`, `verify`), but
//! the files it runs are part of the check too: an agent that rewrites
//! `tests/check.sh` to `exit 0` would otherwise pass it. At start ralph
//! pins, for every check, each existing regular file of the project that a
//! word of the command names (`sh tests/check.sh`, `pytest tests/x.py`,
//! `./scripts/verify`, `make -f Makefile.ci`; not folders, not the project
//! root), plus what the user pins (`--pin GLOB`, a PRD's top-level `"pin"`).
//! Before any check runs, a pinned file that differs from its pin is put back
//! (`disk::put_back`) and the agent's version is kept in the loop's folder;
//! the guard refuses writes to pinned files while the loop runs.
//!
//! This module holds the rules (which words name files, the glob matcher,
//! the caps, the manifest's shape); `disk` reads and writes. Pure.

pub(crate) mod disk;
pub(crate) mod scripts;

pub use disk::Guarded;
pub use disk::PutBack;
pub use disk::{before_checks, told};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;

/// At most this many pinned files...
pub(crate) const MAX_FILES: usize = 2000;
/// ...holding at most this many bytes in all.
pub(crate) const MAX_BYTES: u64 = 32 << 20;

/// One pinned file as recorded at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pin {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    pub size: u64,
    /// FNV-1a 64 of the content (for people; comparison is byte by byte).
    pub hash: String,
    /// Unix permission bits, put back with the content.
    #[serde(default)]
    pub mode: u32,
    /// What pinned it: the check's command, or `--pin GLOB`.
    pub why: String,
}

/// The manifest kept in the loop's folder (`pins/manifest.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub files: Vec<Pin>,
    /// The package manager's scripts the checks run (`npm test`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<scripts::ScriptPin>,
}

impl Manifest {
    pub(crate) fn parse(text: &str) -> Manifest {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub(crate) fn render(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Path -> why, as the state's `pins:` line holds them (the guard's copy).
    pub(crate) fn by_path(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .map(|p| (p.path.clone(), p.why.clone()))
            .collect()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.files.iter().map(|p| p.size).sum()
    }
}

/// Why the pins of a new loop cannot be taken (a start error).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PinError {
    #[error(
        "{origin} `{glob}` matches no file in the project: fix the pattern (globs are relative to the project root, e.g. 'tests/**')"
    )]
    NoMatch { origin: &'static str, glob: String },
    #[error(
        "the pinned files are too many: {files} files, {bytes} bytes (at most {MAX_FILES} files and {MAX_BYTES} bytes): pin fewer with narrower --pin globs"
    )]
    TooMany { files: usize, bytes: u64 },
    #[error("cannot keep the pinned file {path}: {why}")]
    Io { path: String, why: String },
}

/// Where a user's glob came from, for the start error.
pub(crate) const FROM_FLAG: &str = "--pin";
pub(crate) const FROM_PRD: &str = "the PRD's \"pin\"";

/// Programs whose operands are code they run (a script, a test file): a
/// check's `sh tests/check.sh`, `pytest tests/test_api.py`.
const RUNNERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "source", ".", "python", "python2", "python3", "node",
    "deno", "bun", "ruby", "perl", "php", "lua", "Rscript", "julia", "tclsh", "pytest", "py.test",
    "jest", "vitest", "mocha", "bats", "phpunit", "rspec",
];
/// Prefixes that only change how the program after them runs.
const WRAPPERS: &[&str] = &["env", "nice", "time", "command", "exec", "nohup", "timeout"];

/// The words of `command` that name code the check runs, which `disk`
/// pins when they are files of the project: each simple command's program
/// when it is a path (`./scripts/verify`), the operands of a program that
/// runs its operands (`sh tests/check.sh`, `python3 -m pytest tests/x.py`,
/// `--config=ci/jest.json`; see `RUNNERS`), and `make -f FILE`. The files
/// a check only reads (`grep -q ok out.txt`, `diff a b`) are the work, not
/// the check: they are not pinned (`--pin` pins them).
pub(crate) fn candidate_words(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for words in simple_commands(command) {
        let mut rest = words
            .iter()
            .map(String::as_str)
            .skip_while(|w| is_assignment(w));
        let mut program = rest.next();
        while let Some(p) = program.filter(|p| WRAPPERS.contains(&base(p))) {
            let skip_duration = p == "timeout";
            // Its options, assignments (`env X=1`) and `timeout`'s duration.
            let duration = |w: &str| skip_duration && w.starts_with(|c: char| c.is_ascii_digit());
            program = rest
                .by_ref()
                .find(|w| !(w.starts_with('-') || is_assignment(w) || duration(w)));
        }
        let Some(program) = program else { continue };
        let operands: Vec<&str> = rest.collect();
        let mut named: Vec<&str> = Vec::new();
        if program.contains('/') {
            named.push(program);
        }
        if RUNNERS.contains(&base(program)) {
            named.extend(operands.iter().map(|w| option_value(w)));
        } else if base(program) == "make" {
            let files = operands
                .windows(2)
                .filter(|p| p[0] == "-f" || p[0] == "--file");
            named.extend(files.map(|p| p[1]));
        }
        for w in named {
            let keep = !w.is_empty() && !w.starts_with('-') && !w.contains(['$', '`', '*', '?']);
            if keep && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
    }
    out
}

fn base(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}

/// `--config=ci/jest.json` -> `ci/jest.json`; any other word as it is.
fn option_value(word: &str) -> &str {
    match word.split_once('=') {
        Some((opt, value)) if opt.starts_with('-') => value,
        _ => word,
    }
}

/// `command` as simple commands, each a list of words, roughly as `sh`
/// reads it (quotes and backslashes; no expansions): `;`, `|`, `&`, `(`,
/// `)` and new lines end a command; the target of a redirection is dropped.
fn simple_commands(command: &str) -> Vec<Vec<String>> {
    let mut all = vec![Vec::new()];
    let mut cur = String::new();
    let mut in_word = false;
    let mut redirect = false;
    let mut chars = command.chars().peekable();
    let end_word =
        |cur: &mut String, in_word: &mut bool, redirect: &mut bool, all: &mut Vec<Vec<String>>| {
            if *in_word && !*redirect {
                all.last_mut()
                    .expect("one command")
                    .push(std::mem::take(cur));
            }
            if *in_word {
                *redirect = false;
            }
            cur.clear();
            *in_word = false;
        };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                cur.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            '<' | '>' => {
                end_word(&mut cur, &mut in_word, &mut redirect, &mut all);
                redirect = true;
                // `2>&1`: a descriptor, not a file.
                if chars.peek() == Some(&'&') {
                    chars.next();
                }
            }
            c if ";|&()\n".contains(c) => {
                end_word(&mut cur, &mut in_word, &mut redirect, &mut all);
                redirect = false;
                all.push(Vec::new());
            }
            c if c.is_whitespace() => end_word(&mut cur, &mut in_word, &mut redirect, &mut all),
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    end_word(&mut cur, &mut in_word, &mut redirect, &mut all);
    all.retain(|c| !c.is_empty());
    all
}

/// Does the `/`-separated relative `path` match `glob`? `*` and `?` stay
/// within one name, `**` is any number of folders (`tests/**` is every
/// file under `tests`), `[abc]` one of the characters.
pub(crate) fn glob_matches(glob: &str, path: &str) -> bool {
    let g: Vec<&str> = glob.trim_start_matches("./").split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    match_parts(&g, &p)
}

fn match_parts(g: &[&str], p: &[&str]) -> bool {
    match (g.first(), p.first()) {
        (None, None) => true,
        (Some(&"**"), _) => {
            // `**` at the end takes at least one name (a file under it).
            if g.len() == 1 {
                return !p.is_empty();
            }
            (0..=p.len()).any(|skip| match_parts(&g[1..], &p[skip..]))
        }
        (Some(gc), Some(pc)) => name_matches(gc, pc) && match_parts(&g[1..], &p[1..]),
        _ => false,
    }
}

/// One name against one glob component (`*`, `?`, `[...]`).
fn name_matches(glob: &str, name: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let n: Vec<char> = name.chars().collect();
    name_from(&g, &n)
}

fn name_from(g: &[char], n: &[char]) -> bool {
    match g.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|i| name_from(&g[1..], &n[i..])),
        Some('?') => !n.is_empty() && name_from(&g[1..], &n[1..]),
        Some('[') => match (g.iter().position(|&c| c == ']'), n.first()) {
            (Some(end), Some(c)) if end > 1 => {
                let set = &g[1..end];
                let (negated, set) = match set.first() {
                    Some('!' | '^') => (true, &set[1..]),
                    _ => (false, set),
                };
                set.contains(c) != negated && name_from(&g[end + 1..], &n[1..])
            }
            _ => n.first() == Some(&'[') && name_from(&g[1..], &n[1..]),
        },
        Some(c) => n.first() == Some(c) && name_from(&g[1..], &n[1..]),
    }
}

/// The folder a glob's matches all lie under: its leading names without a
/// wildcard (`tests/unit/**` -> `tests/unit`; `**/*.sh` -> ``).
pub(crate) fn literal_prefix(glob: &str) -> String {
    let parts: Vec<&str> = glob.trim_start_matches("./").split('/').collect();
    let fixed: Vec<&str> = parts[..parts.len().saturating_sub(1)]
        .iter()
        .take_while(|p| !p.contains(['*', '?', '[']))
        .copied()
        .collect();
    fixed.join("/")
}

/// A PRD's top-level `"pin"`: a list of globs (or one glob as a string).
pub(crate) fn prd_globs(prd_text: &str) -> Vec<String> {
    let text = prd_text.strip_prefix('\u{feff}').unwrap_or(prd_text);
    let Ok(serde_json::Value::Object(top)) = serde_json::from_str(text) else {
        return Vec::new();
    };
    match top.get("pin") {
        Some(serde_json::Value::String(g)) => vec![g.clone()],
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|g| !g.trim().is_empty())
    .collect()
}

/// Shells a script's `#!` line may name.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// Whether a file a check runs, named `name` and starting with `head`, is a
/// shell script with Windows line endings (CRLF): `sh` takes each line's
/// `\r` as part of its last word (`grep -q one one.txt\r` looks for a
/// file that is not there), so the check fails whatever the work. A shell
/// script is one whose `#!` line names a shell, or, without one, whose name
/// has no extension or ends in `.sh` or `.bash`; Python, Node and the like
/// read CRLF as they read LF.
pub(crate) fn sh_cannot_run(name: &str, head: &[u8]) -> bool {
    if !head.windows(2).any(|w| w == b"\r\n") {
        return false;
    }
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        return line
            .split_whitespace()
            .take(2)
            .any(|w| SHELLS.contains(&base(w.trim_end_matches('\r'))));
    }
    let file = base(name);
    match file.rsplit_once('.') {
        None => true,
        Some((stem, ext)) => stem.is_empty() || ext == "sh" || ext == "bash",
    }
}

/// FNV-1a 64 of `bytes`, as the manifest writes it.
pub(crate) fn fnv1a(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("fnv1a:{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_words_may_name_files() {
        let words = |c: &str| candidate_words(c);
        assert_eq!(words("sh tests/check.sh"), ["tests/check.sh"]);
        assert_eq!(words("make -f Makefile.ci check"), ["Makefile.ci"]);
        assert_eq!(
            words("pytest -q 'tests/test api.py' && ./scripts/verify >out.log 2>&1"),
            ["tests/test api.py", "./scripts/verify"]
        );
        assert_eq!(
            words("FOO=1 timeout 60 node --config=ci/jest.json run.js $X *.js"),
            ["ci/jest.json", "run.js"]
        );
        assert_eq!(
            words("python3 -m pytest tests/test_x.py"),
            ["pytest", "tests/test_x.py"]
        );
        // What a check only reads is the work, not the check.
        assert!(words("grep -q one one.txt").is_empty());
        assert!(words("test -f out.txt && diff expected.txt out.txt").is_empty());
        assert!(words("cargo test").is_empty());
        assert_eq!(words("cd sub; bash ../ci.sh | tee log"), ["../ci.sh"]);
    }

    #[test]
    fn a_shell_script_with_crlf_line_endings_is_one_sh_cannot_run() {
        let crlf = b"grep -q one one.txt\r\n";
        assert!(sh_cannot_run("check.sh", crlf));
        assert!(sh_cannot_run("ci/verify", crlf));
        assert!(sh_cannot_run("x.bash", crlf));
        assert!(sh_cannot_run("t.py", b"#!/usr/bin/env bash\r\nexit 0\r\n"));
        assert!(sh_cannot_run("run", b"#!/bin/sh\r\nexit 0\r\n"));
        // LF, or a language that reads CRLF as LF.
        assert!(!sh_cannot_run("check.sh", b"grep -q one one.txt\n"));
        assert!(!sh_cannot_run(
            "test_a.py",
            b"import sys\r\nsys.exit(0)\r\n"
        ));
        assert!(!sh_cannot_run(
            "run",
            b"#!/usr/bin/env python3\r\nprint(1)\r\n"
        ));
        assert!(!sh_cannot_run("jest.config.js", b"module.exports = {}\r\n"));
    }

    #[test]
    fn globs() {
        assert!(glob_matches("tests/**", "tests/check.sh"));
        assert!(glob_matches("tests/**", "tests/a/b/c.py"));
        assert!(!glob_matches("tests/**", "tests"));
        assert!(!glob_matches("tests/**", "src/tests/x"));
        assert!(glob_matches("**/*.sh", "a.sh"));
        assert!(glob_matches("**/*.sh", "x/y/a.sh"));
        assert!(glob_matches("tests/*.py", "tests/test_a.py"));
        assert!(!glob_matches("tests/*.py", "tests/sub/test_a.py"));
        assert!(glob_matches("./Makefile", "Makefile"));
        assert!(glob_matches("t?st/[ab].txt", "test/b.txt"));
        assert!(!glob_matches("t?st/[!ab].txt", "test/b.txt"));
        assert_eq!(literal_prefix("tests/unit/**"), "tests/unit");
        assert_eq!(literal_prefix("**/*.sh"), "");
        assert_eq!(literal_prefix("Makefile"), "");
    }

    #[test]
    fn a_prd_pins_globs() {
        assert_eq!(
            prd_globs(r#"{"pin":["tests/**","Makefile"],"stories":[]}"#),
            ["tests/**", "Makefile"]
        );
        assert_eq!(prd_globs(r#"{"pin":"ci/*.sh"}"#), ["ci/*.sh"]);
        assert!(prd_globs(r#"{"stories":[]}"#).is_empty());
        assert!(prd_globs("not json").is_empty());
    }
}
