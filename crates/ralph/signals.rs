//! The signals `ralph run` takes (SIGINT, SIGTERM, SIGHUP set a flag the
//! runner polls) and sends (a client's process group stopped).

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// SIGINT, SIGTERM and SIGHUP set a flag the runner polls (at least every
/// 250 ms): the child is stopped and the loop cancelled by the runner itself.
pub(crate) fn install_signal_flags() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    #[cfg(unix)]
    let signals = [SIGINT, SIGTERM, signal_hook::consts::SIGHUP];
    #[cfg(not(unix))]
    let signals = [SIGINT, SIGTERM];
    for sig in signals {
        signal_hook::flag::register_usize(sig, &SIGNAL, sig as usize)?;
    }
    Ok(())
}

/// The signal received, if any.
pub(crate) fn pending_signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s as i32),
    }
}

pub(crate) fn signal_name(sig: i32) -> String {
    match sig {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// Send `signal` (a name: TERM, KILL) to the process group `pgid`.
fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stop a child started in its own process group: TERM to the group, up to
/// `grace` to exit, then KILL. Returns once the child is reaped.
pub(crate) fn stop_group(child: &mut Child, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        // The leader is gone; its group may still hold the tools it ran.
        signal_group(child.id(), "KILL");
        return;
    }
    signal_group(child.id(), "TERM");
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            signal_group(child.id(), "KILL");
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    signal_group(child.id(), "KILL");
    let _ = child.kill();
    let _ = child.wait();
}
