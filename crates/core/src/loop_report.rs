//! `ralph-setup report [--html FILE]`: the loop's story from its activity
//! log, as a person reads it after coming back: how it ended, the timeline
//! of iterations, the stories and when the loop moved past each, the checks,
//! refusals, stalls and the time per iteration. The HTML form is one
//! self-contained file (inline CSS and SVG: no network, no external assets)
//! with a chart of iterations over time. Pure: the binary reads the log.

use crate::activity::{Entry, LogScore};
use crate::clock::parse_rfc3339;
use crate::fmt::plural;
use crate::run::units::human_duration;
use crate::score::summary::sparkline;
use crate::verify::VerifyLog;
use std::fmt::Write as _;
use std::time::Duration;

/// The last loop of a log: its entries from its last `start` on.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub entries: Vec<Entry>,
    /// Seconds since the first entry, per entry (`None` when a time does not parse).
    pub at: Vec<Option<u64>>,
    pub checks: Option<VerifyLog>,
    /// The suite: its baselines, the tests gone since, the removals the
    /// user accepted, the flaky tests (set by the caller: `suite.json`).
    pub suite: Option<crate::suite::overview::SuiteSummary>,
}

/// The reason codes that are refusals of a claim.
const REFUSALS: &[&str] = &[
    "promise_refused",
    "verify_failed",
    "tests_gone",
    "review_rejected",
    "reviews_exhausted",
];

impl Report {
    /// The last loop in `log` (JSON lines), with the check results on file.
    pub fn of_log(log: &str, checks: Option<VerifyLog>) -> Option<Report> {
        let all: Vec<Entry> = log
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let from = all.iter().rposition(|e| e.decision == "start").unwrap_or(0);
        let entries = all[from..].to_vec();
        let t0 = parse_rfc3339(&entries.first()?.time)?;
        let at = entries
            .iter()
            .map(|e| parse_rfc3339(&e.time).map(|t| t.saturating_sub(t0)))
            .collect();
        Some(Report {
            entries,
            at,
            checks,
            suite: None,
        })
    }

    fn last(&self) -> &Entry {
        self.entries.last().expect("a report has entries")
    }

    /// "complete after 7 iterations", "still running (iteration 4)".
    pub fn ending(&self) -> String {
        let e = self.last();
        match e.decision.as_str() {
            "end" => format!(
                "ended ({}) at iteration {}",
                e.reason.replace('_', " "),
                e.iteration
            ),
            "cancel" => format!("cancelled at iteration {}", e.iteration),
            "pause" => format!("paused ({}) at iteration {}", e.reason, e.iteration),
            _ => format!("still running (iteration {})", e.iteration),
        }
    }

    /// Seconds from the first entry to the last.
    pub fn elapsed(&self) -> u64 {
        self.at.iter().flatten().max().copied().unwrap_or(0)
    }

    /// Seconds each iteration took: from one fed turn (a `block`) to the next
    /// decision that closed it.
    pub(crate) fn iteration_times(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut open: Option<(u64, u64)> = None;
        for (e, at) in self.entries.iter().zip(&self.at) {
            let Some(at) = *at else { continue };
            let closes = matches!(e.decision.as_str(), "block" | "end" | "cancel" | "pause");
            if closes && let Some((iteration, since)) = open.take() {
                out.push((iteration, at.saturating_sub(since)));
            }
            if e.decision == "block" || e.decision == "start" || e.decision == "resume" {
                open = Some((e.iteration, at));
            }
        }
        out
    }

    /// Each story fed, with when it was first fed and when the loop moved
    /// past it (the next story fed, or every story passing).
    pub fn stories(&self) -> Vec<(String, u64, Option<u64>)> {
        if self.entries.iter().any(|e| e.decision == "merge") {
            return self.parallel_stories();
        }
        let mut out: Vec<(String, u64, Option<u64>)> = Vec::new();
        for (e, at) in self.entries.iter().zip(&self.at) {
            let at = at.unwrap_or(0);
            let moved_on = |out: &mut Vec<(String, u64, Option<u64>)>| {
                if let Some(last) = out.last_mut()
                    && last.2.is_none()
                {
                    last.2 = Some(at);
                }
            };
            if e.reason == "all_stories_pass" {
                moved_on(&mut out);
            }
            let Some(story) = &e.story else { continue };
            if out.last().is_some_and(|s| &s.0 == story) {
                continue;
            }
            moved_on(&mut out);
            if !out.iter().any(|s| &s.0 == story) {
                out.push((story.clone(), at, None));
            }
        }
        out
    }

