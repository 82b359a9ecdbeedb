//! Behaviour-preserving changes stay behaviour-preserving: every shipped
//! scenario, all its variants, shortened, must give the same results (host
//! time aside) as when its snapshot in `tests/golden/` was recorded.
//!
//! A snapshot is a readable summary, one section per variant (counters,
//! histograms' count/p50/p99/max, CPU time, task groups, each lock's
//! lock_stat, mm, RCU, findings, events), ending with digests of the whole
//! JSON and text report so that nothing the summary leaves out can move
//! unseen. A failure prints a diff of the lines that moved. A change that
//! is meant to move results re-records the snapshots:
//!
//! ```sh
//! SMPSIM_BLESS=1 cargo test -p smpsim --test golden
//! ```
//!
//! and says in its commit why the figures moved.

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::{repo, smpsim};
use serde_json::{Map, Value};

/// Each shipped scenario with the settings that keep it short.
const RUNS: &[(&str, &[&str])] = &[
    ("scenarios/hotplug-smt.toml", &["scenario.duration=3s"]),
    (
        "scenarios/ipi-preempt.toml",
        &[
            "scenario.replicas=2",
            "scenario.duration=400ms",
            "scenario.warmup=100ms",
            "kernel.latency_window=100ms",
        ],
    ),
    (
        "scenarios/lazy-tlb.toml",
        &["scenario.duration=4ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/lock-scaling.toml",
        &[
            "scenario.duration=2ms",
            "scenario.warmup=500us",
            "tasks.locker.count=24",
        ],
    ),
    (
        "scenarios/membarrier-percpu.toml",
        &["scenario.duration=8ms", "scenario.warmup=2ms"],
    ),
    ("scenarios/mm-lifetime.toml", &["scenario.duration=5ms"]),
    ("scenarios/slow-mutex.toml", &["scenario.duration=100ms"]),
    (
        "scenarios/examples/mutex-contention.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/percpu-ref.toml",
        &["scenario.duration=12ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/mmap-lock.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/mprotect-faults.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/hybrid-cpus.toml",
        &["scenario.duration=40ms", "scenario.warmup=4ms"],
    ),
    (
        "scenarios/examples/tlb-broadcast.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/cfs-slack.toml",
        &["scenario.duration=100ms", "scenario.warmup=10ms"],
    ),
    (
        "scenarios/examples/sched-hooks.toml",
        &["scenario.duration=20ms", "scenario.warmup=5ms"],
    ),
    (
        "scenarios/examples/sched-hooks-locks.toml",
        &["scenario.duration=10ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/examples/false-sharing.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/cpumask-snapshot.toml",
        &["scenario.duration=5ms", "scenario.warmup=1ms"],
    ),
    (
        "scenarios/examples/rcu-callbacks.toml",
        &["scenario.duration=20ms", "scenario.warmup=2ms"],
    ),
    (
        "scenarios/contention/atomic-line.toml",
        &["scenario.duration=300us", "scenario.warmup=50us"],
    ),
    (
        "scenarios/contention/locktorture-cna.toml",
        &["scenario.duration=2ms", "scenario.warmup=200us"],
    ),
    (
        "scenarios/contention/folly-small-locks.toml",
        &["tasks.thread.vars.groups=7"],
    ),
    (
        "scenarios/contention/folly-small-locks-d2191.toml",
        &["tasks.thread.vars.groups=4"],
    ),
    ("scenarios/checks/abba.toml", &[]),
    ("scenarios/checks/race.toml", &[]),
    ("scenarios/checks/membarrier.toml", &[]),
    ("scenarios/checks/irq-lock.toml", &[]),
];

const GOLDEN_DIR: &str = "crates/cli/tests/golden";

/// `scenarios/checks/abba.toml` -> `tests/golden/checks-abba.txt`.
fn snapshot_path(scenario: &str) -> PathBuf {
    let stem = scenario
        .trim_start_matches("scenarios/")
        .trim_end_matches(".toml")
        .replace('/', "-");
    repo(GOLDEN_DIR).join(format!("{stem}.txt"))
}

/// FNV-1a: a stable 64-bit digest (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn run(scenario: &str, sets: &[&str], format: &str) -> Vec<u8> {
    let mut cmd = smpsim();
    cmd.args(["run", repo(scenario).to_str().unwrap(), "--format", format]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "{scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `obj`'s fields by name (whatever order serde_json keeps them in).
fn sorted(obj: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut fields: Vec<_> = obj.iter().collect();
    fields.sort_by_key(|(k, _)| *k);
    fields
}

/// `key=value` for each scalar field of `obj` not in `skip`, by name.
fn fields(obj: &Map<String, Value>, skip: &[&str]) -> String {
    let mut out = Vec::new();
    for (k, v) in sorted(obj) {
        if skip.contains(&k.as_str()) {
            continue;
        }
        match v {
            Value::Null => out.push(format!("{k}=-")),
            Value::String(s) => out.push(format!("{k}={s:?}")),
            Value::Bool(_) | Value::Number(_) => out.push(format!("{k}={v}")),
            Value::Array(_) | Value::Object(_) => {}
        }
    }
    out.join(" ")
}

/// `key=value` for the named fields of `obj` that it has.
fn some_fields(obj: &Map<String, Value>, keys: &[&str]) -> String {
    keys.iter()
        .filter_map(|k| obj.get(*k).map(|v| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn name_of(obj: &Map<String, Value>) -> &str {
    ["name", "cgroup", "detector"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .unwrap_or("?")
}

/// The CPUs' time summed, and the worst of their maxima.
fn cpu_totals(cpus: &[Value]) -> String {
    let sum = |k: &str| -> u64 { cpus.iter().filter_map(|c| c[k].as_u64()).sum() };
    let max = |k: &str| -> u64 { cpus.iter().filter_map(|c| c[k].as_u64()).max().unwrap_or(0) };
    let mut out: Vec<String> = ["user", "sys", "spin", "irq", "idle", "nr_switches"]
        .iter()
        .map(|k| format!("{k}={}", sum(k)))
        .collect();
    for k in ["max_preempt_off_ns", "max_irq_off_ns"] {
        out.push(format!("{k}={}", max(k)));
    }
    out.join(" ")
}

/// One variant's section of a snapshot.
fn variant_summary(out: &mut String, var: &Map<String, Value>) {
    let name = var["variant"].as_str().unwrap_or("?");
    let description = var["description"].as_str().unwrap_or("");
    writeln!(out, "[{name}] {description}").unwrap();
    writeln!(out, "  {}", fields(var, &["variant", "description"])).unwrap();
    for (key, value) in sorted(var) {
        match (key.as_str(), value) {
            ("cpus", Value::Array(cpus)) => {
                writeln!(out, "  cpus {}", cpu_totals(cpus)).unwrap();
            }
            (_, Value::Array(items)) => {
                for item in items {
                    let Some(obj) = item.as_object() else {
                        continue;
                    };
                    let name = name_of(obj);
                    let line = match key.as_str() {
                        "counters" => some_fields(obj, &["count"]),
                        "histograms" => some_fields(obj, &["count", "p50", "p99", "max"]),
                        "task_groups" => {
                            let total = obj.get("total").and_then(Value::as_object);
                            let total = total.map(|t| fields(t, &[])).unwrap_or_default();
                            format!("{} | total {total}", fields(obj, &["name"]))
                        }
                        "findings" => {
                            let first = obj["message"].as_str().unwrap_or("").lines().next();
                            format!(
                                "{}: {}",
                                fields(obj, &["detector", "message"]),
                                first.unwrap_or("")
                            )
                        }
                        _ => fields(obj, &["name", "cgroup"]),
                    };
                    let singular = key.strip_suffix('s').unwrap_or(key);
                    writeln!(out, "  {singular} {name} {line}").unwrap();
                }
            }
            (_, Value::Object(obj)) => {
                writeln!(out, "  {key} {}", fields(obj, &["wall_seconds"])).unwrap();
            }
            _ => {}
        }
    }
}

/// The snapshot of one scenario: a summary per variant, then digests of
/// the whole JSON and text report (host-time fields and lines aside).
fn snapshot(scenario: &str, sets: &[&str]) -> String {
    let mut v: Value = serde_json::from_slice(&run(scenario, sets, "json")).expect("JSON");
    for var in v["variants"].as_array_mut().expect("variants") {
        var["stats"]
            .as_object_mut()
            .expect("stats")
            .remove("wall_seconds");
    }
    let text = String::from_utf8(run(scenario, sets, "text")).expect("UTF-8");
    let text: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("engine ["))
        .collect();
    let mut out = format!("# {scenario}");
    for s in sets {
        write!(out, " --set {s}").unwrap();
    }
    out.push('\n');
    for var in v["variants"].as_array().unwrap() {
        variant_summary(&mut out, var.as_object().expect("variant object"));
    }
    writeln!(
        out,
        "digest json={:016x} text={:016x}",
        fnv1a(v.to_string().as_bytes()),
        fnv1a(text.join("\n").as_bytes())
    )
    .unwrap();
    out
}

/// The snapshot of every run, computed on as many threads as the host has.
fn snapshots() -> Vec<String> {
    let next = AtomicUsize::new(0);
    let got = Mutex::new(vec![String::new(); RUNS.len()]);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads.min(RUNS.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((scenario, sets)) = RUNS.get(i) else {
                    break;
                };
                let snap = snapshot(scenario, sets);
                got.lock().unwrap()[i] = snap;
            });
        }
    });
    got.into_inner().unwrap()
}

/// The lines that differ, `-` recorded and `+` now, each hunk under the
/// variant heading (`[...]`) it falls in.
fn diff(want: &str, got: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    // Longest common subsequence, from the ends.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    let mut heading = "";
    let mut shown = "";
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            if a[i].starts_with('[') {
                heading = a[i];
            }
            i += 1;
            j += 1;
            continue;
        }
        if heading != shown {
            writeln!(out, " {heading}").unwrap();
            shown = heading;
        }
        if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            writeln!(out, "-{}", a[i]).unwrap();
            i += 1;
        } else {
            writeln!(out, "+{}", b[j]).unwrap();
            j += 1;
        }
    }
    out
}

