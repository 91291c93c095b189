//! Where a command runs: the folder `cd DIR` leads to, and the one a
//! wrapper runs its program in (`env -C DIR`, `sudo -D DIR`), when that is
//! known before run time (`~` is the home folder). On Windows a folder is
//! read in `winpath`'s one spelling (`cd 'C:\Users\me\proj\.claude'`,
//! `cd /c/users/me/proj`).
//! Pure.

use std::path::{Path, PathBuf};

use crate::context::normalize;
use crate::winpath;

/// How a folder's word is read.
#[derive(Clone, Copy)]
pub(super) struct Reading<'a> {
    /// Windows paths (`winpath`).
    pub windows: bool,
    /// The home folder, for `~`.
    pub home: Option<&'a Path>,
}

/// Where `cd DIR` leads from `here`, when that is known before run time.
pub(super) fn next_cwd(here: Option<&Path>, dir: Option<&str>, how: Reading) -> Option<PathBuf> {
    let d = dir?;
    let d = if how.windows {
        winpath::canonical(d)
    } else {
        d.to_string()
    };
    let home_rest = d.strip_prefix("~/").or((d == "~").then_some(""));
    if let (Some(rest), Some(home)) = (home_rest, how.home) {
        return Some(normalize(&home.join(rest)));
    }
    if d.contains('$') || d.contains('`') || d.starts_with('~') || d == "-" {
        return None;
    }
    if d.starts_with('/') {
        return Some(normalize(Path::new(&d)));
    }
    here.map(|c| normalize(&c.join(d)))
}

/// The folder a wrapped program runs in (`env -C DIR`, `sudo -D DIR`).
pub(super) fn run_dir(here: Option<&Path>, chdir: &[String], how: Reading) -> Option<PathBuf> {
    chdir
        .iter()
        .try_fold(here.map(Path::to_path_buf), |dir, d| {
            Some(next_cwd(dir.as_deref(), Some(d), how))
        })
        .flatten()
}
