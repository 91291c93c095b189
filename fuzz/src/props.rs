//! The properties the fuzz targets check, one function per target.
//!
//! Shared by the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`) and by the
//! ordinary test `tests/it/hardening_corpus.rs`, which feeds every file under
//! `tests/corpus/<target>/` to the same function, so a crash found once stays
//! a regression test in `cargo test`. Each function panics when a property
//! fails; inputs that are out of a target's domain return early.
//!
//! Only std, serde_json, ralph-core and ralph-policy are used here, so the file
//! compiles in both crates.

use ralph_core::{args, frontmatter, hook_input::HookInput, prd::Prd, state, transcript};
use ralph_policy::{LoopContext, Policy, PolicySource, ToolCall, command_policy, protect, shell};
use serde_json::Value;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// A property: panics when the input breaks it.
pub(super) type Property = fn(&[u8]);

/// Every target by name, for the corpus runner.
pub(super) const TARGETS: &[(&str, Property)] = &[
    ("hook_input", hook_input),
    ("state", state_file),
    ("prd", prd),
    ("args", args),
    ("transcript", transcript_tail),
    ("frontmatter", frontmatter_split),
    ("policy", policy_file),
    ("canon", canon),
];

// ---------------------------------------------------------------- hook input

/// A reader that hands out `data` one byte at a time up to `limit` and then
/// fails, like a pipe the client keeps open after the first JSON value: a
/// hook that reads past the value would block there forever.
struct OpenPipe<'a> {
    data: &'a [u8],
    pos: usize,
    limit: usize,
}

impl Read for OpenPipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.limit {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "read past the first JSON value: a real pipe would block here",
            ));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        buf[0] = self.data[self.pos];
        self.pos += 1;
        Ok(1)
    }
}

/// `HookInput::read` agrees with a plain parse of the first JSON value, keeps
/// string fields verbatim, and never reads past a complete object.
pub(super) fn hook_input(data: &[u8]) {
    let got = HookInput::read(data);
    let mut stream = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let first = stream.next();
    let end = stream.byte_offset();
    match (&got, first) {
        (Ok(input), Some(Ok(Value::Object(map)))) => {
            let text = |k: &str| map.get(k).and_then(Value::as_str);
            assert_eq!(input.session_id.as_deref(), text("session_id"));
            assert_eq!(input.cwd.as_deref(), text("cwd"));
            assert_eq!(input.transcript_path.as_deref(), text("transcript_path"));
            assert_eq!(
                input.last_assistant_message.as_deref(),
                text("last_assistant_message")
            );
            assert_eq!(input.prompt.as_deref(), text("prompt"));
            assert_eq!(input.tool_name.as_deref(), text("tool_name"));
            assert_eq!(
                input.stop_hook_active,
                map.get("stop_hook_active") == Some(&Value::Bool(true))
            );
            assert_eq!(input.tool_input.as_ref(), map.get("tool_input"));
            // An object ends at its `}`: nothing after it may be needed.
            let pipe = OpenPipe {
                data,
                pos: 0,
                limit: end,
            };
            let again = HookInput::read(pipe)
                .unwrap_or_else(|e| panic!("read waited past the first value: {e}"));
            assert_eq!(&again, input);
        }
        (Ok(_), other) => panic!("read gave Ok where the first value is {other:?}"),
        (Err(_), Some(Ok(Value::Object(_)))) => {
            panic!("read failed on an object: {got:?}")
        }
        (Err(_), _) => {}
    }
}

// ---------------------------------------------------------------- state file