    /// `--parallel`: several stories are out at once; each is handed out
    /// (at the start, or a `dispatched` feed naming several) and moves past
    /// when it is merged.
    fn parallel_stories(&self) -> Vec<(String, u64, Option<u64>)> {
        let mut out: Vec<(String, u64, Option<u64>)> = Vec::new();
        for (e, at) in self.entries.iter().zip(&self.at) {
            let at = at.unwrap_or(0);
            let Some(story) = &e.story else { continue };
            let handed_out =
                e.decision == "start" || (e.decision == "block" && e.reason == "dispatched");
            if handed_out {
                for id in story.split(',') {
                    if !out.iter().any(|s| s.0 == id) {
                        out.push((id.to_string(), at, None));
                    }
                }
            } else if e.decision == "merge"
                && e.reason == "story_merged"
                && let Some(s) = out.iter_mut().find(|s| &s.0 == story)
            {
                s.2 = Some(at);
            }
        }
        out
    }

    fn count(&self, f: impl Fn(&Entry) -> bool) -> usize {
        self.entries.iter().filter(|e| f(e)).count()
    }

    /// The report as text.
    pub fn to_text(&self) -> String {
        let first = &self.entries[0];
        let mut out = format!(
            "Ralph loop report\n\nstarted:  {}\nhow:      {}\ntook:     {} over {}\n",
            first.time,
            self.ending(),
            human_duration(Duration::from_secs(self.elapsed())),
            plural(self.last().iteration, "iteration"),
        );
        if let Some(msg) = self
            .last()
            .message
            .as_deref()
            .filter(|_| self.last().decision != "block")
        {
            out.push_str(&format!(
                "last word: {}\n",
                msg.lines().next().unwrap_or("")
            ));
        }
        out.push_str(&self.per_iteration());
        let refusals = self.count(|e| REFUSALS.contains(&e.reason.as_str()));
        let stalls = self.count(|e| e.reason == "stalled");
        let tamper = self.count(|e| e.decision == "tamper");
        out.push_str(&format!(
            "refusals: {refusals} · stalls ended it: {} · tampering restored: {tamper}\n",
            if stalls > 0 { "yes" } else { "no" }
        ));
        if let Some(line) = self.score_line() {
            out.push_str(&line);
        }
        out.push_str(&self.suite_lines());
        out.push_str(&self.outside_lines());
        let stories = self.stories();
        if !stories.is_empty() {
            out.push_str("\nStories (fed at → moved past at, from the start)\n");
            for (id, fed, past) in &stories {
                let past = past.map_or("-".to_string(), clock_of);
                out.push_str(&format!("  {id:<12} {} → {past}\n", clock_of(*fed)));
            }
        }
        // A loop measured by `--score` alone has a record of checks with
        // none in it: no heading over nothing.
        if let Some(checks) = self
            .checks
            .as_ref()
            .filter(|c| c.r#loop.is_some() || !c.stories.is_empty())
        {
            out.push_str("\nChecks (last results)\n");
            for (name, r) in checks
                .r#loop
                .iter()
                .map(|r| ("loop", r))
                .chain(checks.stories.iter().map(|(k, r)| (k.as_str(), r)))
            {
                let verdict = if r.passed() { "pass" } else { "FAIL" };
                out.push_str(&format!(
                    "  {name:<12} {verdict}  `{}`  {} ({} ms)\n",
                    r.command, r.time, r.duration_ms
                ));
            }
        }
        out.push_str("\nTimeline\n");
        for (e, at) in self.entries.iter().zip(&self.at) {
            out.push_str(&format!(
                "  +{:<8} #{:<3} {:<7} {}{}\n",
                at.map_or("?".into(), clock_of),
                e.iteration,
                e.decision,
                e.reason,
                e.story
                    .as_deref()
                    .map(|s| format!(" [{s}]"))
                    .unwrap_or_default()
            ));
        }
        out
    }

    /// The report as one self-contained HTML page.
    /// `per iteration: 2m on average (shortest 40s, longest 5m)`, when known.
    fn per_iteration(&self) -> String {
        let times = self.iteration_times();
        if times.is_empty() {
            return String::new();
        }
        let secs: Vec<u64> = times.iter().map(|t| t.1).collect();
        let avg = secs.iter().sum::<u64>() / secs.len() as u64;
        format!(
            "per iteration: {} on average (shortest {}, longest {})\n",
            human_duration(Duration::from_secs(avg)),
            human_duration(Duration::from_secs(*secs.iter().min().unwrap_or(&0))),
            human_duration(Duration::from_secs(*secs.iter().max().unwrap_or(&0))),
        )
    }

    /// The suite's lines: its baselines, the tests gone, accepted, flaky,
    /// and the tests the end named to look at (failed at the start, pass
    /// now, their file changed).
    /// What changed outside the work during the loop (git's own files, the
    /// client's settings: `git_watch`), one line each, as the Stop logged it.
    fn outside_lines(&self) -> String {
        let code = crate::activity::Code::GitFilesChanged.as_str();
        self.entries
            .iter()
            .filter(|e| e.reason == code)
            .filter_map(|e| e.message.as_deref())
            .map(|m| format!("outside:  {m}\n"))
            .collect()
    }

    fn suite_lines(&self) -> String {
        let mut out = String::new();
        for (label, text) in self.suite.iter().flat_map(|s| s.lines()) {
            out.push_str(&format!("{label:<9} {text}\n"));
        }
        let end = self.last().message.as_deref().unwrap_or_default();
        for look in end.lines().filter(|l| l.contains("Look at these")) {
            out.push_str(&format!("look at:  {}\n", look.trim_start_matches("⚠️ ")));
        }
        out
    }

    pub fn to_html(&self) -> String {
        let mut body = String::new();
        let text = self.to_text();
        let (summary, rest) = text.split_once("\nTimeline\n").unwrap_or((&text, ""));
        let _ = write!(
            body,
            "<h1>Ralph loop report</h1>\n<p class=\"how\">{}</p>\n{}<figure>{}<figcaption>Iterations over time (minutes since the start)</figcaption></figure>\n<pre>{}</pre>\n<h2>Timeline</h2>\n<table id=\"timeline\"><tr><th>time</th><th>iteration</th><th>decision</th><th>reason</th><th>story</th></tr>\n",
            esc(&self.ending()),
            self.score_figure(),
            self.chart(),
            esc(summary.trim_start_matches("Ralph loop report\n\n")),
        );
        let _ = rest;
        for (e, at) in self.entries.iter().zip(&self.at) {
            let _ = writeln!(
                body,
                "<tr class=\"{}\"><td>+{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.decision),
                at.map_or("?".into(), clock_of),
                e.iteration,
                esc(&e.decision),
                esc(&e.reason),
                esc(e.story.as_deref().unwrap_or(""))
            );
        }
        body.push_str("</table>\n");
        format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Ralph loop report</title>\n<style>{CSS}</style></head>\n<body>\n{body}</body></html>\n"
        )
    }

