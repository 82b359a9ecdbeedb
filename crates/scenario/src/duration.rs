//! Durations (`"1.5ms"`, `"cost.ipi_latency"`) and duration distributions
//! (`"exp(1us)"`, `"lognormal(50us, 1.5)"`).

use smpsim_engine::Nanos;
use smpsim_kernel::program::Dist;
use smpsim_machine::Machine;

use crate::error::{list, StrErr};

/// Prefix of a duration that names one of the machine's costs.
const COST_PREFIX: &str = "cost.";

/// The machine's costs by name (as `Machine::cost_list` names them), so a
/// scenario can write `"cost.tlb_flush_page"` and follow the machine,
/// including `[machine]` overrides, instead of copying its numbers.
#[derive(Clone, Debug, Default)]
pub(crate) struct MachineCosts(Vec<(&'static str, Nanos)>);

impl MachineCosts {
    pub fn of(machine: &Machine) -> Self {
        let mut costs: Vec<(&'static str, Nanos)> = machine
            .cost_list()
            .into_iter()
            .map(|(name, c)| (name, c.nanos()))
            .collect();
        // The optional costs are 0 to the kernel model when the machine
        // does not give them (a preset has none; `calibrate` writes them).
        for name in OPTIONAL_COSTS {
            if !costs.iter().any(|(n, _)| *n == name) {
                costs.push((name, 0));
            }
        }
        // `cpu_relax()` has a stated default where the machine gives none.
        if !costs.iter().any(|(n, _)| *n == CPU_RELAX) {
            costs.push((CPU_RELAX, machine.costs.cpu_relax().nanos()));
        }
        MachineCosts(costs)
    }

    /// What `cpu_relax()` costs on this machine.
    pub fn cpu_relax(&self) -> Nanos {
        self.get(CPU_RELAX).unwrap_or(0)
    }

    fn get(&self, name: &str) -> Option<Nanos> {
        self.0.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.0.iter().map(|(n, _)| format!("{COST_PREFIX}{n}"))
    }
}

/// Resolves `cost.NAME` (already trimmed, starting at byte `start` of the
/// string) to the machine's cost.
fn machine_cost(trimmed: &str, start: usize, costs: &MachineCosts) -> Result<Nanos, StrErr> {
    let name = &trimmed[COST_PREFIX.len()..];
    costs.get(name).ok_or_else(|| {
        StrErr::new(
            start + COST_PREFIX.len()..start + trimmed.len(),
            format!("unknown machine cost `{name}`"),
        )
        .help(format!("known costs: {}", list(costs.names())))
    })
}

/// The machine cost `cpu_relax()` takes (`cost.cpu_relax` in a duration).
const CPU_RELAX: &str = "cpu_relax";

/// Costs a machine may leave out, which then count as 0.
const OPTIONAL_COSTS: [&str; 2] = ["idle_exit", "atomic"];

pub(crate) const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// Parses `s[range]` as a duration: a non-negative decimal number followed
/// by a unit (`ns`, `us`, `ms`, `s`), optionally separated by spaces, or
/// `cost.NAME`.
fn parse_at(s: &str, range: std::ops::Range<usize>, costs: &MachineCosts) -> Result<Nanos, StrErr> {
    let part = &s[range.clone()];
    let lead = part.len() - part.trim_start().len();
    let trimmed = part.trim();
    let start = range.start + lead;
    let whole = start..start + trimmed.len();
    let err = |m: &str| StrErr::new(whole.clone(), m);
    if trimmed.is_empty() {
        return Err(err("expected a duration such as \"3us\""));
    }
    if trimmed.starts_with(COST_PREFIX) {
        return machine_cost(trimmed, start, costs);
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
        if let Some(op) = unit.chars().find(|c| "*/+-".contains(*c)) {
            return Err(StrErr::new(
                at..start + trimmed.len(),
                format!("a duration takes no arithmetic (`{op}`); write the value itself (\"600ns\", not \"15 * 40ns\")"),
            )
            .help("a duration is a number and a unit (ns, us, ms, s), `cost.NAME`, or a distribution such as exp(1us)"));
        }
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

/// Parses a duration string such as `"20s"`, `"500us"`, `"1.5ms"` or
/// `"cost.syscall"`.
pub(crate) fn parse_duration(s: &str, costs: &MachineCosts) -> Result<Nanos, StrErr> {
    parse_at(s, 0..s.len(), costs)
}

const DISTS: &str = "expected a duration, cost.NAME, exp(MEAN), uniform(LO, HI), normal(MEAN, SD) or lognormal(MEDIAN, SIGMA)";

/// Parses a distribution: a plain duration (or `cost.NAME`), `exp(MEAN)`,
/// `uniform(LO, HI)`, `normal(MEAN, SD)` or `lognormal(MEDIAN, SIGMA)`.
/// Every duration argument may itself be `cost.NAME`.
pub(crate) fn parse_dist(s: &str, costs: &MachineCosts) -> Result<Dist, StrErr> {
    let t = s.trim_end();
    let lead = t.len() - t.trim_start().len();
    let body = &t[lead..];
    let Some(open) = body.find('(') else {
        return parse_duration(s, costs).map(Dist::Const);
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
    let dur = |i: usize| parse_at(s, args[i].clone(), costs);
    match name {
        "exp" => {
            arity(1)?;
            Ok(Dist::Exp { mean: dur(0)? })
        }
        "uniform" => {
            arity(2)?;
            let (lo, hi) = (dur(0)?, dur(1)?);
            if lo > hi {
                return Err(StrErr::new(lead..t.len(), "uniform(LO, HI) needs LO <= HI"));
            }
            Ok(Dist::Uniform { lo, hi })
        }
        "normal" => {
            arity(2)?;
            Ok(Dist::Normal {
                mean: dur(0)?,
                sd: dur(1)?,
            })
        }
        "lognormal" => {
            arity(2)?;
            Ok(Dist::LogNormal {
                median: dur(0)?,
                sigma: parse_sigma(s, args[1].clone())?,
            })
        }
        _ => Err(StrErr::new(
            name_range,
            format!("unknown distribution `{name}`; {DISTS}"),
        )),
    }
}

/// The shape of a log-normal: a plain non-negative number (the standard
/// deviation of the logarithm), not a duration.
fn parse_sigma(s: &str, range: std::ops::Range<usize>) -> Result<f64, StrErr> {
    let part = &s[range.clone()];
    let lead = part.len() - part.trim_start().len();
    let trimmed = part.trim();
    let at = range.start + lead..range.start + lead + trimmed.len();
    if trimmed.is_empty() {
        return Err(StrErr::new(range, "expected SIGMA, a number such as 1.5"));
    }
    // Only digits and a point: `f64::from_str` would also take `inf`, `NaN`
    // and exponents, none of which is a sensible shape.
    let plain = trimmed.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    match trimmed.parse::<f64>() {
        Ok(v) if plain && v.is_finite() => Ok(v),
        _ if trimmed.starts_with('-') => Err(StrErr::new(at, "SIGMA cannot be negative")),
        _ => Err(StrErr::new(
            at,
            format!("SIGMA must be a non-negative number such as 1.5, not `{trimmed}`"),
        )
        .help("lognormal(MEDIAN, SIGMA): MEDIAN is a duration, SIGMA the standard deviation of its logarithm (no unit)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_duration(s: &str) -> Result<Nanos, StrErr> {
        super::parse_duration(s, &MachineCosts::default())
    }

    fn parse_dist(s: &str) -> Result<Dist, StrErr> {
        super::parse_dist(s, &MachineCosts::default())
    }

    fn costs() -> MachineCosts {
        MachineCosts(vec![("ipi_latency", 900), ("tlb_flush_page", 120)])
    }

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

    #[test]
    fn lognormal() {
        assert_eq!(
            parse_dist("lognormal(50us, 1.5)"),
            Ok(Dist::LogNormal {
                median: 50_000,
                sigma: 1.5
            })
        );
        assert_eq!(
            parse_dist(" lognormal( 1ms ,0 ) "),
            Ok(Dist::LogNormal {
                median: 1_000_000,
                sigma: 0.0
            })
        );
        let e = parse_dist("lognormal(50us, -1)").unwrap_err();
        assert_eq!(e.range, 16..18);
        assert!(e.message.contains("negative"));
        let e = parse_dist("lognormal(50us, 1.5us)").unwrap_err();
        assert_eq!(e.range, 16..21);
        assert!(e.message.contains("non-negative number"), "{}", e.message);
        for bad in ["inf", "NaN", "1e3", "1.2.3", ""] {
            let text = format!("lognormal(50us, {bad})");
            assert!(parse_dist(&text).is_err(), "{text}");
        }
        let e = parse_dist("lognormal(50, 1)").unwrap_err();
        assert_eq!(e.range, 10..12);
        assert!(e.message.contains("no unit"));
        assert!(parse_dist("lognormal(50us)")
            .unwrap_err()
            .message
            .contains("takes 2 arguments"));
    }

    #[test]
    fn machine_costs() {
        let c = costs();
        assert_eq!(super::parse_duration("cost.ipi_latency", &c), Ok(900));
        assert_eq!(
            super::parse_dist(" cost.tlb_flush_page", &c),
            Ok(Dist::Const(120))
        );
        assert_eq!(
            super::parse_dist("exp(cost.ipi_latency)", &c),
            Ok(Dist::Exp { mean: 900 })
        );
        assert_eq!(
            super::parse_dist("lognormal(cost.ipi_latency, 0.5)", &c),
            Ok(Dist::LogNormal {
                median: 900,
                sigma: 0.5
            })
        );
        let e = super::parse_dist("uniform(1us, cost.nope)", &c).unwrap_err();
        assert_eq!(e.range, 18..22);
        assert!(e.message.contains("unknown machine cost `nope`"));
        let help = e.help.unwrap();
        assert!(
            help.contains("`cost.ipi_latency`, `cost.tlb_flush_page`"),
            "{help}"
        );
        assert!(super::parse_duration("cost.", &c).is_err());
    }

    /// `idle_exit` and `atomic` are 0 to the kernel model when the machine
    /// leaves them out, so `cost.idle_exit` names 0 rather than an unknown
    /// cost; a machine that gives them (a `calibrate` profile) is followed.
    #[test]
    fn optional_costs_are_zero_when_absent() {
        let mut m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        let costs = MachineCosts::of(&m);
        assert_eq!(super::parse_duration("cost.idle_exit", &costs), Ok(0));
        assert_eq!(super::parse_duration("cost.atomic", &costs), Ok(0));
        m.costs.idle_exit = Some(m.costs.syscall.clone());
        let costs = MachineCosts::of(&m);
        assert_eq!(
            super::parse_duration("cost.idle_exit", &costs),
            Ok(m.costs.syscall.nanos())
        );
    }
}
