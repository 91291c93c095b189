//! A Windows project for one test: its home folder (`…\Users\me`, the
//! profile folder Git Bash makes HOME), the project in it, and the real
//! binaries run there with the environment and hook input of a Windows
//! session.

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The binaries cargo built for this target, as absolute Windows paths
/// (cargo gives them as the build machine spells them); or those in
/// `RALPH_WINDOWS_BIN_DIR` (another build's, to compare).
pub(crate) fn bin(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("RALPH_WINDOWS_BIN_DIR") {
        return PathBuf::from(dir).join(format!("{name}.exe"));
    }
    let built = match name {
        "ralph-stop-hook" => env!("CARGO_BIN_EXE_ralph-stop-hook"),
        "ralph-guard" => env!("CARGO_BIN_EXE_ralph-guard"),
        "ralph-setup" => env!("CARGO_BIN_EXE_ralph-setup"),
        "ralph" => env!("CARGO_BIN_EXE_ralph"),
        other => panic!("no binary {other}"),
    };
    std::path::absolute(built).expect("an absolute path")
}

/// The variables of the machine the tests run on that would steer ralph
/// elsewhere (the developer's own, or Wine's passed through).
const CLEARED: &[&str] = &[
    "RALPH_DATA_DIR",
    "RALPH_BIN_DIR",
    "RALPH_CLAUDE",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_PLUGIN_DATA",
    "CLAUDE_PLUGIN_ROOT",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PID",
    "CLAUDECODE",
    "AI_AGENT",
];

/// The session every test's hooks belong to.
pub(crate) const SESSION: &str = "win-session-1";

/// A home folder with a project in it, removed on drop.
pub(crate) struct WinProject {
    /// `…\Users\me`: HOME and USERPROFILE.
    pub home: PathBuf,
    /// `…\Users\me\proj`: the hook's `cwd` and CLAUDE_PROJECT_DIR.
    pub root: PathBuf,
    base: PathBuf,
}

impl Drop for WinProject {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

impl WinProject {
    pub(crate) fn new(tag: &str) -> WinProject {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::temp_dir().join(format!(
            "ralph-win-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&base);
        let home = base.join("Users").join("me");
        let root = home.join("proj");
        for dir in [
            root.join("src"),
            root.join("tests"),
            home.join(".claude").join("projects"),
        ] {
            std::fs::create_dir_all(dir).expect("the project's folders");
        }
        WinProject { home, root, base }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("a folder");
        std::fs::write(p, text).expect("a project file");
    }

    /// ralph's data folder: `~\.claude\ralph`.
    pub(crate) fn data(&self) -> PathBuf {
        self.home.join(".claude").join("ralph")
    }

    /// The session's transcript, where the Windows client keeps it.
    pub(crate) fn transcript(&self) -> PathBuf {
        self.home
            .join(".claude")
            .join("projects")
            .join("C--Users-me-proj")
            .join(format!("{SESSION}.jsonl"))
    }

    /// The loop's authoritative state, wherever ralph put it.
    pub(crate) fn state(&self) -> Option<String> {
        let loops = std::fs::read_dir(self.data().join("loops")).ok()?;
        loops
            .flatten()
            .find_map(|e| std::fs::read_to_string(e.path().join("state.md")).ok())
    }

    /// The project's copy of the state.
    pub(crate) fn mirror(&self) -> Option<String> {
        std::fs::read_to_string(self.path(".claude/ralph-loop.local.md")).ok()
    }

    /// A program run as a hook or a user's command in this session.
    pub(crate) fn command(&self, name: &str, args: &[&str]) -> Command {
        let mut c = Command::new(bin(name));
        c.args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("USERPROFILE", &self.home)
            .env("CLAUDE_PROJECT_DIR", &self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for v in CLEARED {
            c.env_remove(v);
        }
        c
    }

    /// Run `name ARGS` with `stdin`; its output.
    pub(crate) fn run(&self, name: &str, args: &[&str], stdin: &str) -> Output {
        run_with(self.command(name, args), stdin)
    }

    /// A hook's JSON answer (None when it printed nothing).
    pub(crate) fn hook(&self, name: &str, args: &[&str], input: &Value) -> Option<Value> {
        let out = self.run(name, args, &input.to_string());
        parse(&out)
    }

    /// The prompt hook, as the client runs it for `prompt`.
    pub(crate) fn prompt(&self, prompt: &str) -> Option<Value> {
        let input = json!({"session_id": SESSION, "cwd": self.root,
            "transcript_path": self.transcript(),
            "hook_event_name": "UserPromptSubmit", "prompt": prompt});
        self.hook("ralph-setup", &["hook-prompt"], &input)
    }

    /// The Stop the client sends once it has written a turn saying `said`.
    pub(crate) fn stop(&self, said: &str) -> Option<Value> {
        self.client_writes_turn(said, "\n");
        self.hook("ralph-stop-hook", &[], &self.stop_input(said))
    }

    pub(crate) fn stop_input(&self, said: &str) -> Value {
        json!({"session_id": SESSION, "transcript_path": self.transcript(),
            "cwd": self.root, "hook_event_name": "Stop", "stop_hook_active": false,
            "permission_mode": "default", "last_assistant_message": said})
    }

    /// The client's lines for one turn (the feed, then the words), ended
    /// with `eol`.
    pub(crate) fn client_writes_turn(&self, said: &str, eol: &str) {
        static TURNS: AtomicUsize = AtomicUsize::new(0);
        let n = TURNS.fetch_add(1, Ordering::SeqCst);
        let t = self.transcript();
        std::fs::create_dir_all(t.parent().expect("a folder")).expect("the projects folder");
        let feed = json!({"type": "user", "message": {"role": "user",
            "content": format!("Stop hook feedback:\nturn {n}")}});
        let line = json!({"type": "assistant", "uuid": format!("u-{n}"),
            "message": {"id": format!("m-{n}"), "role": "assistant",
                "content": [{"type": "text", "text": said}]}});
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&t)
            .expect("the transcript");
        write!(f, "{feed}{eol}{line}{eol}").expect("the transcript");
    }
}

/// Run a command with `stdin` written and closed.
pub(crate) fn run_with(mut c: Command, stdin: &str) -> Output {
    let mut child = c.spawn().expect("the program starts");
    let mut pipe = child.stdin.take().expect("stdin");
    let data = stdin.as_bytes().to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let out = child.wait_with_output().expect("the program ends");
    let _ = feeder.join();
    out
}

/// The JSON a hook printed, if any; panics on anything else.
pub(crate) fn parse(out: &Output) -> Option<Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    Some(serde_json::from_str(t).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {t}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    }))
}

/// The text a Stop hands the model, or its reason to block.
pub(crate) fn feed(out: Option<&Value>) -> String {
    let Some(o) = out else {
        return String::new();
    };
    [
        o.get("reason"),
        o.pointer("/hookSpecificOutput/additionalContext"),
        o.get("systemMessage"),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_str)
    .collect::<Vec<_>>()
    .join("\n")
}

/// Whether a Stop keeps the session going (blocks, or hands a feed).
pub(crate) fn goes_on(out: Option<&Value>) -> bool {
    out.is_some_and(|o| {
        o.get("decision").and_then(Value::as_str) == Some("block")
            || o.pointer("/hookSpecificOutput/additionalContext").is_some()
    })
}

/// A path as text, for messages.
pub(crate) fn shown(p: &Path) -> String {
    p.display().to_string()
}