    /// An SVG line of iteration against time, one dot per decision.
    fn chart(&self) -> String {
        let (w, h, pad) = (640.0_f64, 220.0_f64, 36.0_f64);
        let t_max = self.elapsed().max(1) as f64;
        let i_max = self
            .entries
            .iter()
            .map(|e| e.iteration)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let x = |t: u64| pad + (t as f64 / t_max) * (w - 2.0 * pad);
        let y = |i: u64| h - pad - (i as f64 / i_max) * (h - 2.0 * pad);
        let mut points = String::new();
        let mut dots = String::new();
        for (e, at) in self.entries.iter().zip(&self.at) {
            let Some(at) = *at else { continue };
            let _ = write!(points, "{:.1},{:.1} ", x(at), y(e.iteration));
            let _ = write!(
                dots,
                "<circle class=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>#{} {} {}</title></circle>",
                esc(&e.decision),
                x(at),
                y(e.iteration),
                e.iteration,
                esc(&e.decision),
                esc(&e.reason)
            );
        }
        format!(
            "<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"iterations over time\">\
<line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" class=\"axis\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" class=\"axis\"/>\
<text x=\"{pad}\" y=\"{ty}\">0</text><text x=\"{r}\" y=\"{ty}\" text-anchor=\"end\">{tmax:.1} min</text>\
<text x=\"4\" y=\"{py}\">{imax}</text>\
<polyline points=\"{points}\" class=\"line\"/>{dots}</svg>",
            b = h - pad,
            r = w - pad,
            ty = h - pad + 16.0,
            py = pad + 4.0,
            tmax = t_max / 60.0,
            imax = i_max as u64,
        )
    }
}

impl Report {
    /// Each scored iteration's entry and score, in order.
    fn scores(&self) -> Vec<(&Entry, &LogScore)> {
        self.entries
            .iter()
            .filter_map(|e| e.score.as_ref().map(|s| (e, s)))
            .collect()
    }

