//! Which of git's configuration keys make git run a program
//! (`core.fsmonitor`, `core.hooksPath`, a `filter.*` driver, a `!` alias,
//! ...), as a data table of git's keys, and the ones a config file's text
//! sets. One home for the guard (which refuses the agent's writes of them)
//! and the loop (which puts back any that change during it: `git_watch`).
//! Pure.

/// Whether setting `key` (as `git config` takes it: `section.name` or
/// `section.subsection.name`; `NAME.*` for a whole section) makes git run
/// a program. A data table of git's keys, not of shell spellings.
pub fn runs_program(key: &str, value: Option<&str>) -> bool {
    let lower = key.to_ascii_lowercase();
    let Some((section, rest)) = lower.split_once('.') else {
        return false;
    };
    let (has_sub, name) = match rest.rsplit_once('.') {
        Some((_, name)) => (true, name),
        None => (false, rest),
    };
    // `!` runs a shell: an alias or a submodule's update command.
    let bang = value.is_none_or(|v| v.trim_start().starts_with('!'));
    if name == "*" {
        return PROGRAM_SECTIONS.contains(&section);
    }
    let key = (section, has_sub, name);
    let runs = matches!(
        key,
        (
            "core",
            false,
            "fsmonitor" | "hookspath" | "pager" | "sshcommand" | "editor" | "askpass" | "gitproxy"
                | "alternaterefscommand"
        ) | ("sequence", false, "editor")
            | ("gpg", _, "program" | "defaultkeycommand")
            | ("credential", _, "helper")
            | ("diff", false, "external")
            | ("diff", true, "textconv" | "command")
            | ("difftool" | "mergetool", true, "cmd")
            | ("merge", true, "driver")
            | ("filter", true, _)
            | ("pager", _, _)
            | ("include", false, "path")
            | ("includeif", true, "path")
            | ("uploadpack", false, "packobjectshook")
            | ("remote", true, "uploadpack" | "receivepack")
            | ("interactive", false, "difffilter")
            | ("web", false, "browser")
            | ("browser" | "man", true, "cmd" | "path")
            | ("sendemail", _, "smtpserver")
            // `protocol.ext.allow` lets a remote URL be a command.
            | ("protocol", _, "allow")
    );
    runs || (bang && matches!(key, ("alias", _, _) | ("submodule", true, "update")))
}

/// Sections that hold such keys: a section renamed onto one of them.
const PROGRAM_SECTIONS: &[&str] = &[
    "core",
    "sequence",
    "gpg",
    "credential",
    "diff",
    "difftool",
    "mergetool",
    "merge",
    "filter",
    "pager",
    "include",
    "includeif",
    "uploadpack",
    "remote",
    "interactive",
    "web",
    "browser",
    "man",
    "sendemail",
    "protocol",
    "alias",
    "submodule",
];

/// The program keys a config file's text sets, with their values: its
/// `[section]`, `[section "sub"]` and `[section.sub]` headers, `key = value`
/// lines and bare `key` lines (true), comments dropped.
pub fn program_keys(text: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let body = if let Some(head) = line.strip_prefix('[') {
            let Some((head, after)) = head.split_once(']') else {
                continue;
            };
            section = match head.split_once(char::is_whitespace) {
                Some((s, sub)) => format!("{}.{}", s, sub.trim().trim_matches('"')),
                None => head.to_string(),
            };
            // `[core] fsmonitor = x` on one line.
            after.trim()
        } else {
            line
        };
        if body.is_empty() || body.starts_with(['#', ';']) {
            continue;
        }
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.trim(), v.trim().trim_matches('"')),
            None => (body, "true"),
        };
        let key = format!("{section}.{name}");
        if runs_program(&key, Some(value)) {
            out.push((key, value.to_string()));
        }
    }
    out
}
