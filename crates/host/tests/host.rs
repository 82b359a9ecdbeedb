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
            cost.source.starts_with("measured") || cost.source.starts_with("assumed"),
            "{name}: {}",
            cost.source
        );
        assert!(cost.ns >= 0.0, "{name}");
    }
    assert!(m.costs.syscall.source.starts_with("measured"));
    assert!(m.costs.syscall.ns > 0.0);
}

/// A test stopped by SIGTERM mid-run leaves no cgroup behind.
#[test]
fn sigterm_mid_run_leaves_no_cgroup() {
    let (cg, root) = smpsim_host::probe::cgroup_cpu();
    let (mb, rseq) = (smpsim_host::probe::membarrier(), smpsim_host::probe::rseq());
    if !cg.ok || !mb.ok || !rseq.ok {
        eprintln!("skipped: {} / {} / {}", cg.detail, mb.detail, rseq.detail);
        return;
    }
    let dir = match root.unwrap() {
        smpsim_host::probe::CgroupCpu::V1(d) | smpsim_host::probe::CgroupCpu::V2(d) => d,
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
    assert!(status.success(), "{status:?}");
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
    assert!(status.success(), "{status:?}");
    assert_eq!(
        smpsim_host::sys::online_cpus(),
        online,
        "cpu{cpu} must be back online"
    );
}
