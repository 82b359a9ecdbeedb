//! Schedule exploration: a run perturbed by random delays before its
//! shared-state ops, the failure a detector reports, and the ddmin
//! shrinking of a failing schedule to the delays that matter.

use smpsim_kernel::{Perturb, RunResult, Spec};

/// One delay in `ONE_IN` decision points is taken.
pub const ONE_IN: u64 = 4;
/// Schedules run at once (a constant: the output must not depend on the
/// number of threads).
pub const BATCH: u64 = 16;
/// At most this many replays while shrinking.
pub const SHRINK_BUDGET: usize = 400;

/// A schedule: its number and, when shrunk or replayed, the delays kept.
pub fn perturbed(spec: &Spec, schedule: u64, max_delay: u64, keep: Option<Vec<u32>>) -> Spec {
    let mut s = spec.clone();
    s.perturb = Some(Perturb {
        seed: schedule,
        max_delay,
        one_in: ONE_IN,
        keep,
    });
    s
}

/// The first detector that fired, if any.
pub fn failure(r: &RunResult) -> Option<&str> {
    r.findings.first().map(|f| f.detector.as_str())
}

/// `ddmin` over the delays of a failing schedule: the smallest subset found
/// that still makes `detector` fire.
pub fn shrink(
    spec: &Spec,
    schedule: u64,
    max_delay: u64,
    applied: Vec<u32>,
    detector: &str,
) -> Vec<u32> {
    let fails = |keep: &[u32]| {
        let r = smpsim_kernel::simulate(&perturbed(spec, schedule, max_delay, Some(keep.to_vec())));
        failure(&r) == Some(detector)
    };
    // A schedule that fails without any of its delays needs none.
    if fails(&[]) {
        return Vec::new();
    }
    let mut keep = applied;
    let mut parts = 2usize;
    let mut budget = SHRINK_BUDGET;
    while keep.len() > 1 && budget > 0 {
        let chunk = keep.len().div_ceil(parts);
        let mut reduced = false;
        let mut i = 0;
        while i < parts && budget > 0 {
            let lo = (i * chunk).min(keep.len());
            let hi = ((i + 1) * chunk).min(keep.len());
            i += 1;
            if lo == hi {
                continue;
            }
            let complement: Vec<u32> = keep[..lo].iter().chain(&keep[hi..]).copied().collect();
            budget -= 1;
            if fails(&complement) {
                keep = complement;
                parts = (parts - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if parts >= keep.len() {
                break;
            }
            parts = (parts * 2).min(keep.len());
        }
    }
    keep
}

/// A `--explore-delay` value: an integer with a unit (`10us`), or ns.
pub fn parse_delay(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("error: --explore-delay {s}: expected a duration such as 10us"))?;
    let scale = match unit {
        "" | "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        _ => {
            return Err(format!(
                "error: --explore-delay {s}: unknown unit `{unit}`; use ns, us or ms"
            ))
        }
    };
    match n.checked_mul(scale) {
        Some(d) if d > 0 => Ok(d),
        _ => Err(format!(
            "error: --explore-delay {s}: must be above zero and below 2^64 ns"
        )),
    }
}

/// A `--schedule K:I,J,...` value.
pub fn parse_schedule(s: &str) -> Result<(u64, Vec<u32>), String> {
    let bad = || {
        format!(
            "error: --schedule {s}: expected SCHEDULE:DELAY,DELAY,... as `run --explore` prints it"
        )
    };
    let (k, list) = s.split_once(':').ok_or_else(bad)?;
    let k = k.trim().parse().map_err(|_| bad())?;
    let keep = if list.trim().is_empty() {
        Vec::new()
    } else {
        list.split(',')
            .map(|x| x.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    };
    Ok((k, keep))
}

/// `run --schedule K:I,J,...`: the spec of one explored schedule.
pub fn replay_spec(spec: &Spec, schedule: &str, delay: &str) -> Result<Spec, String> {
    let (k, keep) = parse_schedule(schedule)?;
    let max_delay = parse_delay(delay)?;
    Ok(perturbed(spec, k, max_delay, Some(keep)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_and_schedules_parse_and_bad_ones_say_why() {
        assert_eq!(parse_delay("10us"), Ok(10_000));
        assert_eq!(parse_delay("250"), Ok(250));
        assert!(parse_delay("0us").is_err());
        assert!(parse_delay("3 weeks")
            .unwrap_err()
            .contains("--explore-delay"));
        assert_eq!(parse_schedule("7:1,20,3"), Ok((7, vec![1, 20, 3])));
        assert_eq!(parse_schedule("7:"), Ok((7, vec![])));
        assert!(parse_schedule("7").unwrap_err().contains("SCHEDULE:"));
    }
}
