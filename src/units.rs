//! Human sizes ("16M", "1G") and durations ("60s", "2m") as used in experiment files
//! and on the command line. Numbers are read as exact decimals, never through a float,
//! so a value is either taken exactly as written or refused: "4294967296s" is that many
//! seconds (and a key's range check then refuses it), never a wrapped or rounded one.

use std::time::Duration;

/// More digits than any size or duration jbench can hold (u64 has 20): a longer
/// number is refused before any arithmetic.
const MAX_DIGITS: usize = 30;

/// Longest duration any key accepts before its own range: 100 years.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A decimal `123.45` as mantissa 12345 and 2 decimal places.
struct Decimal {
    mantissa: u128,
    places: u32,
}

/// Splits "16M" into the number ("16") and the unit ("M"), the number being digits
/// with at most one `.`; signs, exponents, `inf` and `nan` are not numbers here.
fn split_number(text: &str) -> (&str, &str) {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    (num, unit.trim())
}

fn parse_decimal(num: &str) -> Option<Decimal> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty()
        || frac.contains('.')
        || int.len() + frac.len() > MAX_DIGITS
    {
        return None;
    }
    let digits = format!("{int}{frac}");
    Some(Decimal {
        mantissa: if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        },
        places: frac.len() as u32,
    })
}

/// `d * unit`, when it is a whole number of the base unit.
fn scale(d: &Decimal, unit: u128) -> Result<u128, Scaled> {
    let total = d.mantissa.checked_mul(unit).ok_or(Scaled::TooLarge)?;
    let divisor = 10u128.pow(d.places);
    if total % divisor != 0 {
        return Err(Scaled::Fraction);
    }
    Ok(total / divisor)
}

enum Scaled {
    TooLarge,
    Fraction,
}

/// Parses a size with an optional binary suffix: `4096`, `16M`, `16MiB`, `1G`, `512k`.
/// Suffixes are powers of 1024, as mke2fs and the studies use them ("16 MB journal").
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (num, suffix) = split_number(text);
    let not_a_size =
        || format!("`{text}` is not a size (use a whole number of bytes or e.g. 4096, 16M, 1G)");
    let shift = match suffix.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ if num.is_empty() => return Err(not_a_size()),
        _ => {
            return Err(format!(
                "`{text}` has an unknown unit `{suffix}` (use B, K, M, G or T)"
            ))
        }
    };
    let value = parse_decimal(num).ok_or_else(|| {
        if num.len() > MAX_DIGITS {
            format!("`{text}` is too large (at most {} bytes)", u64::MAX)
        } else {
            not_a_size()
        }
    })?;
    let bytes = scale(&value, 1u128 << shift).map_err(|e| match e {
        Scaled::TooLarge => format!("`{text}` is too large (at most {} bytes)", u64::MAX),
        Scaled::Fraction => format!("`{text}` is not a whole number of bytes"),
    })?;
    u64::try_from(bytes).map_err(|_| format!("`{text}` is too large (at most {} bytes)", u64::MAX))
}

/// A size that must lie in `min..=max`; the error says the allowed range.
pub fn parse_size_in(text: &str, min: u64, max: u64) -> Result<u64, String> {
    let bytes = parse_size(text)?;
    check_size_range(bytes, min, max).map_err(|m| format!("`{}` {m}", text.trim()))?;
    Ok(bytes)
}

/// Says why `bytes` is outside `min..=max`, with the range.
pub fn check_size_range(bytes: u64, min: u64, max: u64) -> Result<(), String> {
    if (min..=max).contains(&bytes) {
        return Ok(());
    }
    Err(format!(
        "is out of range: allowed {} to {}",
        describe_size(min),
        describe_size(max)
    ))
}

/// A size for messages: compact when it is a whole unit, bytes otherwise.
pub fn describe_size(bytes: u64) -> String {
    let compact = format_size(bytes);
    if parse_size(&compact) == Ok(bytes) {
        compact
    } else {
        format!("{bytes} bytes")
    }
}

