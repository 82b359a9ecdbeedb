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
fn ipi_round_trip(a: u32, b: u32) -> Result<(Measurement, Option<f64>), String> {
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
const MIN_IPIS_PER_CALL: f64 = 0.9;

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

/// What was measured, before any cost is derived from it: fabricated in
/// the tests of the sanity checks.
#[derive(Clone, Debug)]
pub struct Raw {
    pub cpus: (u32, u32),
    /// How the two measured CPUs are related (`same_llc`, ...).
    pub relation: &'static str,
    pub line: Measurement,
    pub syscall: Measurement,
    /// The IPI round trip (syscall included), or why it has no figure.
    pub ipi: Result<Measurement, String>,
    pub same_cpu: Measurement,
    pub cross_cpu: Measurement,
}

/// One cost of the profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// The key under `[costs]` (`line_transfer.same_llc`, `syscall`, ...).
    pub field: String,
    pub ns: f64,
    pub source: String,
    /// Why this cost is not from a measurement of this host (its value is
    /// then the fallback preset's, or 0 where presets leave it out).
    pub unmeasured: Option<String>,
}

/// The preset whose values stand in for costs that could not be measured.
pub fn fallback_preset() -> &'static str {
    if cfg!(target_arch = "powerpc64") {
        "power8-192"
    } else {
        "generic-x86"
    }
}

// Physical sanity. Each check names the law a figure broke; a figure that
// breaks one says the measurement did not see what it meant to (no IPI
// was sent, a thread was preempted), so it is refused, never clamped.

/// A cache-line transfer between two CPUs is slower than an L1 hit (~1 ns)
/// and far below a scheduler tick: beyond 5 us a side was preempted.
pub fn check_line(line: f64) -> Result<(), String> {
    if !(2.0..=5_000.0).contains(&line) {
        return Err(format!("a cache-line transfer of {line:.0} ns is outside 2..5000 ns (faster than an L1 hit, or a side was preempted)"));
    }
    Ok(())
}

/// Syscall entry and exit take tens of cycles at the very least.
pub fn check_syscall(sc: f64) -> Result<(), String> {
    if !(10.0..=50_000.0).contains(&sc) {
        return Err(format!(
            "a syscall round trip of {sc:.0} ns is outside 10..50000 ns"
        ));
    }
    Ok(())
}

/// An IPI round trip from a syscall includes the syscall, the request's
/// and the completion's cache lines crossing to the target and back, and
/// an interrupt on the target: it cannot cost a syscall or less.
pub fn check_ipi(ipi: f64, sc: f64, line: f64) -> Result<(), String> {
    let floor = sc + 2.0 * line;
    if ipi < floor {
        return Err(format!(
            "an IPI round trip of {ipi:.0} ns is below the syscall that sends it ({sc:.0} ns) plus two cache-line transfers ({line:.0} ns each): no IPI was sent"
        ));
    }
    Ok(())
}

/// A same-CPU pipe round trip is four syscalls and two context switches;
/// a context switch does a syscall's entry and exit and more.
pub fn check_switch(same_cpu: f64, sc: f64) -> Result<f64, String> {
    let switch = (same_cpu - 4.0 * sc) / 2.0;
    if switch <= sc {
        return Err(format!(
            "a context switch of {switch:.0} ns ((same-CPU round trip {same_cpu:.0} - 4 x syscall {sc:.0}) / 2) is not dearer than a syscall ({sc:.0} ns)"
        ));
    }
    Ok(switch)
}

/// A round trip across CPUs does what one on a CPU does plus a wakeup of
/// the other CPU each way; it cannot be cheaper.
pub fn check_cross(cross: f64, same: f64) -> Result<(), String> {
    if cross < same {
        return Err(format!(
            "the cross-CPU pipe round trip ({cross:.0} ns) is cheaper than the same-CPU one ({same:.0} ns)"
        ));
    }
    Ok(())
}

