//! Gathering a Stop's inputs: the one place that reads files for a Stop,
//! and the rules for what it reads (whose loop it is, what the user's queue
//! asks, when the working tree must be looked at). Does I/O: the loop files,
//! the transcript's end with the messages the user queued, and `git status`
//! only when the rule says so.

use super::completion;
use crate::blocker::Blocker;
use crate::breaker::{self, TurnEffect};
use crate::budget::MessageUsage;
use crate::frontmatter;
use crate::hook_input::HookInput;
use crate::hook_output::Reader;
use crate::paths::LoopPaths;
use crate::prd::Prd;
use crate::prd::PrdReadError;
use crate::queued::{self, QueueAction, Queued};
use crate::reinject::Injected;
use crate::review::ReviewLog;
use crate::state::LoopState;
use crate::state::owns;
use crate::state_file::{Mirror, StateFile};
use crate::store::StoreError;
use crate::tamper::Tamper;
use crate::transcript::{self, CountedThrough, Turn, Written};
use crate::verify::VerifyLog;
use crate::worktree;

/// What a Stop found in the project.
#[derive(Debug)]
pub enum Gathered {
    /// Nothing to do: the loop is gone (cancelled meanwhile) or another session's.
    NotOurs,
    /// The state file cannot be used: the loop stops.
    Corrupt(Corrupt),
    /// The loop's folder was changed outside ralph: the loop pauses.
    Tampered(crate::tamper::Tamper),
    Loop(Box<StopInputs>),
}

/// `--parallel`: what a Stop found left of workers, which its apply removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WorkerCleanup {
    /// The board against the running workers (see `parallel::hooks::LaneSync`).
    pub lanes: crate::parallel::hooks::LaneSync,
    /// Branches the client made for a worktree it then failed to make
    /// (see `parallel::strays`).
    pub strays: Vec<String>,
}

/// A state file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt {
    /// The iteration it was at, when its line is readable (else 0).
    pub iteration: u64,
    /// What is wrong with it, naming the field.
    pub why: String,
}

/// Everything a Stop of this session's loop is decided on.
#[derive(Debug)]
pub struct StopInputs {
    pub session: String,
    /// The state file's text (saved by editing single lines of it).
    pub text: String,
    pub state: LoopState,
    /// What the assistant said this turn, as far as it can be seen.
    pub said: Option<String>,
    /// What the turn did to the tree, judged from its tools.
    pub effect: TurnEffect,
    /// PRD mode: the PRD as it reads now.
    pub prd: Option<Result<Prd, PrdReadError>>,
    pub blocker: Option<Blocker>,
    /// The story fed last, and how many times in a row (the state's; a
    /// loop from before kept it in `last-injected`).
    pub last_injected: Option<Injected>,
    /// The generation of each record as found (its seal's): a record
    /// written after the state was saved is taken up (`records`).
    pub records_found: crate::records::RecordGens,
    /// Check results on file.
    pub verify_log: VerifyLog,
    /// The reviewers' verdicts on file.
    pub review_log: ReviewLog,
    /// The loop's scores so far (`score::history`).
    pub scores: crate::score::history::History,
    /// Git's own files and the client's settings, when they moved since the
    /// last Stop (`git_watch`): where they are, and what changed since the
    /// loop's start.
    pub(crate) watch: Option<(
        crate::git_watch::Places,
        Vec<crate::git_watch::WatchedChange>,
    )>,
    /// The suite's memory (`suite`), read when this Stop may score or
    /// judge a claim (`needs_suite`), with the generation its seal names.
    pub(crate) suite: Option<crate::suite::Suite>,
    pub(crate) suite_found: u64,
    /// The working tree now, when the plan needs it (`None` outside git).
    pub fingerprint: Option<String>,
    /// Messages the user typed meanwhile, still waiting in the client's queue.
    pub queued: Vec<Queued>,
    /// Which turn this Stop is about (see [`turn_key`]).
    pub turn_key: Option<String>,
    /// The `uuid` of the transcript's newest assistant line as read (the
    /// turn's, or the line a duplicate's key was made from).
    pub newest_line: Option<String>,
    /// The guard saw this session call tools since the last Stop.
    pub called_tools: bool,
    /// What the guard's record of the turn's tools held (an empty one is
    /// the next turn's as it is: no reset to write).
    pub tool_record: ToolRecord,
    /// The usage of the turn's assistant messages, as the transcript has them.
    pub usage: Vec<MessageUsage>,
    /// Where the user reads this Stop's words: `ralph run`'s terminal when
    /// the hook holds the run's pass, else the session.
    pub(crate) reader: Reader,
    /// The transcript did not hold the turn when the wait's bound passed
    /// (how long it waited): the Stop decides on the client's words.
    pub transcript_late: Option<std::time::Duration>,
    /// Unix time of the Stop.
    pub now: u64,
    /// The project's mirror of the state, against the state.
    pub mirror: Mirror,
    /// `--parallel`: the stories whose worker still runs (`None`: a worker
    /// whose task names no story), from the hook's `background_tasks`.
    pub in_flight: Vec<Option<String>>,
    /// `--fresh`: a worker runs in the background (see `decide::Workers`).
    pub fresh_worker: bool,
    /// `--parallel`: what `apply` removes of workers gone.
    pub(crate) cleanup: WorkerCleanup,
    /// The project root.
    pub root: std::path::PathBuf,
    /// There is no state file yet: `text` is the project's file, adopted.
    pub adopting: bool,
    /// Where the state file's seal was (see `seal`): inside and intact,
    /// its next save is one rename.
    pub seal_form: crate::seal::Form,
}

