//! RRSIG inception and expiration times (RFC 4034 §3.2): `YYYYMMDDHHmmSS` in UTC, or
//! seconds since 1970 as a plain number. Pure calendar arithmetic, no clock.

use crate::error::Error;
use crate::text::{number, Shown};
use core::fmt;

/// Days before each month in a common year.
const DAYS_BEFORE_MONTH: [u32; 13] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];

// `is_multiple_of` needs Rust 1.87; the workspace supports 1.80.
#[allow(clippy::manual_is_multiple_of)]
fn is_leap(y: u32) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn year_days(y: u32) -> u32 {
    if is_leap(y) {
        366
    } else {
        365
    }
}

fn month_days(y: u32, m: usize) -> u32 {
    DAYS_BEFORE_MONTH[m] - DAYS_BEFORE_MONTH[m - 1] + u32::from(m == 2 && is_leap(y))
}

/// Leap years in `1..y`.
fn leaps_before(y: u32) -> u32 {
    let y = y - 1;
    y / 4 - y / 100 + y / 400
}

/// Parses a time: exactly 14 digits are a date (1970-01-01 to 2106-02-07 06:28:15, the
/// range of 32 bits of seconds), fewer are seconds.
pub(super) fn parse(text: &[u8]) -> Result<u32, Error> {
    let bad = || Error::text(format_args!("bad signature time {}", Shown(text)));
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    if text.len() != 14 {
        return number(text, u32::MAX.into(), "signature time").map(|v| v as u32);
    }
    let num = |r: core::ops::Range<usize>| {
        text[r]
            .iter()
            .fold(0u32, |v, &c| v * 10 + u32::from(c - b'0'))
    };
    let (y, mo, d, h, mi, s) = (
        num(0..4),
        num(4..6) as usize,
        num(6..8),
        num(8..10),
        num(10..12),
        num(12..14),
    );
    if y < 1970
        || !(1..=12).contains(&mo)
        || d == 0
        || d > month_days(y, mo)
        || h > 23
        || mi > 59
        || s > 59
    {
        return Err(bad());
    }
    let days = 365 * u64::from(y - 1970)
        + u64::from(leaps_before(y) - leaps_before(1970))
        + u64::from(DAYS_BEFORE_MONTH[mo - 1] + u32::from(mo > 2 && is_leap(y)))
        + u64::from(d - 1);
    let secs = days * 86_400 + u64::from(h * 3600 + mi * 60 + s);
    u32::try_from(secs).map_err(|_| bad())
}

/// Writes seconds since 1970 as `YYYYMMDDHHmmSS`.
pub fn write(secs: u32, f: &mut impl fmt::Write) -> fmt::Result {
    let mut days = secs / 86_400;
    let rest = secs % 86_400;
    let mut y = 1970;
    while days >= year_days(y) {
        days -= year_days(y);
        y += 1;
    }
    let mut mo = 1;
    while days >= month_days(y, mo) {
        days -= month_days(y, mo);
        mo += 1;
    }
    write!(
        f,
        "{y:04}{mo:02}{:02}{:02}{:02}{:02}",
        days + 1,
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}
