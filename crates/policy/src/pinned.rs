//! The loop's files, its configuration and pinned checks, as the guard words
//! their refusals: the configuration (`.claude/ralph.toml`, the command policy,
//! the reviewers' folder) is fixed at a loop's start, and a pinned file is
//! part of a check (see `ralph_core::pins`). Pure.

use crate::context::END_LOOP_HINT;

/// The project files that hold the loop's configuration (`.claude/ralph.toml`,
/// the command policy, the reviewers' folder): fixed at the loop's start.
pub(crate) const CONFIG_NAMES: [&str; 4] = [
    ".claude/ralph.toml",
    ".ralph/command-policy",
    ".claude/ralph-policy",
    ".claude/ralph-review",
];

pub(crate) fn is_config(display: &str) -> bool {
    CONFIG_NAMES
        .iter()
        .any(|c| display == *c || display.starts_with(&format!("{c}/")))
}

/// A write to one of the loop's files (or its configuration), refused.
pub(crate) fn loop_file_reason(display: &str, what: &str) -> String {
    if is_config(display) {
        return config_reason(display, what);
    }
    format!(
        "ralph-guard: {what} {display}, which belongs to the running Ralph loop; the agent may read it but \
         not write, move or delete it. {END_LOOP_HINT}"
    )
}

/// A write to the loop's configuration, refused.
pub(crate) fn config_reason(display: &str, what: &str) -> String {
    format!(
        "ralph-guard: {what} {display}, which is the running Ralph loop's configuration, fixed at its start; \
         the agent may read it but not write, move or delete it (the user edits it between loops). {END_LOOP_HINT}"
    )
}

/// The refusal of a write to a pinned file, naming the pin.
pub(crate) fn pinned_reason(path: &str, why: &str) -> String {
    let what = if why.starts_with("--pin") || why.starts_with("prd pin") {
        format!("pinned by the user ({why})")
    } else {
        format!("part of a check: `{why}`")
    };
    format!(
        "ralph-guard: {path} is pinned by this loop (it is {what}); ralph judges the work with the version from the \
         loop's start. Change the code under test, not the check."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_and_pins_are_named() {
        assert!(is_config(".claude/ralph.toml") && is_config(".claude/ralph-review/x.md"));
        assert!(!is_config(".claude/settings.json") && !is_config(".claude/ralph-reviewer"));
        let r = pinned_reason("tests/check.sh", "sh tests/check.sh");
        assert!(r.contains(
            "tests/check.sh is pinned by this loop (it is part of a check: `sh tests/check.sh`)"
        ));
        assert!(
            pinned_reason("a.py", "--pin tests/**").contains("pinned by the user (--pin tests/**)")
        );
    }
}
