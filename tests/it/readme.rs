//! The README is the user's manual (issue 26): short, with the install on
//! its first screen, and the fresh clone's two commands at its end, which CI
//! runs (`.ci/run` runs "the README's test command").

use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_readme_stays_short() {
    let size = read("README.md").len();
    assert!(
        size <= 15 * 1024,
        "README.md is {size} bytes: move detail into docs/"
    );
}

#[test]
fn the_install_comes_before_the_loop_and_the_clone_commands_last() {
    let readme = read("README.md");
    let at = |what: &str| {
        readme
            .find(what)
            .unwrap_or_else(|| panic!("README.md does not say {what:?}"))
    };
    let install = at("claude plugin install ralph@ralph");
    assert!(at("claude plugin marketplace add ralph-loop/ralph") < install);
    assert!(install < at("/ralph-status"));
    assert!(at("/ralph-status") < at("/cancel-ralph"));
    let demo = readme.rfind("scripts/demo ").expect("scripts/demo");
    let test = readme.rfind("scripts/test ").expect("scripts/test");
    assert!(at("/cancel-ralph") < demo && demo < test);
}

#[test]
fn ci_runs_the_readmes_test_command() {
    let ci = read(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/test"),
        ".ci/run must run scripts/test, the README's test command"
    );
    assert!(read("CONTRIBUTING.md").contains("scripts/test"));
}

/// A newcomer sees how to install, start, see and stop a loop on the first
/// screen (issue 34: `/cancel-ralph` came after 80 lines).
#[test]
fn install_start_see_and_stop_are_on_the_first_screen() {
    let readme = read("README.md");
    let first_screen: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    for what in [
        "claude plugin install ralph@ralph",
        "/ralph-loop ",
        "/ralph-status",
        "/cancel-ralph",
    ] {
        assert!(
            first_screen.contains(what),
            "README.md's first 30 lines do not show {what:?}"
        );
    }
}

/// The demo shows the commands the README gives, not the hooks' binary.
#[test]
fn the_demo_shows_the_commands_a_user_types() {
    let demo = read("scripts/demo");
    let shown: Vec<&str> = demo
        .lines()
        .filter(|l| l.trim_start().starts_with("say \"==>"))
        .collect();
    assert!(
        shown.iter().any(|l| l.contains("ralph status")),
        "{shown:?}"
    );
    for line in &shown {
        assert!(!line.contains("ralph-setup"), "the demo shows {line}");
    }
    assert!(demo.contains("\"$BIN_DIR/ralph\" status"));
}
