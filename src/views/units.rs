//! Formatting helpers shared by the views: byte counts in binary units, percentages,
//! UTC timestamps (no date crate: the civil-date arithmetic is done here), and making text
//! that came from a VM safe to print on a terminal.

/// `512 B`, `1.5 KiB`, `12.0 MiB`, ... (one decimal past bytes).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    // Move up while the value would print as 1024.0 or more.
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `part` as a percentage of `whole` with one decimal, or `-` when `whole` is zero.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".to_string();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS.mmm UTC`.
pub fn utc_timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03} UTC", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Count from 0000-03-01 so the leap day ends each 400-year era's years.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // day of era, 0..146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year
    let mp = (5 * doy + 2) / 153; // March = 0
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `1 segment`, `2 segments`.
pub fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Text from the VM (thread or app names) made safe for a terminal: control characters
/// (escape sequences, newlines, tabs) and bidi controls become `?` ([`crate::safe_text`]).
pub fn printable(s: &str) -> String {
    crate::safe_text::shown(s).into_owned()
}

/// At most `width` characters of `s`, ending in `…` when shortened.
pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    match width {
        0 => String::new(),
        w => s.chars().take(w - 1).chain(std::iter::once('…')).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_in_binary_units() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (1_048_524, "1023.9 KiB"),
            (1_048_575, "1.0 MiB"),
            (12 << 20, "12.0 MiB"),
            (3 << 30, "3.0 GiB"),
            (u64::MAX, "16384.0 PiB"),
        ];
        for (n, want) in cases {
            assert_eq!(human_bytes(n), want, "{n}");
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(3, 4), "75.0%");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(0, 0), "-");
        assert_eq!(percent(5, 4), "125.0%");
        assert_eq!(
            (plural(1, "run"), plural(0, "run"), plural(2, "run")),
            ("1 run".into(), "0 runs".into(), "2 runs".into())
        );
    }

    #[test]
    fn timestamps() {
        let cases = [
            (0, "1970-01-01 00:00:00.000 UTC"),
            (951_782_400_000, "2000-02-29 00:00:00.000 UTC"),
            (1_714_566_896_789, "2024-05-01 12:34:56.789 UTC"),
            (4_107_542_399_999, "2100-02-28 23:59:59.999 UTC"),
            (4_107_542_400_000, "2100-03-01 00:00:00.000 UTC"),
        ];
        for (ms, want) in cases {
            assert_eq!(utc_timestamp(ms), want, "{ms}");
        }
        // Never panics, even at the end of the range.
        assert!(utc_timestamp(u64::MAX).ends_with(" UTC"));
    }

    #[test]
    fn vm_text_is_made_printable_and_truncated() {
        assert_eq!(printable("a\x1b[2Jb\n\tc"), "a?[2Jb??c");
        assert_eq!(truncate("main", 4), "main");
        assert_eq!(truncate("Binder:1234_5", 8), "Binder:…");
        assert_eq!(truncate("ünïcode", 3), "ün…");
        assert_eq!(truncate("xy", 0), "");
    }
}
