//! The files matrix: the state, the PRD and the command policy when they are
//! empty, binary, huge (50 MB), a symlink pointing outside the project,
//! unreadable, on a read-only file system, with CRLF line endings or with a
//! BOM. Each case gives a clear message naming the file (or works), exits 0,
//! and loses nothing: a corrupt state is moved aside, never deleted.
//!
//! Tests run as root here, and root reads files whatever their mode: the
//! chmod-000 cases run the hook as `nobody` through `setpriv` when the test
//! runs as root (and directly otherwise); a folder in place of the file is
//! the "cannot read" case that holds for every user. The read-only file
//! system is a tmpfs remounted read-only inside `unshare -rm` (a user and
//! mount namespace, no privileges needed); where neither tool works the case
//! says so on stderr and is skipped.

use crate::support::*;
use ralph_core::state::LoopState;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::process::Command;

const MB50: usize = 50 << 20;

fn binary_bytes() -> Vec<u8> {
    (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .chain([0xff, 0xfe, 0, 0xc3])
        .collect()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Run `bin` as `nobody` when we are root (so file modes apply).
fn as_unprivileged(bin: &str, p: &Project, args: &[&str]) -> Command {
    if !is_root() {
        return command(bin, p, args);
    }
    let mut c = command("setpriv", p, &[]);
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin])
        .args(args);
    c
}

/// Let `nobody` into the project (for the chmod cases).
fn open_up(p: &Project) {
    for dir in [p.root.clone(), p.path(".claude")] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    }
}

// ------------------------------------------------------------------ state

/// A corrupt state: the stop is allowed with a message naming the file,
/// and the exact bytes are kept as `.claude/ralph-loop.local.md.corrupt-*`.
fn assert_moved_aside(p: &Project, o: &Outcome, bytes: &[u8], name: &str) {
    o.assert_fail_open(name);
    assert!(!o.is_block(), "{name}: blocked");
    let msg = o.system_message();
    assert!(
        msg.contains(STATE_FILE),
        "{name}: message does not name the file: {msg}"
    );
    assert!(msg.contains("corrupt"), "{name}: {msg}");
    assert!(
        p.state().is_none() && !p.path(STATE_FILE).exists(),
        "{name}: still in place"
    );
    let copies = p.corrupt_copies();
    assert_eq!(copies.len(), 1, "{name}: {:?}", p.claude_files());
    assert!(
        copies[0].1 == bytes,
        "{name}: the kept copy differs from the original"
    );
    assert!(
        msg.contains(&copies[0].0),
        "{name}: message does not say where it was kept: {msg}"
    );
}

#[test]
fn state_empty_binary_and_huge_garbage_are_moved_aside() {
    let big: Vec<u8> = b"x".repeat(MB50);
    for (name, bytes) in [
        ("empty state", Vec::new()),
        ("binary state", binary_bytes()),
        ("50 MB of text without frontmatter", big),
        (
            "frontmatter never closed",
            b"---\niteration: 2\nprompt text\n".to_vec(),
        ),
        (
            "iteration not a number",
            b"---\niteration: two\n---\n\nprompt\n".to_vec(),
        ),
    ] {
        let p = Project::with_claude_dir("state-bad");
        p.write(STATE_FILE, &bytes);
        let o = run_stop(&p, &stop_input(&p.root, "x"));
        assert_moved_aside(&p, &o, &bytes, name);
        let log = p.log();
        assert_eq!(
            log.last().map(|e| e["reason"].clone()),
            Some("corrupt".into()),
            "{name}"
        );
    }
}

#[test]
fn state_huge_but_valid_is_processed() {
    let p = Project::with_claude_dir("state-huge");
    let prompt = "Line of a very long task description ✓\n".repeat(MB50 / 40);
    let text = state_text(2, 0).replace(PROMPT, &prompt);
    p.write(STATE_FILE, &text);
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    o.assert_fail_open("50 MB state");
    assert!(
        o.is_block(),
        "50 MB state: {:?}",
        &o.stdout[..o.stdout.len().min(300)]
    );
    let s = LoopState::parse(&p.state().expect("state")).expect("parses");
    assert_eq!(s.iteration, 3);
    assert!(s.prompt == prompt, "prompt changed");
    eprintln!("50 MB state: {:?}", o.elapsed);
}

