//! A check command as ralph runs it: which test runner it runs, known with
//! certainty (the program of a simple command, read by `shell_split`), and
//! the flags that make that runner also write its structured report into
//! ralph's folder, where the agent's sandbox cannot write (`reports` in the
//! loop's folder). The runner's own words still print as the user's command
//! prints them; only `go test` changes its output (`-json`: its events, read
//! back into words for the model). A command ralph is not sure of (`make
//! test`, `npm test`, a script, a pipe) runs as written, with
//! `PYTEST_ADDOPTS` asking any pytest inside it for a report (read only
//! where the printed summary agrees: a script may run pytest twice).
//! Pure.

use super::Runner;
use crate::shell_split::{self, Token};
use std::path::{Path, PathBuf};

/// How a report is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReportFormat {
    /// JUnit XML (pytest, node, PHPUnit, CTest, nextest).
    Junit,
    /// Jest's `--json` (Vitest's json reporter writes the same shape).
    JestJson,
    RspecJson,
    /// `go test -json`: the events on the command's own output.
    GoEvents,
}

/// A check command as ralph runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    pub command: String,
    /// Variables set for it (`PYTEST_ADDOPTS`).
    pub env: Vec<(String, String)>,
    /// The runner it runs, where ralph is sure of it.
    pub runner: Option<Runner>,
    /// How to read its report and where it is written (`GoEvents`: the
    /// output itself); `None`: its words alone.
    pub report: Option<(ReportFormat, PathBuf)>,
    /// Files ralph writes before it runs (nextest's tool configuration).
    pub files: Vec<(PathBuf, String)>,
    /// The report is pytest's from somewhere inside the command.
    pub indirect: bool,
}

/// The placeholder [`shown`] gives for the report's path.
const SHOWN_REPORT: &str = "RALPH_REPORT";

/// `command` as ralph runs it, its report at `stem` (plus the format's
/// extension); `addopts`: `PYTEST_ADDOPTS` as the environment has it.
pub(crate) fn launch(command: &str, stem: &Path, addopts: Option<&str>) -> Launch {
    let plain = Launch {
        command: command.to_string(),
        env: Vec::new(),
        runner: None,
        report: None,
        files: Vec::new(),
        indirect: false,
    };
    let Some(found) = recognise(command) else {
        return pytest_inside(plain, stem, addopts);
    };
    let file = |ext: &str| PathBuf::from(format!("{}.{ext}", stem.display()));
    let Some((format, path, flags, files)) = flags_for(&found, &file) else {
        return Launch {
            runner: Some(found.runner),
            ..plain
        };
    };
    let added: Vec<String> = flags.iter().map(|f| shell_split::quote(f)).collect();
    Launch {
        command: format!(
            "{} {}{}",
            &command[..found.after],
            added.join(" "),
            &command[found.after..]
        ),
        runner: Some(found.runner),
        report: Some((format, path)),
        files,
        ..plain
    }
}

/// The command as it will run, its report's path a placeholder: what the
/// loop's start message shows (the same as written when ralph adds nothing).
pub fn shown(command: &str) -> String {
    let l = launch(command, Path::new(SHOWN_REPORT), None);
    let env: Vec<String> = l
        .env
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_split::quote(v)))
        .collect();
    let shown = if env.is_empty() {
        l.command
    } else {
        format!("{} {}", env.join(" "), l.command)
    };
    shown.replace(SHOWN_REPORT, "<ralph's report>")
}

/// A command ralph does not know: any pytest it runs writes a report too.
fn pytest_inside(plain: Launch, stem: &Path, addopts: Option<&str>) -> Launch {
    let existing = addopts.unwrap_or_default();
    if existing.contains("junitxml") || existing.contains("junit-xml") {
        return plain;
    }
    let path = PathBuf::from(format!("{}.xml", stem.display()));
    let ours = format!(
        "--junitxml={} -o junit_family=xunit1",
        shell_split::quote(&path.display().to_string())
    );
    let value = if existing.trim().is_empty() {
        ours
    } else {
        format!("{existing} {ours}")
    };
    Launch {
        env: vec![("PYTEST_ADDOPTS".into(), value)],
        report: Some((ReportFormat::Junit, path)),
        indirect: true,
        ..plain
    }
}

