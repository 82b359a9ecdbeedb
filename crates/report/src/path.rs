//! Result paths: the one syntax every command reads a figure with
//! (`plot --y`, the columns of `sweep`/`report --format csv`, and the
//! metric expressions of `[reproduce]`).
//!
//! A path is dot-separated segments into a run's result (its JSON form).
//! A segment selects an object key, or in an array the element whose
//! `name` equals it (a name may itself hold dots: the longest name that
//! leaves a path resolving wins) or the element at that index. The
//! tables have a short and a long spelling, both accepted everywhere:
//!
//! | short | long | also |
//! |---|---|---|
//! | `counter` | `counters` | |
//! | `hist` | `histograms` | `histogram` |
//! | `lock` | `locks` | |
//! | `group` | `task_groups` | |
//!
//! So `counter.ops.rate`, `histogram.syscall_latency.p99`,
//! `hist.syscall_latency.p99`, `group.reader.total.sys` and
//! `cpus.0.max_preempt_off_ns` are paths; a `[reproduce]` expression puts
//! the variant first (`spin.hist.syscall_latency.p99`).

use serde_json::Value;

/// The field a segment names: a table's short spellings map to its key.
pub fn key(seg: &str) -> &str {
    match seg {
        "counter" => "counters",
        "hist" | "histogram" => "histograms",
        "lock" => "locks",
        "group" => "task_groups",
        s => s,
    }
}

/// The value at `path` in `v`.
pub fn resolve<'a>(v: &'a Value, path: &str) -> Result<&'a Value, String> {
    let segs: Vec<&str> = path.split('.').collect();
    resolve_segs(v, &segs)
}

/// [`resolve`] over segments already split.
pub fn resolve_segs<'a>(v: &'a Value, segs: &[&str]) -> Result<&'a Value, String> {
    let Some((&seg, rest)) = segs.split_first() else {
        return Ok(v);
    };
    let k = key(seg);
    match v {
        Value::Object(map) => {
            let next = map.get(k).ok_or_else(|| format!("no field `{seg}`"))?;
            resolve_segs(next, rest)
        }
        Value::Array(items) => {
            if let Ok(i) = k.parse::<usize>() {
                let next = items
                    .get(i)
                    .ok_or_else(|| format!("index {i} out of range"))?;
                return resolve_segs(next, rest);
            }
            // A name may hold dots: the longest that resolves first.
            for take in (2..=segs.len()).rev() {
                let name = segs[..take].join(".");
                if let Some(x) = named(items, &name) {
                    if let Ok(found) = resolve_segs(x, &segs[take..]) {
                        return Ok(found);
                    }
                }
            }
            let next = named(items, k).ok_or_else(|| format!("no element named `{seg}`"))?;
            resolve_segs(next, rest)
        }
        _ => Err(format!("cannot select `{seg}` in a number")),
    }
}

fn named<'a>(items: &'a [Value], name: &str) -> Option<&'a Value> {
    items
        .iter()
        .find(|x| x.get("name").and_then(|n| n.as_str()) == Some(name))
}

/// The number at `path` in `v`.
pub fn number(v: &Value, path: &str) -> Result<f64, String> {
    resolve(v, path)?
        .as_f64()
        .ok_or_else(|| format!("`{path}` is not a number"))
}

/// A value of the y axis from one point's result: a counter's or a
/// histogram's figure, by a path of [`smpsim_report::path`].
pub fn y_value(result: &serde_json::Value, spec: &str) -> Result<f64, String> {
    let parts: Vec<&str> = spec.split('.').collect();
    let bad = || {
        format!("error: --y {spec}: expected counter.NAME.rate, counter.NAME.count or histogram.NAME.(p50|p90|p99|p999|mean|max)")
    };
    if parts.len() < 3 {
        return Err(bad());
    }
    let (kind, table) = match key(parts[0]) {
        "counters" => ("counter", "counters"),
        "histograms" => ("histogram", "histograms"),
        _ => return Err(bad()),
    };
    if let Ok(v) = number(result, spec) {
        return Ok(v);
    }
    // Why not, in the words of a plot.
    let name = parts[1..parts.len() - 1].join(".");
    let rows = result[table].as_array().ok_or_else(bad)?;
    if !rows.iter().any(|r| r["name"] == name.as_str()) {
        let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
        return Err(format!(
            "error: --y {spec}: no {kind} `{name}` in the results; they have: {}",
            names.join(", ")
        ));
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> Value {
        serde_json::json!({
            "counters": [{"name": "ops", "rate": 10.0, "count": 5}],
            "histograms": [{"name": "lat", "p99": 7}, {"name": "a.b", "p50": 3}],
            "cpus": [{"spin_ns": 4}],
        })
    }

    #[test]
    fn both_spellings_of_every_table_resolve_alike() {
        let r = result();
        for p in ["counter.ops.rate", "counters.ops.rate"] {
            assert_eq!(number(&r, p), Ok(10.0), "{p}");
        }
        for p in ["hist.lat.p99", "histogram.lat.p99", "histograms.lat.p99"] {
            assert_eq!(number(&r, p), Ok(7.0), "{p}");
        }
        assert_eq!(number(&r, "histogram.a.b.p50"), Ok(3.0));
        assert_eq!(number(&r, "cpus.0.spin_ns"), Ok(4.0));
        assert_eq!(
            number(&r, "counter.nope.rate").unwrap_err(),
            "no element named `nope`"
        );
        assert_eq!(
            number(&r, "cpus.1.spin_ns").unwrap_err(),
            "index 1 out of range"
        );
    }
}