    /// `score: ▁▃▅▆▆ tests 43/50 now; best tests 44/50 at iteration 4,
    /// nothing gained after it (3 iterations, 310k tokens since)`.
    fn score_line(&self) -> Option<String> {
        let scores = self.scores();
        let (last, now) = *scores.last()?;
        let points: Vec<f64> = scores
            .iter()
            .map(|(_, s)| s.milli as f64 / 1000.0)
            .collect();
        let (best_entry, best) = scores
            .iter()
            .rev()
            .filter(|(_, s)| s.best)
            .copied()
            .next()
            .unwrap_or(scores[0]);
        let mut line = format!(
            "score:    {} {} now; best {} at iteration {}",
            sparkline(&points),
            now.text,
            best.text,
            best.at
        );
        let after = now.at.saturating_sub(best.at);
        if after > 0 {
            line.push_str(&format!(
                ", nothing gained after it ({}",
                plural(after, "iteration")
            ));
            if let (Some(a), Some(b)) = (best_entry.tokens, last.tokens) {
                line.push_str(&format!(
                    ", {} tokens",
                    crate::fmt::tokens(b.saturating_sub(a))
                ));
            }
            line.push(')');
        }
        let regressions: u32 = scores.iter().map(|(_, s)| s.regressions).sum();
        if regressions > 0 {
            line.push_str(&format!(
                "; {} named",
                plural(u64::from(regressions), "regression")
            ));
        }
        line.push('\n');
        Some(line)
    }

    /// The score per scored iteration (a line, each new best ringed, regressions
    /// in red) over the tokens each spent (bars), as inline SVG.
    fn score_figure(&self) -> String {
        let scores = self.scores();
        if scores.is_empty() {
            return String::new();
        }
        let (w, h, pad) = (640.0_f64, 220.0_f64, 36.0_f64);
        let lo = scores
            .iter()
            .map(|(_, s)| s.milli)
            .min()
            .unwrap_or(0)
            .min(0) as f64;
        let hi = scores
            .iter()
            .map(|(_, s)| s.milli)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let it_min = scores.first().map_or(1, |(_, s)| s.at) as f64;
        let it_max = scores.last().map_or(1, |(_, s)| s.at) as f64;
        // From the first scored iteration to the last (one alone: centred).
        let x = |i: u64| {
            let span = it_max - it_min;
            if span < 1.0 {
                w / 2.0
            } else {
                pad + ((i as f64 - it_min) / span) * (w - 2.0 * pad)
            }
        };
        let y = |m: i64| h - pad - ((m as f64 - lo) / (hi - lo).max(1.0)) * (h - 2.0 * pad);
        let spent = spent_each(scores.iter().map(|(e, _)| e.tokens));
        let spent_max = spent.iter().copied().max().unwrap_or(0).max(1) as f64;
        let (mut bars, mut points, mut dots) = (String::new(), String::new(), String::new());
        for ((_, s), d) in scores.iter().zip(&spent) {
            let bar = (*d as f64 / spent_max) * (h - 2.0 * pad) * 0.35;
            let _ = write!(
                bars,
                "<rect class=\"spent\" x=\"{:.1}\" y=\"{:.1}\" width=\"6\" height=\"{bar:.1}\"><title>#{} {} tokens</title></rect>",
                x(s.at) - 3.0,
                h - pad - bar,
                s.at,
                crate::fmt::tokens(*d)
            );
            let _ = write!(points, "{:.1},{:.1} ", x(s.at), y(s.milli));
            dots.push_str(&score_dot(s, x(s.at), y(s.milli)));
        }
        format!(
            "<figure><svg id=\"score\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"score per iteration\">\
<line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" class=\"axis\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" class=\"axis\"/>\
<text x=\"{pad}\" y=\"{ty}\">iteration {itmin}</text><text x=\"{r}\" y=\"{ty}\" text-anchor=\"end\">iteration {itmax}</text>\
<text x=\"4\" y=\"{py}\">{top}</text><text x=\"4\" y=\"{b}\">{bottom}</text>{bars}<polyline points=\"{points}\" class=\"line score\"/>{dots}</svg>\
<figcaption>Score per iteration (each new best ringed, regressions in red) over the tokens each spent (grey)</figcaption></figure>\n",
            b = h - pad,
            r = w - pad,
            ty = h - pad + 16.0,
            py = pad + 4.0,
            itmin = it_min as u64,
            itmax = it_max as u64,
            bottom = crate::score::number_text(lo / 1000.0),
            top = crate::score::number_text(hi / 1000.0),
        )
    }
}

/// What each of a run of iterations spent, from the loop's running totals
/// (an iteration without one spent nothing more).
fn spent_each(totals: impl Iterator<Item = Option<u64>>) -> Vec<u64> {
    totals
        .scan(0_u64, |before, total| {
            let now = total.unwrap_or(*before);
            let d = now.saturating_sub(*before);
            *before = now;
            Some(d)
        })
        .collect()
}

