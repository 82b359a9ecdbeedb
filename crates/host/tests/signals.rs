//! Every terminating signal runs a host test's cleanup, and a run killed
//! outright (SIGKILL) is restored by the next one, which says so. Each
//! test probes first and skips, saying why, where this host cannot make
//! the change (root, the cgroup cpu controller, tracefs, CPU hotplug).
//! Restoring is machine-wide (any dead run's record), so these tests run
//! one at a time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn helper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smpsim-host-test-helper"))
}

const SIGNALS: [(libc::c_int, &str); 4] = [
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGQUIT, "SIGQUIT"),
];

/// A helper process, stopped (SIGTERM, so it cleans up) if a test
/// panics before it is done with it.
struct Running(Option<Child>);

impl Running {
    fn id(&self) -> u32 {
        self.0.as_ref().expect("running").id()
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.id() as i32, sig) };
    }

    fn wait(mut self) -> std::process::Output {
        self.0.take().expect("running").wait_with_output().unwrap()
    }

    fn kill(mut self) {
        let mut c = self.0.take().expect("running");
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait_with_output();
        }
    }
}

fn spawn(args: &[&str]) -> Running {
    Running(Some(
        helper()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    ))
}

/// Waits until `ready()` (the child has made its change); panics after
/// 20 s (a bound on a hang, not a timing assertion).
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "never saw {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn record_of(pid: u32) -> PathBuf {
    smpsim_host::cleanup::state::state_dir().join(format!("{pid}.state"))
}

/// A PID that is gone: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().expect("true");
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// The cgroup folder where `membarrier --cgroup` builds its tree; None
/// (and why, on stderr) where it cannot.
fn cgroup_root() -> Option<PathBuf> {
    let (cg, root) = smpsim_host::probe::cgroup_cpu();
    let (mb, rseq) = (smpsim_host::probe::membarrier(), smpsim_host::probe::rseq());
    if !cg.ok || !mb.ok || !rseq.ok || smpsim_host::sys::online_cpus().len() < 2 {
        eprintln!("skipped: {} / {} / {}", cg.detail, mb.detail, rseq.detail);
        return None;
    }
    match root? {
        smpsim_host::probe::CgroupCpu::V1(d) | smpsim_host::probe::CgroupCpu::V2(d) => Some(d),
    }
}

/// Whether `mutex-readers` will mount tracefs itself here (root, tracefs
/// not mounted yet); why not, on stderr.
fn tracefs_to_mount() -> bool {
    match smpsim_host::probe::trace_file() {
        (_, Some((_, true))) => true,
        (c, _) => {
            eprintln!(
                "skipped: mutex-readers would not mount tracefs here: {}",
                c.detail
            );
            false
        }
    }
}

fn mounted_with_source(source: &str) -> bool {
    smpsim_host::cleanup::mounts::mounts()
        .iter()
        .any(|m| m.source == source)
}

fn membarrier_with_cgroups() -> Running {
    spawn(&["membarrier", "--seconds", "60", "--cgroup", "3x2"])
}

fn mutex_readers() -> Running {
    spawn(&["mutex-readers", "--seconds", "60"])
}