/// Render-then-parse gives the same state with the prompt byte-exact;
/// `with_iteration` changes only the iteration and `updated_text` gives
/// exactly the updated state, on rendered files and on any file that parses.
pub(super) fn state_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s = match state::LoopState::parse(text) {
        Ok(s) => s,
        Err(e) => {
            assert!(!e.field().is_empty());
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let mut expect = s.clone();
    // Story ids mean nothing without a PRD, and render writes them only with one.
    if expect.prd_file.is_none() {
        expect.story_ids.clear();
    }
    let rendered = s.render();
    let back = state::LoopState::parse(&rendered)
        .unwrap_or_else(|e| panic!("render output does not parse: {e}\n{rendered}"));
    assert_eq!(back, expect, "render-then-parse changed the state");
    assert_eq!(back.prompt.as_bytes(), s.prompt.as_bytes());

    for n in [0, 1, s.iteration.saturating_add(1), u64::MAX] {
        let t = state::with_iteration(&rendered, n).expect("rendered file has frontmatter");
        let b = state::LoopState::parse(&t).expect("with_iteration output parses");
        assert_eq!(
            b,
            state::LoopState {
                iteration: n,
                ..expect.clone()
            }
        );
    }

    // On the file as the user (or the official plugin) wrote it.
    let next = s.iteration.saturating_add(1);
    let t = state::with_iteration(text, next).expect("a parsed file has frontmatter");
    let b = state::LoopState::parse(&t)
        .unwrap_or_else(|e| panic!("with_iteration made a valid file invalid: {e}\n{t}"));
    // A line edit keeps everything; a fresh render (the fallback when a line
    // edit would not read back right) drops story ids that have no PRD.
    assert!(
        b == state::LoopState {
            iteration: next,
            ..s.clone()
        } || b
            == state::LoopState {
                iteration: next,
                ..expect.clone()
            },
        "with_iteration changed more than the iteration: {b:?}"
    );
    let body = frontmatter::split(text).map(|x| x.body);
    assert_eq!(frontmatter::split(&t).map(|x| x.body), body);

    // Any update of the file reads back as exactly the updated state.
    let claimed = state::LoopState {
        session_id: "fuzz-session \"q\"\nline two".into(),
        iteration: s.iteration.wrapping_mul(3),
        ..expect.clone()
    };
    let t = state::updated_text(text, &claimed);
    let b = state::LoopState::parse(&t)
        .unwrap_or_else(|e| panic!("updated_text made a valid file invalid: {e}\n{t}"));
    assert_eq!(b, claimed, "updated_text did not give the updated state");
}

// ---------------------------------------------------------------- PRD

/// Parse, validate and pick the next story consistently: a picked story
/// fails and has every dependency passing; a valid PRD with a failing story
/// always has one to run; a reported cycle is a real cycle.
pub(super) fn prd(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = Prd::parse(text) else {
        return;
    };
    let valid = p.validate();
    let _ = p.unmet_dependencies();
    let (passing, total) = p.progress();
    assert!(passing <= total);
    assert_eq!(total, p.stories.len());
    match p.next_runnable() {
        Some(s) => {
            assert!(!s.passes);
            for d in &s.depends_on {
                assert!(
                    p.stories.iter().any(|o| &o.id == d && o.passes),
                    "next story {} waits on {d}",
                    s.id
                );
            }
            // No runnable story comes before it in (priority, file order).
            let key =
                |st: &ralph_core::prd::Story| (st.priority.is_none(), st.priority.unwrap_or(0));
            let runnable = |st: &ralph_core::prd::Story| {
                !st.passes
                    && st
                        .depends_on
                        .iter()
                        .all(|d| p.stories.iter().any(|o| &o.id == d && o.passes))
            };
            let pos = p
                .stories
                .iter()
                .position(|x| std::ptr::eq(x, s))
                .expect("picked from the list");
            for (i, o) in p.stories.iter().enumerate() {
                if runnable(o) {
                    assert!(
                        (key(s), pos) <= (key(o), i),
                        "{} picked before {}",
                        s.id,
                        o.id
                    );
                }
            }
        }
        None => {
            if valid.is_ok() {
                assert!(
                    p.all_pass(),
                    "a valid PRD with failing stories has none to run"
                );
            }
        }
    }
    if let Err(ralph_core::prd::PrdError::Cycle(c)) = &valid {
        let ids: Vec<&str> = c.split(" -> ").collect();
        assert!(ids.len() >= 2);
        assert_eq!(ids.first(), ids.last());
        // Ids may themselves contain " -> "; check only when they do not.
        if p.stories.iter().all(|s| !s.id.contains(" -> ")) {
            for w in ids.windows(2) {
                let from = p.story(w[0]).expect("cycle names a story");
                assert!(from.depends_on.iter().any(|d| d == w[1]), "{c}");
            }
        }
    }
}

// ---------------------------------------------------------------- arguments

/// The prompt is a cut of the input: its pieces (joined by single spaces)
/// appear verbatim and in order in the typed text; with no option in the
/// text, the prompt is the text trimmed.
pub(super) fn args(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(rest) = args::loop_command_args(text) {
        assert!(text.ends_with(rest));
    }
    let parsed = args::parse_command_line(text);
    let argv: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    let _ = args::parse_argv(&argv);
    let Ok(a) = parsed else {
        return;
    };
    assert_eq!(a.prompt.trim(), a.prompt, "prompt not trimmed");
    if !text.contains("--") && !text.contains("-h") {
        assert_eq!(a.prompt, text.trim(), "no option, yet the prompt changed");
    }
    assert!(
        is_cut_of(a.prompt.as_bytes(), text.as_bytes()),
        "prompt {:?} is not a cut of {text:?}",
        a.prompt
    );
    for v in [&a.prd_file, &a.prompt_file].into_iter().flatten() {
        if !v.contains('\\') {
            assert!(text.contains(v.as_str()), "value {v:?} not in the input");
        }
    }
}

/// Can `p` be written as `s1 " " s2 " " ... sk`, each `si` a substring of
/// `t`, in order and not overlapping? (A space of `p` is either a literal
/// space or a joint where text was cut out.)
pub(super) fn is_cut_of(p: &[u8], t: &[u8]) -> bool {
    if p.is_empty() {
        return true;
    }
    let n = t.len();
    // reach[j]: the pieces so far match, and the current piece goes on at t[j].
    let mut reach = vec![true; n + 1];
    for &c in p {
        let mut next = vec![false; n + 1];
        let mut gap_from = None;
        for j in 0..=n {
            if !reach[j] {
                continue;
            }
            if j < n && t[j] == c {
                next[j + 1] = true;
            }
            if c == b' ' && gap_from.is_none() {
                gap_from = Some(j);
            }
        }
        if let Some(g) = gap_from {
            for x in next.iter_mut().skip(g) {
                *x = true;
            }
        }
        if !next.iter().any(|x| *x) {
            return false;
        }
        reach = next;
    }
    true
}

// ---------------------------------------------------------------- transcript

/// The backwards, block-wise reader agrees with a plain forward reading of
/// the whole file, and never fails on a bounded read.
pub(super) fn transcript_tail(data: &[u8]) {
    let path = temp_file("transcript", data);
    let whole = last_turn_text(&path, u64::MAX).expect("readable");
    assert_eq!(whole, naive_last_turn(data), "block reader disagrees");
    let dflt = last_turn_text(&path, transcript::DEFAULT_MAX_BYTES).expect("readable");
    if (data.len() as u64) <= transcript::DEFAULT_MAX_BYTES {
        assert_eq!(dflt, whole);
    }
    // A small bound: no failure, and any text found is assistant text.
    let small = u64::from(data.first().copied().unwrap_or(0)) * 7;
    let _ = last_turn_text(&path, small).expect("readable");
    let _ = std::fs::remove_file(&path);
    // One input in eight: the same file behind 80 KB of filler (more than one
    // 64 KB block, so lines straddle a block boundary) reads the same.
    if data.len().is_multiple_of(8) {
        let mut padded = Vec::new();
        while padded.len() < 80_000 {
            padded.extend_from_slice(b"{\"type\":\"api-request-blob\",\"data\":\"");
            padded.extend(std::iter::repeat_n(b'x', 4000 + padded.len() % 7));
            padded.extend_from_slice(b"\"}\n");
        }
        padded.extend_from_slice(data);
        let ppath = temp_file("transcript-padded", &padded);
        let from_padded = last_turn_text(&ppath, u64::MAX).expect("readable");
        let _ = std::fs::remove_file(ppath);
        assert_eq!(from_padded, naive_last_turn(&padded));
    }
}

/// The text of the file's last turn, read through the gate with nothing awaited.
fn last_turn_text(path: &std::path::Path, max_bytes: u64) -> std::io::Result<Option<String>> {
    let written = transcript::written(
        Some(path),
        transcript::Awaited::Nothing,
        std::time::Duration::ZERO,
    );
    Ok(written.last_turn(max_bytes, None)?.text)
}

fn temp_file(tag: &str, data: &[u8]) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    // tmpfs when there is one: the fuzzer writes a file per execution.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!(
        "ralph-props-{tag}-{}-{n}.jsonl",
        std::process::id()
    ));
    std::fs::write(&path, data).expect("temp file");
    path
}

