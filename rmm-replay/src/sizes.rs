//! Sizes written as text with a unit (`"1GiB"`, `"512MiB"`, `"100MB"`,
//! `"1.5 kB"`, `"4096"`), as RMM's Python API takes them: the one parser,
//! used by the Python package (`rmm_rs.parse_bytes` and every size argument)
//! and fuzzed by `fuzz/` (target `size_str`).
//!
//! A size is a non-negative number (digits with optional `_` separators, a
//! fraction, an exponent) followed by an optional unit, case-insensitive:
//! `B`; decimal `k`/`kB`, `M`/`MB`, `G`/`GB`, `T`/`TB`, `P`/`PB`; binary
//! `Ki`/`KiB` .. `Pi`/`PiB`. Fractions are truncated to whole bytes.
//!
//! ```
//! use rmm_replay::sizes::parse_size_str;
//! assert_eq!(parse_size_str("1GiB"), Ok(1 << 30));
//! assert_eq!(parse_size_str(" 1.5 kB "), Ok(1500));
//! assert_eq!(parse_size_str("1_000"), Ok(1000));
//! assert!(parse_size_str("-1").is_err());
//! assert!(parse_size_str("1 parsec").is_err());
//! ```

#![forbid(unsafe_code)]

/// The factor of a unit name (case-insensitive; `""` and `"b"` are bytes).
fn unit_factor(unit: &str) -> Option<u128> {
    let u = unit.trim().to_ascii_lowercase();
    let (base, exp) = match u.as_str() {
        "" | "b" => return Some(1),
        "k" | "kb" => (1000u128, 1),
        "m" | "mb" => (1000, 2),
        "g" | "gb" => (1000, 3),
        "t" | "tb" => (1000, 4),
        "p" | "pb" => (1000, 5),
        "ki" | "kib" => (1024, 1),
        "mi" | "mib" => (1024, 2),
        "gi" | "gib" => (1024, 3),
        "ti" | "tib" => (1024, 4),
        "pi" | "pib" => (1024, 5),
        _ => return None,
    };
    Some(base.pow(exp))
}

/// Parses `"<number><unit>"` into bytes (see the module docs).
///
/// # Errors
/// A message naming the text for a missing number, an unknown unit, a
/// negative or non-finite number, or a size that does not fit in `usize`.
///
/// ```
/// use rmm_replay::sizes::parse_size_str;
/// assert_eq!(parse_size_str("512MiB"), Ok(512 << 20));
/// assert_eq!(parse_size_str("2e3"), Ok(2000));
/// assert!(parse_size_str("99999999999 PiB").unwrap_err().contains("too large"));
/// ```
pub fn parse_size_str(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '_'
                || ((c == 'e' || c == 'E')
                    && t[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '+' || d == '-'))
                || ((c == '+' || c == '-') && (i == 0 || t[..i].ends_with(['e', 'E']))))
        })
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number = number.replace('_', "");
    if number.is_empty() {
        return Err(format!("size {text:?} has no number"));
    }
    let factor = unit_factor(unit).ok_or_else(|| {
        format!("size {text:?}: unknown unit {unit:?} (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    })?;
    if let Ok(n) = number.parse::<u128>() {
        return n
            .checked_mul(factor)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("size {text:?} is too large"));
    }
    let x: f64 = number
        .parse()
        .map_err(|_| format!("size {text:?} is not a number with a unit"))?;
    if !x.is_finite() || x < 0.0 {
        return Err(format!("size {text:?} must be a non-negative number of bytes"));
    }
    let bytes = x * factor as f64;
    if bytes >= usize::MAX as f64 {
        return Err(format!("size {text:?} is too large"));
    }
    Ok(bytes as usize)
}
