//! `ralph-setup report [--html FILE]`: the loop's story from its activity
//! log. The HTML page is opened in a real headless browser when one is
//! installed (Debian's `chromium`); without one that part says so and skips.

use crate::browser::{browser, headless};
use crate::support::*;

/// A PRD loop of two stories run through its Stops to the end.
fn finished_loop(tag: &str) -> Project {
    let p = Project::new(tag);
    p.write(
        "prd.json",
        r#"{"userStories":[{"id":"US-001","passes":false},{"id":"US-002","passes":false}]}"#,
    );
    p.prompt(
        "S1",
        "/ralph:ralph-loop --prd-file prd.json --max-iterations 9",
    );
    p.stop("S1", Some("working on US-001"));
    p.write(
        "prd.json",
        r#"{"userStories":[{"id":"US-001","passes":true},{"id":"US-002","passes":false}]}"#,
    );
    p.stop("S1", Some("US-001 done"));
    p.write(
        "prd.json",
        r#"{"userStories":[{"id":"US-001","passes":true},{"id":"US-002","passes":true}]}"#,
    );
    p.stop("S1", Some("US-002 done"));
    assert!(p.state().is_none(), "the loop ended");
    p
}

#[test]
fn the_text_report_tells_how_it_went() {
    let p = Project::new("report-none");
    let (code, out) = p.ralph(&["report"]);
    assert_eq!(code, 0);
    assert!(out.contains("No Ralph loop has run here yet"), "{out}");
    let p = finished_loop("report-text");
    let (code, out) = p.ralph(&["report"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ended (all stories pass) at iteration 3"),
        "{out}"
    );
    assert!(out.contains("US-001") && out.contains("US-002"), "{out}");
    assert!(
        out.contains("Timeline") && out.contains("#3   end"),
        "{out}"
    );
}

#[test]
fn the_html_report_opens_in_a_headless_browser() {
    let p = finished_loop("report-html");
    let page = p.path("report.html");
    let (code, out) = p.ralph(&["report", "--html", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg id=\"chart\"") && html.contains("<table id=\"timeline\""));
    assert!(!html.contains("src=") && !html.contains("href=") && !html.contains("<script"));
    let Some(browser) = browser() else {
        eprintln!("SKIPPED: no headless Chromium (apt-get install chromium) to open the report in");
        return;
    };
    // The page as the browser built it: the chart and the timeline are there.
    let dom = headless(&browser, &["--dump-dom"], &page);
    let err = String::from_utf8_lossy(&dom.stderr).into_owned();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<circle"), "{dom}\n{err}");
    assert!(dom.contains("all_stories_pass"), "{dom}");
    // And drawn: a screenshot of the page, not a blank one.
    let shot = p.path("report.png");
    let out = headless(
        &browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=900,900",
        ],
        &page,
    );
    let png = std::fs::read(&shot)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    assert!(
        png.len() > 10_000,
        "a drawn page, not a blank one: {} bytes",
        png.len()
    );
    if let Ok(keep) = std::env::var("RALPH_KEEP_REPORT_SHOT") {
        let _ = std::fs::copy(&shot, keep);
    }
}
