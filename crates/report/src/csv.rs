//! `--format csv`, for people who plot with their own tools: the
//! per-window series of a run (`run --format csv`) and one row per point
//! of a sweep (`sweep --format csv`, `report --format csv`).

use std::fmt::Write;

use crate::sweep_point::SweepPoint;
use crate::VariantRun;

/// A field, quoted if it needs to be (RFC 4180: a comma, a quote or a
/// line break).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Per variant, CPU and latency window: the longest preempt-off and
/// IRQ-off section in it (windows of all replicas, in seed order).
pub fn run_windows(runs: &[VariantRun]) -> String {
    let mut s = String::from("variant,cpu,window,preempt_off_max_ns,irq_off_max_ns\n");
    for r in runs {
        for c in &r.result.cpus {
            let n = c.preempt_off_windows.len().max(c.irq_off_windows.len());
            for w in 0..n {
                let cell = |v: Option<&u64>| v.map_or(String::new(), |v| v.to_string());
                let _ = writeln!(
                    s,
                    "{},{},{w},{},{}",
                    field(&r.variant),
                    c.cpu,
                    cell(c.preempt_off_windows.get(w)),
                    cell(c.irq_off_windows.get(w))
                );
            }
        }
    }
    s
}

/// One row per point: variant, CPUs, every swept setting, seed, then
/// every counter's rate and every latency's p50, p99 and max; `error`
/// for a point that did not run.
pub fn sweep_points(points: &[SweepPoint]) -> String {
    let mut settings: Vec<String> = Vec::new();
    let mut counters: Vec<String> = Vec::new();
    let mut hists: Vec<String> = Vec::new();
    let add = |list: &mut Vec<String>, p: &SweepPoint, key: &str| {
        for x in p.result_part(key).as_array().into_iter().flatten() {
            if let Some(n) = x["name"].as_str() {
                if !list.iter().any(|y| y == n) {
                    list.push(n.to_string());
                }
            }
        }
    };
    for p in points {
        for k in p.settings.keys() {
            if !settings.contains(k) {
                settings.push(k.clone());
            }
        }
        add(&mut counters, p, "counters");
        add(&mut hists, p, "histograms");
    }
    let mut head = vec!["variant".to_string(), "cpus".into()];
    head.extend(settings.iter().cloned());
    head.push("seed".into());
    head.extend(counters.iter().map(|c| format!("counter.{c}.rate")));
    for h in &hists {
        for stat in ["p50", "p99", "max"] {
            head.push(format!("histogram.{h}.{stat}"));
        }
    }
    head.push("error".into());
    let mut s = head.iter().map(|h| field(h)).collect::<Vec<_>>().join(",");
    s.push('\n');
    for p in points {
        let mut row = vec![
            p.variant.clone(),
            p.cpus.map_or(String::new(), |c| c.to_string()),
        ];
        row.extend(
            settings
                .iter()
                .map(|k| p.setting(k).unwrap_or("").to_string()),
        );
        row.push(p.seed.to_string());
        let r = p.result_json();
        for c in &counters {
            row.push(
                crate::path::y_value(r, &format!("counter.{c}.rate"))
                    .map_or(String::new(), |v| format!("{v:.3}")),
            );
        }
        for h in &hists {
            for stat in ["p50", "p99", "max"] {
                row.push(
                    crate::path::y_value(r, &format!("histogram.{h}.{stat}"))
                        .map_or(String::new(), |v| format!("{v:.0}")),
                );
            }
        }
        row.push(p.error.clone().unwrap_or_default());
        s.push_str(&row.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carriage_return_is_quoted_too() {
        assert_eq!(field("a\rb"), "\"a\rb\"");
        assert_eq!(field("plain"), "plain");
    }

    #[test]
    fn points_flatten_to_one_row_each_and_fields_are_quoted() {
        let p: Vec<SweepPoint> = [
            serde_json::json!({"variant": "a", "cpus": 2, "settings": {"k": "1,2"}, "seed": 1,
                "key": "a", "scenario_hash": "h",
                "result": {"counters": [{"name": "ops", "rate": 10.0, "count": 1}], "histograms": []}}),
            serde_json::json!({"variant": "b", "cpus": 2, "settings": {"k": "3"}, "seed": 1,
                "key": "b", "scenario_hash": "h", "error": "bad \"x\""}),
        ]
        .map(|v| serde_json::from_value(v).unwrap())
        .to_vec();
        let s = sweep_points(&p);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "variant,cpus,k,seed,counter.ops.rate,error");
        assert_eq!(lines[1], "a,2,\"1,2\",1,10.000,");
        assert_eq!(lines[2], "b,2,3,1,,\"bad \"\"x\"\"\"");
    }
}
