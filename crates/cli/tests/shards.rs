//! Sharded sweeps: `sweep --shard K/N` runs a fixed 1/N of the points,
//! `sweep merge` joins the shards' files into the bytes the whole sweep
//! writes on one machine, and refuses what is not one sweep's shards.

mod common;

use std::path::Path;
use std::process::Command;

use common::{dir, repo, smpsim};

const SWEEP: &[&str] = &[
    "--cpus",
    "1,2,4",
    "--seeds",
    "2",
    "--set",
    "scenario.duration=2ms,3ms",
    "--set",
    "scenario.warmup=0ms",
    "-q",
];

fn sweep(scenario: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = smpsim();
    c.args(["sweep", scenario.to_str().unwrap()])
        .args(SWEEP)
        .args(extra)
        .args(["-o", out.to_str().unwrap()]);
    c
}

fn merge(d: &Path, files: &[&str], out: &str) -> std::process::Output {
    let mut c = smpsim();
    c.args(["sweep", "merge"]);
    for f in files {
        c.arg(d.join(f));
    }
    c.args(["-o", d.join(out).to_str().unwrap()]);
    c.output().unwrap()
}

#[test]
fn four_shards_in_four_processes_merge_to_the_whole_sweep_bytes() {
    let d = dir("shards-whole");
    let s = repo("scenarios/examples/mutex-contention.toml");
    let whole = d.join("whole.jsonl");
    assert!(sweep(&s, &whole, &[]).status().unwrap().success());
    // Four separate processes at once, as four machines would run them.
    let children: Vec<_> = (1..=4)
        .map(|k| {
            let out = d.join(format!("s{k}.jsonl"));
            sweep(&s, &out, &["--shard", &format!("{k}/4")])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let sizes: Vec<usize> = (1..=4)
        .map(|k| {
            std::fs::read_to_string(d.join(format!("s{k}.jsonl")))
                .unwrap()
                .lines()
                .count()
        })
        .collect();
    // 2 variants x 3 CPU counts x 2 durations x 2 seeds = 24 points.
    assert_eq!(sizes, [6, 6, 6, 6]);
    // Given in any order.
    let o = merge(
        &d,
        &["s3.jsonl", "s1.jsonl", "s4.jsonl", "s2.jsonl"],
        "all.jsonl",
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let merged = std::fs::read(d.join("all.jsonl")).unwrap();
    assert_eq!(
        merged,
        std::fs::read(&whole).unwrap(),
        "merge != whole sweep"
    );
    // A shard is the same points whatever runs it: again, the same bytes.
    let again = d.join("s2-again.jsonl");
    assert!(sweep(&s, &again, &["--shard", "2/4"])
        .status()
        .unwrap()
        .success());
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(d.join("s2.jsonl")).unwrap()
    );
}

#[test]
fn merge_refuses_overlaps_mixed_scenarios_and_bad_shards() {
    let d = dir("shards-refuse");
    let s = repo("scenarios/examples/mutex-contention.toml");
    for k in 1..=2 {
        let out = d.join(format!("s{k}.jsonl"));
        assert!(sweep(&s, &out, &["--shard", &format!("{k}/2")])
            .status()
            .unwrap()
            .success());
    }
    let o = merge(&d, &["s1.jsonl", "s1.jsonl"], "x.jsonl");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("overlapping points"));
    assert!(!d.join("x.jsonl").exists(), "no file on refusal");
    // The same sweep of another scenario text.
    let other = d.join("other.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(&s).unwrap() + "\n# another text\n",
    )
    .unwrap();
    let o3 = d.join("o.jsonl");
    assert!(sweep(&other, &o3, &["--shard", "2/2"])
        .status()
        .unwrap()
        .success());
    let o = merge(&d, &["s1.jsonl", "o.jsonl"], "x.jsonl");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mixed scenarios"));
    // Shards of different splits are not one sweep's.
    let t = d.join("t.jsonl");
    assert!(sweep(&s, &t, &["--shard", "2/3"])
        .status()
        .unwrap()
        .success());
    let o = merge(&d, &["s1.jsonl", "t.jsonl"], "x.jsonl");
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!d.join("x.jsonl").exists());
    for bad in ["0/4", "5/4", "4", "a/b"] {
        let o = sweep(&s, &d.join("y.jsonl"), &["--shard", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "--shard {bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--shard"));
    }
}
