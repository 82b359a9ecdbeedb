//! `ctxswitch`: pipe ping-pong, one byte back and forth, as will-it-scale's
//! context_switch1: a pair across two CPUs (every switch goes through idle)
//! and a pair on one CPU; threads of one process, then two processes.

use std::time::Duration;

use crate::cleanup::should_stop;
use crate::report::HostResult;
use crate::sys;

fn pipe() -> [libc::c_int; 2] {
    let mut fds = [0; 2];
    // SAFETY: valid array of two ints.
    unsafe { libc::pipe(fds.as_mut_ptr()) };
    fds
}

/// One side of the ping-pong: `first` writes first. Returns round trips.
fn side(cpu: u32, rx: libc::c_int, tx: libc::c_int, first: bool, deadline: u64) -> u64 {
    let _ = sys::pin_to(cpu);
    let mut b = [0u8; 1];
    let mut n = 0;
    loop {
        if first {
            // SAFETY: valid fd and buffer.
            if unsafe { libc::write(tx, b.as_ptr().cast(), 1) } != 1 {
                break;
            }
        }
        // SAFETY: valid fd and buffer.
        if unsafe { libc::read(rx, b.as_mut_ptr().cast(), 1) } != 1 {
            break;
        }
        if !first {
            // SAFETY: valid fd and buffer.
            if unsafe { libc::write(tx, b.as_ptr().cast(), 1) } != 1 {
                break;
            }
        }
        n += 1;
        if first && (n % 256 == 0) && (sys::now_ns() > deadline || should_stop()) {
            break;
        }
    }
    n
}

/// Round trips of a ping-pong between `a` and `b`, and per second.
fn threads(a: u32, b: u32, seconds: f64) -> (u64, f64) {
    let (p1, p2) = (pipe(), pipe());
    let start = sys::now_ns();
    let deadline = start + (seconds * 1e9) as u64;
    let partner = std::thread::spawn(move || side(b, p1[0], p2[1], false, deadline));
    let n = side(a, p2[0], p1[1], true, deadline);
    let elapsed = (sys::now_ns() - start) as f64 / 1e9;
    // Closing the pipes ends the partner.
    for fd in [p1[0], p1[1], p2[0], p2[1]] {
        // SAFETY: fds we own.
        unsafe { libc::close(fd) };
    }
    let _ = partner.join();
    (n, n as f64 / elapsed)
}

/// The same between two processes (fork; the child only reads and writes).
fn processes(a: u32, b: u32, seconds: f64) -> (u64, f64) {
    let (p1, p2) = (pipe(), pipe());
    let start = sys::now_ns();
    let deadline = start + (seconds * 1e9) as u64;
    // SAFETY: the child runs only async-signal-safe calls, then _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // Keep only our ends, so the parent closing its ends ends us (EOF).
        // SAFETY: fds we own in the child.
        unsafe {
            libc::close(p1[1]);
            libc::close(p2[0]);
        }
        side(b, p1[0], p2[1], false, deadline);
        // SAFETY: leaving the child without running destructors.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: the child's ends, not ours.
    unsafe {
        libc::close(p1[0]);
        libc::close(p2[1]);
    }
    let n = side(a, p2[0], p1[1], true, deadline);
    let elapsed = (sys::now_ns() - start) as f64 / 1e9;
    for fd in [p1[1], p2[0]] {
        // SAFETY: fds we own.
        unsafe { libc::close(fd) };
    }
    if pid > 0 {
        let mut status = 0;
        // SAFETY: our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
    (n, n as f64 / elapsed)
}

pub fn run(seconds: f64) -> Result<HostResult, String> {
    let cpus = sys::online_cpus();
    if cpus.len() < 2 {
        return Err("ctxswitch needs at least 2 online CPUs".into());
    }
    let (a, b) = (cpus[0], cpus[1]);
    let part = seconds / 4.0;
    let mut r = HostResult::new("ctxswitch", seconds);
    r.param("cpus", format!("{a},{b}"));
    // Across CPUs each round trip is 4 switches (each side into and out of
    // idle), on one CPU 2. Bogo ops: round trips, over all the phases that
    // ran.
    type Phase = fn(u32, u32, f64) -> (u64, f64);
    let phases: [(&str, Phase, u32, f64); 4] = [
        ("threads_cross_cpu", threads, b, 4.0),
        ("threads_same_cpu", threads, a, 2.0),
        ("processes_cross_cpu", processes, b, 4.0),
        ("processes_same_cpu", processes, a, 2.0),
    ];
    let mut trips = 0;
    let mut per_s = [0.0; 4];
    for (i, &(name, phase, to, switches)) in phases.iter().enumerate() {
        if i == 2 {
            // Between the threads and the processes.
            std::thread::sleep(Duration::from_millis(10));
        }
        if i > 0 && should_stop() {
            return Ok(r);
        }
        let (n, round_trips_per_s) = phase(a, to, part);
        trips += n;
        r.bogo(trips, "pipe round trip");
        let switches_per_s = round_trips_per_s * switches;
        r.rate(
            &format!("switches_per_s_{name}"),
            switches_per_s,
            "switches/s",
        );
        per_s[i] = round_trips_per_s;
    }
    r.rate("round_trip_ns_threads_cross_cpu", 1e9 / per_s[0], "ns");
    r.rate("round_trip_ns_threads_same_cpu", 1e9 / per_s[1], "ns");
    r.notes
        .push("will-it-scale context_switch1 style: one byte over two pipes".into());
    if should_stop() {
        r.notes
            .push("stopped early by a signal: the figures cover only the part that ran".into());
    }
    Ok(r)
}
