//! Behaviour-preserving changes stay behaviour-preserving: every shipped
//! scenario, all its variants, shortened, must give the same JSON (host
//! time aside) as when `tests/golden/hashes.txt` was recorded. A change
//! that is meant to move results re-records it:
//!
//! ```sh
//! SMPSIM_BLESS=1 cargo test -p smpsim --test golden
//! ```
//!
//! and says in its commit why the figures moved.

use std::path::PathBuf;
use std::process::Command;

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
    ("scenarios/checks/abba.toml", &[]),
    ("scenarios/checks/race.toml", &[]),
    ("scenarios/checks/membarrier.toml", &[]),
    ("scenarios/checks/irq-lock.toml", &[]),
];

fn repo(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(path)
}

/// FNV-1a: a stable 64-bit digest (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn run(scenario: &str, sets: &[&str], format: &str) -> Vec<u8> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smpsim"));
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

/// Digests of the JSON and of the text report (host-time lines aside).
fn digest(scenario: &str, sets: &[&str]) -> String {
    let mut v: serde_json::Value =
        serde_json::from_slice(&run(scenario, sets, "json")).expect("JSON");
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
    format!(
        "{:016x} {:016x}",
        fnv1a(v.to_string().as_bytes()),
        fnv1a(text.join("\n").as_bytes())
    )
}

#[test]
fn shipped_scenarios_give_the_recorded_results() {
    let path = repo("crates/cli/tests/golden/hashes.txt");
    let got: Vec<String> = RUNS
        .iter()
        .map(|(s, sets)| format!("{s} {}", digest(s, sets)))
        .collect();
    if std::env::var_os("SMPSIM_BLESS").is_some() {
        std::fs::write(&path, got.join("\n") + "\n").unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).expect("recorded hashes");
    let want: Vec<&str> = want.lines().collect();
    let changed: Vec<&String> = got.iter().filter(|g| !want.contains(&g.as_str())).collect();
    assert!(
        changed.is_empty(),
        "results moved for {changed:?}; if that is intended, re-record with SMPSIM_BLESS=1 and say why"
    );
}

#[test]
fn every_shipped_scenario_is_recorded() {
    for dir in ["scenarios", "scenarios/examples", "scenarios/checks"] {
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
}
