//! A new user's install, for scenarios with `new_user:`: the plugin comes
//! from a local git repository through `claude plugin marketplace add` and
//! `claude plugin install`, cargo is not on PATH, and the launcher downloads
//! the release that `scripts/release-local` built from a loopback HTTP
//! server (`RALPH_RELEASE_URL`), which counts what it serves.

use super::{CHECKOUT, NewUser};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;

/// GET paths served, with their counts.
type Served = Arc<Mutex<BTreeMap<String, usize>>>;

/// A scenario's install: where the downloads come from and what was asked.
pub(crate) struct Installed {
    release_url: String,
    served: Served,
    /// PATH without cargo (and without any ralph binary).
    path: String,
}

impl Installed {
    /// A new user's client environment: no RALPH_BIN_DIR, no cargo; the
    /// release at the loopback server.
    pub(crate) fn env(&self, home: &Path, port: u16, api_key: &str) -> Vec<(String, String)> {
        let more = [("RALPH_RELEASE_URL", self.release_url.clone())];
        super::env_of(&self.path, home, port, api_key, more)
    }
}

/// Cargo.toml's version (the one the launcher and the archives use).
fn version() -> String {
    let text = fs::read_to_string(Path::new(CHECKOUT).join("Cargo.toml")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

/// `scripts/release-local` once per test run (cargo reuses its last build
/// when nothing changed), into target/e2e-release.
fn release_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        // Under target/ (ignored, and overwritten by the next run) rather
        // than one more folder in /tmp per run.
        let dir = Path::new(CHECKOUT).join("target/e2e-release");
        let out = Command::new(Path::new(CHECKOUT).join("scripts/release-local"))
            .arg(&dir)
            .current_dir(CHECKOUT)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("scripts/release-local: {e}"))?;
        if !out.status.success() {
            return Err(format!("scripts/release-local failed: {}", out.status));
        }
        Ok(dir)
    })
    .clone()
}

fn run_ok(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{what}: {}: {text}", out.status))
    }
}

/// A git repository of this checkout's files (tracked or new, not ignored):
/// what a user's marketplace holds, with no `target/`.
fn plugin_repo(dest: &Path) -> Result<(), String> {
    let list = run_ok(
        Command::new("git")
            .args(["ls-files", "-z", "-co", "--exclude-standard"])
            .current_dir(CHECKOUT),
        "git ls-files",
    )?;
    for rel in list.split('\0').filter(|r| !r.is_empty()) {
        let from = Path::new(CHECKOUT).join(rel);
        if !from.is_file() {
            continue;
        }
        let to = dest.join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs::copy(&from, &to).map_err(|e| format!("copy {rel}: {e}"))?;
    }
    let git = |args: &[&str]| {
        run_ok(
            Command::new("git")
                .args(["-c", "user.name=e2e", "-c", "user.email=e2e@localhost"])
                .args(args)
                .current_dir(dest),
            "git",
        )
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-qm", "the plugin"])?;
    Ok(())
}

/// PATH as the machine has it, minus every directory holding cargo or a
/// ralph binary.
fn path_without_cargo() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| {
            !["cargo", "rustc", "ralph-stop-hook", "ralph-setup"]
                .iter()
                .any(|b| d.join(b).exists())
        })
        .collect();
    std::env::join_paths(kept)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Serves the files of `dir` over HTTP/1.0 on 127.0.0.1, counting GETs.
fn serve(dir: PathBuf) -> Result<(u16, Served), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let served = Arc::new(Mutex::new(BTreeMap::new()));
    let counts = Arc::clone(&served);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let dir = dir.clone();
            let counts = Arc::clone(&counts);
            thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                // Skip the headers.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let name = path.rsplit('/').next().unwrap_or("").to_string();
                *counts
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(path)
                    .or_insert(0) += 1;
                let mut out = &stream;
                match fs::read(dir.join(&name)) {
                    Ok(body) if !name.is_empty() => {
                        let _ = write!(
                            out,
                            "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = out.write_all(&body);
                    }
                    _ => {
                        let _ = out.write_all(
                            b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                }
            });
        }
    });
    Ok((port, served))
}

