//! The measurements: each cost timed on this host with repetitions (a
//! line bounced between two CPUs, a syscall, an IPI round trip through a
//! targeted membarrier, pipe ping-pongs on one CPU and across two).

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
    pub(crate) fn from(name: &str, mut samples: Vec<f64>, method: &str) -> Self {
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
pub(super) fn line_transfer(a: u32, b: u32) -> Measurement {
    let (mut samples, _) = line_transfer_with(a, b, 7, false);
    if samples.is_empty() {
        // Every run gave up: a figure check_line() refuses, so the profile
        // keeps the preset's and says why.
        samples.push(f64::INFINITY);
    }
    Measurement::from(
        "line_transfer",
        samples,
        &format!(
            "compare-and-exchange ping-pong of one cache line between CPU {a} and CPU {b} (as the published core-to-core tables), one-way time"
        ),
    )
}

/// Spins between two looks at the clock while waiting for the other
/// side: reading the clock costs 20-80 ns (82 ns in a KVM guest measured
/// here), as much as a transfer, so a look per spin would time the clock.
const SPINS_PER_CLOCK: u32 = 4096;

/// Waits until `word` holds `from`, then swaps in `to` with one
/// compare-and-exchange: the line comes to this CPU for the exchange, as
/// in the published core-to-core tables (each of their cells is a CAS
/// round trip over two). False if it waited more than `give_up_ns` after
/// `t0`.
#[inline(always)]
fn hand_over(word: &AtomicU64, from: u64, to: u64, t0: u64, give_up_ns: u64) -> bool {
    let mut spins = 0u32;
    while word
        .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins == SPINS_PER_CLOCK {
            spins = 0;
            if sys::now_ns() - t0 > give_up_ns {
                return false;
            }
        }
    }
    true
}