/// The profile's costs from what was measured, every figure checked; a
/// figure that fails a check is not used and the preset's value stands,
/// marked unmeasured with the reason.
pub fn derive(raw: &Raw, preset: &smpsim_machine::Machine) -> Vec<Derived> {
    let pname = &preset.name;
    let c = &preset.costs;
    let measured = |field: &str, ns: f64, source: String| Derived {
        field: field.into(),
        ns,
        source,
        unmeasured: None,
    };
    let unmeasured = |field: &str, fallback: &smpsim_machine::Cost, why: &str| Derived {
        field: field.into(),
        ns: fallback.ns,
        source: format!(
            "unmeasured: {why}; value of preset {pname}: {}",
            fallback.source
        ),
        unmeasured: Some(why.to_string()),
    };
    let (a, b) = raw.cpus;
    let rel = raw.relation;
    let mut out = vec![measured(
        "line_transfer.local",
        1.0,
        "assumed: L1 hit".into(),
    )];
    let lt = &c.line_transfer;
    let line_ok = check_line(raw.line.median_ns);
    for (field, fallback) in [
        ("smt_sibling", &lt.smt_sibling),
        ("same_llc", &lt.same_llc),
        ("same_node", &lt.same_node),
        ("same_socket", &lt.same_socket),
        ("cross_socket", &lt.cross_socket),
    ] {
        let key = format!("line_transfer.{field}");
        out.push(match &line_ok {
            Err(why) => unmeasured(&key, fallback, why),
            Ok(()) if field == rel => measured(&key, raw.line.median_ns, raw.line.source()),
            Ok(()) => measured(
                &key,
                raw.line.median_ns,
                format!(
                    "assumed: only CPUs {a} and {b} ({rel}) were measured; {field} taken from them"
                ),
            ),
        });
    }
    let sc = raw.syscall.median_ns;
    let sc_ok = check_syscall(sc);
    out.push(match &sc_ok {
        Ok(()) => measured("syscall", sc, raw.syscall.source()),
        Err(why) => unmeasured("syscall", &c.syscall, why),
    });
    // The IPI round trip beyond the syscall, split between send, delivery
    // and handler (assumed split: 10% / 60% / 30%).
    let ipi = raw.ipi.as_ref().map_err(|e| e.clone()).and_then(|m| {
        sc_ok
            .clone()
            .map_err(|e| format!("the syscall it includes was not measured ({e})"))?;
        let line = if line_ok.is_ok() {
            raw.line.median_ns
        } else {
            0.0
        };
        check_ipi(m.median_ns, sc, line)?;
        Ok(m)
    });
    let mut latency = None;
    for (field, share, fallback) in [
        ("ipi_send", 0.1, &c.ipi_send),
        ("ipi_latency", 0.6, &c.ipi_latency),
        ("irq_entry_exit", 0.3, &c.irq_entry_exit),
    ] {
        out.push(match &ipi {
            Ok(m) => {
                let ns = (m.median_ns - sc) * share;
                if field == "ipi_latency" {
                    latency = Some(ns);
                }
                measured(field, ns, format!("{}; {:.0}% of the round trip beyond the syscall (split assumed 10% send / 60% delivery / 30% handler)", m.source(), share * 100.0))
            }
            Err(why) => unmeasured(field, fallback, &format!("IPI round trip: {why}")),
        });
    }
    out.push(
        match sc_ok
            .clone()
            .and_then(|()| check_switch(raw.same_cpu.median_ns, sc))
        {
            Ok(switch) => measured(
                "context_switch",
                switch,
                format!("{}; (round trip - 4 syscalls) / 2", raw.same_cpu.source()),
            ),
            Err(why) => unmeasured("context_switch", &c.context_switch, &why),
        },
    );
    for (field, fallback) in [
        ("wakeup", &c.wakeup),
        ("tlb_flush_page", &c.tlb_flush_page),
        ("tlb_flush_full", &c.tlb_flush_full),
    ] {
        out.push(Derived {
            field: field.into(),
            ns: fallback.ns,
            source: format!(
                "assumed: not measured by calibrate; value of preset {pname}: {}",
                fallback.source
            ),
            unmeasured: None,
        });
    }
    // Across CPUs each half round trip adds a wakeup IPI to an idle CPU and
    // the idle exit: what is left beyond the IPI delivery is the idle exit.
    let (same, cross) = (raw.same_cpu.median_ns, raw.cross_cpu.median_ns);
    let no_idle_exit = smpsim_machine::Cost::assumed(0.0, "presets leave the idle exit out");
    let fallback_idle = c.idle_exit.as_ref().unwrap_or(&no_idle_exit);
    out.push(match check_cross(cross, same) {
        Err(why) => unmeasured("idle_exit", fallback_idle, &why),
        Ok(()) => {
            let (lat, lat_src) = match latency {
                Some(l) => (l, "ipi_latency".to_string()),
                None => (
                    c.ipi_latency.ns,
                    format!("the ipi_latency of preset {pname} (the IPI was not measured)"),
                ),
            };
            let idle = (cross - same) / 2.0 - lat;
            if idle < 0.0 {
                unmeasured(
                    "idle_exit",
                    fallback_idle,
                    &format!("(cross-CPU - same-CPU round trip) / 2 = {:.0} ns is less than {lat_src} ({lat:.0} ns)", (cross - same) / 2.0),
                )
            } else {
                measured(
                    "idle_exit",
                    idle,
                    format!(
                        "{}; (cross-CPU - same-CPU round trip) / 2 - {lat_src}",
                        raw.cross_cpu.source()
                    ),
                )
            }
        }
    });
    out
}

