//! plugin/ralph's download path (issue 14), without the client: a plugin
//! root holding the launcher and Cargo.toml, a release of stand-in binaries
//! served as `file://` (curl reads it like HTTP), cargo off PATH, and a
//! `curl` wrapper that counts the fetches. The real archive in the real
//! client is the e2e scenarios 80-82.

use super::support::Project;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");

fn cargo_version() -> String {
    let text = fs::read_to_string(Path::new(CHECKOUT).join("Cargo.toml")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap()
        .to_string()
}

fn target() -> String {
    let m = Command::new("uname").arg("-m").output().unwrap();
    let arch = match String::from_utf8_lossy(&m.stdout).trim() {
        "arm64" | "aarch64" => "aarch64",
        _ => "x86_64",
    };
    let os = if cfg!(target_os = "macos") {
        "apple-darwin"
    } else {
        "unknown-linux-musl"
    };
    format!("{arch}-{os}")
}

fn write_exe(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A plugin root in `p`: the checkout's launcher and Cargo.toml (where it
/// reads the version).
fn plugin_root(p: &Project) -> PathBuf {
    let root = p.path("plugin-root");
    fs::create_dir_all(root.join("plugin")).unwrap();
    for file in ["plugin/ralph", "Cargo.toml"] {
        fs::copy(Path::new(CHECKOUT).join(file), root.join(file)).unwrap();
    }
    root
}

/// A plugin root, a release (stand-in binaries that say who they are) and a
/// PATH of the system tools plus a counting `curl`.
struct Setup {
    p: Project,
    root: PathBuf,
    data: PathBuf,
    release: PathBuf,
    path: String,
}

impl Setup {
    fn new(tag: &str, corrupt: bool) -> Setup {
        let p = Project::new(tag);
        let root = plugin_root(&p);
        let name = format!("ralph-{}-{}", cargo_version(), target());
        let stage = p.path("stage").join(&name);
        for b in ["ralph-stop-hook", "ralph-guard", "ralph-setup", "ralph"] {
            write_exe(
                &stage.join(b),
                &format!("#!/bin/sh\necho \"downloaded {b} $*\"\n"),
            );
        }
        let release = p.path("release");
        fs::create_dir_all(&release).unwrap();
        let archive = release.join(format!("{name}.tar.gz"));
        let ok = Command::new("tar")
            .arg("-C")
            .arg(p.path("stage"))
            .arg("-czf")
            .arg(&archive)
            .arg(&name)
            .status()
            .unwrap();
        assert!(ok.success());
        let sum = Command::new("sha256sum").arg(&archive).output().unwrap();
        let hex = String::from_utf8_lossy(&sum.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        fs::write(
            release.join(format!("{name}.tar.gz.sha256")),
            format!("{hex}  {name}.tar.gz\n"),
        )
        .unwrap();
        if corrupt {
            let mut bytes = fs::read(&archive).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
            fs::write(&archive, bytes).unwrap();
        }
        // A curl that notes each URL, then fetches it (slowly, so that
        // concurrent launchers overlap).
        let real_curl = String::from_utf8_lossy(
            &Command::new("sh")
                .args(["-c", "command -v curl"])
                .output()
                .unwrap()
                .stdout,
        )
        .trim()
        .to_string();
        let tools = p.path("tools");
        write_exe(
            &tools.join("curl"),
            &format!(
                "#!/bin/sh\nfor a; do last=$a; done\necho \"$last\" >> '{}'\nsleep 0.3\nexec '{real_curl}' \"$@\"\n",
                p.path("fetches.log").display()
            ),
        );
        let path = format!("{}:/usr/bin:/bin", tools.display());
        Setup {
            data: p.path("plugin-data"),
            root,
            release,
            path,
            p,
        }
    }

    fn launcher(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg(self.root.join("plugin/ralph"))
            .args(args)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", self.p.path("home"))
            .env("CLAUDE_PLUGIN_DATA", &self.data)
            .env(
                "RALPH_RELEASE_URL",
                format!("file://{}", self.release.display()),
            )
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.launcher(args).output().unwrap()
    }

    fn archive_fetches(&self) -> usize {
        fs::read_to_string(self.p.path("fetches.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(".tar.gz"))
            .count()
    }

    fn bin_dir(&self) -> PathBuf {
        self.data.join("bin").join(cargo_version())
    }

    /// What is left in `bin/` besides the version folder and the failure note.
    fn leftovers(&self) -> Vec<String> {
        fs::read_dir(self.data.join("bin"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp") || n.contains(".lock"))
            .collect()
    }
}

#[test]
fn no_binary_downloads_checks_and_runs_the_release() {
    let s = Setup::new("launcher-download", false);
    let out = s.run(&["setup", "status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("downloaded ralph-setup status"),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.bin_dir().join("ralph-stop-hook").is_file());
    assert_eq!(s.archive_fetches(), 1);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    // Found from now on: no second download.
    let out = s.run(&["guard"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("downloaded ralph-guard"));
    assert_eq!(s.archive_fetches(), 1);
}

#[test]
fn a_bad_checksum_is_deleted_never_run_and_the_user_is_told() {
    let s = Setup::new("launcher-corrupt", true);
    let out = s.run(&["stop-hook"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!stdout.contains("downloaded ralph-stop-hook"), "{stdout}");
    assert!(
        stdout.contains("systemMessage") && stdout.contains("failed its SHA-256 check"),
        "{stdout}"
    );
    assert!(!s.bin_dir().exists());
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
    // A ralph command is refused with the reason; other prompts go on.
    let mut cmd = s.launcher(&["setup", "hook-prompt"]);
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_ref()
        .unwrap()
        .write_all(br#"{"prompt":"/ralph:ralph-loop x"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""decision":"block""#), "{stdout}");
    assert!(stdout.contains("SHA-256"), "{stdout}");
    // Not retried by every hook: one download in all.
    assert_eq!(s.archive_fetches(), 1);
}

#[test]
fn concurrent_hooks_download_once() {
    let s = Setup::new("launcher-concurrent", false);
    // SessionStart's prebuild, then three hooks at once.
    let pre = s.run(&["prebuild"]);
    assert!(pre.status.success());
    let children: Vec<_> = ["stop-hook", "guard", "setup"]
        .iter()
        .map(|t| s.launcher(&[t]).stdout(Stdio::piped()).spawn().unwrap())
        .collect();
    for (c, t) in children.into_iter().zip(["stop-hook", "guard", "setup"]) {
        let out = c.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("downloaded ralph-{t}")),
            "{t}: {stdout}"
        );
    }
    assert_eq!(s.archive_fetches(), 1);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

#[test]
fn the_manifests_carry_cargo_tomls_version() {
    let v = cargo_version();
    for f in [
        ".claude-plugin/plugin.json",
        ".claude-plugin/marketplace.json",
    ] {
        let text = fs::read_to_string(Path::new(CHECKOUT).join(f)).unwrap();
        assert!(
            text.contains(&format!("\"version\": \"{v}\"")),
            "{f} must say version {v} (Cargo.toml)"
        );
    }
}

/// Serves the files of `dir` over HTTP/1.0 on 127.0.0.1 (wget reads no
/// `file://`), one connection at a time.
fn serve(dir: PathBuf) -> u16 {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let name = line
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.rsplit('/').next())
                .unwrap_or("")
                .to_string();
            let mut out = &stream;
            match fs::read(dir.join(&name)) {
                Ok(body) if !name.is_empty() => {
                    let _ = write!(
                        out,
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = out.write_all(&body);
                }
                _ => {
                    let _ = out.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                }
            }
        }
    });
    port
}

#[test]
fn wget_and_shasum_are_enough() {
    // PATH holds only the tools the download path names (no curl, no
    // sha256sum): what a minimal macOS or BusyBox-like system offers.
    let s = Setup::new("launcher-wget", false);
    let tools = s.p.path("only-tools");
    fs::create_dir_all(&tools).unwrap();
    for t in [
        "sh", "uname", "wget", "shasum", "perl", "tar", "gzip", "find", "mkdir", "rm", "mv", "cat",
        "rmdir", "sleep", "sed",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .unwrap();
        let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
        assert!(!path.is_empty(), "{t} is not installed here");
        std::os::unix::fs::symlink(&path, tools.join(t)).unwrap();
    }
    let port = serve(s.release.clone());
    let out = s
        .launcher(&["setup", "status"])
        .env("PATH", &tools)
        .env("RALPH_RELEASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("downloaded ralph-setup status"),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

#[test]
fn a_lock_left_by_a_killed_download_is_taken_over_at_once() {
    let s = Setup::new("launcher-stale-lock", false);
    // A lock whose owner is gone (its hook was killed at its timeout).
    let mut dead = Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait().unwrap();
    let lock = s
        .data
        .join("bin")
        .join(format!(".download-{}.lock", cargo_version()));
    fs::create_dir_all(&lock).unwrap();
    fs::write(lock.join("pid"), format!("{pid}\n")).unwrap();
    // and its half-done temp folder
    let tmp = s
        .data
        .join("bin")
        .join(format!(".tmp-{}-{pid}", cargo_version()));
    fs::create_dir_all(tmp.join("unpack")).unwrap();
    let t0 = std::time::Instant::now();
    let out = s.run(&["setup", "status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("downloaded ralph-setup status"), "{stdout}");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(10),
        "waited {:?} for a dead lock",
        t0.elapsed()
    );
    assert_eq!(s.archive_fetches(), 1);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// The targets the launcher asks for are the ones the release builds, and
/// the PRD workflow's runners download one of those: a name out of step
/// (as when Linux moved from glibc to musl) would leave every user of that
/// platform with no binaries.
#[test]
fn the_launcher_asks_for_what_the_release_builds() {
    let read = |p: &str| fs::read_to_string(Path::new(CHECKOUT).join(p)).unwrap();
    let launcher = read("plugin/ralph");
    let mapping = launcher
        .split("release_target() {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("plugin/ralph has release_target()");
    let mut asked: Vec<String> = mapping
        .lines()
        .filter_map(|l| l.split("target=\"").nth(1)?.split('"').next())
        .flat_map(|t| ["x86_64", "aarch64"].map(|arch| t.replace("$arch", arch)))
        .collect();
    asked.sort();
    asked.dedup();

    let release: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&read(".github/workflows/release.yml")).unwrap();
    let mut built: Vec<String> = release["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .expect("release.yml builds a matrix of targets")
        .iter()
        .map(|row| row["target"].as_str().unwrap().to_string())
        .collect();
    built.sort();
    assert_eq!(
        asked, built,
        "plugin/ralph's targets against release.yml's matrix"
    );
    assert!(
        built.contains(&target()),
        "this machine's target {} is released",
        target()
    );

    let prd = read(".github/workflows/ralph-prd.yml");
    let runners: Vec<&str> = prd
        .lines()
        .filter_map(|l| l.trim().strip_prefix("target="))
        .collect();
    assert!(!runners.is_empty(), "ralph-prd.yml downloads a release");
    for t in runners {
        assert!(
            built.iter().any(|b| b == t),
            "ralph-prd.yml downloads {t}, which the release does not build"
        );
    }
}

/// The client sends an exiting session's hooks SIGTERM ~60 ms after they
/// start; under load that came before `ralph-setup hook-event` could hold it
/// off, and a StopFailure's pause was lost (scenario 53, once in CI). The
/// launcher ignores TERM and HUP first thing for `event`, and the binary
/// starts with them ignored; the other verbs leave them alone.
#[test]
fn events_start_with_term_and_hup_ignored() {
    let p = Project::new("launcher-event-signals");
    let root = plugin_root(&p);
    let bins = p.path("bins");
    for b in ["ralph-setup", "ralph-stop-hook"] {
        write_exe(
            &bins.join(b),
            "#!/bin/sh\nwhile IFS= read -r l; do case $l in SigIgn:*) echo \"${l#SigIgn:}\" ;; esac; done < /proc/$$/status\n",
        );
    }
    let ignored = |verb: &str| -> u64 {
        let out = Command::new("sh")
            .arg(root.join("plugin/ralph"))
            .arg(verb)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("RALPH_BIN_DIR", &bins)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        u64::from_str_radix(text.trim(), 16).unwrap_or_else(|_| panic!("{verb}: {text:?}"))
    };
    let (term, hup) = (1 << (15 - 1), 1 << (1 - 1));
    let event = ignored("event");
    assert_eq!(event & term, term, "event: TERM ignored ({event:x})");
    assert_eq!(event & hup, hup, "event: HUP ignored ({event:x})");
    // As they came: what this test's own process ignores (a run under
    // `nohup`, or started in the background by a script, ignores some).
    let came = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(line.trim(), 16).ok()
        })
        .unwrap_or(0);
    let stop = ignored("stop-hook");
    assert_eq!(
        stop & (term | hup),
        came & (term | hup),
        "stop-hook: TERM and HUP as they came ({stop:x}, this test's {came:x})"
    );
}