/// The guard's record of the turn's tools, as gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolRecord {
    /// No record (a loop adopted before the guard's first call), or one
    /// that could not be read.
    Absent,
    /// There and empty: no guarded tool was called this turn.
    Empty,
    /// There with lines.
    Written,
}

impl ToolRecord {
    /// The record's kind, and the tools `session` called this turn (`None`
    /// when nothing was recorded).
    fn read(paths: &LoopPaths, session: &str) -> (ToolRecord, Option<Vec<String>>) {
        let record = crate::turn_tools::read(&paths.turn_tools);
        let kind = match record.as_deref() {
            None => ToolRecord::Absent,
            Some("") => ToolRecord::Empty,
            Some(_) => ToolRecord::Written,
        };
        (
            kind,
            record.map(|r| crate::turn_tools::tools_of(&r, session)),
        )
    }
}

impl StopInputs {
    /// Read what this Stop needs, under the loop lock; the transcript
    /// once the wait for it is over (before the lock was taken).
    pub fn gather(
        paths: &LoopPaths,
        input: &HookInput,
        transcript: &Written,
    ) -> Result<Gathered, StoreError> {
        let session = input.session();
        let found = match loop_state(paths, session)? {
            Ok(found) => found,
            Err(gathered) => return Ok(gathered),
        };
        let (text, state, adopting) = (found.text, found.state, found.adopting);
        let last_message = input.last_assistant_message.as_deref();
        let turn = transcript
            .last_turn(transcript::DEFAULT_MAX_BYTES, counted_through(&state))
            .ok()
            .map(|t| this_turn(t, transcript));
        let (tool_record, recorded) = ToolRecord::read(paths, &state.session_id);
        let effect = breaker::turn_effect(recorded.as_deref(), turn.as_ref(), last_message);
        let queued = turn
            .as_ref()
            .map_or_else(Vec::new, |t| queued::pending(&t.queue));
        let prd = prd_of(paths, &state);
        let readable_prd = prd.as_ref().and_then(|p| p.as_ref().ok());
        let said = completion::said_this_turn(&state, last_message, turn.as_ref());
        let said_claim = (said.as_deref(), readable_prd.is_some_and(Prd::all_pass));
        // ralph's records of the suite and of git's files, as it left them.
        let records = suite_of(paths, &state, effect, said_claim)
            .and_then(|suite| Ok((suite, watched(paths, &state)?)));
        let ((suite, suite_found), watch) = match records {
            Ok(read) => read,
            Err(t) => return Ok(Gathered::Tampered(t)),
        };
        // A queued cancel or message is acted on before anything else: the
        // tree is not looked at.
        let preempted = queue_action(&state, &queued).preempts();
        let fingerprint = (!preempted
            && wants_fingerprint(&state, readable_prd, effect, recorded.is_some()))
        .then(|| worktree::fingerprint(&paths.root))
        .flatten();
        let (in_flight, cleanup) = workers(paths, input, &state);
        let mirror = if adopting {
            Mirror::Same
        } else {
            crate::state_file::mirror_check(paths, &text)
        };
        Ok(Gathered::Loop(Box::new(StopInputs {
            adopting,
            seal_form: found.seal_form,
            in_flight,
            fresh_worker: crate::fresh::worker_in_flight(&input.background_tasks).is_some(),
            cleanup,
            root: paths.root.clone(),
            session: session.to_string(),
            turn_key: key_of(input, turn.as_ref(), transcript),
            newest_line: turn.as_ref().and_then(|t| t.last_uuid.clone()),
            called_tools: recorded.is_some_and(|r| !r.is_empty()),
            tool_record,
            usage: turn.as_ref().map(|t| t.usage.clone()).unwrap_or_default(),
            transcript_late: transcript.is_late().then(|| transcript.waited()),
            reader: reader(paths),
            now: crate::clock::unix_now(),
            watch,
            said,
            suite,
            suite_found,
            text,
            effect,
            prd,
            blocker: crate::blocker::read(&paths.blocker),
            last_injected: state.injected.clone().or_else(|| found.records.counter()),
            records_found: found.records.generations(),
            state: *state,
            verify_log: found.records.verify_log(),
            review_log: crate::review::disk::log_of(&found.records),
            scores: found.records.scores(),
            fingerprint,
            queued,
            mirror,
        })))
    }
}

