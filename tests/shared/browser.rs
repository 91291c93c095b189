//! Headless Chromium for the report's tests, shared by the integration
//! tests and the real-client scenarios (each includes this file): find the
//! browser, open a page, and count a colour in its screenshot. Without a
//! browser the callers say SKIPPED and go on (`apt-get install chromium`).

use std::path::Path;
use std::process::{Command, Output};

/// Debian's package, or another Chromium on PATH.
pub(crate) fn browser() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(str::to_string)
}

/// `browser` run headless on the file `page`, with `args` (a screenshot,
/// `--dump-dom`); its profile beside the page, no network of its own.
pub(crate) fn headless(browser: &str, args: &[&str], page: &Path) -> Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg("--disable-background-networking")
        .arg(format!(
            "--user-data-dir={}",
            page.with_extension("profile").display()
        ))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("browser runs")
}

/// A screenshot of `page` (900 × 700) at `shot`, decoded: for each colour
/// of `colours`, how many pixels are within 24 of it in every channel.
pub(crate) fn colours_in_screenshot(
    browser: &str,
    page: &Path,
    shot: &Path,
    colours: &[[u8; 3]],
) -> Result<Vec<usize>, String> {
    let out = headless(
        browser,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=900,700",
        ],
        page,
    );
    let file = std::fs::File::open(shot).map_err(|_| {
        format!(
            "no screenshot of {}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .map_err(|e| format!("{}: {e}", shot.display()))?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("{}: {e}", shot.display()))?;
    let channels = info.color_type.samples();
    let near = |px: &[u8], rgb: &[u8; 3]| px.iter().zip(rgb).all(|(a, b)| a.abs_diff(*b) < 24);
    Ok(colours
        .iter()
        .map(|rgb| {
            buf[..info.buffer_size()]
                .chunks(channels)
                .filter(|px| near(&px[..3], rgb))
                .count()
        })
        .collect())
}
