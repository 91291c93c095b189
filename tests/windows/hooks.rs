//! The hooks and the user's commands with Windows paths: a loop started by
//! the prompt hook, fed and ended by the Stop, read and cancelled from the
//! terminal; CRLF in a transcript and a PRD; two Stops at once.

use crate::support::{SESSION, WinProject, feed, goes_on, parse};
use std::process::Output;

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn a_loop_starts_is_fed_and_completes_on_its_promise() {
    let p = WinProject::new("loop");
    let started =
        p.prompt("/ralph-loop Fix the parser. --completion-promise DONE --max-iterations 5");
    let state = p
        .state()
        .unwrap_or_else(|| panic!("no loop started: {started:?}"));
    assert!(state.contains("iteration: 1\n"), "{state}");
    assert!(
        state.contains(&format!("session_id: \"{SESSION}\"")),
        "{state}"
    );
    assert!(p.mirror().is_some(), "the project's copy of the state");
    let out = p.stop("Working on it.");
    assert!(goes_on(out.as_ref()), "{out:?}");
    let f = feed(out.as_ref());
    assert!(
        f.contains("Fix the parser.") && f.contains("iteration 2/5"),
        "{f}"
    );
    assert!(p.state().unwrap().contains("iteration: 2\n"));
    let mirror = p.mirror().expect("the project's copy");
    assert!(
        mirror.contains("iteration: 2\n"),
        "the copy follows: {mirror}"
    );
    let out = p.stop("All fixed. <promise>DONE</promise>");
    assert!(!goes_on(out.as_ref()), "{out:?}");
    assert!(feed(out.as_ref()).contains("complete"), "{out:?}");
    assert!(p.state().is_none(), "the loop is over");
    // Ralph's folder holds no temp file left by a replace.
    let leftovers: Vec<String> = walk(&p.data())
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn the_cap_ends_the_loop_after_its_iterations() {
    let p = WinProject::new("cap");
    p.prompt("/ralph-loop Task. --max-iterations 2");
    assert!(goes_on(p.stop("one").as_ref()));
    let out = p.stop("two");
    assert!(!goes_on(out.as_ref()), "{out:?}");
    assert!(feed(out.as_ref()).contains("iteration cap (2)"), "{out:?}");
}

#[test]
fn status_and_cancel_from_the_users_terminal() {
    let p = WinProject::new("cancel");
    p.prompt("/ralph-loop Task. --max-iterations 9");
    let status = p.run("ralph", &["status"], "");
    assert!(status.status.success(), "{}", text(&status));
    assert!(text(&status).contains("1/9"), "{}", text(&status));
    let setup_status = p.run("ralph-setup", &["status"], "");
    assert!(
        text(&setup_status).contains("1/9"),
        "{}",
        text(&setup_status)
    );
    let cancel = p.run("ralph", &["cancel"], "");
    assert!(cancel.status.success(), "{}", text(&cancel));
    assert!(p.state().is_none(), "cancelled: {}", text(&cancel));
    assert_eq!(
        parse(&p.run("ralph-stop-hook", &[], &p.stop_input("x").to_string())),
        None
    );
}

#[test]
fn a_transcript_with_crlf_lines_is_read() {
    let p = WinProject::new("crlf");
    p.prompt("/ralph-loop Task. --completion-promise DONE --max-iterations 5");
    p.client_writes_turn("Done. <promise>DONE</promise>", "\r\n");
    // The hook input carries no words: the promise is read from the file.
    let mut input = p.stop_input("");
    input
        .as_object_mut()
        .unwrap()
        .remove("last_assistant_message");
    let out = parse(&p.run("ralph-stop-hook", &[], &input.to_string()));
    assert!(feed(out.as_ref()).contains("complete"), "{out:?}");
}

#[test]
fn a_prd_written_with_crlf_is_worked_story_by_story() {
    let p = WinProject::new("prd");
    let prd = "{\r\n  \"project\": \"p\",\r\n  \"userStories\": [\r\n    {\"id\": \"US-1\", \"title\": \"Schema\", \"priority\": 1, \"passes\": false},\r\n    {\"id\": \"US-2\", \"title\": \"API\", \"priority\": 2, \"passes\": false}\r\n  ]\r\n}\r\n";
    p.write("prd.json", prd);
    let started = p.prompt("/ralph-loop --prd-file prd.json --max-iterations 9");
    assert!(p.state().is_some(), "{started:?}");
    let out = p.stop("Looked around.");
    assert!(goes_on(out.as_ref()), "{out:?}");
    assert!(
        feed(out.as_ref()).contains("US-1"),
        "{}",
        feed(out.as_ref())
    );
}

#[test]
fn stops_at_once_each_count_one_turn_under_the_lock() {
    let p = WinProject::new("lock");
    p.prompt("/ralph-loop Task. --max-iterations 0 --max-stalls 0");
    let n = 6;
    let went_on = std::thread::scope(|s| {
        let runs: Vec<_> = (0..n)
            .map(|i| {
                let p = &p;
                s.spawn(move || {
                    // No transcript: each Stop's own words make it its own turn.
                    let mut input = p.stop_input(&format!("turn {i}"));
                    input["transcript_path"] = p.root.display().to_string().into();
                    p.run("ralph-stop-hook", &[], &input.to_string())
                })
            })
            .collect();
        runs.into_iter()
            .map(|h| h.join().expect("a Stop"))
            .map(|out| (goes_on(parse(&out).as_ref()), text(&out)))
            .collect::<Vec<_>>()
    });
    assert!(went_on.iter().all(|(on, _)| *on), "{went_on:#?}");
    let state = p.state().unwrap();
    assert!(
        state.contains(&format!("iteration: {}\n", n + 1)),
        "{state}"
    );
}

/// Every file name under `dir`.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}
