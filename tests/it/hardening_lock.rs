//! Who may hold the loop's lock: a process of the agent's is stopped at
//! once, any other but ralph's after the whole wait (about 5 s), so no
//! holder pauses the loop or blocks the user's cancel; a lock file made
//! into something else is made again. (That a ralph program's hold is
//! waited for and then given up on with a clear message: `store`'s unit
//! tests.) The only timing assertions of the suite, and generous ones.

use crate::support::*;
use std::time::Duration;

const LOWER: Duration = Duration::from_secs(4);
const UPPER: Duration = Duration::from_secs(60);

/// A process that is neither ralph's nor the agent's (the user's own, a
/// child of this test, no agent marks) holds the loop's lock: the Stop
/// waits its whole bound for it, then stops it and goes on (nothing but
/// ralph has a reason to hold ralph's lock that long); the user's cancel
/// does the same. Held by `flock`, whose child inherits the hold: both
/// are stopped.
#[test]
fn a_lock_held_by_another_process_is_waited_for_then_taken_back() {
    let p = Project::with_claude_dir("lock-stop");
    p.write(STATE_FILE, state_text(4, 0));
    assert!(run_stop(&p, &stop_input(&p.root, "x")).is_block());
    let mut holder = other_holds_lock(&p);
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert!(o.is_block(), "the loop goes on: {o:?}");
    assert!(
        o.elapsed >= LOWER && o.elapsed < UPPER,
        "waited {:?}",
        o.elapsed
    );
    let msg = o.system_message();
    assert!(
        msg.contains("held the loop's lock") && msg.contains("longer than"),
        "{msg}"
    );
    // Deleting a held flock file would let a second writer in.
    assert!(!msg.contains("remove the lock"), "{msg}");
    let _ = holder.wait();

    let mut again = other_holds_lock(&p);
    let o = run(command(RALPH, &p, &["cancel"]), Stdin::Bytes(b""));
    assert!(o.stdout.contains("Cancelled"), "{o:?}");
    assert!(o.elapsed >= LOWER, "waited {:?}", o.elapsed);
    assert!(p.state().is_none(), "cancelled");
    let _ = again.wait();
}

/// `flock LOCK sh -c 'touch held; exec sleep 120'`, a child of this test,
/// once it holds the lock.
fn other_holds_lock(p: &Project) -> std::process::Child {
    let lock = p.loop_paths().lock;
    let _ = std::fs::remove_file(p.path("held"));
    let script = format!(
        "exec flock {} sh -c 'touch held; exec sleep 120'",
        shell_quote(&lock.display().to_string())
    );
    let child = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&p.root)
        .env_remove("AI_AGENT")
        .spawn()
        .unwrap();
    wait_for(&p.path("held"));
    child
}

fn wait_for(file: &std::path::Path) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !file.exists() {
        assert!(
            std::time::Instant::now() < until,
            "the process never held the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The lock file replaced by a folder (or a link): ralph makes it again,
/// says so, and goes on.
#[test]
fn a_lock_file_replaced_by_a_folder_or_link_is_made_again() {
    let p = Project::with_claude_dir("lock-replaced");
    p.write(STATE_FILE, state_text(4, 0));
    assert!(run_stop(&p, &stop_input(&p.root, "x")).is_block());
    let lock = p.loop_paths().lock;
    std::fs::remove_file(&lock).unwrap();
    std::fs::create_dir(&lock).unwrap();
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert!(o.is_block(), "the loop goes on: {o:?}");
    assert!(o.system_message().contains("replaced by a folder"), "{o:?}");
    assert!(lock.is_file());
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(p.path("elsewhere"), &lock).unwrap();
    let o = run_stop(&p, &stop_input(&p.root, "x"));
    assert!(o.is_block(), "the loop goes on: {o:?}");
    assert!(o.system_message().contains("replaced by a link"), "{o:?}");
    assert!(
        !p.path("elsewhere").exists(),
        "nothing made through the link"
    );
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
                .any(|e| e["decision"] == "lock" && e["reason"] == "lock_taken_back"),
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