/// The loop's PRD, when it has one. The recorded checks are what run,
/// whatever the PRD says now.
fn prd_of(paths: &LoopPaths, state: &LoopState) -> Option<Result<Prd, crate::prd::PrdReadError>> {
    state.prd_file.as_deref().map(|file| {
        crate::prd::read(&paths.root, file).map(|p| p.with_recorded_checks(&state.story_checks))
    })
}

/// Git's own files and the client's settings, when their digest moved
/// from the state's (a few `stat`s): where they are and what changed;
/// `Err`: ralph's record of them is not as it left it.
fn watched(paths: &LoopPaths, state: &LoopState) -> Result<Option<Watched>, Tamper> {
    let Some(last) = state.watched.as_deref() else {
        return Ok(None);
    };
    let Some(places) = crate::git_watch::Places::of(&paths.root) else {
        return Ok(None);
    };
    if places.digest() == last {
        return Ok(None);
    }
    match crate::git_watch::changes(paths, &places) {
        Ok(changes) => Ok(Some((places, changes))),
        Err(what) => Err(Tamper {
            owner: state.session_id.clone(),
            iteration: state.iteration,
            changes: vec![what],
        }),
    }
}

/// Where git's files are, and what changed of them.
type Watched = (
    crate::git_watch::Places,
    Vec<crate::git_watch::WatchedChange>,
);

/// The key of the turn this Stop is about (see [`turn_key`]). A late
/// transcript does not tell which turn this is: it counts.
fn key_of(input: &HookInput, turn: Option<&Turn>, transcript: &Written) -> Option<String> {
    turn_key(
        input.prompt_id.as_deref(),
        input
            .transcript_path
            .as_deref()
            .is_some_and(|p| !p.is_empty()),
        turn.filter(|_| !transcript.is_late()),
        input.last_assistant_message.as_deref(),
    )
}

