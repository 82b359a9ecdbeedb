//! Real stress tests and calibration on the running Linux kernel.
//!
//! # Lifecycle
//!
//! 1. [`list`] probes the host ([`probe`]) and says, for each test, whether
//!    it can run here and, if not, exactly why and what to do.
//! 2. [`run`] first restores what earlier runs that were killed left on
//!    the host (saying so on stderr), then runs one test for a bounded
//!    time. Everything a test changes on the host is recorded and
//!    registered on a [`cleanup::Guard`] before it is made, and undone on
//!    every exit path; SIGHUP, SIGINT, SIGTERM, SIGQUIT (and SIGPIPE during
//!    the test) end a test early instead of killing it.
//! 3. [`calibrate::calibrate`] measures the host's costs into a machine
//!    profile the simulator reads (`machine.profile = "file.toml"`).

pub mod calibrate;
pub mod cleanup;
pub mod probe;
pub mod report;
pub mod sys;
pub mod tests;

pub use report::HostResult;

/// A host test and whether it can run here.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TestStatus {
    pub test: &'static str,
    pub description: &'static str,
    pub runnable: bool,
    /// Why not, and what to do, per missing capability.
    pub missing: Vec<probe::Capability>,
    /// Capabilities it would like but can do without.
    pub optional_missing: Vec<probe::Capability>,
}

pub const TESTS: &[(&str, &str)] = &[
    (
        "membarrier",
        "targeted RSEQ membarrier hammers vs burners of the same mm, RT sentinel",
    ),
    (
        "ipi-latency",
        "TLB-shootdown storm vs a SCHED_FIFO wakeup-latency thread",
    ),
    (
        "mutex-readers",
        "concurrent readers of a tracefs file that holds a kernel mutex per chunk",
    ),
    (
        "hotplug",
        "offline and online a CPU, timed (needs --allow-hotplug)",
    ),
    (
        "ctxswitch",
        "pipe ping-pong across CPUs through idle and on one CPU",
    ),
];

/// Probes the host for every test.
pub fn list() -> Vec<TestStatus> {
    let cpus = probe::cpus();
    let fifo = probe::sched_fifo();
    let (cg, _) = probe::cgroup_cpu();
    let (trace, _) = probe::trace_file();
    let (hp, _) = probe::hotplug();
    let mb = probe::membarrier();
    let rseq = probe::rseq();
    TESTS
        .iter()
        .map(|&(test, description)| {
            let (need, want): (Vec<&probe::Capability>, Vec<&probe::Capability>) = match test {
                "membarrier" => (vec![&cpus, &mb, &rseq], vec![&fifo, &cg]),
                "ipi-latency" => (vec![&cpus, &fifo], vec![]),
                "mutex-readers" => (vec![&trace], vec![]),
                "hotplug" => (vec![&hp], vec![]),
                _ => (vec![&cpus], vec![]),
            };
            let missing: Vec<_> = need.into_iter().filter(|c| !c.ok).cloned().collect();
            TestStatus {
                test,
                description,
                runnable: missing.is_empty(),
                missing,
                optional_missing: want.into_iter().filter(|c| !c.ok).cloned().collect(),
            }
        })
        .collect()
}

/// Options common to the tests.
#[derive(Clone, Debug)]
pub struct Options {
    pub seconds: f64,
    pub allow_hotplug: bool,
    pub readers: u32,
    pub cgroup: (u32, u32),
    pub window_s: f64,
    pub reps: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: 3.0,
            allow_hotplug: false,
            readers: 6,
            cgroup: (0, 0),
            window_s: 1.0,
            reps: 5,
        }
    }
}

/// Runs one test; an error says what is missing or what failed.
pub fn run(test: &str, opts: &Options) -> Result<HostResult, String> {
    cleanup::install_signal_handlers();
    let _sigpipe = cleanup::catch_sigpipe();
    cleanup::restore_and_report();
    let status = list().into_iter().find(|s| s.test == test).ok_or_else(|| {
        let names: Vec<_> = TESTS.iter().map(|t| t.0).collect();
        format!("unknown host test `{test}`; known: {}", names.join(", "))
    })?;
    if !status.runnable {
        let why: Vec<String> = status
            .missing
            .iter()
            .map(|c| format!("{}: {} (to run it: {})", c.name, c.detail, c.fix))
            .collect();
        return Err(format!("{test} cannot run here: {}", why.join("; ")));
    }
    let fifo = probe::sched_fifo().ok;
    let (start, (user0, sys0)) = (sys::now_ns(), sys::process_times());
    let mut r = run_test(test, opts, fifo)?;
    let (user1, sys1) = sys::process_times();
    r.usage = Some(report::ThreadTimes {
        name: test.into(),
        real_ns: sys::now_ns() - start,
        user_ns: user1 - user0,
        sys_ns: sys1 - sys0,
    });
    if let Some(sig) = cleanup::stop_signal() {
        r.stopped_early = true;
        r.notes.push(format!(
            "stopped early by {}: the figures cover only the part that ran",
            cleanup::signal_name(sig)
        ));
    }
    Ok(r)
}

fn run_test(test: &str, opts: &Options, fifo: bool) -> Result<HostResult, String> {
    match test {
        "ctxswitch" => tests::ctxswitch::run(opts.seconds),
        "membarrier" => {
            let (_, cg) = probe::cgroup_cpu();
            let o = tests::membarrier::Options {
                seconds: opts.seconds,
                hammers_per_cpu: 1,
                burners_per_cpu: 1,
                cgroup: opts.cgroup,
            };
            tests::membarrier::run(&o, cg, fifo)
        }
        "ipi-latency" => tests::ipi_latency::run(opts.seconds, opts.window_s, fifo),
        "mutex-readers" => {
            let (_, file) = probe::trace_file();
            let (file, mount) = file.ok_or("no readable tracefs file")?;
            tests::mutex_readers::run(opts.readers, opts.seconds, file, mount)
        }
        "hotplug" => {
            if !opts.allow_hotplug {
                return Err("hotplug takes CPUs offline: run it with --allow-hotplug".into());
            }
            let (_, cpu) = probe::hotplug();
            tests::hotplug::run(cpu.ok_or("no CPU can be taken offline")?, opts.reps)
        }
        _ => unreachable!("checked above"),
    }
}