/// The documented reading, done forwards over the whole file: the assistant
/// text blocks after the last real user prompt, oldest first.
fn naive_last_turn(data: &[u8]) -> Option<String> {
    let mut texts: Vec<String> = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        let (is_assistant, is_user) = (
            contains(line, br#""type":"assistant""#),
            contains(line, br#""type":"user""#),
        );
        if !is_assistant && !is_user {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let content = v.pointer("/message/content");
        let blocks = || content.and_then(Value::as_array).into_iter().flatten();
        match v.get("type").and_then(Value::as_str) {
            Some("assistant") if is_assistant => {
                let t: Vec<&str> = blocks()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
                if !t.is_empty() {
                    texts.push(t.join("\n"));
                }
            }
            Some("user") if !is_assistant => {
                let prompt = match content {
                    Some(Value::String(_)) => true,
                    Some(Value::Array(items)) => items
                        .iter()
                        .any(|b| b.get("type").and_then(Value::as_str) == Some("text")),
                    _ => false,
                };
                if prompt {
                    texts.clear();
                }
            }
            _ => {}
        }
    }
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------- frontmatter

/// The split's ranges are consistent, and `set_field` leaves the body byte
/// for byte and makes the field readable in the new frontmatter.
pub(super) fn frontmatter_split(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(s) = frontmatter::split(text) else {
        for key in ["iteration", "session_id"] {
            assert!(frontmatter::set_field(text, key, "1").is_none());
        }
        return;
    };
    assert!(s.yaml_start <= s.yaml_end && s.yaml_end <= text.len());
    assert_eq!(&text[s.yaml_start..s.yaml_end], s.yaml);
    assert!(text.ends_with(s.body));
    assert!(
        text.len() - s.body.len() > s.yaml_end,
        "body overlaps the yaml"
    );
    for line in s.yaml.lines() {
        assert_ne!(line.trim_end(), "---", "a closing line inside the yaml");
    }
    for (key, value) in [
        ("iteration", "42"),
        ("session_id", "\"a b\""),
        ("x-new-key", "1"),
    ] {
        let out = frontmatter::set_field(text, key, value).expect("has frontmatter");
        let t = frontmatter::split(&out).expect("still has frontmatter");
        assert_eq!(t.body, s.body, "set_field touched the body");
        let want = format!("{key}: {value}");
        assert!(
            t.yaml.lines().any(|l| l.trim_end_matches('\r') == want),
            "{want:?} not in {:?}",
            t.yaml
        );
        // Setting it again is a no-op.
        assert_eq!(
            frontmatter::set_field(&out, key, value).as_deref(),
            Some(&*out)
        );
    }
}

// ---------------------------------------------------------------- guard policy

/// A policy parses or names a line that exists; its deny/protect prefixes
/// are canonical; every rewrite runs without panicking; the whole decision
/// runs on a command taken from the input.
pub(super) fn policy_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The policy is everything before the first NUL; the command after it.
    let (policy_text, command) = text.split_once('\0').unwrap_or((text, "pnpm run test"));
    let lines = policy_text.lines().count();
    let parsed = Policy::parse(policy_text);
    let source = match parsed {
        Err(e) => {
            if let ralph_policy::PolicyError::Syntax { line, .. } = &e {
                assert!(
                    *line >= 1 && *line <= lines,
                    "error names line {line} of {lines}"
                );
            }
            PolicySource::Broken {
                path: ".ralph/command-policy".into(),
                error: e,
            }
        }
        Ok(p) => {
            for d in &p.denies {
                assert!(!d.prefix.is_empty());
                assert_eq!(command_policy::canonical_words(&d.prefix).1, d.prefix);
                assert!(d.line >= 1 && d.line <= lines);
            }
            for pr in &p.protects {
                assert!(!pr.prefix.is_empty());
                assert_eq!(command_policy::canonical_words(&pr.prefix).1, pr.prefix);
            }
            for r in &p.rewrites {
                assert!(r.line >= 1 && r.line <= lines);
                let _ = r.apply(command);
            }
            PolicySource::Loaded {
                path: ".ralph/command-policy".into(),
                policy: p,
            }
        }
    };
    let ctx = fuzz_ctx();
    let call = ToolCall {
        tool_name: "Bash".into(),
        tool_input: serde_json::json!({ "command": command }),
    };
    let d = ralph_policy::decide(&call, &source, &ctx);
    if let Some(out) = d.to_hook_output() {
        assert!(out.is_object());
    }
}

fn fuzz_ctx() -> LoopContext {
    let root = PathBuf::from("/proj");
    LoopContext {
        root: root.clone(),
        cwd: root.join("sub"),
        loop_active: true,
        loop_files: [
            ".claude/ralph-loop.local.md",
            ".claude/ralph-loop.last-injected",
            ".claude/ralph-loop.log.jsonl",
            ".claude/ralph-loop.lock",
            ".ralph/command-policy",
            ".claude/ralph-policy",
        ]
        .iter()
        .map(PathBuf::from)
        .collect(),
        prd_file: Some(PathBuf::from("prd.json")),
        prd_current: Some(r#"{"userStories":[{"id":"A","passes":false}]}"#.into()),
        ..LoopContext::default()
    }
}

/// Canonicalising twice equals once; chain splitting gives in-order ranges
/// on character boundaries; the protection check and path normalisation are
/// total (and normalisation is idempotent).
pub(super) fn canon(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Words separated by NUL or newline, as a tokenizer could hand them over.
    let words: Vec<String> = text.split(['\0', '\n']).map(str::to_string).collect();
    let (k, once) = command_policy::canonical_words(&words);
    assert!(k <= words.len());
    let (_, twice) = command_policy::canonical_words(&once);
    assert_eq!(
        twice, once,
        "canonical_words is not idempotent on {words:?}"
    );

    let segments = shell::split_chain(text);
    let mut last = 0;
    for s in &segments {
        assert!(s.start <= s.end && s.end <= text.len(), "{s:?}");
        assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
        assert!(s.start >= last, "segments out of order");
        last = s.start;
        assert_eq!(s.raw_words.len(), s.words.len());
    }
    let ctx = fuzz_ctx();
    let _ = protect::check_bash(text, &ctx);
    let _ = protect::unwrap(&words);
    let p = Path::new("/proj").join(text.replace('\0', ""));
    let n1 = protect::normalize(&p);
    assert_eq!(protect::normalize(&n1), n1);
    let q = shell::join(&once);
    let _ = shell::unquote(&q);
}
