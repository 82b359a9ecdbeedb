//! Durations (`"1.5ms"`) and duration distributions (`"exp(1us)"`).

use smpsim_engine::Nanos;
use smpsim_kernel::program::Dist;

use crate::error::StrErr;

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// Parses `s[range]` as a duration: a non-negative decimal number followed
/// by a unit (`ns`, `us`, `ms`, `s`), optionally separated by spaces.
fn parse_at(s: &str, range: std::ops::Range<usize>) -> Result<Nanos, StrErr> {
    let part = &s[range.clone()];
    let lead = part.len() - part.trim_start().len();
    let trimmed = part.trim();
    let start = range.start + lead;
    let whole = start..start + trimmed.len();
    let err = |m: &str| StrErr::new(whole.clone(), m);
    if trimmed.is_empty() {
        return Err(err("expected a duration such as \"3us\""));
    }
    if trimmed.starts_with('-') {
        return Err(err("a duration cannot be negative"));
    }
    let num_len = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (num, unit) = trimmed.split_at(num_len);
    let unit = unit.trim_start();
    if num.is_empty() {
        return Err(err(
            "expected a duration: a number followed by a unit (ns, us, ms, s)",
        ));
    }
    if unit.is_empty() {
        return Err(StrErr::new(
            whole.clone(),
            format!("the duration `{num}` has no unit; expected one of ns, us, ms, s (e.g. \"{num}us\")"),
        ));
    }
    let Some(&(_, scale)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        let at = start + trimmed.len() - unit.len();
        return Err(StrErr::new(
            at..start + trimmed.len(),
            format!("unknown duration unit `{unit}`; expected one of ns, us, ms, s"),
        ));
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(err("malformed number in duration"));
    }
    let too_big = || err("duration is too large");
    let int_val: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_big())?
    };
    let mut total = int_val.checked_mul(scale).ok_or_else(too_big)?;
    // Fractional part, exactly: digits beyond the unit's resolution must be 0.
    let mut place = scale;
    for (i, d) in frac.bytes().enumerate() {
        let digit = (d - b'0') as u64;
        if place % 10 != 0 {
            if digit != 0 {
                return Err(StrErr::new(
                    whole.clone(),
                    format!(
                        "durations are whole nanoseconds; `{trimmed}` has a fraction of a nanosecond (digit {} after the point)",
                        i + 1
                    ),
                ));
            }
            continue;
        }
        place /= 10;
        total = total.checked_add(digit * place).ok_or_else(too_big)?;
    }
    Ok(total)
}

/// Parses a duration string such as `"20s"`, `"500us"` or `"1.5ms"`.
pub(crate) fn parse_duration(s: &str) -> Result<Nanos, StrErr> {
    parse_at(s, 0..s.len())
}

/// Parses a distribution: a plain duration, `exp(MEAN)`,
/// `uniform(LO, HI)` or `normal(MEAN, SD)`.
pub(crate) fn parse_dist(s: &str) -> Result<Dist, StrErr> {
    let t = s.trim_end();
    let lead = t.len() - t.trim_start().len();
    let body = &t[lead..];
    let Some(open) = body.find('(') else {
        return parse_duration(s).map(Dist::Const);
    };
    let name = body[..open].trim();
    let name_range = lead..lead + open;
    if !body.ends_with(')') {
        return Err(StrErr::new(
            lead..t.len(),
            "missing `)` at the end of the distribution",
        ));
    }
    let args_start = lead + open + 1;
    let args_end = t.len() - 1;
    let mut args = Vec::new();
    let mut at = args_start;
    for piece in t[args_start..args_end].split(',') {
        args.push(at..at + piece.len());
        at += piece.len() + 1;
    }
    let arity = |n: usize| -> Result<(), StrErr> {
        if args.len() == n {
            Ok(())
        } else {
            Err(StrErr::new(
                lead..t.len(),
                format!(
                    "`{name}` takes {n} argument{}, found {}",
                    if n == 1 { "" } else { "s" },
                    args.len()
                ),
            ))
        }
    };
    match name {
        "exp" => {
            arity(1)?;
            Ok(Dist::Exp {
                mean: parse_at(s, args[0].clone())?,
            })
        }
        "uniform" => {
            arity(2)?;
            let lo = parse_at(s, args[0].clone())?;
            let hi = parse_at(s, args[1].clone())?;
            if lo > hi {
                return Err(StrErr::new(lead..t.len(), "uniform(LO, HI) needs LO <= HI"));
            }
            Ok(Dist::Uniform { lo, hi })
        }
        "normal" => {
            arity(2)?;
            Ok(Dist::Normal {
                mean: parse_at(s, args[0].clone())?,
                sd: parse_at(s, args[1].clone())?,
            })
        }
        _ => Err(StrErr::new(
            name_range,
            format!("unknown distribution `{name}`; expected a duration, exp(MEAN), uniform(LO, HI) or normal(MEAN, SD)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20s"), Ok(20_000_000_000));
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("0ns"), Ok(0));
        assert_eq!(parse_duration(" 3 ns "), Ok(3));
        assert_eq!(parse_duration(".5us"), Ok(500));
        assert!(parse_duration("-1s")
            .unwrap_err()
            .message
            .contains("negative"));
        assert!(parse_duration("5").unwrap_err().message.contains("no unit"));
        assert!(parse_duration("1.5ns").is_err());
        assert!(parse_duration("5min")
            .unwrap_err()
            .message
            .contains("unit `min`"));
        assert!(parse_duration("99999999999999999999s").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn distributions() {
        assert_eq!(parse_dist("3us"), Ok(Dist::Const(3000)));
        assert_eq!(parse_dist("exp(1us)"), Ok(Dist::Exp { mean: 1000 }));
        assert_eq!(
            parse_dist("uniform(1us, 5us)"),
            Ok(Dist::Uniform { lo: 1000, hi: 5000 })
        );
        assert_eq!(
            parse_dist("normal(10us, 2us)"),
            Ok(Dist::Normal {
                mean: 10_000,
                sd: 2000
            })
        );
        let e = parse_dist("uniform(1us, -5us)").unwrap_err();
        assert_eq!(e.range, 13..17);
        assert!(parse_dist("uniform(5us, 1us)").is_err());
        assert!(parse_dist("exp(1us, 2us)").is_err());
        assert!(parse_dist("gamma(1us)")
            .unwrap_err()
            .message
            .contains("unknown distribution"));
        assert!(parse_dist("exp(1us").is_err());
    }
}
