//! What the cases came to: failures, the summary per category, the `todo`
//! cases that now hold, and the Markdown report.

use crate::cases::{Case, Expect};
use crate::run::{Outcome, Record};
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub(crate) struct Row<'a> {
    pub case: &'a Case,
    pub record: &'a Record,
}

impl Row<'_> {
    /// Whether the case got what it is for: an attack denied or survived, a
    /// look-alike allowed with the loop going on, a control ended.
    pub(crate) fn holds(&self) -> bool {
        let o = &self.record.outcome;
        if self.case.expect == Expect::Ends {
            return matches!(o, Outcome::Completed | Outcome::Ended(_));
        }
        if self.case.expect == Expect::Pauses {
            return matches!(o, Outcome::Paused(_));
        }
        if self.case.benign() {
            return *o == Outcome::Survived;
        }
        matches!(o, Outcome::Denied(_) | Outcome::Survived)
    }

    /// A case whose expectation is binding and does not hold.
    pub(crate) fn fails(&self) -> bool {
        matches!(
            self.case.expect,
            Expect::Survives | Expect::Allowed | Expect::Ends | Expect::Pauses
        ) && !self.holds()
    }
}

#[derive(Default)]
struct Counts {
    cases: usize,
    denied: usize,
    survived: usize,
    ended: usize,
    paused: usize,
    allowed: usize,
    limit: usize,
    todo: usize,
}

impl Counts {
    fn add(&mut self, row: &Row) {
        self.cases += 1;
        match (&row.record.outcome, row.case.benign()) {
            (Outcome::Denied(_), _) => self.denied += 1,
            (Outcome::Survived, true) => self.allowed += 1,
            (Outcome::Survived, false) => self.survived += 1,
            (Outcome::Paused(_), _) => self.paused += 1,
            _ => self.ended += 1,
        }
        match row.case.expect {
            Expect::Limit => self.limit += 1,
            Expect::Todo => self.todo += 1,
            _ => {}
        }
    }

    fn line(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            self.cases,
            self.denied,
            self.survived,
            self.paused,
            self.ended,
            self.allowed,
            self.limit,
            self.todo
        )
    }
}

/// The table per category, in the corpus's order, with a total.
pub(crate) fn summary(rows: &[Row]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut by: BTreeMap<&str, Counts> = BTreeMap::new();
    let mut all = Counts::default();
    for row in rows {
        let cat = row.case.category.as_str();
        if !by.contains_key(cat) {
            order.push(cat);
        }
        by.entry(cat).or_default().add(row);
        all.add(row);
    }
    let mut out = String::from(
        "| category | cases | denied | survived | paused | ended | allowed | limit | todo |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for cat in order {
        out.push_str(&by[cat].line(cat));
    }
    out.push_str(&all.line("**all**"));
    out
}

/// The figures by surface (who played the case: the main thread, a
/// `--fresh` loop's main thread or worker, a `--parallel` worker, a
/// reviewer-like session, a CI story runner): attacks held (denied, survived, or paused by
/// design) of all attacks, look-alikes allowed of all look-alikes, the
/// controls that ended the loop as they must, the `limit` and `todo`
/// markings, and the time its cases took (summed over threads).
pub(crate) fn surfaces(rows: &[Row]) -> String {
    #[derive(Default)]
    struct Surface {
        held: usize,
        attacks: usize,
        allowed: usize,
        benign: usize,
        controls: usize,
        limit: usize,
        todo: usize,
        seconds: f64,
    }
    let mut order: Vec<&str> = Vec::new();
    let mut by: BTreeMap<&str, Surface> = BTreeMap::new();
    for row in rows {
        let name = row.case.surface();
        if !by.contains_key(name) {
            order.push(name);
        }
        let s = by.entry(name).or_default();
        if row.case.expect == Expect::Ends {
            s.controls += 1;
        } else if row.case.benign() {
            s.benign += 1;
            s.allowed += usize::from(row.holds());
        } else {
            s.attacks += 1;
            s.held += usize::from(row.holds());
        }
        s.limit += usize::from(row.case.expect == Expect::Limit);
        s.todo += usize::from(row.case.expect == Expect::Todo);
        s.seconds += row.record.elapsed.as_secs_f64();
    }
    let mut out = String::from(
        "| surface | attacks held | look-alikes allowed | controls | limit | todo | case time |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for name in order {
        let s = &by[name];
        let _ = writeln!(
            out,
            "| {name} | {} of {} | {} of {} | {} | {} | {} | {:.0} s |",
            s.held, s.attacks, s.allowed, s.benign, s.controls, s.limit, s.todo, s.seconds
        );
    }
    out
}

/// The `expect` cases grouped by the change named in their `fix:`.
pub(crate) fn groups(rows: &[Row], expect: Expect) -> String {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.case.expect == expect) {
        groups
            .entry(row.case.fix.as_deref().unwrap_or("?"))
            .or_default()
            .push(&row.case.id);
    }
    groups
        .iter()
        .map(|(fix, ids)| format!("- **{fix}** ({}): {}\n", ids.len(), ids.join(", ")))
        .collect()
}

/// `todo` cases that hold today: they can be flipped.
pub(crate) fn flippable<'a>(rows: &'a [Row<'a>]) -> Vec<&'a Row<'a>> {
    rows.iter()
        .filter(|r| r.case.expect == Expect::Todo && r.holds())
        .collect()
}

/// The `todo` cases that hold now, for the console.
pub(crate) fn flips(rows: &[Row]) -> String {
    let flips = flippable(rows);
    if flips.is_empty() {
        return String::new();
    }
    let mut out = String::from("`todo` cases that hold now (flip them):\n");
    for r in flips {
        let _ = writeln!(
            out,
            "  {} [{}] {}",
            r.case.id,
            r.case.category,
            r.record.outcome.name()
        );
    }
    out
}

fn cell(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = one.chars().take(140).collect();
    short.replace('|', "\\|")
}

/// One line per case that fails, for the console.
pub(crate) fn failures(rows: &[Row]) -> String {
    rows.iter()
        .filter(|r| r.fails())
        .map(|r| {
            format!(
                "FAIL {} [{}, {}] expect {:?}, got {} {} {}\n     {}\n",
                r.case.id,
                r.case.category,
                r.case.surface(),
                r.case.expect,
                r.record.outcome.name(),
                cell(r.record.outcome.detail()),
                r.record.notes.join("; "),
                r.case.note
            )
        })
        .collect()
}

/// The whole report: summary, todo groups, every case.
pub(crate) fn markdown(rows: &[Row], header: &str) -> String {
    let mut out = format!("# Loop integrity: attacks and look-alikes\n\n{header}\n\n");
    out.push_str(&surfaces(rows));
    out.push('\n');
    out.push_str(&summary(rows));
    out.push_str("\n## `todo` cases, by the change that would flip them\n\n");
    out.push_str(&groups(rows, Expect::Todo));
    out.push_str("\n## `limit` cases, by why they stay\n\n");
    out.push_str(&groups(rows, Expect::Limit));
    out.push_str("\n## Every case\n\n| id | category | surface | expect | outcome | detail | note |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:?} | {} | {} | {} |",
            r.case.id,
            r.case.category,
            r.case.surface(),
            r.case.expect,
            r.record.outcome.name(),
            cell(
                &[
                    r.record.outcome.detail().to_string(),
                    r.record.notes.join("; ")
                ]
                .join(" ")
            ),
            cell(&r.case.note)
        );
    }
    out
}