#[test]
fn state_symlink_outside_the_project() {
    let outside = Project::with_claude_dir("outside");
    let target = outside.path("elsewhere-state.md");
    std::fs::write(&target, state_text(2, 0)).expect("write");

    // A valid state through a symlink: processed; the outside file is not
    // written (the update replaces the link with a regular file).
    let p = Project::with_claude_dir("state-link");
    symlink(&target, p.path(STATE_FILE)).expect("symlink");
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    o.assert_fail_open("symlinked state");
    assert!(o.is_block(), "{o:?}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("outside"),
        state_text(2, 0),
        "outside file written through the link"
    );
    let s = LoopState::parse(&p.state().expect("state")).expect("parses");
    assert_eq!(s.iteration, 3);
    assert!(
        !std::fs::symlink_metadata(p.path(STATE_FILE))
            .expect("meta")
            .file_type()
            .is_symlink()
    );

    // A corrupt state through a symlink: the link is moved aside, the outside file kept.
    let q = Project::with_claude_dir("state-link-bad");
    let bad = outside.path("bad.md");
    std::fs::write(&bad, "garbage").expect("write");
    symlink(&bad, q.path(STATE_FILE)).expect("symlink");
    let o = run_stop(&q, &stop_input(&q.root, "x"));
    assert_moved_aside(&q, &o, b"garbage", "symlinked corrupt state");
    assert_eq!(
        std::fs::read_to_string(&bad).expect("outside kept"),
        "garbage"
    );

    // A dangling symlink is no loop.
    let r = Project::with_claude_dir("state-link-dangling");
    symlink(outside.path("nope.md"), r.path(STATE_FILE)).expect("symlink");
    let o = run_stop(&r, &stop_input(&r.root, "x"));
    o.assert_fail_open("dangling symlink");
    assert_eq!(o.json(), None);
    assert!(
        std::fs::symlink_metadata(r.path(STATE_FILE)).is_ok(),
        "the link is left alone"
    );
}

