//! Human units for sizes, durations and rates.
//!
//! Storage people write `4k`, `1MiB`, `2TB` and `30s`; every flag and spec field goes through
//! here so the same string means the same thing everywhere. The rule (the same as `dd`'s):
//! a bare letter or an `iB` suffix is binary (`4k` = `4KiB` = 4096), a `B` suffix after the
//! letter is decimal (`2TB` = 2*10^12, as disk vendors mean it).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A unit string that could not be read; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The text is empty or does not start with a number.
    #[error("'{0}' is not a number (expected e.g. 4k, 1MiB, 2TB)")]
    NotANumber(String),
    /// The suffix is not a known size unit.
    #[error("'{0}' has an unknown size unit (use k, M, G, T with optional iB or B)")]
    BadSizeUnit(String),
    /// The suffix is not a known time unit.
    #[error("'{0}' has an unknown time unit (use ns, us, ms, s, m, h)")]
    BadTimeUnit(String),
    /// The value does not fit in 64 bits or is negative.
    #[error("'{0}' is out of range")]
    OutOfRange(String),
}

/// A byte count. Serialized as a plain integer so JSON consumers need no parser.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    /// Parses `4k`, `1MiB`, `2TB`, `512`, `1.5G`.
    pub fn parse(s: &str) -> Result<Bytes, UnitError> {
        parse_bytes(s).map(Bytes)
    }
    /// The raw count.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

impl std::str::FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Bytes::parse(s)
    }
}

fn split_number(s: &str) -> Result<(f64, &str), UnitError> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map_or(t.len(), |(i, _)| i);
    let (num, rest) = t.split_at(end);
    let num: String = num.chars().filter(|c| *c != '_').collect();
    if num.is_empty() {
        return Err(UnitError::NotANumber(s.to_string()));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| UnitError::NotANumber(s.to_string()))?;
    if !v.is_finite() || v < 0.0 {
        return Err(UnitError::OutOfRange(s.to_string()));
    }
    Ok((v, rest.trim()))
}

/// Parses a size string into bytes (see the module doc for the unit rule).
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let (v, unit) = split_number(s)?;
    let lower = unit.to_ascii_lowercase();
    let (letter, rest) = match lower.chars().next() {
        None => return finish(v, 1.0, s),
        Some(c) => (c, &lower[c.len_utf8()..]),
    };
    if letter == 'b' && rest.is_empty() {
        return finish(v, 1.0, s);
    }
    let exp = match letter {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        'e' => 6,
        _ => return Err(UnitError::BadSizeUnit(s.to_string())),
    };
    let base: f64 = match rest {
        "" | "i" | "ib" => 1024.0,
        "b" => 1000.0,
        _ => return Err(UnitError::BadSizeUnit(s.to_string())),
    };
    finish(v, base.powi(exp), s)
}

fn finish(v: f64, mult: f64, s: &str) -> Result<u64, UnitError> {
    let x = (v * mult).round();
    if x > u64::MAX as f64 {
        return Err(UnitError::OutOfRange(s.to_string()));
    }
    Ok(x as u64)
}

/// Formats bytes with binary units, short and exact where it can be (`4KiB`, `1MiB`, `1.50GiB`).
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut v = n as f64;
    let mut i = 0;
    v /= 1024.0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{}{}", v.round() as u64, UNITS[i])
    } else {
        format!("{v:.2}{}", UNITS[i])
    }
}

/// Formats bytes with decimal units, as disk labels read (`2.00TB`).
pub fn format_bytes_si(n: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n}B");
    }
    let mut v = n as f64 / 1000.0;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    format!("{v:.2}{}", UNITS[i])
}

/// Parses `30s`, `2m`, `500ms`, `250us`, `1h`, `1.5s`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let (v, unit) = split_number(s)?;
    let secs = match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "ns" => v / 1e9,
        "m" | "min" | "mins" => v * 60.0,
        "h" | "hr" | "hours" => v * 3600.0,
        "d" | "days" => v * 86400.0,
        _ => return Err(UnitError::BadTimeUnit(s.to_string())),
    };
    if secs > 1e12 {
        return Err(UnitError::OutOfRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way people say it (`850ms`, `12.3s`, `4m05s`, `2h10m`).
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{}ms", (s * 1000.0).round() as u64)
    } else if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        let m = (s / 60.0).floor() as u64;
        format!("{m}m{:02}s", (s - m as f64 * 60.0).round() as u64)
    } else {
        let h = (s / 3600.0).floor() as u64;
        format!(
            "{h}h{:02}m",
            ((s - h as f64 * 3600.0) / 60.0).round() as u64
        )
    }
}

/// Formats a rate (MB/s, IOPS, ops/s) with the precision a reader can use: no decimals from 100
/// up, one below 100, two below 10.
pub fn format_rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Formats a latency in nanoseconds with a unit that keeps three significant figures.
pub fn format_latency_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0}ns")
    } else if ns < 1_000_000.0 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// A duration serialized as a human string (`30s`), for spec files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct HumanDuration(pub Duration);

impl std::str::FromStr for HumanDuration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(HumanDuration)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms % 1000 == 0 {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_dd_rule() {
        assert_eq!(parse_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_bytes("4K").unwrap(), 4096);
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("4kB").unwrap(), 4000);
        assert_eq!(parse_bytes("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("1m").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("2TB").unwrap(), 2_000_000_000_000);
        assert_eq!(parse_bytes("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("512").unwrap(), 512);
        assert_eq!(parse_bytes("512B").unwrap(), 512);
        assert_eq!(parse_bytes(" 8 k ").unwrap(), 8192);
    }

    #[test]
    fn bad_sizes_are_errors_not_panics() {
        assert!(matches!(parse_bytes(""), Err(UnitError::NotANumber(_))));
        assert!(matches!(parse_bytes("k"), Err(UnitError::NotANumber(_))));
        assert!(matches!(parse_bytes("4x"), Err(UnitError::BadSizeUnit(_))));
        assert!(matches!(parse_bytes("4kq"), Err(UnitError::BadSizeUnit(_))));
        assert!(matches!(parse_bytes("-4k"), Err(UnitError::NotANumber(_))));
        assert!(matches!(
            parse_bytes("99999999E"),
            Err(UnitError::OutOfRange(_))
        ));
        assert!(parse_bytes("1.2.3k").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("7parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1 << 30), "1GiB");
        assert_eq!(format_bytes(1536 << 20), "1.50GiB");
        assert_eq!(format_bytes(100), "100B");
        assert_eq!(format_bytes_si(2_000_000_000_000), "2.00TB");
        assert_eq!(format_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(format_duration(Duration::from_secs(245)), "4m05s");
        assert_eq!(format_latency_ns(2500.0), "2.5us");
        assert_eq!(HumanDuration(Duration::from_secs(30)).to_string(), "30s");
    }
}