/// A size rounded for an estimate: `680K`, `67M`, `2.1G`.
pub fn approx_size(bytes: u64) -> String {
    let b = bytes as f64;
    let (k, m, g) = (1024.0, 1024.0 * 1024.0, 1024.0 * 1024.0 * 1024.0);
    if b >= 10.0 * g {
        format!("{:.0}G", b / g)
    } else if b >= g {
        format!("{:.1}G", b / g)
    } else if b >= m {
        format!("{:.0}M", (b / m).ceil())
    } else {
        format!("{:.0}K", (b / k).ceil())
    }
}

/// Formats bytes the way the studies quote them: 16M, 1G, 1536K.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "K")];
    for (shift, unit) in UNITS {
        let base = 1u64 << shift;
        if bytes >= base && bytes.is_multiple_of(base) {
            return format!("{}{unit}", bytes / base);
        }
    }
    if bytes >= 1 << 20 {
        return format!("{:.1}M", bytes as f64 / (1u64 << 20) as f64);
    }
    format!("{bytes}B")
}

/// Parses a duration: `60s`, `1.5s`, `500ms`, `2m`, `1h`; a bare number is seconds.
/// Exact to the nanosecond; finer fractions and anything over [`MAX_DURATION`] are
/// refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (num, suffix) = split_number(text);
    let not_a_duration = || format!("`{text}` is not a duration (use e.g. 60s, 500ms, 2m)");
    const NS: u128 = 1_000_000_000;
    let unit_ns = match suffix {
        "" | "s" | "sec" => NS,
        "ms" => NS / 1000,
        "m" | "min" => 60 * NS,
        "h" => 3600 * NS,
        _ if num.is_empty() => return Err(not_a_duration()),
        other => {
            return Err(format!(
                "`{text}` has an unknown unit `{other}` (use ms, s, m or h)"
            ))
        }
    };
    let too_long = || {
        format!(
            "`{text}` is too long (at most {})",
            format_duration(MAX_DURATION)
        )
    };
    let value = parse_decimal(num).ok_or_else(|| {
        if num.len() > MAX_DIGITS {
            too_long()
        } else {
            not_a_duration()
        }
    })?;
    let nanos = scale(&value, unit_ns).map_err(|e| match e {
        Scaled::TooLarge => too_long(),
        Scaled::Fraction => format!("`{text}` is finer than a nanosecond"),
    })?;
    if nanos > MAX_DURATION.as_nanos() {
        return Err(too_long());
    }
    let secs = (nanos / NS) as u64;
    Ok(Duration::new(secs, (nanos % NS) as u32))
}

/// A duration that must lie in `min..=max`; the error says the allowed range.
pub fn parse_duration_in(text: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if !(min..=max).contains(&d) {
        return Err(format!(
            "`{}` is out of range: allowed {} to {}",
            text.trim(),
            format_duration(min),
            format_duration(max)
        ));
    }
    Ok(d)
}

/// A duration as a spec would write it: `500ms`, `90s`, `1.5s`.
pub fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) && d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// A whole number that must lie in `min..=max`, for command-line counts.
pub fn parse_count_in(text: &str, min: u64, max: u64) -> Result<u64, String> {
    let t = text.trim();
    let n: u64 = match t.parse() {
        Ok(n) => n,
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => u64::MAX,
        Err(_) => return Err(format!("`{text}` is not a whole number")),
    };
    if !(min..=max).contains(&n) {
        return Err(format!("`{t}` is out of range: allowed {min} to {max}"));
    }
    Ok(n)
}

/// A finite number that must lie in `min..=max`, for command-line figures.
pub fn parse_number_in(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let t = text.trim();
    let x: f64 = t.parse().map_err(|_| format!("`{text}` is not a number"))?;
    if !x.is_finite() || !(min..=max).contains(&x) {
        return Err(format!("`{t}` is out of range: allowed {min} to {max}"));
    }
    Ok(x)
}

/// Value parsers for command-line options, with the same rules as the spec keys:
/// a value outside its range is refused with the range, never clamped or wrapped.
pub mod cli {
    use super::*;

    /// `report --suspect-below`: as the spec's `suspect_below`, 0s to a day. Returns
    /// the text, which the report reads again.
    pub fn suspect_below(text: &str) -> Result<String, String> {
        parse_duration_in(text, Duration::ZERO, Duration::from_secs(86_400))?;
        Ok(text.to_string())
    }