#[test]
fn state_unreadable() {
    // A folder where the state file should be: no user can read it as a file.
    let p = Project::with_claude_dir("state-dir");
    std::fs::create_dir_all(p.path(STATE_FILE)).expect("mkdir");
    std::fs::write(p.path(STATE_FILE).join("keep"), "x").expect("write");
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    o.assert_fail_open("state is a folder");
    let msg = o.system_message();
    assert!(msg.contains(STATE_FILE), "names the file: {msg}");
    assert!(!o.is_block());
    assert!(p.path(STATE_FILE).join("keep").exists(), "nothing lost");

    // chmod 000, as an unprivileged user.
    let q = Project::with_claude_dir("state-000");
    q.write(STATE_FILE, state_text(2, 0));
    open_up(&q);
    std::fs::set_permissions(q.path(STATE_FILE), std::fs::Permissions::from_mode(0o000))
        .expect("chmod");
    let o = run(
        as_unprivileged(STOP, &q, &[]),
        Stdin::Bytes(&stop_input(&q.root, "x")),
    );
    o.assert_fail_open("state chmod 000");
    let msg = o.system_message();
    assert!(msg.contains(STATE_FILE), "names the file: {msg}");
    assert!(!o.is_block());
    std::fs::set_permissions(q.path(STATE_FILE), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    assert_eq!(
        q.state().as_deref(),
        Some(state_text(2, 0).as_str()),
        "nothing lost"
    );
}

/// After one Stop, a state written with CRLF or a BOM keeps every line it had
/// (byte for byte, line endings included) except the iteration, and its body.
/// (Fields the hook adds, like `stalls`, may be appended to the frontmatter.)
fn assert_only_iteration_changed(before: &str, after: &str, from: u64, name: &str) {
    let fm_end = |t: &str| t.find("\n---").expect("closing line") + 1;
    let (b_fm, b_body) = before.split_at(fm_end(before));
    let (a_fm, a_body) = after.split_at(fm_end(after));
    assert_eq!(a_body, b_body, "{name}: body changed");
    assert_eq!(
        after.starts_with('\u{feff}'),
        before.starts_with('\u{feff}'),
        "{name}: BOM"
    );
    let old_line = format!("iteration: {from}");
    let new_line = format!("iteration: {}", from + 1);
    for line in b_fm.split_inclusive('\n') {
        let want = line.replace(&old_line, &new_line);
        assert!(
            a_fm.contains(&want),
            "{name}: line {want:?} lost from {a_fm:?}"
        );
    }
}

#[test]
fn state_crlf_and_bom_are_kept() {
    let p = Project::with_claude_dir("state-crlf");
    let crlf = state_text(2, 0).replace('\n', "\r\n");
    p.write(STATE_FILE, &crlf);
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    o.assert_fail_open("CRLF state");
    assert!(o.is_block(), "{o:?}");
    let after = p.state().expect("state");
    assert_only_iteration_changed(&crlf, &after, 2, "CRLF state");
    let fm = &after[..after.find("\n---").expect("closing line")];
    assert!(
        !fm.replace("\r\n", "").contains('\n'),
        "a bare LF in a CRLF frontmatter: {fm:?}"
    );
    assert_eq!(LoopState::parse(&after).expect("parses").iteration, 3);

    let q = Project::with_claude_dir("state-bom");
    let bom = format!("\u{feff}{}", state_text(2, 0));
    q.write(STATE_FILE, &bom);
    let o = run_stop(&q, &stop_input(&q.root, "x"));
    o.assert_fail_open("BOM state");
    assert!(o.is_block(), "{o:?}");
    let after = q.state().expect("state");
    assert_only_iteration_changed(&bom, &after, 2, "BOM state");
    assert_eq!(LoopState::parse(&after).expect("parses").iteration, 3);
}

/// Run the Stop hook on a project in a tmpfs remounted read-only, inside a
/// user + mount namespace. Returns the hook's stdout, exit code and the state
/// as left, or None when namespaces are not available here.
fn on_readonly_fs(state: &str, prd: Option<&str>) -> Option<(String, i32, String)> {
    let work = Project::with_claude_dir("rofs");
    let mnt = work.path("mnt");
    std::fs::create_dir_all(&mnt).expect("mnt");
    std::fs::write(work.path("state.md"), state).expect("write");
    std::fs::write(work.path("prd.json"), prd.unwrap_or("")).expect("write");
    std::fs::write(work.path("in.json"), stop_input(&mnt, "x")).expect("write");
    let script = r#"
set -e
mount -t tmpfs -o size=64m tmpfs "$W/mnt"
mkdir -p "$W/mnt/.claude" "$W/mnt/.git"
cp "$W/state.md" "$W/mnt/$STATE_FILE"
cp "$W/prd.json" "$W/mnt/prd.json"
mount -o remount,ro "$W/mnt"
mkdir -p "$W/data"
mount -t tmpfs -o size=1m,ro tmpfs "$W/data"
set +e
RALPH_DATA_DIR="$W/data" CLAUDE_PROJECT_DIR="$W/mnt" "$HOOK" < "$W/in.json" > "$W/out.json" 2> "$W/err.txt"
echo $? > "$W/rc"
cp "$W/mnt/$STATE_FILE" "$W/after.md"
"#;
    let st = Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("W", &work.root)
        .env("HOOK", STOP)
        .env("STATE_FILE", STATE_FILE)
        .status();
    match st {
        Ok(s) if s.success() => {}
        other => {
            eprintln!(
                "read-only file system case skipped: unshare -rm not usable here ({other:?})"
            );
            return None;
        }
    }
    let read = |n: &str| std::fs::read_to_string(work.path(n)).unwrap_or_default();
    Some((
        read("out.json"),
        read("rc").trim().parse().unwrap_or(-1),
        read("after.md"),
    ))
}

#[test]
fn state_on_a_read_only_file_system() {
    let Some((out, rc, after)) = on_readonly_fs(&state_text(2, 0), None) else {
        return;
    };
    assert_eq!(rc, 0, "exit code; output {out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let msg = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        v.get("decision").is_none(),
        "no block when the state cannot be saved: {v}"
    );
    // The project file is adopted into ralph's data folder: that write fails.
    assert!(msg.contains("/data/loops/"), "names the file: {msg}");
    assert!(msg.to_lowercase().contains("read-only"), "says why: {msg}");
    assert_eq!(after, state_text(2, 0), "nothing lost");
}

// ------------------------------------------------------------------ PRD

fn prd_state() -> String {
    format!(
        "---\nactive: true\niteration: 2\nsession_id: \"{SESSION}\"\nmax_iterations: 0\ncompletion_promise: \"RALPH-COMPLETE\"\nprd_file: \"prd.json\"\nstory_ids: [\"US-1\", \"US-2\"]\n---\n\nWork through the stories.\n"
    )
}

const PRD: &str = r#"{"project":"P","userStories":[
 {"id":"US-1","title":"First","description":"Do one","acceptanceCriteria":["a"],"priority":1,"passes":false},
 {"id":"US-2","title":"Second","priority":2,"passes":false,"dependsOn":["US-1"]}]}"#;

