//! The loop's records in its folder (the checks' results, the reviewers'
//! verdicts, the scores, the suite's inventory) and the generation of each
//! one's last write, which the state holds (`records:` in its frontmatter)
//! and each record's seal names (`seal::write_record`). A record the state
//! says ralph wrote that is gone, or one older than ralph's last write (a
//! copy put back with its own older seal), was not left by ralph: the
//! loop's memory cannot be reset by deleting or replaying a file. Pure.

/// One of the loop's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopRecord {
    Verify,
    Review,
    Scores,
    Suite,
}

impl LoopRecord {
    pub(crate) const ALL: [LoopRecord; 4] = [
        LoopRecord::Verify,
        LoopRecord::Review,
        LoopRecord::Scores,
        LoopRecord::Suite,
    ];

    /// Its key in the state's `records:` line.
    pub(crate) fn key(self) -> &'static str {
        match self {
            LoopRecord::Verify => "verify",
            LoopRecord::Review => "review",
            LoopRecord::Scores => "scores",
            LoopRecord::Suite => "suite",
        }
    }

    /// Its file, as the user reads it named.
    pub(crate) fn described(self) -> &'static str {
        match self {
            LoopRecord::Verify => "verify.json (the checks' results)",
            LoopRecord::Review => "review.json (the reviewers' verdicts)",
            LoopRecord::Scores => "scores.json (the score of each iteration)",
            LoopRecord::Suite => "suite.json (the tests at the loop's start)",
        }
    }
}

/// The generation of each record's last write (0: never written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordGens([u64; 4]);

impl RecordGens {
    pub(crate) fn get(&self, record: LoopRecord) -> u64 {
        self.0[record as usize]
    }

    /// These gens with `record` at `at`.
    #[must_use]
    pub(crate) fn with(mut self, record: LoopRecord, at: u64) -> RecordGens {
        self.0[record as usize] = at;
        self
    }

    /// The generation the next write takes: above every one so far.
    pub(crate) fn next(&self) -> u64 {
        self.0.iter().copied().max().unwrap_or(0) + 1
    }

    /// Each the larger of the two: a record written by ralph after the
    /// state was saved (a merge of `--parallel`, a save cut short) is
    /// newer than the state's word for it, and is taken up.
    #[must_use]
    pub(crate) fn max(self, other: RecordGens) -> RecordGens {
        let mut out = self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = (*a).max(b);
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|g| *g == 0)
    }

    /// The state's line: `{"verify": 3, "scores": 5}` (the records written).
    pub(crate) fn render(&self) -> String {
        let parts: Vec<String> = LoopRecord::ALL
            .iter()
            .filter(|r| self.get(**r) > 0)
            .map(|r| format!("\"{}\": {}", r.key(), self.get(*r)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }

    /// Read back from [`RecordGens::render`]'s form (quotes optional, any
    /// spacing); keys it does not know are passed over.
    pub(crate) fn parse(text: &str) -> Option<RecordGens> {
        let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
        let mut gens = RecordGens::default();
        for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
            let (key, value) = pair.split_once(':')?;
            let key = key.trim().trim_matches(['"', '\'']);
            let value: u64 = value.trim().parse().ok()?;
            if let Some(r) = LoopRecord::ALL.iter().find(|r| r.key() == key) {
                gens = gens.with(*r, value);
            }
        }
        Some(gens)
    }
}

/// What a record read now is, against the state's word for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordStanding {
    /// As ralph left it (or newer: written after the state was saved).
    Current,
    /// The state says ralph wrote it, and it is not there.
    Deleted,
    /// Older than ralph's last write of it: a copy put back.
    Older { found: u64, expected: u64 },
}

/// Judge a record: `expected`, the state's generation for it (0: never
/// written), `present` whether the file is there, `found` the generation
/// its seal names (`None`: a file written before generations).
pub(crate) fn judge(expected: u64, present: bool, found: Option<u64>) -> RecordStanding {
    match (expected, present, found) {
        (0, _, _) => RecordStanding::Current,
        (_, false, _) => RecordStanding::Deleted,
        (e, true, Some(f)) if f >= e => RecordStanding::Current,
        (e, true, f) => RecordStanding::Older {
            found: f.unwrap_or(0),
            expected: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gens_round_trip_and_the_next_is_above_all() {
        let g = RecordGens::default()
            .with(LoopRecord::Verify, 3)
            .with(LoopRecord::Scores, 5);
        assert_eq!(g.render(), r#"{"verify": 3, "scores": 5}"#);
        assert_eq!(RecordGens::parse(&g.render()), Some(g));
        assert_eq!(
            RecordGens::parse("{verify: 3, scores:5, later: 9}"),
            Some(g)
        );
        assert_eq!(RecordGens::parse("{}"), Some(RecordGens::default()));
        assert_eq!(RecordGens::parse("nonsense"), None);
        assert_eq!(g.next(), 6);
        let newer = RecordGens::default().with(LoopRecord::Verify, 7);
        assert_eq!(g.max(newer).get(LoopRecord::Verify), 7);
        assert_eq!(g.max(newer).get(LoopRecord::Scores), 5);
    }

    #[test]
    fn a_record_gone_or_older_than_ralphs_last_write_is_not_current() {
        assert_eq!(
            judge(0, false, None),
            RecordStanding::Current,
            "never written"
        );
        assert_eq!(judge(4, true, Some(4)), RecordStanding::Current);
        assert_eq!(judge(4, true, Some(6)), RecordStanding::Current, "newer");
        assert_eq!(judge(4, false, None), RecordStanding::Deleted);
        assert_eq!(
            judge(4, true, Some(2)),
            RecordStanding::Older {
                found: 2,
                expected: 4
            }
        );
        assert_eq!(
            judge(4, true, None),
            RecordStanding::Older {
                found: 0,
                expected: 4
            }
        );
    }
}