    /// `selftest monitor --interval`: as `monitor_interval`, 10ms to an hour.
    pub fn monitor_interval(text: &str) -> Result<String, String> {
        parse_duration_in(text, Duration::from_millis(10), Duration::from_secs(3600))?;
        Ok(text.to_string())
    }

    /// Alternating rounds of a selftest: 1 to 1000.
    pub fn rounds(text: &str) -> Result<u32, String> {
        parse_count_in(text, 1, 1000).map(|n| n as u32)
    }

    /// Samples the monitor selftest times: 1 to 10,000,000.
    pub fn samples(text: &str) -> Result<usize, String> {
        parse_count_in(text, 1, 10_000_000).map(|n| n as usize)
    }

    /// `selftest adaptive --min`: as the adaptive rule's `min`, 2 to 1000.
    pub fn adaptive_min(text: &str) -> Result<u32, String> {
        parse_count_in(text, 2, 1000).map(|n| n as u32)
    }

    /// `selftest adaptive --target-cv`: above 0 and below 1.
    pub fn target_cv(text: &str) -> Result<f64, String> {
        let x = parse_number_in(text, 0.0, 1.0)?;
        if x <= 0.0 || x >= 1.0 {
            return Err(format!(
                "`{text}` is out of range: a coefficient of variation above 0 and below 1 (0.03 = 3%)"
            ));
        }
        Ok(x)
    }

    /// fdtree counts of `selftest overhead` (-d, -f, -s, -l): 0 to 1,000,000; the
    /// tree itself is checked for overflow when it is built.
    pub fn tree_count(text: &str) -> Result<u32, String> {
        parse_count_in(text, 0, 1_000_000).map(|n| n as u32)
    }

    /// `device calibrate --size`: 32M to 16T (an image file on ext4).
    pub fn disk_size(text: &str) -> Result<String, String> {
        parse_size_in(text, 32 << 20, 16 << 40)?;
        Ok(text.to_string())
    }

    /// `device calibrate --seconds`: 0.1 to 3600 predicted seconds per pattern.
    pub fn pattern_seconds(text: &str) -> Result<f64, String> {
        parse_number_in(text, 0.1, 3600.0)
    }

    /// Shards of `plan --shards` and `submit --shards`: 1 to 10,000.
    pub fn shards(text: &str) -> Result<u32, String> {
        parse_count_in(text, 1, 10_000).map(|n| n as u32)
    }

    /// Crash states of `crash --states`: 1 to 1,000,000.
    pub fn states(text: &str) -> Result<u32, String> {
        parse_count_in(text, 1, 1_000_000).map(|n| n as u32)
    }

    /// Parallel jobs and similar small counts: 1 to 64.
    pub fn jobs(text: &str) -> Result<u16, String> {
        parse_count_in(text, 1, 64).map(|n| n as u16)
    }

    /// A count of at least 1 (`--throttle`).
    pub fn positive(text: &str) -> Result<u32, String> {
        parse_count_in(text, 1, u64::from(u32::MAX)).map(|n| n as u32)
    }
}

/// A duration for people: `45 s`, `3 min 50 s`, `2 h 05 min`.
pub fn human_seconds(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0 if secs > 0.0 => "under 1 s".into(),
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600 + 30) / 60),
    }
}