/// The story fed when prd.json is fine.
fn assert_story_fed(o: &Outcome, name: &str) {
    o.assert_fail_open(name);
    assert!(o.is_block(), "{name}: {o:?}");
    let reason = o
        .json()
        .and_then(|v| v["reason"].as_str().map(String::from))
        .unwrap_or_default();
    assert!(reason.contains("US-1"), "{name}: story not fed: {reason}");
}

/// prd.json cannot be read: the agent is asked to repair it (a block naming
/// prd.json), the user is told, and the file is left as it was.
fn assert_prd_reported(p: &Project, o: &Outcome, before: &[u8], name: &str) {
    o.assert_fail_open(name);
    let msg = o.system_message();
    assert!(
        msg.contains("prd.json"),
        "{name}: message does not name prd.json: {msg}"
    );
    assert!(
        p.read_bytes("prd.json").is_none_or(|b| b == before),
        "{name}: prd.json changed"
    );
}

#[test]
fn prd_matrix() {
    let big = format!("{{\"userStories\": [{}", " ".repeat(MB50));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty prd.json", Vec::new()),
        ("binary prd.json", binary_bytes()),
        ("50 MB prd.json, never closed", big.into_bytes()),
    ];
    for (name, bytes) in cases {
        let p = Project::with_claude_dir("prd-bad");
        p.write(STATE_FILE, prd_state());
        p.write("prd.json", &bytes);
        let o = run_stop(&p, &stop_input(&p.root, "x"));
        assert_prd_reported(&p, &o, &bytes, name);
        assert!(
            LoopState::parse(&p.state().expect("state kept")).is_ok(),
            "{name}"
        );
    }

    // Valid PRDs in awkward encodings are read.
    for (name, text) in [
        ("CRLF prd.json", PRD.replace('\n', "\r\n")),
        ("BOM prd.json", format!("\u{feff}{PRD}")),
        (
            "50 MB valid prd.json",
            PRD.replace(
                "\"Do one\"",
                &format!("\"Do one{}\"", " pad".repeat(MB50 / 4)),
            ),
        ),
    ] {
        let p = Project::with_claude_dir("prd-ok");
        p.write(STATE_FILE, prd_state());
        p.write("prd.json", &text);
        let o = run_stop(&p, &stop_input(&p.root, "x"));
        assert_story_fed(&o, name);
        assert_eq!(
            p.read_bytes("prd.json").as_deref(),
            Some(text.as_bytes()),
            "{name}: changed"
        );
    }

    // A symlink to a PRD outside the project is read through, not written.
    let outside = Project::with_claude_dir("prd-outside");
    outside.write("prd.json", PRD);
    let p = Project::with_claude_dir("prd-link");
    p.write(STATE_FILE, prd_state());
    symlink(outside.path("prd.json"), p.path("prd.json")).expect("symlink");
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert_story_fed(&o, "symlinked prd.json");
    assert_eq!(
        outside.read_bytes("prd.json").as_deref(),
        Some(PRD.as_bytes())
    );

    // A folder in place of prd.json.
    let p = Project::with_claude_dir("prd-dir");
    p.write(STATE_FILE, prd_state());
    std::fs::create_dir_all(p.path("prd.json")).expect("mkdir");
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert_prd_reported(&p, &o, b"", "prd.json is a folder");

    // Missing prd.json.
    let p = Project::with_claude_dir("prd-missing");
    p.write(STATE_FILE, prd_state());
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert_prd_reported(&p, &o, b"", "missing prd.json");

    // chmod 000, as an unprivileged user.
    let p = Project::with_claude_dir("prd-000");
    p.write(STATE_FILE, prd_state());
    p.write("prd.json", PRD);
    open_up(&p);
    std::fs::set_permissions(p.path(STATE_FILE), std::fs::Permissions::from_mode(0o666))
        .expect("chmod");
    std::fs::set_permissions(p.path("prd.json"), std::fs::Permissions::from_mode(0o000))
        .expect("chmod");
    let o = run(
        as_unprivileged(STOP, &p, &[]),
        Stdin::Bytes(&stop_input(&p.root, "x")),
    );
    assert_prd_reported(&p, &o, PRD.as_bytes(), "prd.json chmod 000");
    std::fs::set_permissions(p.path("prd.json"), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    assert_eq!(p.read_bytes("prd.json").as_deref(), Some(PRD.as_bytes()));
}