/// The profile text: every cost with its source; an unmeasured one also
/// with a comment line saying so.
pub fn render(name: &str, cpus: usize, costs: &[Derived]) -> String {
    let mut t = String::new();
    t.push_str(&format!("# Machine profile written by `smpsim calibrate` on this host.\nname = {name:?}\ndescription = \"calibrated host, {cpus} CPUs\"\n\n"));
    t.push_str(&format!("[topology]\nsockets = 1\nnuma_nodes_per_socket = 1\nllcs_per_node = 1\ncores_per_llc = {cpus}\nthreads_per_core = 1\n\n"));
    for d in costs {
        if let Some(why) = &d.unmeasured {
            t.push_str(&format!("# UNMEASURED: {}\n", why.replace('\n', " ")));
        }
        t.push_str(&format!(
            "[costs.{}]\nns = {:.0}\nsource = {:?}\n",
            d.field, d.ns, d.source
        ));
    }
    t
}

/// The result: the measurements, the costs and the profile text.
pub struct Calibration {
    pub measurements: Vec<Measurement>,
    pub costs: Vec<Derived>,
    /// What the calibration refused or could not do, and why, in order.
    pub notes: Vec<String>,
    pub profile: String,
}

impl Calibration {
    /// The costs that keep a preset's value, with the reason.
    pub fn unmeasured(&self) -> impl Iterator<Item = (&str, &str)> {
        self.costs
            .iter()
            .filter_map(|d| Some((d.field.as_str(), d.unmeasured.as_deref()?)))
    }
}

/// Measures the IPI round trip the first way and, where that one was
/// blind (no IPI per call, or a figure no IPI could have), the second.
fn measure_ipi(
    a: u32,
    b: u32,
    sc: f64,
    line: f64,
    ms: &mut Vec<Measurement>,
    notes: &mut Vec<String>,
) -> Result<Measurement, String> {
    let first = match ipi_round_trip(a, b) {
        Err(e) => return Err(e),
        Ok((m, per_call)) => {
            ms.push(m.clone());
            let refused = match per_call {
                Some(p) if p < MIN_IPIS_PER_CALL => Err(format!(
                    "CPU {b} received {p:.2} function-call IPIs per call (/proc/interrupts CAL): the task it ran was mostly not of this mm"
                )),
                _ => check_ipi(m.median_ns, sc, line),
            };
            match refused {
                Ok(()) => return Ok(m),
                Err(why) => why,
            }
        }
    };
    notes.push(format!(
        "ipi_round_trip refused ({first}); measuring it again with a verified sibling on CPU {b}"
    ));
    let second = ipi_round_trip_verified(a, b).and_then(|m| {
        ms.push(m.clone());
        check_ipi(m.median_ns, sc, line)?;
        Ok(m)
    });
    second.map_err(|e| format!("first way: {first}; second way: {e}"))
}

pub fn calibrate(name: &str) -> Result<Calibration, String> {
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err("calibrate needs at least 2 online CPUs (an IPI and a cache-line transfer need two); bring one online or run on a bigger machine".into());
    }
    let preset = smpsim_machine::preset(fallback_preset())
        .expect("the fallback preset exists")
        .map_err(|e| format!("{e:?}"))?;
    // Put the caller's CPUs back afterwards: the measurements pin it.
    let allowed = sys::allowed_cpus();
    let (a, b) = (cpus[0], cpus[1]);
    let line = line_transfer(a, b);
    let sc = syscall();
    let mut ms = vec![line.clone(), sc.clone()];
    let mut notes = Vec::new();
    let ipi = measure_ipi(a, b, sc.median_ns, line.median_ns, &mut ms, &mut notes);
    let pp = ping_pong_same_cpu(a);
    let cross = ping_pong_cross(a, b);
    let _ = sys::set_allowed(&allowed);
    ms.extend([pp.clone(), cross.clone()]);
    let raw = Raw {
        cpus: (a, b),
        relation: relation(a, b),
        line,
        syscall: sc,
        ipi,
        same_cpu: pp,
        cross_cpu: cross,
    };
    let costs = derive(&raw, &preset);
    Ok(Calibration {
        measurements: ms,
        profile: render(name, cpus.len(), &costs),
        costs,
        notes,
    })
}

#[cfg(test)]
mod sanity_tests {
    use super::*;

    fn m(name: &str, ns: f64) -> Measurement {
        Measurement::from(name, vec![ns; 5], "fabricated")
    }

