//! A hook in the middle of writes the client must not cut short. The client
//! ends its hooks with SIGTERM as it exits (measured, 2.1.328: ~60 ms after a
//! StopFailure hook started; SIGKILL ~1.5 s later), which once cut a pause
//! between the state and its log line. A hook whose work is a few
//! milliseconds of writes, or a merge into the user's tree, holds off
//! SIGTERM and SIGHUP: they only set a flag nobody reads. Its own watchdog
//! and the client's SIGKILL still bound it. Does I/O (signal handlers).

use std::sync::atomic::AtomicUsize;

static HELD_OFF: AtomicUsize = AtomicUsize::new(0);

/// From now on SIGTERM and SIGHUP do not end this process.
pub fn hold_off_termination() {
    #[cfg(unix)]
    let signals = [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP];
    #[cfg(not(unix))]
    let signals = [signal_hook::consts::SIGTERM];
    for sig in signals {
        let _ = signal_hook::flag::register_usize(sig, &HELD_OFF, sig as usize);
    }
}
