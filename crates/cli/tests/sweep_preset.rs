//! `sweep --preset NAME` runs every point on that machine (as `--set
//! machine.preset=NAME` does), refuses a name no preset has before
//! anything is written, and `plot --per-task` draws will-it-scale's
//! per-task rate with a flat ideal.

mod common;

use common::{dir, refused, repo, smpsim, stderr};

fn getppid1() -> String {
    repo("scenarios/will-it-scale/getppid1.toml")
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn preset_runs_every_point_on_the_named_machine() {
    let d = dir("sweep-preset");
    let out = d.join("r.jsonl");
    let o = smpsim()
        .args([
            "sweep",
            &getppid1(),
            "--cpus",
            "1,2",
            "--preset",
            "generic-x86",
        ])
        .args(["--variant", "processes", "--set", "scenario.duration=200us"])
        .args([
            "--set",
            "scenario.warmup=20us",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in &lines {
        assert!(
            l.to_string().contains("\"machine.preset\":\"generic-x86\""),
            "{l}"
        );
    }
    // The per-task plot divides each rate by its CPU count: at 2 CPUs of
    // independent processes, the same as at 1.
    let csv = smpsim()
        .args([
            "plot",
            out.to_str().unwrap(),
            "--y",
            "counter.ops.rate",
            "--per-task",
        ])
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(csv.status.success(), "{}", stderr(&csv));
    let rows: Vec<f64> = String::from_utf8_lossy(&csv.stdout)
        .lines()
        .skip(1)
        .map(|r| r.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(
        rows[0] > 0.0 && (rows[1] - rows[0]).abs() < 0.02 * rows[0],
        "{rows:?}"
    );
    let svg = d.join("p.svg");
    let o = smpsim()
        .args([
            "plot",
            out.to_str().unwrap(),
            "--y",
            "counter.ops.rate",
            "--per-task",
        ])
        .args(["-o", svg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("per task vs CPUs"), "{svg}");
    assert!(svg.contains("flat: every task"), "{svg}");
}

#[test]
fn an_unknown_preset_is_refused_and_nothing_is_written() {
    let d = dir("sweep-preset-bad");
    let out = d.join("r.jsonl");
    let o = smpsim()
        .args([
            "sweep",
            &getppid1(),
            "--cpus",
            "1,2",
            "--preset",
            "no-such-box",
        ])
        .args(["-q", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    refused(
        &o,
        "--preset no-such-box: unknown machine preset `no-such-box`",
    );
    assert!(
        stderr(&o).contains("generic-x86"),
        "the known presets are listed"
    );
    assert!(!out.exists(), "nothing written");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
}

#[test]
fn preset_and_a_set_machine_preset_are_refused_together() {
    let d = dir("sweep-preset-twice");
    let out = d.join("r.jsonl");
    let o = smpsim()
        .args(["sweep", &getppid1(), "--preset", "generic-x86"])
        .args([
            "--set",
            "machine.preset=x86-16",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    refused(&o, "both name the machine");
    assert!(!out.exists());
}

#[test]
fn per_task_needs_cpus_on_x() {
    let d = dir("plot-per-task-x");
    let out = d.join("r.jsonl");
    let o = smpsim()
        .args([
            "sweep",
            &getppid1(),
            "--preset",
            "generic-x86",
            "--variant",
            "threads",
        ])
        .args([
            "--set",
            "scenario.duration=100us,200us",
            "--set",
            "scenario.warmup=20us",
        ])
        .args(["-q", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = smpsim()
        .args(["plot", out.to_str().unwrap(), "--x", "scenario.duration"])
        .args(["--y", "counter.ops.rate", "--per-task", "--format", "csv"])
        .output()
        .unwrap();
    refused(
        &o,
        "--per-task divides by the task count: it needs --x cpus",
    );
}
