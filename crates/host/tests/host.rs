//! Host tests that touch the real kernel; each probes first and skips,
//! saying why, when this host cannot run it.

use std::process::Command;
use std::time::Duration;

fn smpsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smpsim-host-test-helper"))
}

#[test]
fn the_profile_round_trips_into_a_machine() {
    if smpsim_host::sys::online_cpus().len() < 2 {
        eprintln!("skipped: needs 2 online CPUs");
        return;
    }
    let c = smpsim_host::calibrate::calibrate("roundtrip").expect("calibrate");
    let m: smpsim_machine::Machine =
        toml::from_str(&c.profile).expect("the profile parses as a machine");
    assert_eq!(m.name, "roundtrip");
    for (name, cost) in m.cost_list() {
        assert!(
            cost.source.starts_with("measured")
                || cost.source.starts_with("assumed")
                || cost.source.starts_with("unmeasured")
                // The contention rules, the same for every machine.
                || cost.source.starts_with("global"),
            "{name}: {}",
            cost.source
        );
        assert!(cost.ns >= 0.0, "{name}");
    }
    assert!(m.costs.syscall.source.starts_with("measured"));
    assert!(m.costs.syscall.ns > 0.0);
    // Whatever the host did, the profile holds no impossible figure: an IPI
    // either costs more than a syscall or is marked unmeasured.
    let ipi = m.costs.ipi_send.ns + m.costs.ipi_latency.ns + m.costs.irq_entry_exit.ns;
    if m.costs.ipi_latency.source.starts_with("measured") {
        assert!(ipi > 2.0 * m.costs.line_transfer.same_llc.ns, "{ipi}");
    } else {
        assert!(m.costs.ipi_latency.source.starts_with("unmeasured"));
        assert!(c.profile.contains("# UNMEASURED"));
    }
    assert!(m.costs.context_switch.ns > m.costs.syscall.ns);
}

/// The second way to measure an IPI, with a sibling of the caller's mm
/// verified running on the target: where targeted membarrier exists, it
/// costs more than a syscall; elsewhere the test says why it skips.
#[test]
fn a_verified_ipi_costs_more_than_a_syscall() {
    let (mb, rseq) = (smpsim_host::probe::membarrier(), smpsim_host::probe::rseq());
    if smpsim_host::sys::online_cpus().len() < 2 || !mb.ok || !rseq.ok {
        eprintln!(
            "skipped: needs 2 online CPUs and targeted membarrier: {} / {}",
            mb.detail, rseq.detail
        );
        return;
    }
    let cpus = smpsim_host::sys::online_cpus();
    let allowed = smpsim_host::sys::allowed_cpus();
    let got = smpsim_host::calibrate::ipi_round_trip_verified(cpus[0], cpus[1]);
    smpsim_host::sys::set_allowed(&allowed).unwrap();
    match got {
        Ok(m) => {
            let sc = smpsim_host::calibrate::syscall().median_ns;
            assert!(
                m.median_ns > sc,
                "IPI {} ns vs syscall {sc} ns",
                m.median_ns
            );
        }
        // A host too busy to keep the sibling running says so; not a failure
        // of this code, which must then refuse rather than guess.
        Err(e) => {
            assert!(e.contains("batches") || e.contains("sibling"), "{e}");
            eprintln!("skipped: {e}");
        }
    }
}

/// The cpu controller's cgroup folder, where the host's membarrier test
/// can run with a cgroup tree; None (and why, on stderr) where it cannot.
fn membarrier_cgroup_root() -> Option<std::path::PathBuf> {
    let (cg, root) = smpsim_host::probe::cgroup_cpu();
    let (mb, rseq) = (smpsim_host::probe::membarrier(), smpsim_host::probe::rseq());
    if !cg.ok || !mb.ok || !rseq.ok {
        eprintln!("skipped: {} / {} / {}", cg.detail, mb.detail, rseq.detail);
        return None;
    }
    match root? {
        smpsim_host::probe::CgroupCpu::V1(d) | smpsim_host::probe::CgroupCpu::V2(d) => Some(d),
    }
}