/// The next run, which restores before it runs: its stderr. A short
/// `ctxswitch` where it can run, else a test this host cannot run (the
/// restoring comes first either way).
fn next_run() -> String {
    let test = if smpsim_host::sys::online_cpus().len() >= 2 {
        "ctxswitch"
    } else {
        "no-such-test"
    };
    let out = helper()
        .args([test, "--seconds", "0.1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.success(), test == "ctxswitch", "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_terminating_signal_mid_run_removes_the_cgroup_tree() {
    let _one = serial();
    let Some(dir) = cgroup_root() else { return };
    for (sig, name) in SIGNALS {
        let child = membarrier_with_cgroups();
        let tree = dir.join(format!("smpsim_membarrier_{}", child.id()));
        wait_for("the cgroup tree", || tree.join("n2/d0/d1").exists());
        assert!(
            record_of(child.id()).exists(),
            "recorded before it was made"
        );
        child.signal(sig);
        let out = child.wait();
        assert_eq!(out.status.code(), Some(128 + sig), "{name}: {out:?}");
        assert!(!tree.exists(), "{name}: {} left behind", tree.display());
        assert!(!record_of(out_pid(&tree)).exists(), "{name}: record left");
    }
}

/// The PID at the end of `smpsim_membarrier_PID`.
fn out_pid(tree: &Path) -> u32 {
    let name = tree.file_name().unwrap().to_str().unwrap();
    name.rsplit('_').next().unwrap().parse().unwrap()
}

#[test]
fn every_terminating_signal_mid_run_unmounts_tracefs() {
    let _one = serial();
    if !tracefs_to_mount() {
        return;
    }
    for (sig, name) in SIGNALS {
        let child = mutex_readers();
        let source = format!("smpsim-mutex-readers-{}", child.id());
        wait_for("the tracefs mount", || mounted_with_source(&source));
        child.signal(sig);
        let pid = child.id();
        let out = child.wait();
        assert_eq!(out.status.code(), Some(128 + sig), "{name}: {out:?}");
        assert!(
            !mounted_with_source(&source),
            "{name}: tracefs left mounted"
        );
        assert!(!record_of(pid).exists(), "{name}: record left");
    }
}

/// A third signal ends the run at once, without its cleanup (for a test
/// stuck in the kernel), says so, and the next run restores what it left.
/// Three different signals queued on a stopped run arrive together.
#[test]
fn a_third_signal_exits_at_once_and_the_next_run_restores() {
    let _one = serial();
    let Some(dir) = cgroup_root() else { return };
    let child = membarrier_with_cgroups();
    let pid = child.id();
    let tree = dir.join(format!("smpsim_membarrier_{pid}"));
    wait_for("the cgroup tree", || tree.join("n2/d0/d1").exists());
    child.signal(libc::SIGSTOP);
    for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        child.signal(sig);
    }
    child.signal(libc::SIGCONT);
    let out = child.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(0);
    assert!([129, 130, 143].contains(&code), "{out:?}");
    assert!(
        stderr.contains(smpsim_host::cleanup::signals::IMPATIENT_MESSAGE.trim_end()),
        "{stderr}"
    );
    assert!(tree.exists() && record_of(pid).exists(), "no cleanup ran");
    let stderr = next_run();
    assert!(!tree.exists(), "{stderr}");
    assert!(
        stderr.contains(&format!("(left by smpsim pid {pid})")),
        "{stderr}"
    );
}

/// SIGKILL skips every guard; the record stays, and the next run (any
/// test) removes the cgroup tree or unmounts tracefs, and says so.
#[test]
fn after_sigkill_the_next_run_restores_and_says_what() {
    let _one = serial();
    if let Some(dir) = cgroup_root() {
        let child = membarrier_with_cgroups();
        let pid = child.id();
        let tree = dir.join(format!("smpsim_membarrier_{pid}"));
        wait_for("the cgroup tree", || tree.join("n2/d0/d1").exists());
        child.kill();
        assert!(tree.exists() && record_of(pid).exists());
        let stderr = next_run();
        assert!(!tree.exists(), "{stderr}");
        let line = format!(
            "restored: cgroup {} removed (left by smpsim pid {pid})",
            tree.display()
        );
        assert!(
            stderr.lines().any(|l| l == line),
            "missing `{line}` in:\n{stderr}"
        );
        assert!(!record_of(pid).exists());
    }
    if tracefs_to_mount() {
        let child = mutex_readers();
        let pid = child.id();
        let source = format!("smpsim-mutex-readers-{pid}");
        wait_for("the tracefs mount", || mounted_with_source(&source));
        child.kill();
        assert!(mounted_with_source(&source) && record_of(pid).exists());
        let stderr = next_run();
        assert!(!mounted_with_source(&source), "{stderr}");
        let line = format!(
            "restored: tracefs unmounted from /sys/kernel/tracing (mounted by smpsim pid {pid})"
        );
        assert!(
            stderr.lines().any(|l| l == line),
            "missing `{line}` in:\n{stderr}"
        );
        assert!(!record_of(pid).exists());
    }
}

/// Without a record (an older version's run, or a record lost), a cgroup
/// `smpsim_TEST_PID` and a tracefs mounted as `smpsim-TEST-PID` of a dead
/// PID are still found by name, removed, and reported as such.
#[test]
fn leftovers_without_a_record_are_found_by_name() {
    let _one = serial();
    if !smpsim_host::sys::is_root() || smpsim_host::sys::online_cpus().len() < 2 {
        eprintln!("skipped: needs root and 2 online CPUs");
        return;
    }
    let pid = dead_pid();
    let mut expected = Vec::new();
    let (_, root) = smpsim_host::probe::cgroup_cpu();
    let cgroup = root.map(|r| match r {
        smpsim_host::probe::CgroupCpu::V1(d) | smpsim_host::probe::CgroupCpu::V2(d) => {
            d.join(format!("smpsim_membarrier_{pid}"))
        }
    });
    match &cgroup {
        Some(cg) => {
            std::fs::create_dir_all(cg.join("n0")).unwrap();
            expected.push(format!(
                "restored: cgroup {} removed (left by smpsim pid {pid}; no record, found by its name)",
                cg.display()
            ));
        }
        None => eprintln!("skipped the cgroup part: no cgroup cpu controller"),
    }
    // A tracefs at a scratch point, not the system's.
    let at = std::env::temp_dir().join(format!("smpsim-leftover-tracefs-{}", std::process::id()));
    std::fs::create_dir_all(&at).unwrap();
    let source = format!("smpsim-mutex-readers-{pid}");
    let mounted = smpsim_host::cleanup::mounts::mount_tracefs(&at, &source);
    match &mounted {
        Ok(()) => expected.push(format!(
            "restored: tracefs unmounted from {} (mounted by smpsim pid {pid}; no record, found by its source name)",
            at.display()
        )),
        Err(e) => eprintln!("skipped the tracefs part: mount tracefs: {e}"),
    }
    let stderr = next_run();
    // Cleaned up whatever the assertions say.
    let still_mounted = mounted_with_source(&source);
    if still_mounted {
        let _ = smpsim_host::cleanup::mounts::umount(&at);
    }
    let _ = std::fs::remove_dir(&at);
    let cgroup_left = cgroup.as_ref().is_some_and(|c| c.exists());
    if cgroup_left {
        let _ = smpsim_host::cleanup::leftovers::remove_cgroup(cgroup.as_ref().unwrap());
    }
    assert!(!still_mounted && !cgroup_left, "{stderr}");
    for line in &expected {
        assert!(
            stderr.lines().any(|l| l == line),
            "missing `{line}` in:\n{stderr}"
        );
    }
}

/// CPU hotplug takes a CPU away from every other test running: only with
/// SMPSIM_DESTRUCTIVE_TESTS=1, and only where a CPU can go offline.
fn hotplug_cpu() -> Option<u32> {
    if std::env::var("SMPSIM_DESTRUCTIVE_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set SMPSIM_DESTRUCTIVE_TESTS=1 to take a CPU offline in a test");
        return None;
    }
    let (hp, cpu) = smpsim_host::probe::hotplug();
    if cpu.is_none() {
        eprintln!("skipped: {}", hp.detail);
    }
    cpu
}

fn cpu_online(cpu: u32) -> bool {
    std::fs::read_to_string(smpsim_host::cleanup::cpu_online_file(cpu))
        .is_ok_and(|s| s.trim() == "1")
}

/// The reproducer: `hotplug --reps 60`, a signal at 0.7 s.
#[test]
fn every_terminating_signal_mid_hotplug_brings_the_cpu_back() {
    let _one = serial();
    let Some(cpu) = hotplug_cpu() else { return };
    let online = smpsim_host::sys::online_cpus();
    for (sig, name) in SIGNALS {
        let child = spawn(&["hotplug", "--reps", "100000"]);
        let pid = child.id();
        wait_for("the record", || record_of(pid).exists());
        std::thread::sleep(Duration::from_millis(700));
        child.signal(sig);
        let out = child.wait();
        assert_eq!(out.status.code(), Some(128 + sig), "{name}: {out:?}");
        assert!(cpu_online(cpu), "{name}: cpu{cpu} left offline");
        assert_eq!(smpsim_host::sys::online_cpus(), online, "{name}");
        assert!(!record_of(pid).exists(), "{name}: record left");
    }
}

/// A hotplug run killed while its CPU is offline: the next run brings it
/// back and says so (it used to refuse to start: no CPU could go offline).
#[test]
fn after_sigkill_mid_hotplug_the_next_run_brings_the_cpu_back() {
    let _one = serial();
    let Some(cpu) = hotplug_cpu() else { return };
    // SIGKILL lands between an offline and an online about half the time:
    // try until it does.
    let mut caught = None;
    for _ in 0..40 {
        let child = spawn(&["hotplug", "--reps", "100000"]);
        let pid = child.id();
        wait_for("the record", || record_of(pid).exists());
        std::thread::sleep(Duration::from_millis(200));
        child.kill();
        if !cpu_online(cpu) {
            caught = Some(pid);
            break;
        }
    }
    let out = helper()
        .args(["hotplug", "--reps", "2"])
        .output()
        .expect("runs");
    assert!(cpu_online(cpu), "cpu{cpu} left offline");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let Some(pid) = caught else {
        eprintln!("the CPU was online at each SIGKILL: only the record was checked");
        return;
    };
    let line = format!("restored: cpu{cpu} online (left offline by smpsim pid {pid})");
    assert!(
        stderr.lines().any(|l| l == line),
        "missing `{line}` in:\n{stderr}"
    );
    assert!(!record_of(pid).exists());
}
