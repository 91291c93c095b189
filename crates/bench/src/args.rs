//! The command line.

use std::path::{Path, PathBuf};

const USAGE: &str = "\
ralph-bench: whole-process timings and peak memory of ralph-stop-hook

Usage: cargo run --release -p ralph-bench -- [OPTIONS]

Options:
  --bin-dir DIR   where the release binaries are (default: target/release
                  under the workspace root; build them with `cargo build --release`)
  --runs N        measured runs per case (default 500)
  --warmup N      unmeasured runs per case first (default 50)
  --tmp-dir DIR   where the temporary projects go (default: the system temp
                  folder). The block path writes a temp file and renames it
                  over the state file (no fsync), appends to the log, and in
                  loops asks git, so the file system under DIR matters: use
                  one like your projects' own.
  --keep          leave the temporary projects in place (printed at the end),
                  to look at one case with strace or perf
  --repo-files N,N  add case 7 (an edited turn's Stop) in git repositories
                  of N tracked files each, e.g. 1000,20000,100000
  --repo-dir DIR  where those repositories are made, once, and reused
                  (default: ralph-bench-repos in the temp folder)
  --versus DIR    also run every case with the binaries in DIR (the build
                  before), interleaved run by run, and print paired figures
  --cases P,P     only the cases whose label starts with one of these
                  (e.g. reference,1.,6.,7.,S1)
  --copies K      run each case's binary from K fresh copies in turn
                  (default 1): where a file's pages sit in memory moves a
                  short process's time (up to 0.2 ms here, the same binary
                  in two files), so compare builds over several copies
  -h, --help      this text
";

pub(crate) struct Args {
    pub bin_dir: PathBuf,
    pub runs: usize,
    pub warmup: usize,
    pub tmp_dir: PathBuf,
    pub keep: bool,
    pub repos: crate::steady::Repos,
    /// The build before, run beside this one.
    pub versus: Option<PathBuf>,
    /// Label prefixes of the cases to run (empty: all).
    pub only: Vec<String>,
    /// Fresh copies of each case's binary, run in turn.
    pub copies: usize,
}

impl Args {
    pub(crate) fn parse() -> Result<Args, String> {
        let mut args = Args {
            bin_dir: workspace_root().join("target").join("release"),
            runs: 500,
            warmup: 50,
            tmp_dir: std::env::temp_dir(),
            keep: false,
            repos: crate::steady::Repos {
                dir: std::env::temp_dir().join("ralph-bench-repos"),
                files: Vec::new(),
            },
            only: Vec::new(),
            versus: None,
            copies: 1,
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let (key, inline) = match arg.split_once('=') {
                Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or_else(|| format!("{key} needs a value\n\n{USAGE}"))
            };
            match key.as_str() {
                "--bin-dir" => args.bin_dir = absolute(value()?),
                "--tmp-dir" => args.tmp_dir = absolute(value()?),
                "--runs" => args.runs = count(&key, &value()?)?,
                "--warmup" => args.warmup = count(&key, &value()?)?,
                "--keep" => args.keep = true,
                "--versus" => args.versus = Some(absolute(value()?)),
                "--repo-dir" => args.repos.dir = absolute(value()?),
                "--repo-files" => {
                    for n in value()?.split(',').filter(|n| !n.is_empty()) {
                        args.repos.files.push(count(&key, n)?);
                    }
                }
                "--cases" => {
                    let list = value()?;
                    args.only = list.split(',').map(str::to_string).collect();
                }
                "--copies" => args.copies = count(&key, &value()?)?,
                "-h" | "--help" => {
                    print!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
            }
        }
        if args.runs == 0 {
            return Err("--runs must be at least 1".into());
        }
        if args.copies == 0 {
            return Err("--copies must be at least 1".into());
        }
        Ok(args)
    }
}

fn count(key: &str, v: &str) -> Result<usize, String> {
    v.parse()
        .map_err(|_| format!("{key} takes a whole number, not `{v}`"))
}

/// A path the user typed is taken from where they stand, as a shell would.
fn absolute(p: String) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// The default binaries are the workspace's, wherever `cargo run` was typed.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}
