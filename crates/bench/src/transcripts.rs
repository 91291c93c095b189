//! Realistic transcripts: compact JSONL in Claude Code's envelope, mostly
//! large `api-request-blob` lines, with user, assistant, `tool_use`,
//! `tool_result`, `attachment` and `cost-state` lines.

use serde_json::{Value, json};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::MIB;
use crate::fixtures::{PROMISELESS, Rng, SESSION, filler};

/// The transcripts the cases read, written once per bench run.
pub(crate) struct Transcripts {
    /// One small last turn: a working turn (a file edit, then text).
    pub small: PathBuf,
    /// 100 MB of past turns, then the small transcript's lines.
    pub big: PathBuf,
    /// A last turn that only talked.
    pub talk: PathBuf,
    /// A last turn of over 6 MiB (request blobs inside the turn).
    pub long_turn: PathBuf,
    pub long_turn_bytes: u64,
}

impl Transcripts {
    /// Write them under `dir`, always the same bytes (a fixed seed).
    pub(crate) fn write(dir: &Path) -> std::io::Result<Transcripts> {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let pool = BlobPool::new(&mut rng);
        fs::create_dir_all(dir)?;
        let last = last_turn(&mut Tx::new(&mut rng));
        let small = dir.join("small.jsonl");
        fs::write(&small, &last)?;
        let big = dir.join("big.jsonl");
        write_transcript(&big, 100 * MIB, &last, &pool, &mut rng)?;
        let talk = dir.join("talk.jsonl");
        fs::write(&talk, talk_turn(&mut Tx::new(&mut rng)))?;
        let long_turn = dir.join("long-last-turn.jsonl");
        let long_turn_bytes = write_long_last_turn(&long_turn, &pool, &mut rng)?;
        Ok(Transcripts {
            small,
            big,
            talk,
            long_turn,
            long_turn_bytes,
        })
    }
}

/// Request blobs of a few sizes, JSON-escaped once: a 100 MB transcript is
/// made of hundreds of them and re-escaping each would dominate setup.
struct BlobPool(Vec<String>);

impl BlobPool {
    fn new(rng: &mut Rng) -> BlobPool {
        let sizes = [150_000, 300_000, 450_000, 600_000, 800_000, 1_100_000];
        BlobPool(
            sizes
                .iter()
                .map(|&size| {
                    let mut messages = Vec::new();
                    let mut len = 0;
                    while len < size {
                        let chunk_len = rng.range(2_000, 20_000);
                        let chunk = filler(rng, chunk_len);
                        len += chunk.len();
                        let id = format!("toolu_{:016x}", rng.next());
                        messages.push(json!({"role": "assistant", "content": [
                            {"type": "text", "text": "Let me look at the failing case."},
                            {"type": "tool_use", "id": id, "name": "Read",
                             "input": {"file_path": "/home/me/proj/src/parse.rs"}},
                        ]}));
                        messages.push(json!({"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": id, "content": chunk},
                        ]}));
                    }
                    let body = json!({
                        "model": "claude-sonnet-4-5",
                        "max_tokens": 32000,
                        "stream": true,
                        "system": [{"type": "text", "text": filler(rng, 12_000)}],
                        "messages": messages,
                    });
                    serde_json::to_string(&body.to_string()).unwrap_or_default()
                })
                .collect(),
        )
    }

    fn pick(&self, rng: &mut Rng) -> &str {
        &self.0[rng.range(0, self.0.len())]
    }
}

/// Writes transcript lines in Claude Code's shape (compact JSON, one object a
/// line, envelope fields around `type` and `message`).
struct Tx<'a> {
    rng: &'a mut Rng,
    n: u64,
}

impl<'a> Tx<'a> {
    fn new(rng: &'a mut Rng) -> Tx<'a> {
        Tx { rng, n: 0 }
    }

    fn uuid(&mut self) -> String {
        let a = self.rng.next();
        let b = self.rng.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }

    fn stamp(&mut self) -> String {
        self.n += 1;
        let s = self.n;
        format!(
            "2026-11-29T{:02}:{:02}:{:02}.{:03}Z",
            (s / 3600) % 24,
            (s / 60) % 60,
            s % 60,
            s % 1000
        )
    }

    fn envelope(&mut self, kind: &str, mut extra: Value) -> String {
        let mut v = json!({
            "parentUuid": self.uuid(),
            "isSidechain": false,
            "userType": "external",
            "cwd": "/home/me/proj",
            "sessionId": SESSION,
            "version": "2.1.328",
            "gitBranch": "main",
            "type": kind,
            "uuid": self.uuid(),
            "timestamp": self.stamp(),
        });
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object_mut()) {
            v.append(extra);
        }
        let mut line = v.to_string();
        line.push('\n');
        line
    }

    fn prompt(&mut self, text: &str) -> String {
        self.envelope(
            "user",
            json!({"message": {"role": "user", "content": text}}),
        )
    }

    fn assistant(&mut self, content: Value) -> String {
        let id = format!("msg_{:016x}", self.rng.next());
        let req = format!("req_{:016x}", self.rng.next());
        self.envelope(
            "assistant",
            json!({"message": {"id": id, "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [content], "stop_reason": null,
                "usage": {"input_tokens": 4, "output_tokens": 120}}, "requestId": req}),
        )
    }