/// The runner a command runs, and where its own options start.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    runner: Runner,
    /// The byte offset after the runner's program (and subcommand): ralph's
    /// flags go there.
    after: usize,
    /// The words after it (the user's own options and arguments).
    args: Vec<String>,
}

/// The runner of a simple command (after `cd DIR &&`, `VAR=v` assignments
/// and the launchers people put before a runner), when it is one.
fn recognise(command: &str) -> Option<Found> {
    let tokens = shell_split::tokens(command)?;
    let mut rest: &[Token] = &tokens;
    if let [
        Token::Word { text, .. },
        Token::Word { .. },
        Token::And,
        after @ ..,
    ] = rest
        && text == "cd"
    {
        rest = after;
    }
    let mut words: Vec<(&str, usize)> = Vec::new();
    for t in rest {
        match t {
            Token::Word { text, end } => words.push((text, *end)),
            Token::And => return None,
        }
    }
    let mut i = 0;
    while words.get(i).is_some_and(|(w, _)| is_assignment(w)) {
        i += 1;
    }
    i += launcher_len(&words[i..]);
    let (program, end) = *words.get(i)?;
    let name = program.rsplit('/').next().unwrap_or(program);
    let next = words.get(i + 1).map(|(w, _)| *w);
    let (runner, used) = match (name, next) {
        ("pytest" | "py.test", _) => (Runner::Pytest, 1),
        ("jest", _) => (Runner::Jest, 1),
        ("vitest", Some("run")) => (Runner::Vitest, 2),
        ("vitest", _) => (Runner::Vitest, 1),
        ("rspec", _) => (Runner::Rspec, 1),
        ("phpunit", _) => (Runner::Phpunit, 1),
        ("ctest", _) => (Runner::Ctest, 1),
        ("mocha", _) => (Runner::Mocha, 1),
        ("go", Some("test")) => (Runner::GoTest, 2),
        ("cargo", Some("test")) => (Runner::Cargo, 2),
        ("cargo", Some("nextest")) if words.get(i + 2).is_some_and(|(w, _)| *w == "run") => {
            (Runner::Nextest, 3)
        }
        ("node", _) if words[i + 1..].iter().any(|(w, _)| *w == "--test") => {
            let at = words[i + 1..].iter().position(|(w, _)| *w == "--test")?;
            (Runner::NodeTest, at + 2)
        }
        _ => return None,
    };
    let after = words.get(i + used - 1).map_or(end, |(_, e)| *e);
    Some(Found {
        runner,
        after,
        args: words[i + used..]
            .iter()
            .map(|(w, _)| w.to_string())
            .collect(),
    })
}

/// `NAME=value`.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// How many words a launcher takes before the runner: `npx`, `pnpm exec`,
/// `yarn`, `bunx`, `bundle exec`, `python -m`, `uv run`, `poetry run`.
fn launcher_len(words: &[(&str, usize)]) -> usize {
    let w = |i: usize| words.get(i).map(|(w, _)| *w);
    match (w(0), w(1)) {
        (Some("npx"), Some("--yes" | "-y" | "--no-install"))
        | (Some("pnpm"), Some("exec"))
        | (Some("bundle"), Some("exec"))
        | (Some("uv" | "poetry"), Some("run")) => 2,
        (Some(p), Some("-m")) if p.starts_with("python") => 2,
        (Some("npx" | "bunx" | "yarn" | "pnpm"), _) => 1,
        _ => 0,
    }
}

/// A report flag, its written form and where it goes.
type Flags = (ReportFormat, PathBuf, Vec<String>, Vec<(PathBuf, String)>);