#[test]
fn prd_on_a_read_only_file_system() {
    let Some((out, rc, after)) = on_readonly_fs(&prd_state(), Some(PRD)) else {
        return;
    };
    assert_eq!(rc, 0, "exit code; output {out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert!(
        v.get("decision").is_none(),
        "no block when the state cannot be saved: {v}"
    );
    assert!(
        v["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("/data/loops/")),
        "{v}"
    );
    assert_eq!(after, prd_state(), "nothing lost");
}

// ------------------------------------------------------------------ policy

const POLICY: &str = ".ralph/command-policy";
const POLICY_TEXT: &str = "[deny]\ncargo publish | never publish from a loop\n";

fn guard(p: &Project, cmd: std::process::Command, command_line: &str) -> Outcome {
    run(cmd, Stdin::Bytes(&bash_input(&p.root, command_line)))
}

/// A policy that cannot be used: the call is allowed, the user is told
/// which file is broken, and the file is left as it was.
fn assert_policy_reported(p: &Project, o: &Outcome, before: &[u8], name: &str) {
    o.assert_fail_open(name);
    assert!(!o.is_denied(), "{name}: denied by a broken policy: {o:?}");
    let msg = o.system_message();
    assert!(
        msg.contains(POLICY),
        "{name}: message does not name {POLICY}: {msg:?}"
    );
    assert!(
        p.read_bytes(POLICY).is_none_or(|b| b == before),
        "{name}: policy changed"
    );
}

#[test]
fn policy_matrix() {
    let mut results = Vec::new();
    // Unusable policies: binary, or over the guard's size cap (1 MB), even
    // when the text is a valid policy.
    let big_valid = format!(
        "{}{POLICY_TEXT}",
        "# a comment line of the policy file\n".repeat(MB50 / 37)
    );
    for (name, bytes) in [
        ("binary policy", binary_bytes()),
        ("50 MB policy, one garbage line", b"x".repeat(MB50)),
        (
            "50 MB policy, comments then the rule",
            big_valid.into_bytes(),
        ),
    ] {
        let p = Project::with_claude_dir("policy-bad");
        p.write(POLICY, &bytes);
        let o = guard(&p, command(GUARD, &p, &[]), "cargo publish");
        assert_policy_reported(&p, &o, &bytes, name);
        results.push(format!(
            "{name}: reported in {:?}: {}",
            o.elapsed,
            o.system_message()
        ));
    }

    // An empty policy denies nothing and says nothing.
    let p = Project::with_claude_dir("policy-empty");
    p.write(POLICY, "");
    let o = guard(&p, command(GUARD, &p, &[]), "cargo publish");
    o.assert_fail_open("empty policy");
    assert!(!o.is_denied());

    // Readable policies apply.
    for (name, text) in [
        ("CRLF policy", POLICY_TEXT.replace('\n', "\r\n")),
        (
            "900 KB policy, comments then the rule",
            format!(
                "{}{POLICY_TEXT}",
                "# a comment line of the policy file\n".repeat(900_000 / 37)
            ),
        ),
    ] {
        let p = Project::with_claude_dir("policy-ok");
        p.write(POLICY, &text);
        let o = guard(&p, command(GUARD, &p, &[]), "cargo publish --dry-run");
        o.assert_fail_open(name);
        assert!(o.is_denied(), "{name}: not applied: {o:?}");
        let o = guard(&p, command(GUARD, &p, &[]), "cargo build");
        assert!(!o.is_denied(), "{name}: denied too much");
        results.push(format!("{name}: applied in {:?}", o.elapsed));
    }

    // A symlink to a policy outside the project is read through.
    let outside = Project::with_claude_dir("policy-outside");
    outside.write("policy", POLICY_TEXT);
    let p = Project::with_claude_dir("policy-link");
    std::fs::create_dir_all(p.path(".ralph")).expect("mkdir");
    symlink(outside.path("policy"), p.path(POLICY)).expect("symlink");
    let o = guard(&p, command(GUARD, &p, &[]), "cargo publish");
    assert!(o.is_denied(), "symlinked policy: {o:?}");

    // A folder in place of the policy.
    let p = Project::with_claude_dir("policy-dir");
    std::fs::create_dir_all(p.path(POLICY)).expect("mkdir");
    let o = guard(&p, command(GUARD, &p, &[]), "cargo publish");
    assert_policy_reported(&p, &o, b"", "policy is a folder");

    // chmod 000, as an unprivileged user.
    let p = Project::with_claude_dir("policy-000");
    p.write(POLICY, POLICY_TEXT);
    open_up(&p);
    std::fs::set_permissions(p.path(".ralph"), std::fs::Permissions::from_mode(0o777))
        .expect("chmod");
    std::fs::set_permissions(p.path(POLICY), std::fs::Permissions::from_mode(0o000))
        .expect("chmod");
    let o = guard(&p, as_unprivileged(GUARD, &p, &[]), "cargo publish");
    assert_policy_reported(&p, &o, POLICY_TEXT.as_bytes(), "policy chmod 000");
    std::fs::set_permissions(p.path(POLICY), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    eprintln!("{}", results.join("\n"));
}

/// A policy saved with a byte-order mark (as some Windows editors do).
#[test]
fn policy_with_bom_applies() {
    let p = Project::with_claude_dir("policy-bom");
    p.write(POLICY, format!("\u{feff}{POLICY_TEXT}"));
    let o = guard(&p, command(GUARD, &p, &[]), "cargo publish");
    o.assert_fail_open("BOM policy");
    assert!(o.is_denied(), "a policy with a BOM is not applied: {o:?}");
}

/// The largest iteration a state can hold: the hook must neither panic nor
/// wrap the counter round to 0 (which would restart the count under a cap).
#[test]
fn state_at_the_largest_iteration() {
    let p = Project::with_claude_dir("state-max");
    let text = state_text(u64::MAX, 0);
    p.write(STATE_FILE, &text);
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    o.assert_fail_open("iteration u64::MAX");
    assert!(
        !o.system_message().contains("internal error"),
        "panicked: {o:?}"
    );
    if let Some(after) = p.state() {
        let s = LoopState::parse(&after).expect("parses");
        assert_ne!(s.iteration, 0, "the counter wrapped round");
    }
}

/// A named pipe where the transcript or prd.json should be: nobody writes
/// to it, so opening it blocks. The hook must still answer (fail open).
#[test]
fn fifo_transcript_and_prd_do_not_hang_the_hook() {
    let mkfifo = |p: &std::path::Path| {
        let st = Command::new("mkfifo").arg(p).status().expect("mkfifo");
        assert!(st.success());
    };
    // The transcript fallback runs when the last message lacks the promise.
    let p = Project::with_claude_dir("fifo-transcript");
    p.write(STATE_FILE, state_text(2, 0));
    mkfifo(&p.path("t.jsonl"));
    let input = serde_json::json!({"session_id": SESSION, "cwd": p.root,
        "transcript_path": p.path("t.jsonl"), "hook_event_name": "Stop",
        "last_assistant_message": "no promise here"})
    .to_string();
    let (exited, o) = exits_within(command(STOP, &p, &[]), Stdin::Bytes(input.as_bytes()), 45);
    assert!(
        exited,
        "Stop hook still blocked on a FIFO transcript after 45 s"
    );
    o.assert_fail_open("FIFO transcript");

    let q = Project::with_claude_dir("fifo-prd");
    q.write(STATE_FILE, prd_state());
    mkfifo(&q.path("prd.json"));
    let (exited, o) = exits_within(
        command(STOP, &q, &[]),
        Stdin::Bytes(&stop_input(&q.root, "x")),
        45,
    );
    assert!(
        exited,
        "Stop hook still blocked on a FIFO prd.json after 45 s"
    );
    o.assert_fail_open("FIFO prd.json");
    assert!(o.system_message().contains("prd.json"));
}
