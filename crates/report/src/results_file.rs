//! A sweep's results file: JSON Lines, one point each (written by
//! `smpsim sweep`), read back by `plot`, `report` and `sweep --format`.

use std::collections::HashSet;
use std::path::Path;

use crate::sweep_point::SweepPoint;

/// FNV-1a of the scenario's text: a point's results belong to this text.
pub fn scenario_hash(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The points of a results file, each with its 1-based line number. A
/// last line cut short (no newline at its end, not a point: a sweep killed
/// or out of disk space mid-write) is skipped with a warning naming it;
/// any other line that is not a point is an error naming it.
pub fn result_lines(path: &Path) -> Result<Vec<(usize, SweepPoint)>, String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Several readers of one file in one command warn once.
    static WARNED: AtomicBool = AtomicBool::new(false);
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match SweepPoint::from_line(line) {
            Ok(p) => out.push((i + 1, p)),
            Err(_) if i + 1 == lines.len() && !complete => {
                if !WARNED.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "warning: {}:{}: the last line is torn (cut short by an interrupted or failed write); skipped. Run the sweep again to redo its point",
                        path.display(),
                        i + 1
                    );
                }
            }
            Err(e) => {
                return Err(format!(
                    "error: {}:{}: not a sweep result ({e})",
                    path.display(),
                    i + 1
                ))
            }
        }
    }
    Ok(out)
}

/// The points of a results file; an error says why it is not one.
pub fn read_points(path: &Path) -> Result<Vec<SweepPoint>, String> {
    let mut points: Vec<SweepPoint> = Vec::new();
    for (line, p) in result_lines(path)? {
        match points.first() {
            Some(first) if first.scenario_hash != p.scenario_hash => {
                return Err(format!(
                    "error: {}:{line}: points of two different scenarios in one file",
                    path.display(),
                ))
            }
            _ => {}
        }
        points.push(p);
    }
    if points.is_empty() {
        return Err(format!("error: {}: no points", path.display()));
    }
    Ok(points)
}

/// The scenario the points were run on, if it is still there unchanged.
pub fn scenario_of(points: &[SweepPoint]) -> Option<smpsim_scenario::Scenario> {
    let p = points.first()?;
    let s = smpsim_scenario::load(Path::new(&p.scenario_file)).ok()?;
    (scenario_hash(&s.text) == p.scenario_hash).then_some(s)
}

