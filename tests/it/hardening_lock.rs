//! Bounded lock waits: while another process holds the loop's lock,
//! the Stop hook gives up after its bound (about 5 s) with a clear message and
//! exit 0, and changes nothing; `cancel` and `start` give up too and say so.
//! The only timing assertions of the suite, and generous ones.

use crate::support::*;
use std::fs::OpenOptions;
use std::time::Duration;

/// Hold the loop lock (flock, as ralph takes it) for the life of the file.
fn hold_lock(p: &Project) -> std::fs::File {
    let lock = p.loop_paths().lock;
    std::fs::create_dir_all(lock.parent().unwrap()).expect("loop dir");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock)
        .expect("lock file");
    f.lock().expect("flock");
    f
}

const LOWER: Duration = Duration::from_secs(4);
const UPPER: Duration = Duration::from_secs(60);

#[test]
fn stop_hook_gives_up_on_a_held_lock() {
    let p = Project::with_claude_dir("lock-stop");
    p.write(STATE_FILE, state_text(4, 0));
    let held = hold_lock(&p);
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    o.assert_fail_open("stop hook, lock held");
    assert!(!o.is_block());
    let msg = o.system_message();
    assert!(msg.contains("lock"), "says the lock was held: {msg}");
    assert!(
        msg.contains(&p.loop_paths().lock.display().to_string()),
        "names the lock file: {msg}"
    );
    assert!(msg.contains("allowed"), "says the stop is allowed: {msg}");
    // Deleting a held flock file would let a second writer in.
    assert!(
        !msg.contains("remove the lock"),
        "advises deleting the lock: {msg}"
    );
    assert!(
        o.elapsed >= LOWER && o.elapsed < UPPER,
        "waited {:?}",
        o.elapsed
    );
    assert_eq!(
        p.state().as_deref(),
        Some(state_text(4, 0).as_str()),
        "state untouched"
    );
    assert!(p.log().is_empty(), "no decision was taken");
    eprintln!("gave up after {:?}: {msg}", o.elapsed);

    // Released: the next hook proceeds at once.
    drop(held);
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert!(o.is_block(), "{o:?}");
}

/// `ralph-setup ARGS` (`what`) against a held lock on the state at
/// iteration 4: it waits its bound, says why, and changes nothing.
fn setup_gives_up(p: &Project, args: &[&str], what: &str) {
    let o = run(command(RALPH, p, args), Stdin::Bytes(b""));
    assert!(
        o.elapsed >= LOWER && o.elapsed < UPPER,
        "{what} waited {:?}",
        o.elapsed
    );
    assert!(
        o.stdout.contains("lock") || o.stderr.contains("lock"),
        "{what} says why: {o:?}"
    );
    assert_eq!(
        p.state().as_deref(),
        Some(state_text(4, 0).as_str()),
        "{what} changed nothing"
    );
}

#[test]
fn cancel_and_start_give_up_on_a_held_lock() {
    let p = Project::with_claude_dir("lock-setup");
    p.write(STATE_FILE, state_text(4, 0));
    let _held = hold_lock(&p);
    setup_gives_up(&p, &["cancel"], "cancel");
    setup_gives_up(
        &p,
        &["start", "--session", SESSION, "--", "new task"],
        "start",
    );

    // The UserPromptSubmit form of start answers in hook JSON, exit 0.
    let input = prompt_input(&p.root, "/ralph:ralph-loop new task");
    let o = run(command(SETUP, &p, &["hook-prompt"]), Stdin::Bytes(&input));
    o.assert_fail_open("hook-prompt, lock held");
    assert!(o.stdout.contains("lock"), "hook-prompt says why: {o:?}");
    assert_eq!(p.state().as_deref(), Some(state_text(4, 0).as_str()));
}

/// A lock file left by a process that died is no obstacle: flock is released
/// by the kernel with the process.
#[test]
fn stale_lock_file_is_not_a_lock() {
    let p = Project::with_claude_dir("lock-stale");
    p.write(STATE_FILE, state_text(4, 0));
    let lock = p.loop_paths().lock;
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(lock, "left behind").unwrap();
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert!(o.is_block(), "{o:?}");
    assert!(o.elapsed < UPPER);
}

/// A process of the agent's that holds the loop's lock (`python3` taking
/// `flock` on it, started from a shell with the Bash tool's mark, as the
/// client runs a `run_in_background` call; `detached`: left to init with
/// the mark unset), once it holds it.
fn agent_holds_lock(p: &Project, detached: bool) -> std::process::Child {
    let lock = p.loop_paths().lock;
    let python = format!(
        "import fcntl, time\nf = open({:?}, 'rb')\nfcntl.flock(f, fcntl.LOCK_EX)\nopen({:?}, 'w').write('held')\ntime.sleep(120)",
        lock.display().to_string(),
        p.path("held").display().to_string()
    );
    let py = format!("python3 -c {}", shell_quote(&python));
    let script = if detached {
        format!("setsid -f env -u AI_AGENT {py}\nexit $?")
    } else {
        format!("{py}\nexit $?")
    };
    let child = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&p.root)
        .env("AI_AGENT", "claude-code_2-1-328_agent")
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !p.path("held").exists() {
        assert!(
            std::time::Instant::now() < until,
            "the agent's process never held the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn a_lock_held_by_the_agents_process_is_taken_back_at_once() {
    for detached in [false, true] {
        let p = Project::with_claude_dir(if detached {
            "lock-agent-detached"
        } else {
            "lock-agent"
        });
        p.write(STATE_FILE, state_text(4, 0));
        // The loop's folder is made by its first Stop.
        assert!(run_stop(&p, &stop_input(&p.root, "x")).is_block());
        let mut holder = agent_holds_lock(&p, detached);
        let o = run_stop(&p, &stop_input(&p.root, "x"));
        assert!(o.is_block(), "the loop goes on: {o:?}");
        assert!(o.elapsed < LOWER, "did not wait: {:?}", o.elapsed);
        let msg = o.system_message();
        assert!(
            msg.contains("held the loop's lock") && msg.contains("python3"),
            "{msg}"
        );
        let logged = p.log();
        assert!(
            logged
                .iter()
                .any(|e| e["decision"] == "lock" && e["reason"] == "agent_held_lock"),
            "{logged:?}"
        );
        // Stopped by the Stop (a detached holder's shell has exited).
        let _ = holder.wait();
        // And the user's cancel, with the agent holding it again, at once.
        let _ = std::fs::remove_file(p.path("held"));
        let mut again = agent_holds_lock(&p, detached);
        let o = run(command(RALPH, &p, &["cancel"]), Stdin::Bytes(b""));
        assert!(o.elapsed < LOWER, "cancel did not wait: {:?}", o.elapsed);
        assert!(o.stdout.contains("Cancelled"), "{o:?}");
        assert!(p.state().is_none(), "cancelled");
        let _ = again.kill();
        let _ = again.wait();
    }
}