/// One scored iteration on the curve: ringed when it was the best, red when
/// a test regressed.
fn score_dot(s: &LogScore, cx: f64, cy: f64) -> String {
    let class = if s.regressions > 0 {
        "regression"
    } else if s.best {
        "best"
    } else {
        "score"
    };
    let regressed = if s.regressions > 0 {
        format!(", {} regressed", s.regressions)
    } else {
        String::new()
    };
    format!(
        "<circle class=\"{class}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{}\"><title>#{} {}{regressed}</title></circle>",
        if s.best { 6 } else { 4 },
        s.at,
        esc(&s.text),
    )
}

const CSS: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:52em;color:#222}\
h1{font-size:1.5em}pre{background:#f6f6f6;padding:.8em;white-space:pre-wrap;overflow-wrap:anywhere}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.2em .5em;text-align:left}\
.axis{stroke:#888}.line{fill:none;stroke:#36c;stroke-width:2}\
circle{fill:#36c}circle.end{fill:#2a2}circle.pause,circle.cancel{fill:#c80}circle.tamper{fill:#c22}\
tr.end td{font-weight:bold}svg text{font-size:11px;fill:#555}\
rect.spent{fill:#ccc}circle.best{fill:#2a2;stroke:#151;stroke-width:2}circle.regression{fill:#c22}";

/// `1:02:03` or `2:03` from seconds.
fn clock_of(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t: &str, it: u64, decision: &str, reason: &str, story: Option<&str>) -> String {
        let story = story
            .map(|s| format!(",\"story\":\"{s}\""))
            .unwrap_or_default();
        format!(
            "{{\"time\":\"2026-12-01T10:{t}Z\",\"session\":\"s\",\"iteration\":{it},\"decision\":\"{decision}\",\"reason\":\"{reason}\"{story}}}\n"
        )
    }

    fn log() -> String {
        [
            line("00:00", 1, "end", "complete", None), // an older loop
            line("01:00", 1, "start", "start", None),
            line("03:00", 2, "block", "story", Some("US-1")),
            line("06:00", 3, "block", "verify_failed", Some("US-1")),
            line("07:30", 4, "block", "story", Some("US-2")),
            line("10:00", 4, "end", "all_stories_pass", None),
        ]
        .concat()
    }

    #[test]
    fn parallel_stories_go_out_together_and_move_past_when_merged() {
        let log = [
            line("01:00", 1, "start", "prd", Some("A1,B1")),
            line("02:00", 1, "wait", "worker_running", None),
            line("04:00", 1, "merge", "story_merged", Some("B1")),
            line("04:30", 2, "block", "dispatched", Some("B2")),
            line("05:00", 2, "merge", "merge_conflict", Some("A1")),
            line("06:00", 2, "merge", "story_merged", Some("A1")),
            line("07:00", 2, "merge", "story_merged", Some("B2")),
            line("07:10", 2, "end", "all_stories_pass", None),
        ]
        .concat();
        let r = Report::of_log(&log, None).unwrap();
        assert_eq!(
            r.stories(),
            [
                ("A1".to_string(), 0, Some(300)),
                ("B1".to_string(), 0, Some(180)),
                ("B2".to_string(), 210, Some(360))
            ]
        );
    }

    #[test]
    fn the_last_loop_read_as_a_story() {
        let r = Report::of_log(&log(), None).unwrap();
        assert_eq!(r.entries.len(), 5);
        assert_eq!(r.elapsed(), 540);
        assert_eq!(r.ending(), "ended (all stories pass) at iteration 4");
        assert_eq!(r.iteration_times(), [(1, 120), (2, 180), (3, 90), (4, 150)]);
        assert_eq!(
            r.stories(),
            [
                ("US-1".to_string(), 120, Some(390)),
                ("US-2".to_string(), 390, Some(540))
            ]
        );
        let text = r.to_text();
        assert!(text.contains("refusals: 1"), "{text}");
        assert!(text.contains("US-1         2:00 → 6:30"), "{text}");
        assert!(text.contains("per iteration: 2 min"), "{text}");
        let html = r.to_html();
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.contains("<svg id=\"chart\""));
        assert_eq!(html.matches("<circle").count(), 5);
        assert!(
            !html.contains("src=") && !html.contains("href="),
            "no external assets"
        );
        assert!(!html.contains("<script"));
        assert_eq!(Report::of_log("", None), None);
    }
}