/// Sets up the release server and installs the plugin in `home`.
pub(crate) fn install(
    claude: &Path,
    root: &Path,
    home: &Path,
    project: &Path,
    new_user: &NewUser,
) -> Result<Installed, String> {
    let built = release_dir()?;
    let release = root.join("release");
    fs::create_dir_all(&release).map_err(|e| e.to_string())?;
    for entry in fs::read_dir(&built).map_err(|e| e.to_string())?.flatten() {
        fs::copy(entry.path(), release.join(entry.file_name())).map_err(|e| e.to_string())?;
    }
    match new_user.release.as_str() {
        "good" => {}
        "corrupt" => {
            // A byte changed in the middle of the archive; its checksum file is untouched.
            let archive = fs::read_dir(&release)
                .map_err(|e| e.to_string())?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
                .ok_or("no archive in the release")?;
            let mut bytes = fs::read(&archive).map_err(|e| e.to_string())?;
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
            fs::write(&archive, bytes).map_err(|e| e.to_string())?;
        }
        other => return Err(format!("new_user.release: {other:?} (use good or corrupt)")),
    }
    let (port, served) = serve(release)?;
    let installed = Installed {
        release_url: format!("http://127.0.0.1:{port}/download/v{}", version()),
        served,
        path: path_without_cargo(),
    };
    let repo = root.join("ralph-repo");
    plugin_repo(&repo)?;
    let env = installed.env(home, 9, "x");
    let claude_cmd = |args: &[&str]| {
        let mut cmd = Command::new(claude);
        cmd.env_clear()
            .envs(env.clone())
            .args(args)
            .current_dir(project);
        cmd
    };
    let repo_arg = repo.to_string_lossy().into_owned();
    run_ok(
        &mut claude_cmd(&["plugin", "marketplace", "add", &repo_arg]),
        "claude plugin marketplace add",
    )?;
    run_ok(
        &mut claude_cmd(&["plugin", "install", "ralph@ralph"]),
        "claude plugin install ralph@ralph",
    )?;
    Ok(installed)
}

/// `downloads`: archive GETs; `installed`: the binaries in
/// `~/.claude/plugins/data/*/bin/<version>/`.
pub(crate) fn check(
    installed: &Installed,
    home: &Path,
    downloads: Option<usize>,
    want_installed: Option<bool>,
    failures: &mut Vec<String>,
) {
    let served = installed
        .served
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(n) = downloads {
        let got: usize = served
            .iter()
            .filter(|(p, _)| p.ends_with(".tar.gz"))
            .map(|(_, c)| c)
            .sum();
        if got != n {
            failures.push(format!(
                "the release archive was downloaded {got} time(s), expected {n}; served: {served:?}"
            ));
        }
    }
    if let Some(want) = want_installed {
        let data = home.join(".claude/plugins/data");
        let found: Vec<PathBuf> = fs::read_dir(&data)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("bin").join(version()).join("ralph-stop-hook"))
            .filter(|p| p.exists())
            .collect();
        if found.is_empty() == want {
            failures.push(format!(
                "binaries in {}/*/bin/{}: {found:?}, expected {}",
                data.display(),
                version(),
                if want { "installed" } else { "none" }
            ));
        }
    }
}

/// Times of a new user's first session, from the start of its first run:
/// when the downloaded binaries appeared, and when the loop's activity log
/// got its first line (the loop was started by the downloaded `ralph-setup`).
pub(crate) struct Watch {
    done: Arc<Mutex<bool>>,
    times: Arc<Mutex<(Option<f64>, Option<f64>)>>,
}

impl Watch {
    pub(crate) fn start(home: &Path, project: &Path) -> Watch {
        let done = Arc::new(Mutex::new(false));
        let times = Arc::new(Mutex::new((None, None)));
        let (d, t) = (Arc::clone(&done), Arc::clone(&times));
        let data = home.join(".claude/plugins/data");
        let log = project.join(super::LOG_FILE);
        let version = version();
        thread::spawn(move || {
            let t0 = std::time::Instant::now();
            while !*d.lock().unwrap_or_else(|p| p.into_inner()) {
                let now = t0.elapsed().as_secs_f64();
                let installed = fs::read_dir(&data)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| {
                        e.path()
                            .join("bin")
                            .join(&version)
                            .join("ralph-stop-hook")
                            .exists()
                    });
                let mut times = t.lock().unwrap_or_else(|p| p.into_inner());
                if installed && times.0.is_none() {
                    times.0 = Some(now);
                }
                if times.1.is_none() && log.exists() {
                    times.1 = Some(now);
                }
                drop(times);
                thread::sleep(std::time::Duration::from_millis(10));
            }
        });
        Watch { done, times }
    }

    /// One line for the test output.
    pub(crate) fn report(&self) -> String {
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        let (installed, started) = *self.times.lock().unwrap_or_else(|p| p.into_inner());
        let fmt = |t: Option<f64>| t.map_or("never".to_string(), |t| format!("{t:.2}s"));
        format!(
            "binaries installed at {}, loop started at {} (from the first run's start)",
            fmt(installed),
            fmt(started)
        )
    }
}
