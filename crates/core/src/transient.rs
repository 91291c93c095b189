//! Windows' passing refusals of a file: a file being replaced (its old
//! name pending deletion), or held open by another process without
//! share-delete (a reader, a scanner), refuses an open or a rename for a
//! moment with ACCESS_DENIED (5), a sharing violation (32) or a lock
//! violation (33). A Stop that met one would pause the loop over nothing
//! (measured under Wine: six Stops at once, one in four runs). [`patiently`]
//! tries such an operation again for half a second; elsewhere it runs once.
//! Does I/O: runs the operation it is handed, and sleeps between tries.

use std::io;

/// `op`, tried again while Windows refuses it for a moment (see the module),
/// for up to 0.5 s; its last result.
pub(crate) fn patiently<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    #[cfg(windows)]
    {
        use std::time::{Duration, Instant};
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match op() {
                Err(e) if passing(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => return other,
            }
        }
    }
    #[cfg(not(windows))]
    op()
}

/// ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION.
#[cfg_attr(not(windows), allow(dead_code))]
fn passing(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(5 | 32 | 33))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_passing_refusal_is_tried_again_on_windows_only() {
        let tries = Cell::new(0);
        let got = patiently(|| {
            tries.set(tries.get() + 1);
            if tries.get() < 3 {
                Err(io::Error::from_raw_os_error(32))
            } else {
                Ok(tries.get())
            }
        });
        if cfg!(windows) {
            assert_eq!(got.unwrap(), 3);
        } else {
            assert_eq!(got.unwrap_err().raw_os_error(), Some(32));
            assert_eq!(tries.get(), 1);
        }
        // Any other error is the answer at once.
        let tries = Cell::new(0);
        let got: io::Result<()> = patiently(|| {
            tries.set(tries.get() + 1);
            Err(io::Error::from(io::ErrorKind::NotFound))
        });
        assert!(got.is_err());
        assert_eq!(tries.get(), 1);
        assert!(passing(&io::Error::from_raw_os_error(5)));
        assert!(!passing(&io::Error::from_raw_os_error(2)));
    }
}