/// The suite's memory, when this Stop needs it (`needs_suite`), and the
/// generation its seal names; `Err`: it is not as ralph left it.
fn suite_of(
    paths: &LoopPaths,
    state: &LoopState,
    effect: TurnEffect,
    (said, prd_claims): (Option<&str>, bool),
) -> Result<(Option<crate::suite::Suite>, u64), crate::tamper::Tamper> {
    if !needs_suite(state, effect, said, prd_claims) {
        return Ok((None, 0));
    }
    let read = crate::seal::read_sealed(&paths.suite);
    if let Some(t) = crate::tamper::of_suite(state, &read) {
        return Err(t);
    }
    let found = read.generation.unwrap_or(0);
    Ok((crate::suite::of_sealed(&read).ok(), found))
}

/// Whether a Stop reads the suite's memory: a measured loop whose turn
/// changed the tree (a score or a story check may run, a story be fed
/// for the first time: stories pass by an edit), or that claims the work
/// is done (the promise, or every story of the PRD marked passing). A
/// turn that only talked reads nothing more than before.
pub(crate) fn needs_suite(
    state: &LoopState,
    effect: TurnEffect,
    said: Option<&str>,
    prd_claims: bool,
) -> bool {
    let measured =
        state.score.is_some() || state.verify.is_some() || !state.story_checks.is_empty();
    measured
        && (effect != TurnEffect::Unchanged || prd_claims || completion::promise_kept(state, said))
}

/// The state of this session's loop (its text, the state, whether it is
/// adopted from the project's copy), or why the Stop ends here. Before
/// anything is read as the loop's: a state, a result or a verdict ralph did
/// not write is told to the user, never used. The state file and its seal
/// are read once, here, and so are the checks' results and the reviewers'
/// verdicts: what their seals judged is what the Stop uses.
fn loop_state(paths: &LoopPaths, session: &str) -> Result<Result<Found, Gathered>, StoreError> {
    let own = crate::state_file::read_own(paths);
    let records = crate::state_file::read_records(paths);
    if let Some(t) = crate::tamper::found_in(paths, &own, &records) {
        if !owns(&t.owner, session) {
            return Ok(Err(Gathered::NotOurs));
        }
        return Ok(Err(Gathered::Tampered(t)));
    }
    let adopting = matches!(own.text, Ok(None));
    let seal_form = own.form();
    let (text, state) = match crate::state_file::state_of(paths, own) {
        StateFile::Missing => return Ok(Err(Gathered::NotOurs)),
        StateFile::Unreadable(e) if e.is_not_text() => {
            return Ok(Err(Gathered::Corrupt(Corrupt {
                iteration: 0,
                why: "the file is not UTF-8 text".into(),
            })));
        }
        StateFile::Unreadable(e) => return Err(e),
        StateFile::Corrupt { text, error } => {
            let owner = frontmatter::scan(&text, "session_id").unwrap_or("");
            if !owns(owner, session) {
                return Ok(Err(Gathered::NotOurs));
            }
            return Ok(Err(Gathered::Corrupt(Corrupt {
                iteration: frontmatter::scan(&text, "iteration")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                why: error.to_string(),
            })));
        }
        StateFile::Loop { text, state } => (text, state),
    };
    if !owns(&state.session_id, session) {
        return Ok(Err(Gathered::NotOurs));
    }
    Ok(Ok(Found {
        text,
        state,
        adopting,
        seal_form,
        records,
    }))
}

/// This session's loop, as read once under the lock.
struct Found {
    /// The state file's text.
    text: String,
    state: Box<LoopState>,
    /// There is no state file: `text` is the project's copy, adopted.
    adopting: bool,
    /// Where the state's seal was.
    seal_form: crate::seal::Form,
    /// The checks' results and the reviewers' verdicts, judged by their seals.
    records: crate::state_file::OwnRecords,
}