/// `n` and the noun, plural unless `n` is 1: "1 trial", "2 trials".
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("16M").unwrap(), 16 << 20);
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size(".5K").unwrap(), 512);
        assert!(parse_size("16Q").unwrap_err().contains("unknown unit"));
        assert!(parse_size("M").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("0.3").is_err());
    }

    #[test]
    fn sizes_are_exact_or_refused_never_rounded() {
        assert_eq!(parse_size("18446744073709551615").unwrap(), u64::MAX);
        assert_eq!(
            parse_size("18446744073709551613").unwrap(),
            u64::MAX - 2,
            "a float would round this"
        );
        for text in [
            "18446744073709551616",
            "99999999999999999999999999999999999999999",
            "16777216T",
            "1e400",
            "inf",
            "nan",
            "-1",
            "-16M",
            "1.2.3",
            ".",
            "1.0000000000000000000000001K",
        ] {
            let e = parse_size(text).expect_err(text);
            assert!(e.contains(text), "{text}: {e}");
        }
        assert!(parse_size("16777216T").unwrap_err().contains("too large"));
        assert_eq!(
            parse_size_in("8G", 1, 4 << 30).unwrap_err(),
            "`8G` is out of range: allowed 1B to 4G"
        );
        assert_eq!(parse_size_in("4G", 1, 4 << 30).unwrap(), 4 << 30);
    }

    #[test]
    fn sizes_format_compactly() {
        assert_eq!(format_size(16 << 20), "16M");
        assert_eq!(format_size(1 << 30), "1G");
        assert_eq!(format_size(1536), "1536B");
        assert_eq!(format_size(3 << 10), "3K");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("60").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            parse_duration("0.000000001s").unwrap(),
            Duration::from_nanos(1)
        );
        assert_eq!(
            parse_duration("2147483648s").unwrap(),
            Duration::from_secs(1 << 31),
            "taken as written; the key's range refuses it"
        );
        assert!(parse_duration("4294967296s")
            .unwrap_err()
            .contains("too long"));
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn hostile_durations_are_refused_without_panicking() {
        // from_secs_f64 panicked on the first two.
        for (text, why) in [
            ("99999999999999999999", "too long"),
            ("99999999999999999999h", "too long"),
            ("999999999999999999999999999999999999999s", "too long"),
            ("0.0000000001s", "finer than a nanosecond"),
            ("0.0000001ms", "finer than a nanosecond"),
            ("1e400", "unknown unit"),
            ("inf", "not a duration"),
            ("NaN", "not a duration"),
            ("-1s", "not a duration"),
            ("", "not a duration"),
            ("s", "not a duration"),
            ("1..2s", "not a duration"),
        ] {
            let e = parse_duration(text).expect_err(text);
            assert!(e.contains(why), "{text}: {e}");
        }
        assert_eq!(
            parse_duration_in("2h", Duration::from_secs(1), Duration::from_secs(3600)).unwrap_err(),
            "`2h` is out of range: allowed 1s to 3600s"
        );
        assert_eq!(
            format_duration(Duration::from_millis(10)),
            "10ms",
            "messages show the bounds as a spec writes them"
        );
    }

    #[test]
    fn command_line_counts_and_numbers_are_range_checked() {
        assert_eq!(parse_count_in("5", 1, 10).unwrap(), 5);
        assert!(parse_count_in("0", 1, 10)
            .unwrap_err()
            .contains("allowed 1 to 10"));
        assert!(parse_count_in("99999999999999999999999", 1, 10)
            .unwrap_err()
            .contains("allowed 1 to 10"));
        assert!(parse_count_in("-3", 1, 10)
            .unwrap_err()
            .contains("not a whole number"));
        assert_eq!(parse_number_in("8", 0.1, 3600.0).unwrap(), 8.0);
        for t in ["nan", "inf", "-1", "1e400", "0"] {
            assert!(parse_number_in(t, 0.1, 3600.0).is_err(), "{t}");
        }
    }

    #[test]
    fn command_line_options_share_the_spec_ranges() {
        assert!(cli::suspect_below("30s").is_ok());
        assert!(cli::suspect_below("99999999999999999999")
            .unwrap_err()
            .contains("too long"));
        assert!(cli::suspect_below("25h")
            .unwrap_err()
            .contains("allowed 0s to 86400s"));
        assert!(cli::monitor_interval("1ms")
            .unwrap_err()
            .contains("allowed 10ms"));
        assert!(cli::rounds("0").unwrap_err().contains("allowed 1 to 1000"));
        assert!(cli::rounds("4294967296")
            .unwrap_err()
            .contains("allowed 1 to 1000"));
        assert_eq!(cli::samples("2000"), Ok(2000));
        assert!(cli::adaptive_min("1").is_err());
        assert!(cli::target_cv("0").is_err() && cli::target_cv("nan").is_err());
        assert_eq!(cli::target_cv("0.03"), Ok(0.03));
        assert!(cli::tree_count("4000000000").is_err());
        assert!(cli::disk_size("1M")
            .unwrap_err()
            .contains("allowed 32M to 16T"));
        assert!(cli::disk_size("99999999999999999999999T").is_err());
        assert!(cli::pattern_seconds("inf").is_err());
        assert!(cli::pattern_seconds("1e300").is_err());
    }
}
