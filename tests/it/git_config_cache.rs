//! The loop's cache of git's configuration read (`ralph_core::git_config`):
//! a Stop that reads the tree spawns no `git config` while nothing changed,
//! and a filter planted afterwards (in `.git/config`, in `~/.gitconfig`, in
//! a file an include already named, or through the environment) still never
//! runs. Real git, the real Stop hook; a `git` on PATH logs every spawn.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn chmod_x(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A loop with `--verify` (every Stop reads the tree) in a repository whose
/// `.txt` files name the filter `evil`, not yet defined anywhere; a HOME
/// whose `.gitconfig` does not exist and whose `base.cfg` includes an
/// empty `inc.cfg`; a `git` shim on PATH that logs its first argument.
struct Bench {
    p: Project,
    home: PathBuf,
    /// `evil.sh` of the plants: it touches `markers/KIND` beside itself.
    evil: PathBuf,
    log: PathBuf,
    path_env: String,
}

impl Bench {
    fn new(tag: &str) -> Bench {
        let p = Project::new(tag);
        p.git_init();
        let side = PathBuf::from(format!("{}-side", p.root.display()));
        let _ = std::fs::remove_dir_all(&side);
        let (home, bin) = (side.join("home"), side.join("bin"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let evil = side.join("evil.sh");
        std::fs::write(
            &evil,
            "#!/bin/sh\nmkdir -p \"$(dirname \"$0\")/markers\"\ntouch \"$(dirname \"$0\")/markers/$1\"\ncat\n",
        )
        .unwrap();
        chmod_x(&evil);
        let real = String::from_utf8(
            Command::new("sh")
                .args(["-c", "command -v git"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let log = side.join("spawns");
        std::fs::write(
            bin.join("git"),
            format!(
                "#!/bin/sh\necho \"$1\" >> {}\nexec {} \"$@\"\n",
                log.display(),
                real.trim()
            ),
        )
        .unwrap();
        chmod_x(&bin.join("git"));
        // The repository's own config includes the (empty) `inc.cfg`.
        std::fs::write(home.join("inc.cfg"), "").unwrap();
        git_at_home(
            &p.root,
            &home,
            &[
                "config",
                "include.path",
                &home.join("inc.cfg").display().to_string(),
            ],
        );
        p.write(".gitattributes", "*.txt filter=evil\n");
        // Every turn writes the same size: git must clean the file to
        // compare it (a size change would tell it without the filter).
        p.write("a.txt", "turn 0\n");
        p.write(".gitignore", ".claude/\n");
        git_at_home(&p.root, &home, &["add", "-A"]);
        git_at_home(&p.root, &home, &["commit", "-qm", "base"]);
        let path_env = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let b = Bench {
            p,
            home,
            evil,
            log,
            path_env,
        };
        let out = run(
            b.hook(SETUP, &["hook-prompt"]),
            Stdin::Bytes(&prompt_input(
                &b.p.root,
                "/ralph:ralph-loop Work. --max-iterations 50 --verify \"true\"",
            )),
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(b.p.loop_paths().state.exists(), "{out:?}");
        b
    }

    fn hook(&self, bin: &str, args: &[&str]) -> Command {
        let mut c = command(bin, &self.p, args);
        c.env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_CONFIG_SYSTEM")
            .env("PATH", &self.path_env);
        c
    }

    /// One turn: `a.txt` changes (so git must clean it to compare), a Stop
    /// reads the tree. How many `git config` it spawned.
    fn turn(&self, n: usize, env: &[(&str, &str)]) -> usize {
        self.p.write("a.txt", format!("turn {n}\n"));
        // An edited turn: the no-progress breaker stays out of the way.
        self.p.guard_saw(SESSION, "Edit");
        let before = self.config_reads();
        let mut cmd = self.hook(STOP, &[]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = run(cmd, Stdin::Bytes(&stop_input(&self.p.root, "working")));
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(out.is_block(), "the loop goes on: {out:?}");
        self.config_reads() - before
    }

    fn config_reads(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "config")
            .count()
    }

    /// A warm cache: the first Stop reads (once the files are old enough
    /// not to be racy), the second reads nothing and leaves the cache as is.
    fn warm(&self) {
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(self.turn(1, &[]), 1, "the first Stop reads the config");
        let cache = self.p.loop_paths().git_config;
        let written = std::fs::metadata(&cache)
            .expect("the cache is written")
            .modified()
            .unwrap();
        assert_eq!(self.turn(2, &[]), 0, "nothing changed: no `git config`");
        assert_eq!(
            std::fs::metadata(&cache).unwrap().modified().unwrap(),
            written
        );
    }

    fn filter(&self) -> String {
        format!(
            "[filter \"evil\"]\n\tclean = {} clean\n",
            self.evil.display()
        )
    }

    /// The plant is real: plain git, in the same environment, runs it.
    fn assert_ran_by_plain_git(&self, env: &[(&str, &str)]) {
        self.p.write("a.txt", "turn 9\n");
        let mut c = Command::new("git");
        c.args(["status"])
            .current_dir(&self.p.root)
            .env("HOME", &self.home);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap();
        assert!(self.ran(), "plain git did not run the planted filter");
    }

    fn ran(&self) -> bool {
        self.evil.with_file_name("markers").join("clean").exists()
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.home.parent().unwrap());
    }
}

#[test]
fn a_filter_planted_in_the_repository_config_after_the_cache_is_warm_never_runs() {
    let b = Bench::new("cfgcache-repo");
    b.warm();
    let mut cfg = std::fs::read_to_string(b.p.path(".git/config")).unwrap();
    cfg.push_str(&b.filter());
    std::fs::write(b.p.path(".git/config"), cfg).unwrap();
    // The plant is real (plain git runs it), then forgotten.
    b.assert_ran_by_plain_git(&[]);
    std::fs::remove_dir_all(b.evil.with_file_name("markers")).unwrap();
    let reads = b.turn(3, &[]);
    assert!(!b.ran(), "the planted filter ran");
    assert_eq!(reads, 1, "a changed .git/config is read again");
    // The Stop put the key back (`git_watch`): the config changed again,
    // and is read once more, then cached.
    let config = std::fs::read_to_string(b.p.path(".git/config")).unwrap();
    assert!(!config.contains("filter \"evil\""), "{config}");
    std::thread::sleep(Duration::from_millis(250));
    assert!(b.turn(4, &[]) <= 1);
    assert_eq!(b.turn(5, &[]), 0, "and cached again");
    assert!(!b.ran(), "the cached read forgot the filter");
}

#[test]
fn a_filter_planted_in_a_new_user_config_never_runs() {
    let b = Bench::new("cfgcache-home");
    b.warm();
    std::fs::write(b.home.join(".gitconfig"), b.filter()).unwrap();
    let reads = b.turn(3, &[]);
    assert!(!b.ran(), "the planted filter ran");
    assert_eq!(reads, 1, "a ~/.gitconfig that appeared is read");
    b.assert_ran_by_plain_git(&[]);
}

#[test]
fn a_filter_planted_in_an_empty_included_file_never_runs() {
    let b = Bench::new("cfgcache-include");
    b.warm();
    // Same inode, and the size of a real plant: only its stat tells.
    std::fs::write(b.home.join("inc.cfg"), b.filter()).unwrap();
    let reads = b.turn(3, &[]);
    assert!(!b.ran(), "the planted filter ran");
    assert_eq!(reads, 1, "a changed include is read again");
    b.assert_ran_by_plain_git(&[]);
}

#[test]
fn a_filter_given_through_the_environment_never_reaches_git() {
    let b = Bench::new("cfgcache-env");
    b.warm();
    let clean = format!("{} clean", b.evil.display());
    let env = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "filter.evil.clean"),
        ("GIT_CONFIG_VALUE_0", clean.as_str()),
    ];
    let reads = b.turn(3, &env);
    assert!(!b.ran(), "the filter from the environment ran");
    assert_eq!(reads, 0, "no file changed: the cache holds");
    let params = format!("'filter.evil.clean'='{clean}'");
    assert_eq!(b.turn(4, &[("GIT_CONFIG_PARAMETERS", params.as_str())]), 0);
    assert!(!b.ran(), "the filter from GIT_CONFIG_PARAMETERS ran");
    b.assert_ran_by_plain_git(&env);
}

#[test]
fn a_cache_written_by_anyone_but_ralph_is_not_trusted() {
    let b = Bench::new("cfgcache-forged");
    b.warm();
    // An interpreter run by the agent rewrites the cache (here: the same
    // entries, one byte more); a forged cache could leave out a driver
    // planted since. Its seal no longer matches: git's config is read again.
    let cache = b.p.loop_paths().git_config;
    let mut text = std::fs::read_to_string(&cache).unwrap();
    text.push(' ');
    std::fs::write(&cache, text).unwrap();
    assert_eq!(b.turn(3, &[]), 1, "a forged cache is read past");
    assert_eq!(b.turn(4, &[]), 0, "and ralph's own write is trusted again");
}
