use super::*;

fn run(command: &str) -> String {
    shown(command)
}

#[test]
fn a_runner_known_for_certain_writes_its_report_too() {
    assert_eq!(
        run("pytest -q"),
        "pytest --junitxml=<ralph's report>.xml -o junit_family=xunit1 -q"
    );
    assert_eq!(
        run("cd app && npx jest --ci"),
        "cd app && npx jest --json --outputFile=<ralph's report>.json --ci"
    );
    assert_eq!(run("go test ./..."), "go test -json ./...");
    assert_eq!(
        run("CI=1 uv run pytest"),
        "CI=1 uv run pytest --junitxml=<ralph's report>.xml -o junit_family=xunit1"
    );
    assert_eq!(
        run("bundle exec rspec"),
        "bundle exec rspec --format progress --format json --out <ralph's report>.json"
    );
    assert_eq!(
        run("vendor/bin/phpunit"),
        "vendor/bin/phpunit --log-junit <ralph's report>.xml"
    );
    assert_eq!(
        run("ctest --test-dir build"),
        "ctest --output-junit <ralph's report>.xml --test-dir build"
    );
    assert_eq!(
        run("npx vitest run"),
        "npx vitest run --reporter=default --reporter=json --outputFile.json=<ralph's report>.json"
    );
    assert!(run("node --test").contains("--test-reporter=junit"));
    assert!(run("cargo nextest run").starts_with("cargo nextest run --tool-config-file"));
    // No report of its own: as written.
    assert_eq!(run("cargo test"), "cargo test");
    assert_eq!(run("npx mocha"), "npx mocha");
    // The user's own report flags: as written.
    assert_eq!(
        run("pytest --junitxml=out.xml"),
        "pytest --junitxml=out.xml"
    );
    assert_eq!(run("go test -json ./..."), "go test -json ./...");
}

#[test]
fn a_command_ralph_is_not_sure_of_asks_any_pytest_inside_it() {
    for command in [
        "make test",
        "npm test",
        "./run-tests.sh",
        "pytest | tee log",
        "pytest && ls",
        "FOO=$X pytest",
    ] {
        let l = launch(command, Path::new("/r/c"), Some("-x"));
        assert_eq!(l.command, command);
        assert!(l.indirect, "{command}");
        assert_eq!(
            l.env,
            [(
                "PYTEST_ADDOPTS".to_string(),
                "-x --junitxml=/r/c.xml -o junit_family=xunit1".to_string()
            )]
        );
    }
    let l = launch("make test", Path::new("/r/c"), Some("--junitxml=mine.xml"));
    assert!(
        l.env.is_empty() && l.report.is_none(),
        "the user's own report stays theirs"
    );
}