/// `--parallel`: the stories of the running workers, and, in a running
/// loop, what the Stop's apply removes of workers gone (their lanes on the
/// board) and of the client's failed worktrees (stray branches).
fn workers(
    paths: &LoopPaths,
    input: &HookInput,
    state: &LoopState,
) -> (Vec<Option<String>>, WorkerCleanup) {
    if state.parallel == 0 {
        return Default::default();
    }
    let in_flight = crate::parallel::bound::stories_in_flight(paths, input);
    if !state.active {
        return (in_flight, WorkerCleanup::default());
    }
    let cleanup = WorkerCleanup {
        lanes: crate::parallel::hooks::lanes_to_sync(paths, input),
        strays: crate::parallel::strays::found(paths, state),
    };
    (in_flight, cleanup)
}

// What is read, and when: the rules `gather` follows.

/// Where the user reads this Stop's words.
pub(crate) fn reader(paths: &LoopPaths) -> Reader {
    match crate::passes::run_session(paths) {
        Some(_) => Reader::Terminal,
        None => Reader::Session,
    }
}

/// The turn as read. A transcript still without the turn when the wait's
/// bound passed may end with the turn before's words and tools: the Stop
/// decides on the words the client handed over, and on the guard's record;
/// the queue and the usage are kept (a message typed meanwhile is there,
/// and usage not seen now is counted at the next Stop).
fn this_turn(turn: Turn, transcript: &Written) -> Turn {
    if !transcript.is_late() {
        return turn;
    }
    Turn {
        text: None,
        last_text: None,
        tools: Vec::new(),
        ..turn
    }
}

/// What this Stop does about the messages the user queued (see `queue`):
/// those after the newest one an earlier Stop acted on (`queue_seen`).
pub(crate) fn queue_action(state: &LoopState, queued: &[Queued]) -> QueueAction {
    queued::action(queued, state.queue_seen.as_deref())
}

/// Which turn a Stop is about, so that a Stop delivered twice for one turn
/// counts once: the user prompt it answers (`prompt_id`, the same for every
/// Stop of a loop), the transcript's last assistant line as this Stop sees
/// it, and the turn's words (`last_assistant_message`). Without a
/// transcript at all (`has_transcript` false: an older client), the prompt
/// and the words. `None` when nothing identifies the turn (a transcript that
/// cannot be read, no words): such a Stop always counts.
///
/// The Stop reads the transcript once it holds the turn (`transcript::written`),
/// so the line seen is the turn's own last one: two Stops of one turn see
/// the same line, two turns see two lines. (A turn that called tools is
/// never a duplicate: see `Plan`.)
pub fn turn_key(
    prompt_id: Option<&str>,
    has_transcript: bool,
    turn: Option<&Turn>,
    last_message: Option<&str>,
) -> Option<String> {
    let (uuid, words) = if has_transcript {
        let turn = turn?;
        let words = last_message.or(turn.last_text.as_deref());
        (turn.last_uuid.as_deref(), words)
    } else {
        (None, last_message)
    };
    if uuid.is_none() && words.is_none() {
        return None;
    }
    let parts = [prompt_id, uuid, words].map(|p| p.unwrap_or(""));
    let hash = parts.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, part| {
        let h = part
            .bytes()
            .fold(h, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        (h ^ 0xff).wrapping_mul(0x0100_0000_01b3)
    });
    Some(format!("{hash:016x}"))
}

/// What the Stops before counted, when tokens are counted: from the second
/// iteration on, the turn before's messages after the last one counted are
/// counted too (its last message was usually not written yet at its Stop).
pub(crate) fn counted_through(state: &LoopState) -> Option<CountedThrough<'_>> {
    (state.counts_tokens() && state.iteration > 1)
        .then_some(CountedThrough(state.budgets.usage_seen.as_deref()))
}