/// The settings that take more than one value across the points.
pub fn varying_settings(points: &[SweepPoint]) -> Vec<String> {
    let mut seen: Vec<(&String, &String)> = Vec::new();
    for p in points {
        for (k, v) in &p.settings {
            if !seen.iter().any(|(a, b)| *a == k && *b == v) {
                seen.push((k, v));
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (k, _) in &seen {
        if seen.iter().filter(|(a, _)| a == k).count() > 1 && !out.contains(*k) {
            out.push(k.to_string());
        }
    }
    out
}

/// The `sweep` command that gives these points (into `results`).
pub fn sweep_command(points: &[SweepPoint], results: &Path) -> String {
    let distinct = |f: &dyn Fn(&SweepPoint) -> Option<String>| {
        let mut out: Vec<String> = Vec::new();
        for p in points {
            if let Some(v) = f(p) {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    };
    // An older file without the scenario's path gives none.
    let file = distinct(&|p| Some(p.scenario_file.clone()).filter(|f| !f.is_empty()));
    let mut cmd = format!(
        "smpsim sweep {}",
        file.first().map_or("SCENARIO.toml", |f| f.as_str())
    );
    let cpus = distinct(&|p| p.cpus.map(|c| c.to_string()));
    if !cpus.is_empty() {
        cmd.push_str(&format!(" --cpus {}", cpus.join(",")));
    }
    for v in distinct(&|p| Some(p.variant.clone())) {
        cmd.push_str(&format!(" --variant {v}"));
    }
    let keys = distinct(&|p| Some(p.settings.keys().cloned().collect::<Vec<_>>().join("\n")));
    let keys: Vec<String> = keys
        .iter()
        .flat_map(|k| k.split('\n').map(String::from))
        .filter(|k| !k.is_empty())
        .fold(Vec::new(), |mut acc, k| {
            if !acc.contains(&k) {
                acc.push(k);
            }
            acc
        });
    for k in keys {
        let values = distinct(&|p| p.setting(&k).map(String::from));
        cmd.push_str(&format!(" --set '{k}={}'", values.join(",")));
    }
    let seeds = distinct(&|p| Some(p.seed.to_string()));
    cmd.push_str(&format!(
        " --seeds {} -o {}",
        seeds.len(),
        results.display()
    ));
    cmd
}

/// The keys already in a results file for this scenario. A last line
/// cut short by an interrupted write (no newline at its end) is dropped
/// from the file; any other line that is not a point of this scenario is
/// an error, and the file is left as it is.
pub fn finished(path: &Path, hash: &str) -> Result<HashSet<String>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(format!("error: {}: {e}", path.display())),
    };
    let mut keys = HashSet::new();
    let mut good_len = 0usize;
    let mut rest = &bytes[..];
    let mut n = 0;
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        n += 1;
        let line = &rest[..end];
        let not_point = || {
            format!(
                "error: {}: line {n} is not a sweep point; give another -o",
                path.display()
            )
        };
        let line = std::str::from_utf8(line).map_err(|_| not_point())?;
        let p = SweepPoint::from_line(line).map_err(|_| not_point())?;
        if p.scenario_hash != hash {
            return Err(format!(
                "error: {}: its points are from another scenario (or another version of this one); give another -o, or remove it to start over",
                path.display()
            ));
        }
        keys.insert(p.key);
        good_len += end + 1;
        rest = &rest[end + 1..];
    }
    if !rest.is_empty() {
        // A torn last line: the point runs again. Cut in place, never
        // through a link planted at the path.
        let f = smpsim_files::open_existing(path).map_err(|e| format!("error: {e}"))?;
        f.set_len(good_len as u64)
            .map_err(|e| format!("error: {}: {e}", path.display()))?;
    }
    Ok(keys)
}

/// `--cpus 1,2,4` or `--cpus 1..384:x2` (doubling) or `1..8:+1`.
/// The most CPUs a machine has (`[machine.topology]`'s bound).
pub const MAX_CPUS: u32 = 1 << 20;

pub fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    let bad = |why: &str| format!("error: --cpus {s}: {why}");
    let mut out = Vec::new();
    if let Some((range, step)) = s.split_once(':') {
        let (lo, hi) = range
            .split_once("..")
            .ok_or_else(|| bad("a range is LO..HI:xK or LO..HI:+K"))?;
        let lo: u32 = lo.trim().parse().map_err(|_| bad("LO is not a number"))?;
        let hi: u32 = hi.trim().parse().map_err(|_| bad("HI is not a number"))?;
        let (mul, k) = match step.trim().split_at(1) {
            ("x", k) => (true, k),
            ("+", k) => (false, k),
            _ => return Err(bad("the step is xK (multiply) or +K (add)")),
        };
        let k: u32 = k.parse().map_err(|_| bad("the step is not a number"))?;
        if lo == 0 || (mul && k < 2) || (!mul && k == 0) {
            return Err(bad("the range must start at 1 or more and grow"));
        }
        if hi > MAX_CPUS {
            return Err(bad(&format!(
                "HI is more CPUs than a machine can have ({MAX_CPUS})"
            )));
        }
        let mut n = lo;
        while n <= hi {
            out.push(n);
            // Checked: a step past u32 ends the range, never wraps or stays.
            match if mul {
                n.checked_mul(k)
            } else {
                n.checked_add(k)
            } {
                Some(next) => n = next,
                None => break,
            }
        }
    } else {
        for part in s.split(',') {
            let n: u32 = part
                .trim()
                .parse()
                .map_err(|_| bad("expected CPU counts such as 1,2,4 or a range 1..64:x2"))?;
            out.push(n);
        }
    }
    if out.contains(&0) {
        return Err(bad("a point needs at least one CPU"));
    }
    if let Some(n) = out.iter().find(|&&n| n > MAX_CPUS) {
        return Err(bad(&format!(
            "{n} is more CPUs than a machine can have ({MAX_CPUS})"
        )));
    }
    if out.is_empty() {
        return Err(bad("no CPU counts"));
    }
    Ok(out)
}

/// Splits `v1,v2,...` at top-level commas (not inside `[]`, `()` or quotes).
pub fn split_values(v: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0i32, false);
    for ch in v.chars() {
        match ch {
            '"' => quoted = !quoted,
            '[' | '(' if !quoted => depth += 1,
            ']' | ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur.trim().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_counts_parse_as_lists_and_ranges() {
        assert_eq!(parse_cpus("1,2,4"), Ok(vec![1, 2, 4]));
        assert_eq!(parse_cpus("1..16:x2"), Ok(vec![1, 2, 4, 8, 16]));
        assert_eq!(parse_cpus("2..8:+3"), Ok(vec![2, 5, 8]));
        assert!(parse_cpus("0,1").unwrap_err().contains("at least one CPU"));
        assert!(parse_cpus("1..8:x1").is_err());
        assert!(parse_cpus("a").is_err());
    }

    #[test]
    fn set_values_split_at_top_level_commas() {
        assert_eq!(split_values("1,2"), vec!["1", "2"]);
        assert_eq!(split_values("[0, 1],[2]"), vec!["[0, 1]", "[2]"]);
        assert_eq!(split_values("\"a,b\""), vec!["\"a,b\""]);
    }
}