#[test]
fn shipped_scenarios_give_the_recorded_results() {
    let got = snapshots();
    if std::env::var_os("SMPSIM_BLESS").is_some() {
        std::fs::create_dir_all(repo(GOLDEN_DIR)).unwrap();
        for ((scenario, _), snap) in RUNS.iter().zip(&got) {
            std::fs::write(snapshot_path(scenario), snap).unwrap();
        }
        return;
    }
    let mut moved = String::new();
    for ((scenario, _), snap) in RUNS.iter().zip(&got) {
        let path = snapshot_path(scenario);
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if want != *snap {
            let name = path.file_name().unwrap().to_string_lossy();
            writeln!(moved, "--- {GOLDEN_DIR}/{name}\n{}", diff(&want, snap)).unwrap();
        }
    }
    assert!(
        moved.is_empty(),
        "results moved (- recorded, + now):\n{moved}\nif that is intended, re-record with SMPSIM_BLESS=1 and say why"
    );
}

#[test]
fn every_shipped_scenario_is_recorded() {
    for dir in [
        "scenarios",
        "scenarios/examples",
        "scenarios/checks",
        "scenarios/contention",
    ] {
        for entry in std::fs::read_dir(repo(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = name.strip_suffix(".toml") {
                let path = format!("{dir}/{stem}.toml");
                assert!(
                    RUNS.iter().any(|(s, _)| *s == path),
                    "{path} is not in tests/golden.rs RUNS"
                );
            }
        }
    }
    // And every snapshot belongs to a run (none left behind by a rename).
    for entry in std::fs::read_dir(repo(GOLDEN_DIR)).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            RUNS.iter().any(|(s, _)| snapshot_path(s) == path),
            "{} is the snapshot of no run in tests/golden.rs RUNS",
            path.display()
        );
    }
}
