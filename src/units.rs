//! Human sizes ("16M", "1G") and durations ("60s", "2m") as used in experiment files.

use std::time::Duration;

/// Splits "16M" into ("16", "M").
fn split_number(text: &str) -> (&str, &str) {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    t.split_at(split)
}

/// Parses a size with an optional binary suffix: `4096`, `16M`, `16MiB`, `1G`, `512k`.
/// Suffixes are powers of 1024, as mke2fs and the studies use them ("16 MB journal").
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (num, suffix) = split_number(text);
    if num.is_empty() {
        return Err(format!("`{text}` is not a size (use e.g. 4096, 16M, 1G)"));
    }
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "`{text}` has an unknown unit `{}` (use B, K, M, G or T)",
                suffix.trim()
            ))
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (use e.g. 4096, 16M, 1G)"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("`{text}` is too large"));
    }
    if bytes.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole number of bytes"));
    }
    Ok(bytes as u64)
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
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (num, suffix) = split_number(text);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (use e.g. 60s, 500ms, 2m)"))?;
    let seconds = match suffix.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "`{text}` has an unknown unit `{other}` (use ms, s, m or h)"
            ))
        }
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("`{text}` is not a duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
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
        assert!(parse_size("16Q").unwrap_err().contains("unknown unit"));
        assert!(parse_size("M").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("0.3").is_err());
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
        assert!(parse_duration("5 parsecs").is_err());
    }
}
