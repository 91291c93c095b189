//! Durations and token counts as the user types them on the command line.
//! Pure.

use std::time::Duration;

/// `6h`, `30m`, `90s`, `1h30m`, `500ms`, `2d`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a duration: write e.g. 90s, 30m, 6h or 1h30m (a bare number is seconds)"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let part = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" | "sec" | "secs" => Duration::from_secs(n),
            "m" | "min" | "mins" => Duration::from_secs(n.saturating_mul(60)),
            "h" | "hr" | "hrs" => Duration::from_secs(n.saturating_mul(3600)),
            "d" | "day" | "days" => Duration::from_secs(n.saturating_mul(86_400)),
            _ => return Err(bad()),
        };
        total = total.saturating_add(part);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// `120000`, `120k`, `1.5M`; `0` turns the threshold off.
pub fn parse_tokens(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad =
        || format!("`{text}` is not a token count: write e.g. 120000, 120k or 1.5M (0 = off)");
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        Some(_) => (t, 1.0),
        None => return Err(bad()),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    Ok((value * scale).round() as u64)
}

/// A duration for people: `41 s`, `2 min 03 s`, `1 h 02 min`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("6h").unwrap(), Duration::from_secs(21_600));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        for bad in ["", "h", "6x", "-1", "1.5h", "6 h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn token_counts() {
        assert_eq!(parse_tokens("120000").unwrap(), 120_000);
        assert_eq!(parse_tokens("120k").unwrap(), 120_000);
        assert_eq!(parse_tokens("1.5M").unwrap(), 1_500_000);
        assert_eq!(parse_tokens("0").unwrap(), 0);
        for bad in ["", "k", "-5", "12x", "1e6"] {
            assert!(parse_tokens(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(Duration::from_secs(41)), "41 s");
        assert_eq!(human_duration(Duration::from_secs(123)), "2 min 03 s");
        assert_eq!(human_duration(Duration::from_secs(3720)), "1 h 02 min");
    }
}
