//! `sweep --preset NAME` runs every point on that machine (as `--set
//! machine.preset=NAME` does), refuses a name no preset has before
//! anything is written, and `plot --per-task` draws will-it-scale's
//! per-task rate with a flat ideal.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{dir, refused, repo, smpsim, stderr};

/// `smpsim sweep` of will-it-scale's getppid1 with `args`, quietly, to
/// `r.jsonl` in a fresh directory for `test`: the directory, that result
/// file and the command's output.
fn sweep(test: &str, args: &[&str]) -> (PathBuf, PathBuf, Output) {
    let d = dir(test);
    let out = d.join("r.jsonl");
    let o = smpsim()
        .arg("sweep")
        .arg(repo("scenarios/will-it-scale/getppid1.toml"))
        .args(args)
        .args(["-q", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    (d, out, o)
}

/// `smpsim plot` of the sweep result `out`'s per-task ops rate, with
/// `args`.
fn plot_per_task(out: &Path, args: &[&str]) -> Output {
    smpsim()
        .args(["plot", out.to_str().unwrap()])
        .args(["--y", "counter.ops.rate", "--per-task"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn preset_runs_every_point_on_the_named_machine() {
    let (d, out, o) = sweep(
        "sweep-preset",
        &[
            "--cpus",
            "1,2",
            "--preset",
            "generic-x86",
            "--variant",
            "processes",
            "--set",
            "scenario.duration=200us",
            "--set",
            "scenario.warmup=20us",
        ],
    );
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
    let csv = plot_per_task(&out, &["--format", "csv"]);
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
    let o = plot_per_task(&out, &["-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("per task vs CPUs"), "{svg}");
    assert!(svg.contains("flat: every task"), "{svg}");
}

#[test]
fn an_unknown_preset_is_refused_and_nothing_is_written() {
    let (d, out, o) = sweep(
        "sweep-preset-bad",
        &["--cpus", "1,2", "--preset", "no-such-box"],
    );
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
    let (_, out, o) = sweep(
        "sweep-preset-twice",
        &["--preset", "generic-x86", "--set", "machine.preset=x86-16"],
    );
    refused(&o, "both name the machine");
    assert!(!out.exists());
}

#[test]
fn per_task_needs_cpus_on_x() {
    let (_, out, o) = sweep(
        "plot-per-task-x",
        &[
            "--preset",
            "generic-x86",
            "--variant",
            "threads",
            "--set",
            "scenario.duration=100us,200us",
            "--set",
            "scenario.warmup=20us",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = plot_per_task(&out, &["--x", "scenario.duration", "--format", "csv"]);
    refused(
        &o,
        "--per-task divides by the task count: it needs --x cpus",
    );
}
