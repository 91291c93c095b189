//! The terminal: progress lines printed, with a plain copy kept in the
//! run's progress.log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// Prints progress lines, and keeps a plain copy in the run's progress.log.
pub(crate) struct Out {
    log: Option<File>,
}

impl Out {
    pub(crate) fn new() -> Out {
        Out { log: None }
    }

    pub(crate) fn keep_in(&mut self, path: &Path) {
        self.log = OpenOptions::new().create(true).append(true).open(path).ok();
    }

    pub(crate) fn line(&mut self, text: &str) {
        println!("{text}");
        let _ = std::io::stdout().flush();
        if let Some(f) = &mut self.log {
            let _ = writeln!(f, "{}", ralph_core::run::display::strip_ansi(text));
        }
    }
}
