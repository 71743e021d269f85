//! keys::time -- the `YYYYMMDDHHMMSS` (UTC) times of key files.

/// Days from 1970-01-01 to a civil date (proleptic Gregorian), and back: H. Hinnant's
/// algorithms (public domain calendar arithmetic).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Seconds since 1970 as `YYYYMMDDHHMMSS` (UTC).
pub fn format_time(t: u64) -> String {
    let (y, m, d) = civil_from_days((t / 86_400) as i64);
    let s = t % 86_400;
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// `YYYYMMDDHHMMSS` (UTC) as seconds since 1970; `None` if it is not a valid time.
pub fn parse_time(s: &str) -> Option<u64> {
    if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |r: core::ops::Range<usize>| s[r].parse::<u32>().ok();
    let (y, mo, d, h, mi, se) = (
        n(0..4)?,
        n(4..6)?,
        n(6..8)?,
        n(8..10)?,
        n(10..12)?,
        n(12..14)?,
    );
    if y < 1970 || !(1..=12).contains(&mo) || d == 0 || h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let days = days_from_civil(i64::from(y), mo, d);
    // Reject 31 April and the like: the date must come back the same.
    if civil_from_days(days) != (i64::from(y), mo, d) {
        return None;
    }
    Some(days as u64 * 86_400 + u64::from(h * 3600 + mi * 60 + se))
}
