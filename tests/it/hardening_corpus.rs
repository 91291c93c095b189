//! Replays the fuzz corpora as ordinary tests: every file under
//! `tests/corpus/<target>/` goes through the same property function as the
//! fuzz target `<target>` (fuzz/src/props.rs). Seeds are `seed-*`; inputs
//! that once broke a property are `fixed-*`, named after what they showed
//! (see docs/reliability.md).

#[path = "../../fuzz/src/props.rs"]
#[allow(dead_code)]
mod props;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(target)
}

fn files(target: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(corpus_dir(target))
        .unwrap_or_else(|e| panic!("tests/corpus/{target}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .collect();
    out.sort();
    out
}

/// Run every file through the target's property; report all failures at once.
fn replay(target: &str, paths: &[PathBuf]) -> Vec<String> {
    let prop = props::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no property for target {target}"));
    let mut failures = Vec::new();
    for p in paths {
        let data = std::fs::read(p).expect("corpus file");
        if catch_unwind(AssertUnwindSafe(|| prop(&data))).is_err() {
            failures.push(p.display().to_string());
        }
    }
    failures
}

fn check(target: &str) {
    let paths = files(target);
    assert!(!paths.is_empty(), "tests/corpus/{target} has no inputs");
    let failures = replay(target, &paths);
    assert!(
        failures.is_empty(),
        "{} of {} corpus inputs fail the `{target}` properties: {failures:#?}",
        failures.len(),
        paths.len()
    );
}

#[test]
fn corpus_hook_input() {
    check("hook_input");
}

#[test]
fn corpus_state() {
    check("state");
}

#[test]
fn corpus_prd() {
    check("prd");
}

#[test]
fn corpus_args() {
    check("args");
}

#[test]
fn corpus_transcript() {
    check("transcript");
}

#[test]
fn corpus_frontmatter() {
    check("frontmatter");
}

#[test]
fn corpus_policy() {
    check("policy");
}

#[test]
fn corpus_canon() {
    check("canon");
}

#[test]
fn every_target_has_a_corpus_test() {
    let dirs: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus"))
            .expect("tests/corpus")
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
    for (name, _) in props::TARGETS {
        assert!(dirs.iter().any(|d| d == name), "no tests/corpus/{name}");
    }
    assert_eq!(dirs.len(), props::TARGETS.len(), "{dirs:?}");
}

/// The cut checker used by the `args` property, checked on known answers.
#[test]
fn cut_checker_known_answers() {
    assert!(props::is_cut_of(
        b"fix it now",
        b"--max-iterations=0 fix it --x=1 now"
    ));
    assert!(props::is_cut_of(b"a b", b"a b"));
    assert!(props::is_cut_of(b"", b"anything"));
    assert!(!props::is_cut_of(b"b a", b"a b"));
    assert!(!props::is_cut_of(b"ab", b"a b"));
    assert!(!props::is_cut_of(b"x", b"a b"));
}
