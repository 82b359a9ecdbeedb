//! `membarrier`: hammer threads call targeted
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ` at a fixed CPU each, burner
//! threads of the same mm run on the targets (optionally in a throttled
//! cgroup hierarchy), and a SCHED_FIFO sentinel measures how late its
//! 500 us sleeps end. Real IPIs are counted from `/proc/interrupts` (CAL).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::cleanup::{should_stop, Guard, Undo};
use crate::probe::CgroupCpu;
use crate::report::{histogram, HostResult};
use crate::sys;

pub struct Options {
    pub seconds: f64,
    pub hammers_per_cpu: u32,
    pub burners_per_cpu: u32,
    /// Cgroup tree under one throttled base: (children, depth); (0, 0) = none.
    pub cgroup: (u32, u32),
}

/// Builds `smpsim_membarrier/{n0..}/d0/...` with quota on the base (v1 or
/// v2); returns the leaf directories, all registered for removal.
fn build_cgroups(
    root: &CgroupCpu,
    children: u32,
    depth: u32,
    guard: &mut Guard,
) -> Result<Vec<std::path::PathBuf>, String> {
    let (dir, v2) = match root {
        CgroupCpu::V2(d) => (d.clone(), true),
        CgroupCpu::V1(d) => (d.clone(), false),
    };
    let base = dir.join(format!("smpsim_membarrier_{}", std::process::id()));
    guard.before(Undo::RemoveCgroup(base.clone()))?;
    if let Err(e) = std::fs::create_dir(&base) {
        guard.not_made();
        return Err(format!("{}: {e}", base.display()));
    }
    if v2 {
        std::fs::write(base.join("cpu.max"), "1000 5000").map_err(|e| format!("cpu.max: {e}"))?;
    } else {
        std::fs::write(base.join("cpu.cfs_period_us"), "5000")
            .map_err(|e| format!("cpu.cfs_period_us: {e}"))?;
        std::fs::write(base.join("cpu.cfs_quota_us"), "1000")
            .map_err(|e| format!("cpu.cfs_quota_us: {e}"))?;
    }
    let mut leaves = Vec::new();
    for i in 0..children {
        let mut d = base.join(format!("n{i}"));
        std::fs::create_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for k in 0..depth {
            d = d.join(format!("d{k}"));
            std::fs::create_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        leaves.push(d);
    }
    if leaves.is_empty() {
        leaves.push(base);
    }
    Ok(leaves)
}

fn join_cgroup(leaf: &std::path::Path, v2: bool) -> std::io::Result<()> {
    let tid = sys::gettid().to_string();
    let file = if v2 { "cgroup.threads" } else { "tasks" };
    std::fs::write(leaf.join(file), tid)
}

pub fn run(opts: &Options, cgroup: Option<CgroupCpu>, fifo: bool) -> Result<HostResult, String> {
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err("membarrier needs at least 2 online CPUs".into());
    }
    sys::membarrier(sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0)
        .map_err(|e| format!("MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ: {e}"))?;
    let mut guard = Guard::default();
    let mut r = HostResult::new("membarrier", opts.seconds);
    r.param("hammers_per_cpu", opts.hammers_per_cpu);
    r.param("burners_per_cpu", opts.burners_per_cpu);
    let leaves = match (&cgroup, opts.cgroup) {
        (Some(root), (c, d)) if c > 0 => {
            r.param(
                "cgroup",
                format!("{c} children x {d} deep, quota 1000/5000 us on the base"),
            );
            Some((
                build_cgroups(root, c, d, &mut guard)?,
                matches!(root, CgroupCpu::V2(_)),
            ))
        }
        (None, (c, _)) if c > 0 => {
            r.notes
                .push("no cgroup cpu controller: burners run unthrottled".into());
            None
        }
        _ => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let errs = Arc::new(AtomicU64::new(0));
    let lat = Arc::new(Mutex::new(histogram()));
    let cal_before = sys::interrupts("CAL");
    let mut handles = Vec::new();
    for (i, &cpu) in cpus.iter().enumerate() {
        for b in 0..opts.burners_per_cpu {
            let stop = stop.clone();
            let leaf = leaves
                .as_ref()
                .map(|(l, v2)| (l[(i + b as usize) % l.len()].clone(), *v2));
            handles.push(std::thread::spawn(move || {
                let _ = sys::pin_to(cpu);
                if let Some((leaf, v2)) = leaf {
                    let _ = join_cgroup(&leaf, v2);
                }
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_add(1);
                    std::hint::black_box(x);
                }
            }));
        }
        let target = cpus[(i + 1) % cpus.len()] as i32;
        for _ in 0..opts.hammers_per_cpu {
            let (stop, ok, errs, lat) = (stop.clone(), ok.clone(), errs.clone(), lat.clone());
            handles.push(std::thread::spawn(move || {
                let _ = sys::pin_to(cpu);
                let mut h = histogram();
                while !stop.load(Ordering::Relaxed) {
                    let t0 = sys::now_ns();
                    match sys::membarrier(
                        sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
                        sys::MEMBARRIER_CMD_FLAG_CPU,
                        target,
                    ) {
                        Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(_) => errs.fetch_add(1, Ordering::Relaxed),
                    };
                    h.saturating_record((sys::now_ns() - t0).max(1));
                }
                let _ = lat.lock().map(|mut l| l.add(&h));
            }));
        }
    }
    // The sentinel: SCHED_FIFO 20, sleeping 500 us, as the selftest's.
    let sentinel = if fifo {
        let stop = stop.clone();
        Some(std::thread::spawn(move || {
            let mut h = histogram();
            if sys::set_fifo(20).is_err() {
                return h;
            }
            while !stop.load(Ordering::Relaxed) {
                let t0 = sys::now_ns();
                std::thread::sleep(std::time::Duration::from_micros(500));
                h.saturating_record((sys::now_ns() - t0).saturating_sub(500_000).max(1));
            }
            sys::set_normal();
            h
        }))
    } else {
        r.notes.push("SCHED_FIFO not allowed: no sentinel".into());
        None
    };
    let start = sys::now_ns();
    let deadline = start + (opts.seconds * 1e9) as u64;
    while sys::now_ns() < deadline && !should_stop() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    let elapsed = (sys::now_ns() - start) as f64 / 1e9;
    let ipis = sys::interrupts("CAL").saturating_sub(cal_before);
    let calls = ok.load(Ordering::Relaxed);
    r.bogo(calls, "membarrier() call");
    r.rate("calls_per_s", calls as f64 / elapsed, "calls/s");
    r.rate("errors", errs.load(Ordering::Relaxed) as f64, "calls");
    r.rate("ipis_per_s", ipis as f64 / elapsed, "IPIs/s");
    r.rate(
        "ipi_fraction",
        ipis as f64 / calls.max(1) as f64,
        "IPIs per call",
    );
    r.hist(
        "membarrier_call",
        &lat.lock()
            .map(|l| l.clone())
            .unwrap_or_else(|_| histogram()),
    );
    if let Some(s) = sentinel {
        if let Ok(h) = s.join() {
            r.hist("sentinel_overshoot", &h);
        }
    }
    guard.run();
    r.notes.append(&mut guard.log);
    Ok(r)
}