/// A test stopped by SIGTERM mid-run leaves no cgroup behind.
#[test]
fn sigterm_mid_run_leaves_no_cgroup() {
    let Some(dir) = membarrier_cgroup_root() else {
        return;
    };
    let mut child = smpsim()
        .args(["membarrier", "--seconds", "30", "--cgroup", "10x3"])
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1500));
    let name = format!("smpsim_membarrier_{}", child.id());
    assert!(dir.join(&name).exists(), "the test made its cgroup tree");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert!(!dir.join(&name).exists(), "cgroup {name} left behind");
}

/// A hotplug test stopped by SIGTERM brings its CPU back online. It takes a
/// CPU offline, so it runs only with SMPSIM_DESTRUCTIVE_TESTS=1.
#[test]
fn sigterm_mid_hotplug_leaves_every_cpu_online() {
    if std::env::var("SMPSIM_DESTRUCTIVE_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set SMPSIM_DESTRUCTIVE_TESTS=1 to take a CPU offline in a test");
        return;
    }
    let (hp, cpu) = smpsim_host::probe::hotplug();
    let Some(cpu) = cpu else {
        eprintln!("skipped: {}", hp.detail);
        return;
    };
    let online = smpsim_host::sys::online_cpus();
    let mut child = smpsim()
        .args(["hotplug", "--reps", "1000"])
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert_eq!(
        smpsim_host::sys::online_cpus(),
        online,
        "cpu{cpu} must be back online"
    );
}

/// A run killed with SIGKILL cannot remove its cgroup tree; the next run
/// restores it from the state record, even one without --cgroup (see
/// tests/signals.rs for the message it prints).
#[test]
fn cgroups_left_by_a_killed_run_are_swept_by_the_next() {
    let Some(dir) = membarrier_cgroup_root() else {
        return;
    };
    let mut child = smpsim()
        .args(["membarrier", "--seconds", "30", "--cgroup", "3x2"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let name = format!("smpsim_membarrier_{}", child.id());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !dir.join(&name).join("n2").exists() {
        assert!(std::time::Instant::now() < deadline, "no cgroup tree");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(dir.join(&name).exists(), "SIGKILL leaves the tree");
    let out = smpsim()
        .args(["membarrier", "--seconds", "0.2"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{out:?}");
    assert!(!dir.join(&name).exists(), "{name} not swept");
}

/// Ctrl-C stops the host tests early, and the result says so instead of
/// passing partial figures off as a whole run.
#[test]
fn sigint_stops_a_host_test_early_and_says_so() {
    for test in ["ctxswitch", "ipi-latency"] {
        let status = smpsim_host::list()
            .into_iter()
            .find(|s| s.test == test)
            .unwrap();
        if !status.runnable {
            eprintln!("skipped {test}: {:?}", status.missing);
            continue;
        }
        let child = smpsim()
            .args([test, "--seconds", "30"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(1000));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let started = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{test} did not stop"
        );
        assert_eq!(out.status.code(), Some(130), "{test}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("stopped early"), "{test}: {stdout}");
    }
}

/// `mutex-readers` runs for the --seconds asked (it used to read the file
/// once per reader whatever was asked) and says so.
#[test]
fn mutex_readers_honours_seconds() {
    let status = smpsim_host::list()
        .into_iter()
        .find(|s| s.test == "mutex-readers")
        .unwrap();
    if !status.runnable {
        eprintln!("skipped: {:?}", status.missing);
        return;
    }
    let opts = smpsim_host::Options {
        seconds: 1.0,
        readers: 2,
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let r = smpsim_host::run("mutex-readers", &opts).expect("runs");
    assert!(
        t0.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(r.seconds, Some(1.0));
    assert_eq!(r.asked(), "1.0 s");
    assert!(r.rate_of("passes").unwrap() >= 2.0);
}