    /// The figures of the 2-vCPU VM where the first way was blind: the IPI
    /// round trip at the syscall's cost.
    fn blind() -> Raw {
        Raw {
            cpus: (0, 1),
            relation: "same_llc",
            line: m("line_transfer", 98.0),
            syscall: m("syscall", 129.0),
            ipi: Ok(m("ipi_round_trip", 128.0)),
            same_cpu: m("pipe_round_trip_same_cpu", 1_800.0),
            cross_cpu: m("pipe_round_trip_cross_cpu", 56_000.0),
        }
    }

    fn preset() -> smpsim_machine::Machine {
        smpsim_machine::preset(fallback_preset()).unwrap().unwrap()
    }

    fn cost<'a>(d: &'a [Derived], f: &str) -> &'a Derived {
        d.iter().find(|c| c.field == f).unwrap()
    }

    #[test]
    fn an_ipi_at_syscall_cost_is_refused_and_the_preset_kept() {
        let p = preset();
        let d = derive(&blind(), &p);
        for (f, want) in [
            ("ipi_send", &p.costs.ipi_send),
            ("ipi_latency", &p.costs.ipi_latency),
            ("irq_entry_exit", &p.costs.irq_entry_exit),
        ] {
            let c = cost(&d, f);
            assert_eq!(c.ns, want.ns, "{f} keeps the preset's value, not a clamp");
            assert!(c.source.starts_with("unmeasured: "), "{}", c.source);
            assert!(c.source.contains(&want.source), "{}", c.source);
            assert!(c.unmeasured.as_ref().unwrap().contains("no IPI was sent"));
        }
        // The rest still measured; idle_exit says whose ipi_latency it used.
        assert!(cost(&d, "syscall").unmeasured.is_none());
        let idle = cost(&d, "idle_exit");
        assert!(idle.unmeasured.is_none());
        assert!(idle.source.contains("the ipi_latency of preset"));
        assert_eq!(idle.ns, (56_000.0 - 1_800.0) / 2.0 - p.costs.ipi_latency.ns);
        // The written profile says it and still parses as a machine.
        let text = render("t", 2, &d);
        assert!(text.contains("# UNMEASURED: IPI round trip: an IPI round trip of 128 ns"));
        let back: smpsim_machine::Machine = toml::from_str(&text).unwrap();
        assert_eq!(back.costs.ipi_latency.ns, p.costs.ipi_latency.ns);
    }

    #[test]
    fn a_real_ipi_is_split_beyond_the_syscall() {
        let mut raw = blind();
        raw.ipi = Ok(m("ipi_round_trip_verified", 20_129.0));
        let d = derive(&raw, &preset());
        assert_eq!(cost(&d, "ipi_latency").ns, 12_000.0);
        assert_eq!(cost(&d, "ipi_send").ns, 2_000.0);
        assert!(d.iter().all(|c| c.unmeasured.is_none()), "{d:?}");
        assert_eq!(
            cost(&d, "idle_exit").ns,
            (56_000.0 - 1_800.0) / 2.0 - 12_000.0
        );
    }

    #[test]
    fn each_law_refuses_its_impossible_figure() {
        assert!(check_ipi(300.0, 129.0, 98.0).is_err());
        assert!(check_ipi(400.0, 129.0, 98.0).is_ok());
        assert!(check_cross(1_000.0, 1_800.0).is_err());
        assert!(
            check_switch(600.0, 129.0).is_err(),
            "switch cheaper than a syscall"
        );
        assert!(check_line(0.5).is_err() && check_line(50_000.0).is_err());
        assert!(check_syscall(1.0).is_err());

        let p = preset();
        let mut raw = blind();
        raw.cross_cpu = m("pipe_round_trip_cross_cpu", 1_000.0);
        raw.same_cpu = m("pipe_round_trip_same_cpu", 600.0);
        let d = derive(&raw, &p);
        assert_eq!(cost(&d, "context_switch").ns, p.costs.context_switch.ns);
        assert!(cost(&d, "context_switch").unmeasured.is_some());
        assert!(cost(&d, "idle_exit").unmeasured.is_some());
        assert_eq!(cost(&d, "idle_exit").ns, 0.0);

        let mut raw = blind();
        raw.line = m("line_transfer", 0.3);
        let d = derive(&raw, &p);
        let same_llc = cost(&d, "line_transfer.same_llc");
        assert_eq!(same_llc.ns, p.costs.line_transfer.same_llc.ns);
        assert!(same_llc.source.starts_with("unmeasured"));
    }

    #[test]
    fn a_missing_feature_is_named_in_the_profile() {
        let mut raw = blind();
        raw.ipi = Err("MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ failed (EINVAL): targeted membarrier needs Linux >= 5.10".into());
        let d = derive(&raw, &preset());
        assert!(cost(&d, "ipi_latency")
            .source
            .contains("needs Linux >= 5.10"));
    }
}