/// [`line_transfer`]'s samples (ns per one-way transfer), `runs` runs of
/// 20,000 round trips, each side SCHED_FIFO during a run if `fifo` and
/// allowed (2 ms of sleep between runs give the CPUs back); also whether
/// every run was SCHED_FIFO on both sides. A side that cannot be pinned
/// gives up after 1 s rather than spin forever.
///
/// Each side takes the line with a compare-and-exchange that succeeds only
/// once the other side's has, as the published matrices do (their
/// `idle.csv` rows and the presets' `line_transfer`): a transfer of the
/// line to a core that then writes it. (Before, each side stored and then
/// spun on loads with a clock read per spin; in a KVM guest whose clock
/// read costs 82 ns that gave 182 ns for a 24 ns transfer.)
pub(super) fn line_transfer_with(a: u32, b: u32, runs: usize, fifo: bool) -> (Vec<f64>, bool) {
    const ROUNDS: u64 = 20_000;
    const GIVE_UP_NS: u64 = 1_000_000_000;
    let mut samples = Vec::new();
    let mut all_fifo = fifo;
    for _ in 0..runs {
        let word = Arc::new(AtomicU64::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let (w2, r2) = (word.clone(), ready.clone());
        let partner = std::thread::spawn(move || {
            let rt = sys::pin_to(b).is_ok() && fifo && sys::set_fifo(1).is_ok();
            // The clock starts once this side runs where it should.
            r2.store(true, Ordering::Release);
            let t0 = sys::now_ns();
            for i in 0..ROUNDS {
                if !hand_over(&w2, 2 * i + 1, 2 * i + 2, t0, GIVE_UP_NS) {
                    break;
                }
            }
            if rt {
                sys::set_normal();
            }
            rt
        });
        let pinned = sys::pin_to(a).is_ok();
        let waited = sys::now_ns();
        while !ready.load(Ordering::Acquire) && sys::now_ns() - waited < GIVE_UP_NS {
            std::thread::yield_now();
        }
        let rt = pinned && fifo && sys::set_fifo(1).is_ok();
        let t0 = sys::now_ns();
        let done = (0..ROUNDS).all(|i| hand_over(&word, 2 * i, 2 * i + 1, t0, GIVE_UP_NS));
        // The partner's last exchange closes the last round trip.
        let done = done && hand_over(&word, 2 * ROUNDS, 2 * ROUNDS, t0, GIVE_UP_NS);
        let dt = sys::now_ns() - t0;
        if rt {
            sys::set_normal();
        }
        let partner_rt = partner.join().unwrap_or(false);
        all_fifo &= rt && partner_rt;
        if done {
            samples.push(dt as f64 / (2 * ROUNDS + 1) as f64);
        }
        if fifo {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    (samples, all_fifo)
}

/// getppid(): the cheapest syscall that always enters the kernel.
pub fn syscall() -> Measurement {
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

/// The first way: targeted membarrier to CPU `b` while a plain sibling
/// thread of this mm spins there; the result includes the syscall. Blind
/// when the sibling is not what `b` runs at the moment of a call (another
/// task got the CPU): the kernel then sends no IPI and the call costs a
/// syscall. Returns the figure and, where `/proc/interrupts` says, the
/// IPIs `b` received per call.
pub(super) fn ipi_round_trip(a: u32, b: u32) -> Result<(Measurement, Option<f64>), String> {
    register_membarrier()?;
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
    let cal0 = sys::interrupts_on("CAL", b);
    let mut samples = Vec::new();
    let mut failed = None;
    'outer: for _ in 0..7 {
        let t0 = sys::now_ns();
        for _ in 0..5_000 {
            if let Err(e) = targeted_membarrier(b) {
                failed = Some(e);
                break 'outer;
            }
        }
        samples.push((sys::now_ns() - t0) as f64 / 5_000.0);
    }
    let cal1 = sys::interrupts_on("CAL", b);
    stop.store(true, Ordering::Relaxed);
    let _ = burner.join();
    if let Some(e) = failed {
        return Err(e);
    }
    let per_call = match (cal0, cal1) {
        (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / (samples.len() * 5_000) as f64),
        _ => None,
    };
    let m = Measurement::from("ipi_round_trip", samples, &format!("targeted MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ from CPU {a} to CPU {b} running a thread of the same mm (syscall included)"));
    Ok((m, per_call))
}

fn register_membarrier() -> Result<(), String> {
    sys::membarrier(sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0)
        .map(|_| ())
        .map_err(|e| format!("MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ failed ({e}): targeted membarrier needs Linux >= 5.10 with CONFIG_MEMBARRIER and CONFIG_RSEQ"))
}

/// Targeted membarrier: only the RSEQ command takes MEMBARRIER_CMD_FLAG_CPU
/// (kernel/sched/membarrier.c refuses the flag on the others).
fn targeted_membarrier(cpu: u32) -> Result<(), String> {
    sys::membarrier(
        sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
        sys::MEMBARRIER_CMD_FLAG_CPU,
        cpu as i32,
    )
    .map(|_| ())
    .map_err(|e| format!("targeted MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ failed: {e}"))
}

/// Calls per batch of the second way: ~20 us per real IPI on a VM keeps a
/// batch near 4 ms, short enough that a SCHED_FIFO spinner is harmless.
const VERIFIED_BATCH: u64 = 200;
/// A batch counts only if at least this share of its calls reached the
/// target as function-call IPIs.
pub(super) const MIN_IPIS_PER_CALL: f64 = 0.9;

/// The second way, for where the first is blind: the sibling on `b` is
/// SCHED_FIFO (where allowed) so no other task takes the CPU, says with
/// `sched_getcpu()` that it is on `b` and with a heartbeat that it runs,
/// and each batch of calls is kept only if `b` received an IPI for (nearly)
/// every call according to its `/proc/interrupts` CAL count.
pub fn ipi_round_trip_verified(a: u32, b: u32) -> Result<Measurement, String> {
    register_membarrier()?;
    let stop = Arc::new(AtomicBool::new(false));
    let beat = Arc::new(AtomicU64::new(0));
    let on_cpu = Arc::new(AtomicU64::new(u64::MAX));
    let (s2, b2, c2) = (stop.clone(), beat.clone(), on_cpu.clone());
    let sibling = std::thread::spawn(move || {
        if sys::pin_to(b).is_err() {
            return false;
        }
        let fifo = sys::set_fifo(1).is_ok();
        // Never spin as RT for long whatever happens to the caller.
        let deadline = sys::now_ns() + 2_000_000_000;
        while !s2.load(Ordering::Relaxed) && sys::now_ns() < deadline {
            c2.store(
                sys::current_cpu().map_or(u64::MAX, u64::from),
                Ordering::Relaxed,
            );
            b2.fetch_add(1, Ordering::Relaxed);
        }
        if fifo {
            sys::set_normal();
        }
        fifo
    });
    let _ = sys::pin_to(a);
    let result = verified_batches(b, &beat, &on_cpu);
    stop.store(true, Ordering::Relaxed);
    let fifo = sibling.join().unwrap_or(false);
    let (samples, kept, tried, checked_by) = result?;
    Ok(Measurement::from(
        "ipi_round_trip_verified",
        samples,
        &format!(
            "targeted MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ from CPU {a} to CPU {b} while a {} sibling thread of the same mm spun there (sched_getcpu() = {b}, heartbeat advancing); {kept} of {tried} batches of {VERIFIED_BATCH} kept, {checked_by} (syscall included)",
            if fifo { "SCHED_FIFO" } else { "SCHED_OTHER (SCHED_FIFO not allowed)" },
        ),
    ))
}

type Batches = (Vec<f64>, usize, usize, &'static str);

fn verified_batches(b: u32, beat: &AtomicU64, on_cpu: &AtomicU64) -> Result<Batches, String> {
    // Wait (bounded) until the sibling says it runs on `b`.
    let t_wait = sys::now_ns();
    while on_cpu.load(Ordering::Relaxed) != u64::from(b) {
        if sys::now_ns() - t_wait > 500_000_000 {
            return Err(format!(
                "the sibling thread pinned to CPU {b} never reported running there"
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let counted = sys::interrupts_on("CAL", b).is_some();
    let (mut samples, mut tried) = (Vec::new(), 0);
    let (mut not_running, mut too_few) = (0, 0);
    while samples.len() < 7 && tried < 20 {
        tried += 1;
        let (beat0, cal0) = (beat.load(Ordering::Relaxed), sys::interrupts_on("CAL", b));
        let t0 = sys::now_ns();
        for _ in 0..VERIFIED_BATCH {
            targeted_membarrier(b)?;
        }
        let dt = sys::now_ns() - t0;
        let (beat1, cal1) = (beat.load(Ordering::Relaxed), sys::interrupts_on("CAL", b));
        if beat1 == beat0 || on_cpu.load(Ordering::Relaxed) != u64::from(b) {
            not_running += 1;
            continue;
        }
        if let (Some(x), Some(y)) = (cal0, cal1) {
            if (y.saturating_sub(x) as f64) < MIN_IPIS_PER_CALL * VERIFIED_BATCH as f64 {
                too_few += 1;
                continue;
            }
        }
        samples.push(dt as f64 / VERIFIED_BATCH as f64);
    }
    if samples.len() < 5 {
        return Err(format!(
            "only {} of {tried} batches had the sibling running on CPU {b} and an IPI per call ({not_running} batches: sibling not running; {too_few}: fewer than {:.0}% of calls sent an IPI)",
            samples.len(),
            MIN_IPIS_PER_CALL * 100.0
        ));
    }
    let how = if counted {
        "each with >= 90% of its calls counted as CAL IPIs on the target in /proc/interrupts"
    } else {
        "not checked against IPI counts (no per-CPU CAL line in /proc/interrupts here)"
    };
    Ok((samples.clone(), samples.len(), tried, how))
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
pub(super) fn ping_pong_same_cpu(cpu: u32) -> Measurement {
    let method = format!("pipe ping-pong between two threads on CPU {cpu}");
    Measurement::from(
        "pipe_round_trip_same_cpu",
        pipe_ping_pong(cpu, cpu, 20_000),
        &method,
    )
}

/// Across CPUs: each side sleeps, so every wakeup brings an idle CPU back.
pub(super) fn ping_pong_cross(a: u32, b: u32) -> Measurement {
    let method = format!("pipe ping-pong between threads on CPU {a} and CPU {b}");
    Measurement::from(
        "pipe_round_trip_cross_cpu",
        pipe_ping_pong(a, b, 2_000),
        &method,
    )
}

/// How two CPUs are related, from sysfs topology.
pub(super) fn relation(a: u32, b: u32) -> &'static str {
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