    fn text(&mut self, text: &str) -> String {
        self.assistant(json!({"type": "text", "text": text}))
    }

    fn edit(&mut self) -> (String, String) {
        let id = format!("toolu_{:016x}", self.rng.next());
        let line = self.assistant(json!({"type": "tool_use", "id": id, "name": "Edit",
            "input": {"file_path": "src/parse.rs", "old_string": "a", "new_string": "b"}}));
        (line, id)
    }

    fn tool_use(&mut self) -> (String, String) {
        let id = format!("toolu_{:016x}", self.rng.next());
        let line = self.assistant(json!({"type": "tool_use", "id": id, "name": "Bash",
            "input": {"command": "cargo test -p parser 2>&1 | tail -40", "description": "Run the parser tests"}}));
        (line, id)
    }

    fn tool_result(&mut self, id: &str, len: usize) -> String {
        let out = filler(self.rng, len);
        self.envelope(
            "user",
            json!({"message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": out}]}}),
        )
    }

    fn attachment(&mut self, len: usize) -> String {
        let content = filler(self.rng, len);
        self.envelope(
            "attachment",
            json!({"attachment": {"type": "file", "filename": "src/parse.rs", "content": content}}),
        )
    }

    fn blob(&mut self, pool: &BlobPool) -> String {
        let uuid = self.uuid();
        let stamp = self.stamp();
        // Built by hand around the pre-escaped body (see BlobPool).
        format!(
            "{{\"type\":\"api-request-blob\",\"uuid\":\"{uuid}\",\"timestamp\":\"{stamp}\",\"sessionId\":\"{SESSION}\",\"blob\":{}}}\n",
            pool.pick(self.rng)
        )
    }

    fn small(&mut self, kind: &str) -> String {
        self.envelope(kind, json!({"costUSD": 0.0421, "durationMs": 5120}))
    }

    /// One past turn: a prompt, tool steps each with its request blob, a final text.
    fn turn(&mut self, pool: &BlobPool) -> String {
        let mut out = self.prompt("Ralph loop: keep going. Fix the next failing test.");
        for _ in 0..self.rng.range(2, 7) {
            out += &self.blob(pool);
            if self.rng.next().is_multiple_of(2) {
                let len = self.rng.range(2_000, 30_000);
                out += &self.attachment(len);
            }
            out += &self.text("Running the parser tests to see what fails.");
            let (line, id) = self.tool_use();
            out += &line;
            let len = self.rng.range(500, 8_000);
            out += &self.tool_result(&id, len);
        }
        out += &self.blob(pool);
        out += &self.text("Fixed the escaped-quote case; one more failure remains.");
        out += &self.small("cost-state");
        out
    }
}

/// The last turn, shared by the 1 KB and the 100 MB transcripts so the hook
/// finds the same words in both: the loop's feedback as the prompt, a file
/// edit (what a working iteration does), then the final text without the
/// promise.
fn last_turn(tx: &mut Tx) -> String {
    let mut out = tx.prompt("Stop hook feedback:\nMake every test in tests/ pass. (iteration 7)");
    let (line, id) = tx.edit();
    out += &line;
    out += &tx.tool_result(&id, 40);
    out += &tx.text(PROMISELESS);
    out
}

/// A turn that only talked: a stall, judged from its tools without git.
fn talk_turn(tx: &mut Tx) -> String {
    let mut out = tx.prompt("Stop hook feedback:\nMake every test in tests/ pass. (iteration 7)");
    out += &tx.text(PROMISELESS);
    out
}

fn write_transcript(
    path: &Path,
    size: u64,
    last: &str,
    pool: &BlobPool,
    rng: &mut Rng,
) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut written = 0u64;
    let mut tx = Tx::new(rng);
    while written + (last.len() as u64) < size {
        let turn = tx.turn(pool);
        written += turn.len() as u64;
        w.write_all(turn.as_bytes())?;
    }
    w.write_all(last.as_bytes())?;
    w.flush()
}

/// A transcript whose last turn holds over 6 MiB of request blobs after its
/// prompt: past the hook's 4 MiB read bound, the worst the fallback can meet.
/// Returns the size of that last turn.
fn write_long_last_turn(path: &Path, pool: &BlobPool, rng: &mut Rng) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut tx = Tx::new(rng);
    w.write_all(tx.turn(pool).as_bytes())?;
    w.write_all(
        tx.prompt("Stop hook feedback:\nMake every test in tests/ pass. (iteration 7)")
            .as_bytes(),
    )?;
    let mut turn_bytes = 0;
    while turn_bytes < 6 * MIB as usize {
        let mut step = tx.blob(pool);
        step += &tx.text("Running the parser tests to see what fails.");
        let (line, id) = tx.tool_use();
        step += &line;
        step += &tx.tool_result(&id, 4_000);
        turn_bytes += step.len();
        w.write_all(step.as_bytes())?;
    }
    let last = tx.text(PROMISELESS);
    w.write_all(last.as_bytes())?;
    w.flush()?;
    Ok((turn_bytes + last.len()) as u64)
}
