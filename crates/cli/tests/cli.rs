//! End-to-end tests of the `smpsim` binary: determinism, bad input,
//! reproduction output.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{repo, smpsim};

/// Runs `cmd`, which must succeed, and parses its JSON output.
fn json_of(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.args(["--format", "json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `smpsim run SCENARIO ARGS... --format json`, which must succeed.
fn run_ok(scenario: &str, args: &[&str]) -> serde_json::Value {
    let path = repo(scenario);
    json_of(smpsim().args(["run", path.to_str().unwrap()]).args(args))
}

/// `smpsim run SCENARIO --explore N --format json`, which must succeed.
fn explore_ok(scenario: &str, n: &str) -> serde_json::Value {
    run_ok(scenario, &["--explore", n])
}

/// Runs an explored schedule's printed replay command; the first
/// detector it reports.
fn replay_detector(found: &serde_json::Value) -> String {
    let replay = found["replay"].as_str().unwrap();
    let args: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let v = json_of(smpsim().current_dir(repo(".")).args(&args));
    let detector = &v["variants"][0]["findings"][0]["detector"];
    detector.as_str().unwrap_or("").to_string()
}

/// Drops the host-time fields, the only ones allowed to differ between runs.
fn strip_wall(json: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
    if let Some(vars) = v.get_mut("variants").and_then(|x| x.as_array_mut()) {
        for var in vars {
            var["stats"].as_object_mut().unwrap().remove("wall_seconds");
        }
    }
    v
}

fn run_json(args: &[&str], threads: &str) -> String {
    let out = smpsim()
        .args(args)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", common::stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn same_seed_gives_identical_json_on_any_thread_count() {
    let scenario = repo("scenarios/membarrier-percpu.toml");
    let args = [
        "run",
        scenario.to_str().unwrap(),
        "--set",
        "scenario.duration=25ms",
        "--set",
        "scenario.warmup=5ms",
        "--seed",
        "7",
        "--format",
        "json",
    ];
    let a = run_json(&args, "1");
    let b = run_json(&args, "2");
    let c = run_json(&args, "2");
    assert_eq!(strip_wall(&a), strip_wall(&b));
    assert_eq!(strip_wall(&b), strip_wall(&c));
    let v = strip_wall(&a);
    assert!(v["variants"][0]["stats"]["events"].as_u64().unwrap() > 0);
    // And a different seed gives a different run.
    let mut other = args.to_vec();
    other[7] = "8";
    assert_ne!(strip_wall(&run_json(&other, "2")), v);
}

/// Every lock implementation, in parallel variants, gives the same bytes
/// on one thread or two.
#[test]
fn lock_scaling_is_deterministic_across_thread_counts() {
    let scenario = repo("scenarios/lock-scaling.toml");
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--set",
        "scenario.duration=4ms",
        "--set",
        "scenario.warmup=1ms",
        "--set",
        "tasks.locker.count=24",
        "--format",
        "json",
    ];
    for v in ["qspinlock", "ticket", "tas", "tas_backoff"] {
        args.extend(["--variant", v]);
    }
    let a = strip_wall(&run_json(&args, "1"));
    let b = strip_wall(&run_json(&args, "2"));
    assert_eq!(a, b);
    assert_eq!(a["variants"].as_array().unwrap().len(), 4);
}

/// An unknown lock kind is a located error, and nothing is written.
#[test]
fn unknown_lock_kind_is_a_located_error() {
    let (code, stderr, _) = bad_scenario(
        "unknown-kind",
        r#"[scenario]
name = "k"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
l = { type = "spinlock", kind = "bogus" }
[[tasks]]
name = "t"
per_cpu = 1
code = [ { op = "spin_guard", lock = "l", body = [] } ]
"#,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown-kind.toml:7:"), "{stderr}");
    assert!(
        stderr.contains("bogus") && stderr.contains("qspinlock"),
        "{stderr}"
    );
}

fn bad_scenario(name: &str, text: &str) -> (i32, String, PathBuf) {
    let dir = std::env::temp_dir().join(format!("smpsim-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let out_file = dir.join("result.json");
    let out = smpsim()
        .args([
            "run",
            path.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            out_file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    if code != 0 {
        assert!(
            !out_file.exists(),
            "no result file may be written on bad input"
        );
    } else {
        assert!(out_file.exists(), "a good run writes its result file");
    }
    (
        code,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        path,
    )
}

const GOOD: &str = r#"
[scenario]
name = "t"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
m = { type = "mutex" }
[[tasks]]
name = "a"
per_cpu = 1
code = [ { op = "mutex_guard", lock = "m", body = [ { op = "work", time = "1us" } ] } ]
"#;

#[test]
fn bad_input_is_located_and_exits_2_without_output() {
    let cases = [
        ("syntax", GOOD.replace("name = \"a\"", "name = \"a"), 10),
        (
            "unknown-field",
            GOOD.replace("per_cpu = 1", "per_cpu = 1\ncolour = 3"),
            12,
        ),
        (
            "unknown-lock",
            GOOD.replace("lock = \"m\"", "lock = \"nope\""),
            12,
        ),
        (
            "negative",
            GOOD.replace("time = \"1us\"", "time = \"-1us\""),
            12,
        ),
    ];
    for (name, text, line) in cases {
        let (code, err, path) = bad_scenario(name, &text);
        assert_eq!(code, 2, "{name}: {err}");
        let loc = format!("{}:{line}:", path.display());
        assert!(err.contains(&loc), "{name}: expected {loc} in:\n{err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let (code, err, _) = bad_scenario("good", GOOD);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn unknown_variant_and_bad_set_are_errors() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let out = smpsim()
        .args(["run", scenario.to_str().unwrap(), "--variant", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nospin"));
    let out = smpsim()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--set",
            "scenario.duration=-5ms",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--set scenario.duration"));
}

#[test]
fn reproduce_json_has_the_contract_fields() {
    let dir = common::dir("repro");
    // A tiny case built from the example, so the test stays fast.
    let text = std::fs::read_to_string(repo("scenarios/examples/mutex-contention.toml")).unwrap()
        + r#"
[reproduce]
case = "tiny"
quick = { "scenario.duration" = "20ms" }
[[reproduce.metric]]
name = "spin_over_nospin"
published = 1.5
expr = "spin.counter.ops.rate / nospin.counter.ops.rate"
pass = { factor = 2.0 }
source = "test"
"#;
    std::fs::write(dir.join("tiny.toml"), text).unwrap();
    let out = smpsim()
        .args([
            "reproduce",
            "--quick",
            "--format",
            "json",
            "--scenarios",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &v.as_array().unwrap()[0];
    for key in ["case", "metric", "published", "simulated", "pass"] {
        assert!(row.get(key).is_some(), "missing {key}: {row}");
    }
    assert_eq!(row["case"], "tiny");
    assert!(
        row["simulated"].as_f64().unwrap() > 1.0,
        "spinning must beat sleeping here: {row}"
    );
}

#[test]
fn event_budget_stops_the_run_early() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let out = run_json(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--variant",
            "spin",
            "--set",
            "scenario.max_events=5000",
            "--format",
            "json",
        ],
        "1",
    );
    let v = strip_wall(&out);
    let stats = &v["variants"][0]["stats"];
    assert!(stats["events"].as_u64().unwrap() + stats["stale_events"].as_u64().unwrap() <= 5000);
    assert!(stats["simulated_ns"].as_u64().unwrap() < 200_000_000);
}

#[test]
fn mm_checker_catches_the_naive_cpumask_refcount_only() {
    let scenario = repo("scenarios/mm-lifetime.toml");
    let out = smpsim()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--seeds",
            "30",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for e in v.as_array().unwrap() {
        let failing = e["failing"].as_array().unwrap();
        match e["variant"].as_str().unwrap() {
            "cpumask-refcount-naive" => {
                assert!(!failing.is_empty(), "the naive protocol must be caught");
                let msg = failing[0]["findings"][0]["message"].as_str().unwrap();
                assert!(msg.contains("seed"), "{msg}");
            }
            other => assert!(failing.is_empty(), "{other}: {failing:?}"),
        }
    }
    // The first failing seed replays to the same finding.
    let v0 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["variant"] == "cpumask-refcount-naive")
        .unwrap();
    let seed = v0["failing"][0]["seed"].as_u64().unwrap().to_string();
    let replay = run_json(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--variant",
            "cpumask-refcount-naive",
            "--seed",
            &seed,
            "--format",
            "json",
        ],
        "1",
    );
    let r: serde_json::Value = serde_json::from_str(&replay).unwrap();
    assert_eq!(
        r["variants"][0]["findings"][0],
        v0["failing"][0]["findings"][0]
    );
}

/// `-o` writes through devices instead of replacing them, refuses a
/// symlink (its target is left as it was; tests/safety.rs has the rest),
/// and `-o -` is stdout.
#[test]
fn output_paths_are_written_not_replaced() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let run = |out: &str| {
        smpsim()
            .args([
                "run",
                scenario.to_str().unwrap(),
                "--set",
                "scenario.duration=15ms",
                "-o",
                out,
            ])
            .output()
            .unwrap()
    };
    // A character device stays one.
    assert!(run("/dev/null").status.success());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A symlink is refused: it stays a symlink, its target untouched.
    let dir = common::dir("out");
    let (target, link) = (dir.join("target.txt"), dir.join("link.txt"));
    std::fs::write(&target, "old").unwrap();
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("target.txt", &link).unwrap();
    let out = run(link.to_str().unwrap());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a symbolic link"));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    // `-` is standard output, not a file named `-`.
    let out = run("-");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("mutex-contention"));
    assert!(!PathBuf::from("-").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A window table that would not fit in memory is refused with the knob
/// that caused it, not an abort.
#[test]
fn huge_window_tables_are_refused() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    for (set, says) in [
        ("kernel.latency_window=1ns", "do not fit in memory"),
        (
            "scenario.duration=400000000000000000ns",
            "do not fit in memory",
        ),
        (
            "scenario.duration=18446744073709551615ns",
            "longer than a run can be",
        ),
    ] {
        let out = smpsim()
            .args(["run", scenario.to_str().unwrap(), "--set", set])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {stderr}");
        assert!(stderr.contains(says), "{set}: {stderr}");
    }
}

/// Inputs that used to be accepted and give a silently wrong run.
#[test]
fn silently_wrong_inputs_are_refused() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let s = scenario.to_str().unwrap();
    let trace = std::env::temp_dir().join(format!("smpsim-unwritten-{}.json", std::process::id()));
    let trace = trace.to_str().unwrap();
    for (args, says) in [
        (
            vec!["run", s, "--set", "machine.costs.syscall.ns=-500"],
            "invalid machine cost",
        ),
        (vec!["run", s, "--seeds", "0"], "--seeds 0"),
        (
            vec!["run", s, "--seeds", "2", "--trace", trace],
            "cannot be combined with --seeds",
        ),
    ] {
        let out = smpsim().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!std::path::Path::new(trace).exists(), "no trace on refusal");
}

/// `reproduce` with no cases fails instead of printing an empty table, and
/// a broken file that is not a case does not break the others.
#[test]
fn reproduce_needs_cases_and_skips_broken_non_cases() {
    let dir = common::dir("cases");
    let list = || {
        smpsim()
            .args(["reproduce", "list", "--scenarios", dir.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = list();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cases"));
    std::fs::copy(
        repo("scenarios/slow-mutex.toml"),
        dir.join("slow-mutex.toml"),
    )
    .unwrap();
    std::fs::write(dir.join("broken.toml"), "garbage = [").unwrap();
    let out = list();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("slow-mutex"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipping"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// scenarios/checks/abba.toml: lockdep reports the inversion on the first
/// run although nothing deadlocks; the consistent order is clean.
#[test]
fn lockdep_reports_an_abba_inversion_that_never_deadlocks() {
    let v = run_ok("scenarios/checks/abba.toml", &[]);
    for run in v["variants"].as_array().unwrap() {
        let findings = run["findings"].as_array().unwrap();
        let kinds: Vec<&str> = findings
            .iter()
            .map(|f| f["detector"].as_str().unwrap_or(""))
            .collect();
        match run["variant"].as_str().unwrap() {
            "inverted" => {
                assert_eq!(kinds, ["circular_locking_dependency"], "{findings:?}");
                let msg = findings[0]["message"].as_str().unwrap();
                assert!(
                    msg.contains("possible circular locking dependency detected")
                        && msg.contains("writer/0 is trying to acquire lock:")
                        && msg.contains("taken by reader/0"),
                    "{msg}"
                );
            }
            _ => assert!(findings.is_empty(), "{findings:?}"),
        }
        // Nothing deadlocked: the writer finished.
        let writer = &run["task_groups"][1];
        assert_eq!(writer["exited"], 1, "{writer}");
    }
}

/// scenarios/checks/race.toml: the default schedule never interleaves the
/// check-then-act badly; `--explore 200` finds a schedule that does,
/// shrinks it, and the printed replay reproduces the assertion. The locked
/// variant survives every schedule.
#[test]
fn explore_finds_and_shrinks_a_planted_race() {
    let race = "scenarios/checks/race.toml";
    for run in run_ok(race, &[])["variants"].as_array().unwrap() {
        assert!(run["findings"].as_array().unwrap().is_empty(), "{run}");
    }
    let v = explore_ok(race, "200");
    // The same on one thread.
    let path = repo(race);
    let single = json_of(smpsim().env("RAYON_NUM_THREADS", "1").args([
        "run",
        path.to_str().unwrap(),
        "--explore",
        "200",
    ]));
    assert_eq!(v, single, "explore depends on the thread count");
    let racy = &v[0];
    assert_eq!(racy["variant"], "racy");
    let found = &racy["found"];
    assert_eq!(found["detector"], "assertion", "{racy}");
    let shrunk = found["delays_shrunk"].as_array().unwrap().len();
    assert!(
        shrunk < found["delays_first"].as_u64().unwrap() as usize,
        "{found}"
    );
    assert_eq!(v[1]["variant"], "locked");
    assert!(v[1]["found"].is_null(), "{}", v[1]);
    // The replay command reproduces the assertion, where the report says.
    assert_eq!(replay_detector(found), "assertion");
    let replay: Vec<&str> = found["replay"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .collect();
    let replayed = json_of(smpsim().current_dir(repo(".")).args(&replay));
    assert_eq!(
        replayed["variants"][0]["findings"][0]["message"], found["message"],
        "the report's location is not its replay's"
    );
    // How many were asked, beside how many ran before the search stopped.
    assert_eq!(racy["schedules_asked"], 200);
    assert!(racy["schedules_run"].as_u64().unwrap() <= 200);
}

/// scenarios/checks/membarrier.toml: the membarrier checker passes the
/// correct broadcast path over explored schedules and catches the variant
/// that skips the IPIs, with a replay that reproduces it.
#[test]
fn membarrier_checker_keeps_the_correct_path_and_catches_an_early_return() {
    let v = explore_ok("scenarios/checks/membarrier.toml", "50");
    assert_eq!(v[0]["variant"], "correct");
    assert!(v[0]["found"].is_null(), "{}", v[0]);
    let found = &v[1]["found"];
    assert_eq!(found["detector"], "membarrier", "{}", v[1]);
    let message = found["message"].as_str().unwrap();
    assert!(message.contains("no full memory barrier"), "{message}");
    assert_eq!(replay_detector(found), "membarrier");
}

/// scenarios/checks/irq-lock.toml: a lock taken in an IPI handler and with
/// IRQs on elsewhere is lockdep's inconsistent lock state; with irqsave it
/// is clean.
#[test]
fn lockdep_reports_a_lock_used_in_hardirq_and_with_irqs_on() {
    let v = run_ok("scenarios/checks/irq-lock.toml", &[]);
    let on = &v["variants"][0];
    assert_eq!(on["variant"], "irqs-on");
    let f = &on["findings"][0];
    assert_eq!(f["detector"], "inconsistent_lock_state", "{on}");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("inconsistent {HARDIRQ-ON-W} -> {IN-HARDIRQ-W} usage."),
        "{msg}"
    );
    assert!(v["variants"][1]["findings"].as_array().unwrap().is_empty());
}

/// A scratch folder named `name`, and the example scenario sweeps use.
fn sweep_setup(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    (dir, repo("scenarios/examples/mutex-contention.toml"))
}

/// `sweep` then `plot`: the results stream to JSON Lines, an interrupted
/// sweep resumes to the same file, and the SVG has a curve per variant.
#[test]
fn sweep_resumes_to_the_same_file_and_plot_draws_each_variant() {
    let (dir, scenario) = sweep_setup("smpsim-sweep");
    let sweep = |out: &std::path::Path| {
        smpsim()
            .args([
                "sweep",
                scenario.to_str().unwrap(),
                "--cpus",
                "1,2,4,8,16",
                "--seeds",
                "3",
                "--set",
                "scenario.duration=20ms",
                "-q",
                "-o",
            ])
            .arg(out)
            .output()
            .unwrap()
    };
    let whole = dir.join("whole.jsonl");
    assert!(sweep(&whole).status.success());
    let full = std::fs::read_to_string(&whole).unwrap();
    assert_eq!(full.lines().count(), 2 * 5 * 3);
    assert!(!full.contains("\"error\""), "{full}");
    // An interrupted sweep: some points, the last one torn mid-write.
    let part = dir.join("part.jsonl");
    let lines: Vec<&str> = full.lines().collect();
    let mut cut = lines[..11].join("\n");
    cut.push('\n');
    cut.push_str(&lines[11][..40]);
    std::fs::write(&part, cut).unwrap();
    let out = sweep(&part);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(std::fs::read_to_string(&part).unwrap(), full);
    // The plot.
    let plot = |args: &[&str], to: &std::path::Path| {
        smpsim()
            .arg("plot")
            .arg(&whole)
            .args(args)
            .arg("-o")
            .arg(to)
            .output()
            .unwrap()
    };
    // A plot that is drawn: the file's text.
    let drawn = |args: &[&str], to: &std::path::Path| {
        let out = plot(args, to);
        assert!(out.status.success(), "{}", common::stderr(&out));
        std::fs::read_to_string(to).unwrap()
    };
    let s = drawn(&["--y", "counter.ops.rate"], &dir.join("s.svg"));
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    assert_eq!(s.matches("class=\"series\"").count(), 2, "{s}");
    assert!(s.contains("data-name=\"spin\"") && s.contains("data-name=\"nospin\""));
    assert_eq!(s.matches("class=\"errorbar\"").count(), 10);
    assert!(s.contains(">CPUs (log2 scale)</text>") && s.contains(">ops per second</text>"));
    // The caption says what was swept and by which smpsim (version, commit).
    let by = format!(
        "sweep of mutex-contention by smpsim {} (",
        env!("CARGO_PKG_VERSION")
    );
    assert!(s.contains(&by), "{s}");
    // The same plot as PNG (by the name, or --format png): drawn at twice
    // the SVG's size (720 x 450, taller by a line per wrapped caption
    // line) with the bundled font, the same bytes every time.
    let svg_height: u32 = s
        .split("height=\"")
        .nth(1)
        .and_then(|h| h.split('"').next())
        .and_then(|h| h.parse::<f64>().ok())
        .unwrap() as u32;
    let (png, png2) = (dir.join("s.png"), dir.join("s2"));
    assert!(plot(&["--y", "counter.ops.rate"], &png).status.success());
    assert!(plot(&["--y", "counter.ops.rate", "--format", "png"], &png2)
        .status
        .success());
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(
        (be32(16), be32(20)),
        (1440, 2 * svg_height),
        "IHDR width x height"
    );
    assert!(bytes.len() > 20_000, "a drawn plot, not a blank one");
    assert_eq!(bytes, std::fs::read(&png2).unwrap());
    // A latency tail at 16 CPUs: p50 .. max, a curve per variant, bars
    // over the seeds, a log scale.
    fn tail<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        [&["--kind", "percentiles", "--x", "cpus"][..], extra].concat()
    }
    let t = drawn(
        &tail(&["--y", "histogram.syscall_latency", "--at", "16"]),
        &dir.join("tail.svg"),
    );
    assert_eq!(t.matches("class=\"series\"").count(), 2, "{t}");
    assert_eq!(t.matches("class=\"errorbar\"").count(), 2 * 5);
    for p in [">p50<", ">p90<", ">p99<", ">p99.9<", ">max<"] {
        assert!(t.contains(p), "{p}");
    }
    assert!(t.contains("syscall_latency (us, log scale)") && t.contains("at cpus = 16"));
    // Not a histogram, or no point at that x: exit 2, nothing written.
    for bad in [
        &["--y", "counter.ops.rate"][..],
        &["--y", "histogram.syscall_latency", "--at", "7"][..],
        &["--y", "histogram.nope"][..],
    ] {
        let to = dir.join("bad-tail.svg");
        let out = plot(&tail(bad), &to);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(!to.exists(), "{bad:?}");
    }
    // Where the CPUs' time goes at 16 CPUs: a stacked bar per variant,
    // its five parts adding up to the whole height.
    let c = drawn(&["--kind", "cputime", "--at", "16"], &dir.join("cpu.svg"));
    assert_eq!(c.matches("class=\"series\"").count(), 2, "{c}");
    for part in ["user", "sys", "spin", "irq", "idle"] {
        assert_eq!(
            c.matches(&format!("<rect class=\"{part}\"")).count(),
            2,
            "{part}"
        );
    }
    let heights: f64 = c
        .lines()
        .filter(|l| l.contains("data-name") || l.starts_with("<rect class="))
        .filter_map(|l| l.split("height=\"").nth(1))
        .filter_map(|h| h.split('"').next()?.parse::<f64>().ok())
        .sum();
    assert!((heights - 2.0 * 340.0).abs() < 1.0, "{heights}");
    // The longest preempt-off section per CPU and window: a panel per
    // variant, a cell per CPU and window (one 30 s window in 20 ms).
    let h = drawn(&["--kind", "heatmap", "--at", "16"], &dir.join("heat.svg"));
    assert_eq!(h.matches("class=\"series\"").count(), 2, "{h}");
    assert_eq!(h.matches("class=\"cell\"").count(), 2 * 16);
    assert!(
        h.contains(">time after the warm-up (a column per latency_window)</text>")
            && h.contains(">CPU</text>")
    );
    let bad = dir.join("bad-heat.svg");
    assert_eq!(
        plot(&["--kind", "heatmap", "--y", "nope"], &bad)
            .status
            .code(),
        Some(2)
    );
    assert!(!bad.exists());
    // Results of another scenario are refused, nothing written.
    let other = repo("scenarios/checks/abba.toml");
    let out = smpsim()
        .args(["sweep", other.to_str().unwrap(), "-q", "-o"])
        .arg(&whole)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another scenario"));
    assert_eq!(std::fs::read_to_string(&whole).unwrap(), full);
    // A file that is not a sweep's results is refused and left alone.
    let not_results = dir.join("notes.jsonl");
    std::fs::write(&not_results, "my notes\nmore notes\n").unwrap();
    let out = smpsim()
        .args(["sweep", scenario.to_str().unwrap(), "-q", "-o"])
        .arg(&not_results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a sweep point"));
    assert_eq!(
        std::fs::read_to_string(&not_results).unwrap(),
        "my notes\nmore notes\n"
    );
    // Bad arguments.
    for bad in [
        &["--cpus", "0"][..],
        &["--set", "kernel.no_such_knob=1,2"][..],
        &["--cpus", "64"][..],
        &["--variant", "spin,nope"][..],
    ] {
        let out = smpsim()
            .args(["sweep", scenario.to_str().unwrap()])
            .args(bad)
            .args(["-q", "-o"])
            .arg(dir.join("bad.jsonl"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGINT part-way through a sweep keeps the finished points; the same
/// command then runs only the rest and ends with the same file.
#[cfg(unix)]
#[test]
fn an_interrupted_sweep_keeps_its_points_and_resumes() {
    let (dir, scenario) = sweep_setup("smpsim-sigint");
    let args = |out: &std::path::Path| {
        let mut c = smpsim();
        c.args(["sweep", scenario.to_str().unwrap(), "--cpus", "1..8:+1"])
            .args([
                "--seeds",
                "3",
                "--set",
                "scenario.duration=40ms",
                "-q",
                "-o",
            ])
            .arg(out);
        c
    };
    let whole = dir.join("whole.jsonl");
    assert!(args(&whole).output().unwrap().status.success());
    let part = dir.join("part.jsonl");
    let mut child = args(&part).spawn().unwrap();
    for _ in 0..2000 {
        let n = std::fs::read_to_string(&part)
            .map(|s| s.lines().count())
            .unwrap_or(0);
        if n >= 6 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: signalling a child we spawned and still own.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let _ = child.wait();
    let kept = std::fs::read_to_string(&part)
        .map(|s| s.lines().count())
        .unwrap_or(0);
    let out = args(&part).output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&part).unwrap(),
        std::fs::read_to_string(&whole).unwrap(),
        "resumed after {kept} points"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C (or SIGTERM) while a result is written leaves no temporary
/// file behind, and the process dies of the signal.
#[test]
fn a_signal_while_writing_removes_the_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = common::dir("sigtmp");
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let out = dir.join("out.json");
        let mut child = smpsim()
            .args(["run", scenario.to_str().unwrap(), "-v", "spin"])
            .args([
                "--set",
                "scenario.duration=1ms",
                "--set",
                "scenario.warmup=0s",
            ])
            .arg("--trace")
            .arg(&out)
            .env("SMPSIM_TEST_SLOW_WRITE", "60000")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // `.out.json.PID.XXXXXX.tmp`, the random part unknown here.
        let prefix = format!(".out.json.{}.", child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let tmp = loop {
            let found = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".tmp"))
                });
            if let Some(t) = found {
                break t;
            }
            assert!(std::time::Instant::now() < deadline, "no temporary file");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert!(!tmp.exists(), "{} left behind", tmp.display());
        assert!(!out.exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run --seeds N` reports the metrics over the seeds (mean, stddev, min,
/// max), not only which seeds made a detector fire.
#[test]
fn run_over_seeds_reports_metrics_with_their_spread() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let run = |format: &str| {
        let out = smpsim()
            .args([
                "run",
                scenario.to_str().unwrap(),
                "--seeds",
                "3",
                "--set",
                "scenario.duration=20ms",
                "-q",
                "--format",
                format,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("text");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("counter.ops.rate"))
        .unwrap_or_else(|| panic!("no ops row over seeds:\n{text}"));
    assert_eq!(row.split_whitespace().count(), 5, "{row}");
    assert!(text.contains("hist.syscall_latency.p99"), "{text}");

    let v: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let m = v[0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "counter.ops.rate")
        .unwrap()
        .clone();
    let (mean, min, max) = (
        m["mean"].as_f64().unwrap(),
        m["min"].as_f64().unwrap(),
        m["max"].as_f64().unwrap(),
    );
    assert!(min <= mean && mean <= max && min > 0.0, "{m}");
    assert!(m["stddev"].as_f64().unwrap() > 0.0, "seeds differ: {m}");

    // As lkp ncompare prints runs over several seeds: mean ±%stddev,
    // %change, within 72 columns; the text names the seeds.
    let lkml = run("lkml");
    assert!(lkml.contains("seeds 1..3 (3 per variant)"), "{lkml}");
    assert!(
        lkml.contains("%stddev") && lkml.contains("%change"),
        "{lkml}"
    );
    let ops = lkml
        .lines()
        .find(|l| l.ends_with("ops per second"))
        .unwrap_or_else(|| panic!("no ops row:\n{lkml}"));
    assert_eq!(ops.matches('±').count(), 2, "{ops}");
    assert!(lkml.lines().all(|l| l.chars().count() <= 72), "{lkml}");
}
