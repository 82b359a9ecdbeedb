//! What a sweep's points are and say they are: a swept `scenario.seed`
//! runs each point's own seed, `--cpus` keeps explicit placements, `sweep
//! merge` refuses an incomplete set, and `-o` must be a regular file.

mod common;

use std::path::Path;

use common::{dir, refused, smpsim, stderr};

/// Eight CPUs; group `a` pinned to CPU 0, group `b` one task per CPU.
const EIGHT: &str = "[scenario]\nname = \"p\"\nduration = \"1ms\"\n[machine]\npreset = \"generic-x86\"\n[machine.topology]\ncores_per_llc = 8\n\
[[tasks]]\nname = \"a\"\ncount = 1\ncpus = \"0\"\ncode = '''for (;;) { work(exp(10us)); count(c); }'''\n\
[[tasks]]\nname = \"b\"\nper_cpu = 1\ncode = '''for (;;) { work(exp(10us)); count(d); }'''\n";

fn write(d: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn points(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_swept_seed_runs_and_labels_each_points_own_seed() {
    let d = dir("sweep-seed");
    let s = write(&d, "s.toml", EIGHT);
    let out = d.join("r.jsonl");
    let o = smpsim()
        .args(["sweep", s.to_str().unwrap(), "--set", "scenario.seed=42,43"])
        .args(["--seeds", "2", "-q", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let p = points(&out);
    let seeds: Vec<(u64, u64)> = p
        .iter()
        .map(|v| {
            (
                v["seed"].as_u64().unwrap(),
                v["result"]["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    // The label is the seed that ran: 42, 43 from 42; 43, 44 from 43.
    assert_eq!(seeds, [(42, 42), (43, 43), (43, 43), (44, 44)]);
    // The seeds matter to the figures, so a wrong seed would show.
    assert_ne!(p[0]["result"]["counters"], p[1]["result"]["counters"]);
    // Each runs as `run --seed` of that seed does (same counters).
    let run = smpsim()
        .args([
            "run",
            s.to_str().unwrap(),
            "--seed",
            "44",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(run["variants"][0]["counters"], p[3]["result"]["counters"]);
}

#[test]
fn sweep_cpus_keeps_an_explicit_placement_and_says_so() {
    let d = dir("sweep-cpus-kept");
    let s = write(&d, "s.toml", EIGHT);
    let out = d.join("r.jsonl");
    let o = smpsim()
        .args(["sweep", s.to_str().unwrap(), "--cpus", "1,4,8"])
        .args(["-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("restricts task groups b to CPUs 0..N-1")
            && e.contains("keeps the explicit placement of a (cpus = \"0\")"),
        "{e}"
    );
    for p in points(&out) {
        let n = p["cpus"].as_u64().unwrap();
        let groups = p["result"]["task_groups"].as_array().unwrap();
        let a = groups.iter().find(|g| g["name"] == "a").unwrap();
        let b = groups.iter().find(|g| g["name"] == "b").unwrap();
        assert_eq!(a["per_task"][0]["cpu"], 0, "at {n} CPUs");
        assert_eq!(b["tasks"].as_u64().unwrap(), n);
    }
    // A placement beyond a point's CPUs is refused, not widened.
    let s3 = write(
        &d,
        "s3.toml",
        &EIGHT.replace("cpus = \"0\"", "cpus = \"3\""),
    );
    let o = smpsim()
        .args(["sweep", s3.to_str().unwrap(), "--cpus", "2,4", "-q"])
        .args(["-o", d.join("r3.jsonl").to_str().unwrap()])
        .output()
        .unwrap();
    refused(
        &o,
        "task group `a` places its tasks itself (cpus = \"3\"), on CPU 3",
    );
    assert!(!d.join("r3.jsonl").exists() || points(&d.join("r3.jsonl")).is_empty());
}

fn shard(s: &Path, out: &Path, k: u32) {
    let o = smpsim()
        .args(["sweep", s.to_str().unwrap(), "--seeds", "9", "-q"])
        .args(["--shard", &format!("{k}/3"), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn merge_of_an_incomplete_set_is_refused_unless_partial() {
    let d = dir("sweep-merge-partial");
    let s = write(&d, "s.toml", EIGHT);
    let (s1, s2) = (d.join("s1.jsonl"), d.join("s2.jsonl"));
    shard(&s, &s1, 1);
    shard(&s, &s2, 2);
    let merged = d.join("m.jsonl");
    let merge = |extra: &[&str]| {
        smpsim()
            .args(["sweep", "merge", s1.to_str().unwrap(), s2.to_str().unwrap()])
            .args(extra)
            .args(["-o", merged.to_str().unwrap()])
            .output()
            .unwrap()
    };
    // Points 2, 5 and 8 (shard 3) are missing: three, the last included.
    let o = merge(&[]);
    refused(&o, "3 of the sweep's 9 points are missing (places 2, 5, 8)");
    assert!(stderr(&o).contains("--partial"));
    assert!(!merged.exists(), "nothing written on refusal");
    let o = merge(&["--partial"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("3 of the sweep's 9 points are missing"));
    assert_eq!(points(&merged).len(), 6);
}

#[test]
fn merge_refuses_shards_that_name_the_scenario_by_different_paths() {
    let d = dir("sweep-merge-paths");
    let s = write(&d, "s.toml", EIGHT);
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let other = d.join("sub").join("..").join("s.toml");
    let (s1, s2, s3) = (d.join("s1.jsonl"), d.join("s2.jsonl"), d.join("s3.jsonl"));
    shard(&s, &s1, 1);
    shard(&s, &s2, 2);
    shard(&other, &s3, 3);
    let o = smpsim()
        .args(["sweep", "merge"])
        .args([&s1, &s2, &s3])
        .args(["-o", d.join("m.jsonl").to_str().unwrap()])
        .output()
        .unwrap();
    refused(&o, "names the scenario");
    assert!(!d.join("m.jsonl").exists());
}

#[test]
fn sweep_output_that_is_a_fifo_is_refused_not_blocked_on() {
    let d = dir("sweep-fifo");
    let s = write(&d, "s.toml", EIGHT);
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // With no reader, opening the FIFO would block for ever: the child is
    // killed after a while if the refusal does not come.
    let mut child = smpsim()
        .args([
            "sweep",
            s.to_str().unwrap(),
            "-q",
            "-o",
            fifo.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if waited > 600 {
            child.kill().unwrap();
            panic!("sweep -o FIFO blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    };
    let o = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(
        stderr(&o).contains("a FIFO, not a regular file"),
        "{}",
        stderr(&o)
    );
}