/// The flags that make `found`'s runner write a report, unless the user's
/// command already asks for one of its own (or for an output that ours would
/// change): then it runs as written.
fn flags_for(found: &Found, file: &dyn Fn(&str) -> PathBuf) -> Option<Flags> {
    let own = own_report_options(found.runner);
    let mine = |a: &String| {
        own.iter()
            .any(|p| a == p || a.starts_with(&format!("{p}=")))
    };
    if found.args.iter().any(mine) {
        return None;
    }
    let path = |ext: &str| (file(ext), file(ext).display().to_string());
    let (format, (report, _), flags, files) = match found.runner {
        Runner::Pytest => {
            let (p, at) = path("xml");
            let flags = vec![
                format!("--junitxml={at}"),
                "-o".into(),
                "junit_family=xunit1".into(),
            ];
            (ReportFormat::Junit, (p, at), flags, Vec::new())
        }
        Runner::Jest => {
            let (p, at) = path("json");
            let flags = vec!["--json".into(), format!("--outputFile={at}")];
            (ReportFormat::JestJson, (p, at), flags, Vec::new())
        }
        Runner::Vitest => {
            let (p, at) = path("json");
            let flags = ["--reporter=default", "--reporter=json"]
                .map(String::from)
                .into_iter()
                .chain([format!("--outputFile.json={at}")])
                .collect();
            (ReportFormat::JestJson, (p, at), flags, Vec::new())
        }
        Runner::NodeTest => {
            let (p, at) = path("xml");
            let flags = vec![
                "--test-reporter=spec".into(),
                "--test-reporter-destination=stdout".into(),
                "--test-reporter=junit".into(),
                format!("--test-reporter-destination={at}"),
            ];
            (ReportFormat::Junit, (p, at), flags, Vec::new())
        }
        Runner::Rspec => {
            let (p, at) = path("json");
            let flags = ["--format", "progress", "--format", "json", "--out"]
                .map(String::from)
                .into_iter()
                .chain([at.clone()])
                .collect();
            (ReportFormat::RspecJson, (p, at), flags, Vec::new())
        }
        Runner::Phpunit | Runner::Ctest => {
            let (p, at) = path("xml");
            let flag = if found.runner == Runner::Ctest {
                "--output-junit"
            } else {
                "--log-junit"
            };
            let flags = vec![flag.into(), at.clone()];
            (ReportFormat::Junit, (p, at), flags, Vec::new())
        }
        Runner::GoTest => (
            ReportFormat::GoEvents,
            (PathBuf::new(), String::new()),
            vec!["-json".into()],
            Vec::new(),
        ),
        Runner::Nextest => return Some(nextest_flags(file)),
        _ => return None,
    };
    Some((format, report, flags, files))
}

/// The options with which the user's command asks the runner for a report
/// (or an output) of its own: ralph then adds nothing.
fn own_report_options(runner: Runner) -> &'static [&'static str] {
    match runner {
        Runner::Pytest => &["--junitxml", "--junit-xml"],
        Runner::Jest => &[
            "--json",
            "--outputFile",
            "--watch",
            "--watchAll",
            "--listTests",
        ],
        Runner::Vitest => &["--reporter", "--outputFile", "--watch"],
        Runner::NodeTest => &["--test-reporter", "--test-reporter-destination"],
        Runner::Rspec => &["-f", "--format", "-o", "--out"],
        Runner::Phpunit => &["--log-junit"],
        Runner::Ctest => &["--output-junit"],
        Runner::GoTest => &["-json", "--json"],
        Runner::Nextest => &["--tool-config-file"],
        _ => &[],
    }
}

/// cargo-nextest writes JUnit where a configuration says: ralph hands it a
/// tool configuration of its own (`--tool-config-file`), which the user's
/// configuration still overrides (then there is no report, and its words
/// are read), so nothing of the user's is written.
fn nextest_flags(file: &dyn Fn(&str) -> PathBuf) -> Flags {
    let (report, config) = (file("xml"), file("toml"));
    let at = report.display().to_string();
    let toml = format!(
        "# Written by ralph for one check: where nextest writes its JUnit report.\n[profile.default.junit]\npath = \"{}\"\n",
        at.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let flags = vec![
        "--tool-config-file".into(),
        format!("ralph:{}", config.display()),
    ];
    (ReportFormat::Junit, report, flags, vec![(config, toml)])
}

#[cfg(test)]
#[path = "launch_tests.rs"]
mod tests;
