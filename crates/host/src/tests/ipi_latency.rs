//! `ipi-latency`: a TLB-shootdown storm (a thread of one mm mapping,
//! touching and unmapping memory while a sibling thread of the same mm runs
//! on another CPU, so every munmap IPIs it) against a cyclictest-like
//! SCHED_FIFO thread on the storm's CPU, whose wakeup latency is measured
//! per window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cleanup::should_stop;
use crate::report::{histogram, HostResult};
use crate::sys;

fn munmap_once(pages: usize) -> u64 {
    let len = pages * 4096;
    // SAFETY: anonymous private mapping, touched and unmapped by us only.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return 0;
        }
        for i in 0..pages {
            *(p as *mut u8).add(i * 4096) = 1;
        }
        let t0 = sys::now_ns();
        libc::munmap(p, len);
        sys::now_ns() - t0
    }
}

pub fn run(seconds: f64, window_s: f64, fifo: bool) -> Result<HostResult, String> {
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err("ipi-latency needs at least 2 online CPUs".into());
    }
    let (storm_cpu, sibling_cpu) = (cpus[0], cpus[1]);
    let mut r = HostResult::new("ipi-latency", seconds);
    r.param("storm_cpu", storm_cpu);
    r.param("sibling_cpu", sibling_cpu);
    r.param("window_s", window_s);
    // munmap alone: no other CPU runs this mm.
    let alone = std::thread::spawn(move || {
        let _ = sys::pin_to(storm_cpu);
        let mut h = histogram();
        for _ in 0..2000 {
            h.saturating_record(munmap_once(1).max(1));
        }
        h
    })
    .join()
    .map_err(|_| "munmap probe panicked")?;
    r.hist("munmap_1page_alone", &alone);

    let stop = Arc::new(AtomicBool::new(false));
    let sibling = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = sys::pin_to(sibling_cpu);
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = x.wrapping_add(1);
                std::hint::black_box(x);
            }
        })
    };
    let storm = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = sys::pin_to(storm_cpu);
            let mut h = histogram();
            while !stop.load(Ordering::Relaxed) {
                h.saturating_record(munmap_once(1).max(1));
            }
            h
        })
    };
    let tlb_before = sys::interrupts("TLB");
    let start = sys::now_ns();
    let deadline = start + (seconds * 1e9) as u64;
    let window_ns = (window_s * 1e9) as u64;
    let (lat, windows) = if fifo {
        std::thread::spawn(move || {
            let _ = sys::pin_to(storm_cpu);
            let mut h = histogram();
            let mut windows = Vec::new();
            if sys::set_fifo(99).is_err() {
                return (h, windows);
            }
            let (mut wmax, mut wend) = (0u64, sys::now_ns() + window_ns);
            while sys::now_ns() < deadline && !should_stop() {
                let t0 = sys::now_ns();
                std::thread::sleep(std::time::Duration::from_millis(1));
                let late = (sys::now_ns() - t0).saturating_sub(1_000_000).max(1);
                h.saturating_record(late);
                wmax = wmax.max(late);
                if sys::now_ns() >= wend {
                    windows.push(wmax);
                    wmax = 0;
                    wend += window_ns;
                }
            }
            sys::set_normal();
            (h, windows)
        })
        .join()
        .map_err(|_| "latency thread panicked")?
    } else {
        while sys::now_ns() < deadline && !should_stop() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        r.notes
            .push("SCHED_FIFO not allowed: no wakeup-latency thread".into());
        (histogram(), Vec::new())
    };
    stop.store(true, Ordering::Relaxed);
    let storm_h = storm.join().map_err(|_| "storm thread panicked")?;
    let _ = sibling.join();
    let elapsed = (sys::now_ns() - start) as f64 / 1e9;
    let tlb = sys::interrupts("TLB").saturating_sub(tlb_before);
    r.hist("munmap_1page_with_sibling", &storm_h);
    r.bogo(storm_h.len(), "munmap() of a page");
    r.rate("munmap_per_s", storm_h.len() as f64 / elapsed, "calls/s");
    r.rate("tlb_ipis_per_s", tlb as f64 / elapsed, "IPIs/s");
    if fifo {
        r.hist("fifo_wakeup_latency", &lat);
        r.rate("windows", windows.len() as f64, "windows");
        r.rate(
            "window_max_p50_ns",
            smpsim_kernel::metrics::nearest_rank(&windows, 0.5) as f64,
            "ns",
        );
        r.rate(
            "window_max_p99_ns",
            smpsim_kernel::metrics::nearest_rank(&windows, 0.99) as f64,
            "ns",
        );
    }
    if should_stop() {
        r.notes
            .push("stopped early by a signal: the figures cover only the part that ran".into());
    }
    Ok(r)
}
