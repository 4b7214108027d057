//! Value parsers for numbers on the command line: each value gets its own message
//! ("--max-iter -1: a count cannot be negative"), never clap's "unexpected argument"
//! (negative numbers reach the parsers: [`crate::parse`] allows them as values).

/// The largest count, for messages.
const MAX: u128 = usize::MAX as u128;

/// A count (`usize`): decimal digits, or a whole number in exponent notation (`1e6`,
/// `2.5e3`), so that `--restart 1e11` means 100000000000.
pub fn count(s: &str) -> Result<usize, String> {
    let n = whole(s)?;
    usize::try_from(n).map_err(|_| format!("{s} is larger than {MAX}, the largest count"))
}

/// [`count`] as `u64`.
pub fn count_u64(s: &str) -> Result<u64, String> {
    let n = whole(s)?;
    u64::try_from(n).map_err(|_| format!("{s} is larger than {}, the largest count", u64::MAX))
}

/// A non-negative whole number, exactly (no rounding of `1.5` or of a 20-digit `1e19`).
fn whole(s: &str) -> Result<u128, String> {
    let t = s.trim();
    if t.starts_with('-') && t != "-0" {
        return Err("a count cannot be negative".into());
    }
    let t = t.trim_start_matches(['+', '-']);
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<u128>()
            .map_err(|_| format!("{t} is larger than {MAX}, the largest count"));
    }
    // Exponent notation: mantissa digits with an optional point, then e/E and a
    // non-negative exponent; the value must be whole.
    let (mantissa, exp) = t
        .split_once(['e', 'E'])
        .ok_or_else(|| format!("{s:?} is not a whole number"))?;
    let exp: u32 = exp.trim_start_matches('+').parse().map_err(|_| {
        format!("{s:?} is not a whole number (a count cannot have a negative exponent)")
    })?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(format!("{s:?} is not a whole number"));
    }
    let frac = frac.trim_end_matches('0');
    let too_large = || format!("{s} is larger than {MAX}, the largest count");
    let joined = format!("{int}{frac}");
    let significant = joined.trim_start_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    let shift = exp
        .checked_sub(frac.len() as u32)
        .ok_or_else(|| format!("{s} is not a whole number"))?;
    let digits: u128 = significant.parse().map_err(|_| too_large())?;
    10u128
        .checked_pow(shift)
        .and_then(|p| digits.checked_mul(p))
        .ok_or_else(too_large)
}

/// A 32-bit unsigned integer, decimal or `0x` hex (seeds).
pub fn u32_value(s: &str) -> Result<u32, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("a seed cannot be negative (0 to {})", u32::MAX));
    }
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse::<u32>(),
    };
    r.map_err(|e| format!("{s:?} is not a 32-bit unsigned integer (decimal or 0x hex): {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_exactly_with_their_own_messages() {
        assert_eq!(count("30"), Ok(30));
        assert_eq!(count("1e11"), Ok(100_000_000_000));
        assert_eq!(count("2.5e3"), Ok(2500));
        assert_eq!(count("1.50e1"), Ok(15));
        assert_eq!(count("0e5"), Ok(0));
        assert_eq!(count("18446744073709551615"), Ok(usize::MAX));
        assert!(count("-1").unwrap_err().contains("cannot be negative"));
        assert!(count("1.5").unwrap_err().contains("not a whole number"));
        assert!(count("1e-3").unwrap_err().contains("not a whole number"));
        assert!(count("nan").unwrap_err().contains("not a whole number"));
        assert!(count("1e40").unwrap_err().contains("largest count"));
        assert!(
            count("18446744073709551616")
                .unwrap_err()
                .contains("largest count")
        );
        assert!(count("").is_err() && count("e").is_err() && count(".e1").is_err());
        assert_eq!(count_u64("1e12"), Ok(1_000_000_000_000));
    }

    #[test]
    fn seeds_parse() {
        assert_eq!(u32_value("0x10"), Ok(16));
        assert!(u32_value("-1").unwrap_err().contains("cannot be negative"));
        assert!(u32_value("4294967296").is_err());
    }
}
