//! `smpsim calibrate`: measure this host's costs, with repetitions, into a
//! machine profile (the machine TOML format, every number with its median,
//! spread and method as its source).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::sys;

/// One measured cost.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measurement {
    pub name: String,
    pub median_ns: f64,
    pub p10_ns: f64,
    pub p90_ns: f64,
    pub reps: usize,
    pub method: String,
}

impl Measurement {
    fn from(name: &str, mut samples: Vec<f64>, method: &str) -> Self {
        samples.sort_by(|a, b| a.total_cmp(b));
        let q = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
        Measurement {
            name: name.into(),
            median_ns: q(0.5),
            p10_ns: q(0.1),
            p90_ns: q(0.9),
            reps: samples.len(),
            method: method.into(),
        }
    }

    pub fn source(&self) -> String {
        format!(
            "measured by smpsim calibrate: median {:.0} ns (p10 {:.0}, p90 {:.0}) over {} repetitions; {}",
            self.median_ns, self.p10_ns, self.p90_ns, self.reps, self.method
        )
    }
}

/// Cache-line ping-pong between two CPUs: ns per transfer.
fn line_transfer(a: u32, b: u32) -> Measurement {
    const ROUNDS: u64 = 20_000;
    let mut samples = Vec::new();
    for _ in 0..7 {
        let word = Arc::new(AtomicU64::new(0));
        let w2 = word.clone();
        let partner = std::thread::spawn(move || {
            let _ = sys::pin_to(b);
            for i in 0..ROUNDS {
                while w2.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                w2.store(2 * i + 2, Ordering::Release);
            }
        });
        let _ = sys::pin_to(a);
        let t0 = sys::now_ns();
        for i in 0..ROUNDS {
            word.store(2 * i + 1, Ordering::Release);
            while word.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        let dt = sys::now_ns() - t0;
        let _ = partner.join();
        samples.push(dt as f64 / (2 * ROUNDS) as f64);
    }
    Measurement::from(
        "line_transfer",
        samples,
        &format!(
            "store/load ping-pong of one cache line between CPU {a} and CPU {b}, one-way time"
        ),
    )
}

fn syscall() -> Measurement {
    let samples = (0..7)
        .map(|_| {
            let t0 = sys::now_ns();
            for _ in 0..200_000 {
                // SAFETY: no arguments.
                unsafe { libc::syscall(libc::SYS_getppid) };
            }
            (sys::now_ns() - t0) as f64 / 200_000.0
        })
        .collect();
    Measurement::from("syscall", samples, "getppid() round trip")
}

/// Targeted membarrier to a CPU running a thread of this mm: a real IPI
/// round trip; the result includes the syscall.
fn ipi_round_trip(a: u32, b: u32) -> Option<Measurement> {
    sys::membarrier(sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0).ok()?;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let burner = std::thread::spawn(move || {
        let _ = sys::pin_to(b);
        while !s2.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    let _ = sys::pin_to(a);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut samples = Vec::new();
    for _ in 0..7 {
        let t0 = sys::now_ns();
        for _ in 0..5_000 {
            sys::membarrier(
                sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
                sys::MEMBARRIER_CMD_FLAG_CPU,
                b as i32,
            )
            .ok()?;
        }
        samples.push((sys::now_ns() - t0) as f64 / 5_000.0);
    }
    stop.store(true, Ordering::Relaxed);
    let _ = burner.join();
    Some(Measurement::from("ipi_round_trip", samples, &format!("targeted MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ from CPU {a} to CPU {b} running a thread of the same mm (syscall included)")))
}

/// Pipe ping-pong between a thread on CPU `a` and one on CPU `b` (the
/// same CPU or two): ns per round trip, median of 5 runs of `n`.
fn pipe_ping_pong(a: u32, b: u32, n: u64) -> Vec<f64> {
    (0..5)
        .map(|_| {
            let mut p1 = [0; 2];
            let mut p2 = [0; 2];
            // SAFETY: valid arrays.
            unsafe {
                libc::pipe(p1.as_mut_ptr());
                libc::pipe(p2.as_mut_ptr());
            }
            let partner = std::thread::spawn(move || {
                let _ = sys::pin_to(b);
                let mut c = [0u8; 1];
                for _ in 0..n {
                    // SAFETY: fds valid until joined.
                    unsafe {
                        libc::read(p1[0], c.as_mut_ptr().cast(), 1);
                        libc::write(p2[1], c.as_ptr().cast(), 1);
                    }
                }
            });
            let _ = sys::pin_to(a);
            let out = [0u8; 1];
            let mut c = [0u8; 1];
            let t0 = sys::now_ns();
            for _ in 0..n {
                // SAFETY: as above.
                unsafe {
                    libc::write(p1[1], out.as_ptr().cast(), 1);
                    libc::read(p2[0], c.as_mut_ptr().cast(), 1);
                }
            }
            let dt = sys::now_ns() - t0;
            let _ = partner.join();
            for fd in p1.iter().chain(p2.iter()) {
                // SAFETY: our fds.
                unsafe { libc::close(*fd) };
            }
            dt as f64 / n as f64
        })
        .collect()
}

/// Same CPU: two switches and four syscalls per round trip.
fn ping_pong_same_cpu(cpu: u32) -> Measurement {
    let method = format!("pipe ping-pong between two threads on CPU {cpu}");
    Measurement::from(
        "pipe_round_trip_same_cpu",
        pipe_ping_pong(cpu, cpu, 20_000),
        &method,
    )
}

/// Across CPUs: each side sleeps, so every wakeup brings an idle CPU back.
fn ping_pong_cross(a: u32, b: u32) -> Measurement {
    let method = format!("pipe ping-pong between threads on CPU {a} and CPU {b}");
    Measurement::from(
        "pipe_round_trip_cross_cpu",
        pipe_ping_pong(a, b, 2_000),
        &method,
    )
}

/// The result: the measurements and the profile text.
pub struct Calibration {
    pub measurements: Vec<Measurement>,
    pub profile: String,
}

/// How two CPUs are related, from sysfs topology.
fn relation(a: u32, b: u32) -> &'static str {
    let read = |cpu: u32, f: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/{f}")).unwrap_or_default()
    };
    if sys::parse_cpu_list(&read(a, "topology/thread_siblings_list")).contains(&b) {
        "smt_sibling"
    } else if read(a, "topology/physical_package_id") != read(b, "topology/physical_package_id") {
        "cross_socket"
    } else if sys::parse_cpu_list(&read(a, "cache/index3/shared_cpu_list")).contains(&b) {
        "same_llc"
    } else {
        "same_node"
    }
}

pub fn calibrate(name: &str) -> Result<Calibration, String> {
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err("calibrate needs at least 2 online CPUs".into());
    }
    let (a, b) = (cpus[0], cpus[1]);
    let line = line_transfer(a, b);
    let sc = syscall();
    let ipi = ipi_round_trip(a, b);
    let pp = ping_pong_same_cpu(a);
    let cross = ping_pong_cross(a, b);
    let rel = relation(a, b);
    let mut ms = vec![line.clone(), sc.clone(), pp.clone(), cross.clone()];
    // The IPI round trip beyond the syscall, split between send, delivery
    // and handler (assumed split: 10% / 60% / 30%).
    let (send, lat, irq, ipi_src) = match &ipi {
        Some(m) => {
            ms.push(m.clone());
            let beyond = (m.median_ns - sc.median_ns).max(100.0);
            let src = format!("{}; share of the round trip beyond the syscall, split assumed 10% send / 60% delivery / 30% handler", m.source());
            (beyond * 0.1, beyond * 0.6, beyond * 0.3, src)
        }
        None => (
            150.0,
            1000.0,
            500.0,
            "assumed: targeted membarrier not available to measure the IPI round trip".into(),
        ),
    };
    // A same-CPU round trip is two switches and four syscalls.
    let switch = ((pp.median_ns - 4.0 * sc.median_ns) / 2.0).max(100.0);
    // Across CPUs each half round trip adds a wakeup IPI to an idle CPU and
    // the idle exit: what is left beyond the IPI delivery is the idle exit.
    let idle_exit = ((cross.median_ns - pp.median_ns) / 2.0 - lat).max(0.0);
    let topo_cores = cpus.len();
    let cost = |ns: f64, src: &str| format!("ns = {ns:.0}\nsource = {src:?}\n");
    let mut t = String::new();
    t.push_str(&format!("# Machine profile written by `smpsim calibrate` on this host.\nname = {name:?}\ndescription = \"calibrated host, {topo_cores} CPUs\"\n\n"));
    t.push_str(&format!("[topology]\nsockets = 1\nnuma_nodes_per_socket = 1\nllcs_per_node = 1\ncores_per_llc = {topo_cores}\nthreads_per_core = 1\n\n"));
    let not_measured = |what: &str| {
        format!("assumed: only CPUs {a} and {b} ({rel}) were measured; {what} taken from them")
    };
    for (field, value, src) in [
        ("local", 1.0, "assumed: L1 hit".to_string()),
        (
            "smt_sibling",
            line.median_ns,
            if rel == "smt_sibling" {
                line.source()
            } else {
                not_measured("SMT siblings")
            },
        ),
        (
            "same_llc",
            line.median_ns,
            if rel == "same_llc" {
                line.source()
            } else {
                not_measured("same LLC")
            },
        ),
        (
            "same_node",
            line.median_ns,
            if rel == "same_node" {
                line.source()
            } else {
                not_measured("same node")
            },
        ),
        ("same_socket", line.median_ns, not_measured("same socket")),
        (
            "cross_socket",
            line.median_ns,
            if rel == "cross_socket" {
                line.source()
            } else {
                not_measured("cross socket")
            },
        ),
    ] {
        t.push_str(&format!(
            "[costs.line_transfer.{field}]\n{}",
            cost(value, &src)
        ));
    }
    for (field, value, src) in [
        ("ipi_send", send, ipi_src.clone()),
        ("ipi_latency", lat, ipi_src.clone()),
        ("irq_entry_exit", irq, ipi_src.clone()),
        ("syscall", sc.median_ns, sc.source()),
        (
            "context_switch",
            switch,
            format!("{}; (round trip - 4 syscalls) / 2", pp.source()),
        ),
        (
            "wakeup",
            300.0,
            "assumed: try_to_wake_up() on a remote runqueue".to_string(),
        ),
        (
            "tlb_flush_page",
            100.0,
            "assumed: single-page flush ~100 ns (arch/x86/mm/tlb.c comment)".to_string(),
        ),
        (
            "tlb_flush_full",
            1000.0,
            "assumed: full flush plus refill".to_string(),
        ),
        (
            "idle_exit",
            idle_exit,
            format!(
                "{}; (cross-CPU - same-CPU round trip) / 2 - ipi_latency",
                cross.source()
            ),
        ),
    ] {
        t.push_str(&format!("[costs.{field}]\n{}", cost(value, &src)));
    }
    Ok(Calibration {
        measurements: ms,
        profile: t,
    })
}
