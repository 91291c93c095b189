//! UTC timestamps without a date crate: the hooks only ever need "now" as
//! RFC 3339 text for the state file and the activity log.
//! Reads the system clock; no other I/O.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is before 1970).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `2026-11-29T23:55:19Z` for the given Unix time.
pub fn rfc3339(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs_of_day = unix_secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs_of_day / 3600,
        (secs_of_day / 60) % 60,
        secs_of_day % 60
    )
}

/// The current time as RFC 3339 text.
pub fn now_rfc3339() -> String {
    rfc3339(unix_now())
}

/// The Unix time of `2026-11-29T23:55:19Z` (also with fractional seconds,
/// as `2026-11-29T23:55:19.123Z`); `None` for anything else.
pub(crate) fn parse_rfc3339(text: &str) -> Option<u64> {
    let t = text.trim().strip_suffix('Z')?;
    let (date, time) = t.split_once('T')?;
    let time = time.split_once('.').map_or(time, |(whole, _)| whole);
    let num = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
    };
    let d: Vec<u32> = date.split('-').map(num).collect::<Option<_>>()?;
    let h: Vec<u32> = time.split(':').map(num).collect::<Option<_>>()?;
    let ([y, m, day], [hh, mm, ss]) = (d[..].try_into().ok()?, h[..].try_into().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let days = days_from_civil(i64::from(y), m, day);
    let secs = days * 86_400 + i64::from(hh * 3600 + mm * 60 + ss);
    u64::try_from(secs).ok()
}

/// Howard Hinnant's civil-to-days algorithm (the inverse of `civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_083_200 + 3661), "2026-12-01T01:01:01Z");
    }

    #[test]
    fn parses_what_it_writes() {
        for t in [0, 951_782_400, 1_796_083_200 + 3661, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t), "{t}");
        }
        assert_eq!(
            parse_rfc3339("2026-12-01T01:49:57.906Z"),
            Some(1_796_089_797)
        );
        for bad in [
            "",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-12-01T00:00:00",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
