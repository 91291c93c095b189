//! A package manager's scripts a check runs: `npm test` runs the `test`
//! script of `package.json` (and `pretest`, `posttest`), so that script is
//! the check as much as `tests/check.sh` is for `sh tests/check.sh`. An
//! agent that rewrote it (`"test": "printf 'Tests: 3 passed, 3 total'"`)
//! passed the check and printed the score it liked. The file itself is
//! not pinned (dependencies and other scripts are the work's): the
//! scripts the checks run are recorded at start, and a check whose script
//! differs is not run (`disk::Guarded::run_check`). Pure.

use serde::{Deserialize, Serialize};

/// The file the scripts live in, at the project's root.
pub(crate) const PACKAGE_JSON: &str = "package.json";

/// One script a check runs, as it was at the loop's start (`None`: there
/// was none, so one added later is a change too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ScriptPin {
    pub name: String,
    pub command: Option<String>,
    /// The check that runs it.
    pub why: String,
}

/// A script that differs from its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScriptChange {
    pub name: String,
    pub was: Option<String>,
    pub now: Option<String>,
    pub why: String,
}

/// The scripts of `package.json` that `command` runs: `npm test` (`t`,
/// `tst`), `npm run X` (`run-script`), `yarn test`, `yarn run X`, `pnpm
/// test`, `pnpm run X`, `bun run X`. Empty when the command runs none.
pub(crate) fn scripts_run(command: &str) -> Vec<String> {
    let commands = super::simple_commands(command);
    // Another folder's package.json (`cd web && npm test`, `npm --prefix
    // web test`, a workspace): not the one at the root, so none is held.
    let elsewhere = commands.iter().any(|words| {
        words.first().is_some_and(|w| w == "cd" || w == "pushd")
            || words.iter().any(|w| {
                [
                    "--prefix",
                    "-C",
                    "--workspace",
                    "-w",
                    "--dir",
                    "--cwd",
                    "--filter",
                    "-F",
                ]
                .iter()
                .any(|o| w == o || w.starts_with(&format!("{o}=")))
            })
    });
    if elsewhere {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for words in commands {
        let mut rest = words
            .iter()
            .map(String::as_str)
            .skip_while(|w| super::is_assignment(w))
            .filter(|w| !w.starts_with('-'));
        let (Some(program), verb) = (rest.next(), rest.next()) else {
            continue;
        };
        let name = match (super::base(program), verb) {
            ("npm" | "pnpm" | "yarn", Some("test" | "t" | "tst")) => Some("test"),
            ("npm", Some("run" | "run-script" | "rum" | "urn"))
            | ("pnpm" | "yarn" | "bun", Some("run")) => rest.next(),
            _ => None,
        };
        let Some(name) = name.filter(|n| !n.contains(['$', '`', '*'])) else {
            continue;
        };
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// A script and npm's `pre` and `post` scripts around it.
fn with_pre_and_post(name: &str) -> [String; 3] {
    [
        format!("pre{name}"),
        name.to_string(),
        format!("post{name}"),
    ]
}

/// The scripts `names` as `package_json` holds them (`None` where it has
/// none, or where it is not JSON).
pub(crate) fn read(package_json: Option<&str>, names: &[String]) -> Vec<(String, Option<String>)> {
    let scripts = package_json
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v.get("scripts").cloned());
    names
        .iter()
        .map(|n| {
            let command = scripts
                .as_ref()
                .and_then(|s| s.get(n))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string);
            (n.clone(), command)
        })
        .collect()
}

/// The pins for `checks`, read from `package_json` as it is now: each
/// script a check runs that exists now, with the `pre` and `post` scripts
/// around it (one added later runs before or after it: a change too), and
/// the scripts those run in turn (`"test": "npm run tests-only"`: the check
/// is `tests-only` as much as `test`). A script that does not exist yet is
/// the work's to write (a loop that sets up the project's tests), so
/// nothing of it is pinned.
pub(crate) fn pins_for(package_json: Option<&str>, checks: &[String]) -> Vec<ScriptPin> {
    let mut out: Vec<ScriptPin> = Vec::new();
    for check in checks {
        let mut asked = scripts_run(check);
        let mut at = 0;
        while let Some(name) = asked.get(at).cloned() {
            at += 1;
            let three = read(package_json, &with_pre_and_post(&name));
            if three[1].1.is_none() {
                continue;
            }
            for (name, command) in three {
                // What this script runs of the others is held too.
                for more in command.as_deref().map(scripts_run).unwrap_or_default() {
                    if !asked.contains(&more) {
                        asked.push(more);
                    }
                }
                if !out.iter().any(|p| p.name == name && p.why == *check) {
                    out.push(ScriptPin {
                        name,
                        command,
                        why: check.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The pins that `package_json` no longer matches.
pub(crate) fn changed(pins: &[ScriptPin], package_json: Option<&str>) -> Vec<ScriptChange> {
    let names: Vec<String> = pins.iter().map(|p| p.name.clone()).collect();
    let now = read(package_json, &names);
    pins.iter()
        .zip(now)
        .filter(|(pin, (_, now))| pin.command != *now)
        .map(|(pin, (_, now))| ScriptChange {
            name: pin.name.clone(),
            was: pin.command.clone(),
            now,
            why: pin.why.clone(),
        })
        .collect()
}

/// The start's line: the scripts held, by the check that runs them
/// (empty when none is).
pub(crate) fn held(pins: &[ScriptPin]) -> String {
    let mut by_check: Vec<(&str, Vec<&str>)> = Vec::new();
    for pin in pins.iter().filter(|p| p.command.is_some()) {
        match by_check.iter_mut().find(|(why, _)| *why == pin.why) {
            Some((_, names)) => names.push(&pin.name),
            None => by_check.push((&pin.why, vec![&pin.name])),
        }
    }
    by_check
        .iter()
        .map(|(why, names)| {
            format!(
                "Scripts: `{why}` runs {} of {PACKAGE_JSON}, held as they are now (the `pre` and `post` scripts around them too): the check is not run while they differ.\n",
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

/// The held scripts as status names them: `test (npm test)`.
pub(crate) fn shown(pins: &[ScriptPin]) -> Vec<String> {
    pins.iter()
        .filter(|p| p.command.is_some())
        .map(|p| format!("{} ({})", p.name, p.why))
        .collect()
}

/// Why `command` was not run: its scripts that changed.
pub(crate) fn not_run(command: &str, changes: &[&ScriptChange]) -> String {
    let shown = |c: &Option<String>| match c {
        Some(text) => format!("`{text}`"),
        None => "none".to_string(),
    };
    let each: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "`{}` (was {}, now {})",
                c.name,
                shown(&c.was),
                shown(&c.now)
            )
        })
        .collect();
    format!(
        "ralph did not run this check: `{command}` runs scripts of {PACKAGE_JSON} that are not what they were at the loop's start: {}. The check is the user's: put the scripts back as they were (the rest of {PACKAGE_JSON} is the work's to change); to check with other scripts, the user cancels the loop and starts it again.",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_a_check_runs_are_read_from_its_words() {
        let t = ["test"];
        assert_eq!(scripts_run("npm test"), t);
        assert_eq!(scripts_run("npm t -- --ci"), t);
        assert_eq!(scripts_run("CI=1 yarn test"), t);
        assert_eq!(scripts_run("pnpm --silent test"), t);
        assert_eq!(
            scripts_run("npm run lint && npm run test:unit"),
            ["lint", "test:unit"]
        );
        assert_eq!(scripts_run("bun run check"), ["check"]);
        for none in [
            "jest --ci",
            "npm install",
            "bun test",
            "cargo test",
            "yarn",
            "npm run",
            "cd web && npm test",
            "npm --prefix web test",
            "npm test --workspace=web",
            "pnpm --filter web test",
        ] {
            assert!(scripts_run(none).is_empty(), "{none}");
        }
    }

    #[test]
    fn a_script_changed_added_or_removed_is_a_change_and_the_rest_of_the_file_is_not() {
        let start =
            r#"{"name": "d", "scripts": {"test": "jest", "build": "tsc"}, "dependencies": {}}"#;
        let pins = pins_for(Some(start), &["npm test".to_string()]);
        assert_eq!(pins.len(), 3);
        assert_eq!(pins[1].command.as_deref(), Some("jest"));
        let deps = r#"{"name": "d", "scripts": {"test": "jest", "build": "tsc -b"}, "dependencies": {"x": "1"}}"#;
        assert!(changed(&pins, Some(deps)).is_empty());
        let faked = r#"{"scripts": {"test": "echo 'Tests: 3 passed, 3 total'"}}"#;
        let c = changed(&pins, Some(faked));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].was.as_deref(), Some("jest"));
        let pre = r#"{"scripts": {"test": "jest", "pretest": "exit 0"}}"#;
        assert_eq!(changed(&pins, Some(pre))[0].name, "pretest");
        assert_eq!(changed(&pins, None).len(), 1);
        assert_eq!(changed(&pins, Some("not json")).len(), 1);
        // No test script at the start, or no package.json: the work's to write.
        let none = r#"{"name": "d", "scripts": {"build": "tsc"}}"#;
        assert!(pins_for(Some(none), &["npm test".to_string()]).is_empty());
        assert!(pins_for(None, &["npm test".to_string()]).is_empty());
        assert_eq!(
            held(&pins),
            "Scripts: `npm test` runs `test` of package.json, held as they are now (the `pre` and `post` scripts around them too): the check is not run while they differ.\n"
        );
        assert_eq!(shown(&pins), ["test (npm test)"]);
        let message = not_run("npm test", &[&c[0]]);
        assert!(message.contains("`test` (was `jest`, now `echo 'Tests: 3 passed, 3 total'`)"));
    }

    #[test]
    fn a_public_projects_test_script_that_runs_others_holds_them_too() {
        // SheetJS: "pretest": "npm run lint", "test": "npm run tests-only".
        let text = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/pins/public/sheetjs-package.json"
        ));
        let pins = pins_for(Some(text), &["npm test".to_string()]);
        let held: Vec<(&str, Option<&str>)> = pins
            .iter()
            .map(|p| (p.name.as_str(), p.command.as_deref()))
            .collect();
        assert_eq!(
            held,
            [
                ("pretest", Some("npm run lint")),
                ("test", Some("npm run tests-only")),
                ("posttest", None),
                ("prelint", None),
                ("lint", Some("make fullint")),
                ("postlint", None),
                ("pretests-only", None),
                ("tests-only", Some("make travis")),
                ("posttests-only", None),
            ]
        );
        // The script `test` hands on to, rewritten: a change of the check.
        let faked = text.replace(
            "\"tests-only\": \"make travis\"",
            "\"tests-only\": \"true\"",
        );
        let c = changed(&pins, Some(&faked));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name, "tests-only");
        // Another script (build) is the work's.
        let built = text.replace("\"build\": \"make\"", "\"build\": \"make all\"");
        assert!(changed(&pins, Some(&built)).is_empty());
    }
}
