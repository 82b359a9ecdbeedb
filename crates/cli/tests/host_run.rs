//! `smpsim host run`: its text starts with stress-ng's `--metrics-brief`
//! table (stressor, bogo ops, real/usr/sys time, bogo ops/s both ways),
//! and its JSON carries the same figures. Needs a host that can run
//! `ctxswitch` (2 online CPUs); skips, saying so, where it cannot.
//!
//! A terminating signal mid-run (the SIGHUP) runs the cleanup and
//! exits 128 + the signal; a run killed outright is restored by the next,
//! which says what it restored. Every `host run` restores dead runs'
//! changes machine-wide, so the tests here run one at a time.

mod common;

use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::smpsim;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `host list` says `test` can run here.
fn runnable(test: &str) -> bool {
    let out = smpsim()
        .args(["host", "list", "--format", "json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .any(|t| t["test"] == test && t["runnable"] == true)
}

#[test]
fn host_run_prints_stress_ngs_metrics_brief() {
    let _one = serial();
    if !runnable("ctxswitch") {
        eprintln!("SKIPPED: this host cannot run ctxswitch (see `smpsim host list`)");
        return;
    }
    let out = smpsim()
        .args(["host", "run", "ctxswitch", "--seconds", "0.4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("stressor "))
        .expect(&text);
    assert_eq!(
        lines[at],
        "stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s"
    );
    assert_eq!(
        lines[at + 1],
        "                          (secs)    (secs)    (secs)   (real time) (usr+sys time)"
    );
    let row: Vec<&str> = lines[at + 2].split_whitespace().collect();
    assert_eq!(row.len(), 7, "{row:?}");
    assert_eq!(row[0], "ctxswitch");
    let n: f64 = row[1].parse().unwrap();
    let f = |i: usize| row[i].parse::<f64>().unwrap();
    assert!(n > 0.0 && f(2) > 0.0 && f(3) + f(4) > 0.0, "{row:?}");
    // The rates are the bogo ops over the times printed, to their rounding
    // (each time is within 0.005 s of the one divided by).
    let within = |rate: f64, secs: f64, slack: f64| {
        n / (secs + slack) <= rate * 1.0001 && rate <= n / (secs - slack).max(1e-9) * 1.0001
    };
    assert!(within(f(5), f(2), 0.005), "{row:?}");
    assert!(within(f(6), f(3) + f(4), 0.01), "{row:?}");
    assert!(lines[at + 3].contains("a bogo op: one pipe round trip"));
}

/// Waits until `ready()`; panics after 120 s (a bound on a hang, not a
/// timing assertion: on a loaded 2-CPU host, calibration alone before
/// `host compare`'s profile appears has taken 25 s).
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready() {
        assert!(Instant::now() < deadline, "never saw {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn host_run(args: &[&str]) -> Child {
    smpsim()
        .args(["host", "run"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// SIGHUP (the issue's) and SIGPIPE stop `host run membarrier --cgroup`
/// and `host run mutex-readers` like SIGTERM: the cgroup tree removed,
/// tracefs unmounted, partial results said to be partial, exit 128 + the
/// signal.
#[test]
fn sighup_mid_host_run_cleans_up_and_exits_129() {
    let _one = serial();
    let (cg, root) = smpsim_host::probe::cgroup_cpu();
    let cgroups = runnable("membarrier") && cg.ok;
    let mounts = matches!(smpsim_host::probe::trace_file(), (_, Some((_, true))));
    if !cgroups {
        eprintln!(
            "SKIPPED the cgroup part: membarrier with cgroups cannot run here ({})",
            cg.detail
        );
    }
    if !mounts {
        eprintln!("SKIPPED the tracefs part: mutex-readers would not mount tracefs here");
    }
    for (sig, name) in [(libc::SIGHUP, "SIGHUP"), (libc::SIGPIPE, "SIGPIPE")] {
        if let (
            true,
            Some(smpsim_host::probe::CgroupCpu::V1(dir) | smpsim_host::probe::CgroupCpu::V2(dir)),
        ) = (cgroups, root.clone())
        {
            let child = host_run(&["membarrier", "--seconds", "60", "--cgroup", "3x2"]);
            let tree = dir.join(format!("smpsim_membarrier_{}", child.id()));
            wait_for("the cgroup tree", || tree.join("n2/d0/d1").exists());
            signal(&child, sig);
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(128 + sig), "{name}: {out:?}");
            assert!(!tree.exists(), "{name}: {} left behind", tree.display());
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("STOPPED EARLY"), "{name}: {stdout}");
        }
        if mounts {
            let child = host_run(&["mutex-readers", "--seconds", "60"]);
            let source = format!("smpsim-mutex-readers-{}", child.id());
            let mounted = || {
                smpsim_host::cleanup::mounts::mounts()
                    .iter()
                    .any(|m| m.source == source)
            };
            wait_for("the tracefs mount", mounted);
            signal(&child, sig);
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(128 + sig), "{name}: {out:?}");
            assert!(!mounted(), "{name}: tracefs left mounted");
        }
    }
}

fn hotplug_cpu() -> Option<u32> {
    if std::env::var("SMPSIM_DESTRUCTIVE_TESTS").as_deref() != Ok("1") {
        eprintln!("SKIPPED: set SMPSIM_DESTRUCTIVE_TESTS=1 to take a CPU offline in a test");
        return None;
    }
    let (hp, cpu) = smpsim_host::probe::hotplug();
    if cpu.is_none() {
        eprintln!("SKIPPED: {}", hp.detail);
    }
    cpu
}

fn cpu_online(cpu: u32) -> bool {
    std::fs::read_to_string(smpsim_host::cleanup::cpu_online_file(cpu))
        .is_ok_and(|s| s.trim() == "1")
}

/// The reproducer: `host run hotplug --allow-hotplug --reps 60`,
/// `kill -HUP` at 0.7 s left the CPU offline, and the next run refused to
/// start. Now the CPU comes back and the status is 129; and after a
/// SIGKILL while it is offline, the next run brings it back, says so, and
/// runs.
#[test]
fn sighup_or_sigkill_mid_hotplug_leaves_no_cpu_offline() {
    let _one = serial();
    let Some(cpu) = hotplug_cpu() else { return };
    let child = host_run(&["hotplug", "--allow-hotplug", "--reps", "60"]);
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, libc::SIGHUP);
    let out = child.wait_with_output().unwrap();
    assert!(cpu_online(cpu), "cpu{cpu} left offline");
    assert_eq!(out.status.code(), Some(129), "{out:?}");

    // SIGKILL lands while the CPU is offline about half the time.
    let mut caught = None;
    for _ in 0..40 {
        let mut child = host_run(&["hotplug", "--allow-hotplug", "--reps", "100000"]);
        std::thread::sleep(Duration::from_millis(500));
        child.kill().unwrap();
        child.wait().unwrap();
        if !cpu_online(cpu) {
            caught = Some(child.id());
            break;
        }
    }
    let out = smpsim()
        .args(["host", "run", "hotplug", "--allow-hotplug", "--reps", "2"])
        .output()
        .unwrap();
    assert!(cpu_online(cpu), "cpu{cpu} left offline");
    assert!(out.status.success(), "{out:?}");
    let Some(pid) = caught else {
        eprintln!("the CPU was online at each SIGKILL: the restoring message was not checked");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = format!("restored: cpu{cpu} online (left offline by smpsim pid {pid})");
    assert!(
        stderr.lines().any(|l| l == line),
        "missing `{line}` in:\n{stderr}"
    );
}

/// `host compare` calibrates into a temporary profile; SIGHUP during its
/// real run (the issue: the profile stayed in TMPDIR) stops it with its
/// cleanup: TMPDIR is left as empty as it was found, status 129.
#[test]
fn sighup_mid_host_compare_leaves_no_temporary_profile() {
    let _one = serial();
    if !runnable("ctxswitch") {
        eprintln!("SKIPPED: this host cannot run ctxswitch (see `smpsim host list`)");
        return;
    }
    let tmp = common::dir("compare-sighup");
    let child = smpsim()
        .args(["host", "compare", "ctxswitch", "--seconds", "60"])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("the temporary profile", || {
        std::fs::read_dir(&tmp).is_ok_and(|mut d| d.next().is_some())
    });
    // Past the profile's writing (milliseconds), into the 60 s real run.
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGHUP);
    let out = child.wait_with_output().unwrap();
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let _ = std::fs::remove_dir_all(&tmp);
    assert_eq!(out.status.code(), Some(129), "{out:?}");
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}
