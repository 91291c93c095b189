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