/// Must the working tree be looked at (`git status`, 2 ms in a small
/// project, 150 ms at 100,000 files)? When a check may run (results are
/// kept per tree), or when the no-progress breaker cannot judge the turn
/// from its tools. At start, with no turn yet, `effect` is `Unknown`: the
/// first Stop may need the tree to compare with.
/// `guarded`: the turn was judged from the guard's record (`turn_tools`).
pub(crate) fn wants_fingerprint(
    state: &LoopState,
    prd: Option<&Prd>,
    effect: TurnEffect,
    guarded: bool,
) -> bool {
    // Check results and review verdicts are kept per tree.
    // So are scores, on each tree an iteration changed (`stop::measure`).
    let checks_may_run = state.verify.is_some()
        || state.score.is_some()
        || state.review.is_on()
        || prd.is_some_and(|p| p.stories.iter().any(|s| s.verify.is_some()));
    // An edited turn is progress whatever the tree says. With the guard's
    // record the tree is not looked at, whatever the repository's size:
    // the next turns are judged by their record too, and the breaker's
    // baseline, now out of date, is dropped (`Plan::state_after`), so a
    // later turn judged by the tree (a Bash call) sets a new one rather than
    // be compared with the tree from before the edit. Without the record,
    // the next turn may be judged by a transcript that lags (so by the
    // tree): the baseline is kept current (scenario 19 once failed so).
    let by_tree = match effect {
        TurnEffect::Unknown => true,
        TurnEffect::Edited => !guarded,
        TurnEffect::Unchanged => false,
    };
    checks_may_run || (state.max_stalls > 0 && by_tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_looked_at_only_when_needed() {
        let mut s = crate::state::sample(1, 0, None);
        let wants = |s: &LoopState, prd, effect| wants_fingerprint(s, prd, effect, true);
        assert!(!wants(&s, None, TurnEffect::Unchanged));
        assert!(wants(&s, None, TurnEffect::Unknown));
        // An edit recorded by the guard is progress without a look (the
        // baseline is dropped instead); one seen only in the transcript
        // keeps the baseline current.
        assert!(!wants(&s, None, TurnEffect::Edited));
        assert!(wants_fingerprint(&s, None, TurnEffect::Edited, false));
        s.max_stalls = 0;
        assert!(!wants(&s, None, TurnEffect::Unknown));
        assert!(!wants(&s, None, TurnEffect::Edited));
        let checked = r#"{"stories":[{"id":"A","passes":true,"verify":"check a"}]}"#;
        let prd = Prd::parse(checked).unwrap();
        assert!(wants(&s, Some(&prd), TurnEffect::Edited));
        s.verify = Some("make".into());
        assert!(wants(&s, None, TurnEffect::Edited));
        assert!(owns("", "me") && owns("me", "me") && !owns("you", "me"));
    }

    #[test]
    fn a_turn_is_known_by_its_prompt_last_line_and_words() {
        let turn = |uuid: &str| Turn {
            last_uuid: Some(uuid.into()),
            ..Turn::default()
        };
        let key = |p, t: &Turn, m| turn_key(Some(p), true, Some(t), Some(m));
        let first = key("p", &turn("u1"), "Done.");
        assert!(first.is_some());
        // The same Stop delivered twice.
        assert_eq!(first, key("p", &turn("u1"), "Done."));
        // The next turn says the same words: the transcript has moved on.
        assert_ne!(first, key("p", &turn("u2"), "Done."));
        // Other words, another prompt.
        assert_ne!(first, key("p", &turn("u1"), "Done!"));
        assert_ne!(first, key("q", &turn("u1"), "Done."));
        // A transcript that cannot be read tells nothing: the Stop counts.
        assert_eq!(turn_key(Some("p"), true, None, Some("Done.")), None);
        // No transcript at all (an older client): the words.
        let plain = |m| turn_key(Some("p"), false, None, m);
        assert_eq!(plain(Some("a")), plain(Some("a")));
        assert_ne!(plain(Some("a")), plain(Some("b")));
        assert_eq!(plain(None), None);
    }
}
