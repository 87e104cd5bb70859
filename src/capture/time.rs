//! UTC timestamp formatting and parsing for capture files (RFC 3339 with microseconds).
//!
//! Written by hand rather than pulling in chrono/time: we need exactly one fixed format
//! (always UTC, always 6 fraction digits) and its inverse, which is ~60 lines of
//! proleptic-Gregorian day arithmetic.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TimeError {
    #[error("timestamp {0:?} is not RFC 3339 (YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM))")]
    Syntax(String),
    #[error("timestamp {0:?} is before 1970-01-01")]
    BeforeEpoch(String),
}

const SECS_PER_DAY: u64 = 86_400;

/// Days since 1970-01-01 to (year, month, day), for the proleptic Gregorian calendar.
/// Works in 400-year eras (146097 days) counted from 0000-03-01 so leap days fall at
/// the end of each year-of-era.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn since_epoch(t: SystemTime) -> Duration {
    // Clock before 1970 only happens on a badly set machine; clamp rather than fail.
    t.duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// "2024-05-01T12:00:01.123456Z".
pub fn format_rfc3339_micros(t: SystemTime) -> String {
    let d = since_epoch(t);
    let secs = d.as_secs();
    let (y, mo, da) = civil_from_days((secs / SECS_PER_DAY) as i64);
    let sod = secs % SECS_PER_DAY;
    format!(
        "{y:04}-{mo:02}-{da:02}T{:02}:{:02}:{:02}.{:06}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        d.subsec_micros()
    )
}

/// "12:00:01.123456" (UTC time of day), the start of a decode line.
pub fn format_time_of_day(t: SystemTime) -> String {
    let d = since_epoch(t);
    let sod = d.as_secs() % SECS_PER_DAY;
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        d.subsec_micros()
    )
}

fn num(s: &str, range: std::ops::Range<usize>) -> Option<u32> {
    let part = s.get(range)?;
    if part.bytes().all(|b| b.is_ascii_digit()) {
        part.parse().ok()
    } else {
        None
    }
}

/// Parses what [`format_rfc3339_micros`] writes, plus any fraction length and numeric
/// offsets, so hand-edited files still load.
pub fn parse_rfc3339(s: &str) -> Result<SystemTime, TimeError> {
    let bad = || TimeError::Syntax(s.to_string());
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let year = i64::from(num(s, 0..4).ok_or_else(bad)?);
    let month = num(s, 5..7).ok_or_else(bad)?;
    let day = num(s, 8..10).ok_or_else(bad)?;
    let (hh, mm, ss) = (
        num(s, 11..13).ok_or_else(bad)?,
        num(s, 14..16).ok_or_else(bad)?,
        num(s, 17..19).ok_or_else(bad)?,
    );
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return Err(bad());
    }
    let mut rest = s.get(19..).ok_or_else(bad)?;
    let mut nanos: u64 = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        for (i, c) in frac.bytes().take(digits).enumerate() {
            if i < 9 {
                nanos = nanos * 10 + u64::from(c - b'0');
            }
        }
        nanos *= 10u64.pow(9u32.saturating_sub(digits as u32));
        rest = frac.get(digits..).ok_or_else(bad)?;
    }
    let offset_secs: i64 = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':' =>
        {
            let oh = i64::from(num(rest, 1..3).ok_or_else(bad)?);
            let om = i64::from(num(rest, 4..6).ok_or_else(bad)?);
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * SECS_PER_DAY as i64 + i64::from(hh * 3600 + mm * 60 + ss) - offset_secs;
    let secs = u64::try_from(secs).map_err(|_| TimeError::BeforeEpoch(s.to_string()))?;
    Ok(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, micros: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros)
    }

    #[test]
    fn formats_known_instants() {
        let cases = [
            (at(0, 0), "1970-01-01T00:00:00.000000Z"),
            (at(951_782_400, 1), "2000-02-29T00:00:00.000001Z"),
            (at(1_709_210_096, 123_456), "2024-02-29T12:34:56.123456Z"),
            (at(4_102_444_799, 999_999), "2099-12-31T23:59:59.999999Z"),
        ];
        for (t, want) in cases {
            assert_eq!(format_rfc3339_micros(t), want);
            assert_eq!(parse_rfc3339(want), Ok(t));
        }
        assert_eq!(format_time_of_day(at(1_709_210_096, 7)), "12:34:56.000007");
    }

    #[test]
    fn day_arithmetic_round_trips() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn parses_variants_and_rejects_garbage() {
        assert_eq!(parse_rfc3339("1970-01-01T01:00:00+01:00"), Ok(at(0, 0)));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:01.5Z"), Ok(at(1, 500_000)));
        let nanos = parse_rfc3339("1970-01-01T00:00:00.123456789Z");
        assert_eq!(nanos, Ok(UNIX_EPOCH + Duration::from_nanos(123_456_789)));
        for bad in [
            "",
            "1970-01-01",
            "1970-13-01T00:00:00Z",
            "1970-01-01T00:00:00",
            "x970-01-01T00:00:00Z",
            "1970-01-01T00:00:00.Z",
        ] {
            assert!(
                matches!(parse_rfc3339(bad), Err(TimeError::Syntax(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_rfc3339("1969-12-31T23:59:59Z"),
            Err(TimeError::BeforeEpoch(_))
        ));
    }
}
