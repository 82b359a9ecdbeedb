//! `run --trace`: the timeline file is valid trace-event JSON with every
//! CPU's segments in order, spins name what they spin on, `.gz` is the
//! same JSON gzipped, the bytes are deterministic, and `--trace-window`
//! keeps only its part of the run or refuses a bad window (exit 2,
//! nothing written).

mod common;

use std::io::Read;
use std::path::Path;

use common::{dir, refused, repo, scenario, smpsim};

/// The mutex example's `spin` variant for 5 ms from the start, traced to
/// `path` with `extra` arguments; exit status 0 asserted.
fn trace_mutex_example(path: &Path, extra: &[&str]) {
    let out = smpsim()
        .arg("run")
        .arg(repo("scenarios/examples/mutex-contention.toml"))
        .args(["--variant", "spin", "--quiet"])
        .args([
            "--set",
            "scenario.duration=5ms",
            "--set",
            "scenario.warmup=0s",
        ])
        .arg("--trace")
        .arg(path)
        .args(extra)
        .args(["-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
}

/// The complete events (`"ph":"X"`) of a trace, parsed.
fn slices(text: &[u8]) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(text).expect("the trace is valid JSON");
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .cloned()
        .collect()
}

#[test]
fn trace_is_valid_and_each_cpu_timeline_is_ordered() {
    let d = dir("trace-valid");
    let path = d.join("t.json");
    trace_mutex_example(&path, &[]);
    let mut last_end = std::collections::HashMap::new();
    let mut spins = 0;
    for e in slices(&std::fs::read(&path).unwrap()) {
        let tid = e["tid"].as_u64().unwrap();
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(dur > 0.0);
        let prev = last_end.insert(tid, ts + dur).unwrap_or(0.0);
        assert!(
            ts + 1e-6 >= prev,
            "CPU {tid}: segment at {ts} overlaps the previous one ending at {prev}"
        );
        let name = e["name"].as_str().unwrap();
        if name.contains("(spin") {
            // The example's one lock: every spin is on it.
            assert!(name.ends_with(" (spin big_lock)"), "{name}");
            spins += 1;
        }
    }
    assert_eq!(last_end.len(), 16, "every CPU has a timeline");
    assert!(spins > 0, "waiters spin on this contended mutex");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Two locks, one of them per-CPU: each spin names its lock and, for the
/// per-CPU one, the instance (CPUs 0 and 2 share `pl[0]`, 1 and 3
/// `pl[1]`).
#[test]
fn spins_name_the_lock_and_its_per_cpu_instance() {
    let d = dir("trace-locks");
    let s = d.join("locks.toml");
    std::fs::write(
        &s,
        r#"[scenario]
name = "two-locks"
duration = "2ms"
[machine]
preset = "generic-x86"
[machine.topology]
cores_per_llc = 4
[objects]
pl = { type = "spinlock", per_cpu = true }
big = { type = "spinlock" }
[[tasks]]
name = "t"
per_cpu = 1
code = '''
    for (;;) {
        spin_lock(pl[this_cpu() % 2]);
        work(1us);
        spin_unlock(pl[this_cpu() % 2]);
        spin_lock(big);
        work(1us);
        spin_unlock(big);
        work(1us);
    }
'''
"#,
    )
    .unwrap();
    let path = d.join("t.json");
    let out = smpsim()
        .arg("run")
        .arg(&s)
        .arg("--trace")
        .arg(&path)
        .args(["-q", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let mut seen = std::collections::BTreeSet::new();
    for e in slices(&std::fs::read(&path).unwrap()) {
        let name = e["name"].as_str().unwrap();
        if let Some((task, on)) = name.split_once(" (spin ") {
            let cpu = e["tid"].as_u64().unwrap();
            assert_eq!(task, format!("t/{cpu}"), "tasks stay on their CPUs");
            let want = [format!("pl[{}])", cpu % 2), "big)".into()];
            assert!(want.iter().any(|w| on == w), "{name} on CPU {cpu}");
            seen.insert(on.trim_end_matches(')').to_string());
        }
    }
    assert!(seen.contains("big"), "{seen:?}");
    assert!(seen.iter().any(|l| l.starts_with("pl[")), "{seen:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn gz_is_the_same_json_gzipped_and_both_are_deterministic() {
    let d = dir("trace-gz");
    let files = ["a.json", "b.json", "a.json.gz", "b.json.gz"].map(|f| d.join(f));
    for f in &files {
        trace_mutex_example(f, &[]);
    }
    let [a, b, agz, bgz] = files.map(|f| std::fs::read(f).unwrap());
    assert_eq!(a, b, "the same run gives the same trace");
    assert_eq!(agz, bgz, "and the same gzipped bytes");
    assert_eq!(&agz[..2], &[0x1f, 0x8b], "gzip magic");
    assert!(agz.len() * 5 < a.len(), "{} vs {}", agz.len(), a.len());
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&agz[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, a);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_window_keeps_only_its_part_of_the_run() {
    let d = dir("trace-window");
    let (whole, part) = (d.join("whole.json"), d.join("part.json"));
    trace_mutex_example(&whole, &[]);
    trace_mutex_example(&part, &["--trace-window", "1ms..1.5ms"]);
    let (whole, part) = (
        slices(&std::fs::read(whole).unwrap()),
        slices(&std::fs::read(part).unwrap()),
    );
    assert!(!part.is_empty() && part.len() * 5 < whole.len());
    for e in &part {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 1000.0 && ts + dur <= 1500.0 + 1e-6, "{e}");
    }
    // Inside the window, the same segments as the whole run's (those
    // crossing its edges clipped).
    let inside = |e: &&serde_json::Value| {
        let ts = e["ts"].as_f64().unwrap();
        ts > 1000.0 && ts + e["dur"].as_f64().unwrap() < 1500.0
    };
    let a: Vec<_> = whole.iter().filter(inside).collect();
    let b: Vec<_> = part.iter().filter(inside).collect();
    assert_eq!(a, b);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_bad_window_is_refused_before_anything_is_written() {
    let d = dir("trace-bad-window");
    let s = scenario(&d, "s.toml", common::TASK); // 1 ms long
    let (trace, out) = (d.join("t.json"), d.join("out.json"));
    for (window, says) in [
        ("2ms..1ms", "must end after it starts"),
        ("0..2ms", "ends after the run"),
        ("1ms..", "starts at or after the run's end"),
        ("5ms", "expected START..END"),
        ("1..2ms", "needs a unit"),
        ("1weeks..", "unknown unit"),
        ("0.5ns..", "finer than a nanosecond"),
    ] {
        let o = smpsim()
            .arg("run")
            .arg(&s)
            .arg("--trace")
            .arg(&trace)
            .args(["--trace-window", window, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        refused(&o, says);
        let names_it = format!("--trace-window {window}: ");
        assert!(common::stderr(&o).contains(&names_it), "{window}");
        assert!(
            !trace.exists() && !out.exists(),
            "{window}: nothing written"
        );
    }
    // A window without a trace to apply it to.
    let o = smpsim()
        .arg("run")
        .arg(&s)
        .args(["--trace-window", "0..1ms", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    refused(&o, "--trace <FILE>");
    assert!(!out.exists());
    std::fs::remove_dir_all(&d).unwrap();
}
