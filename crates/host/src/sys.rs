//! Thin wrappers over the Linux calls the host tests need. CPU masks are
//! sized to the machine (no fixed 1024-CPU `cpu_set_t`).

use std::io;
use std::path::Path;

/// Monotonic time in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(v) = part.trim().parse() {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// CPUs currently online.
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_else(|_| vec![0])
}

/// Highest possible CPU id + 1.
pub fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map(|s| {
            parse_cpu_list(&s)
                .into_iter()
                .max()
                .map_or(1, |m| m as usize + 1)
        })
        .unwrap_or(1)
}

/// Pins the calling thread to one CPU.
pub fn pin_to(cpu: u32) -> io::Result<()> {
    set_allowed(&[cpu])
}

/// Makes the calling thread SCHED_FIFO at `prio`.
pub fn set_fifo(prio: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: valid sched_param for the calling thread (0).
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Back to SCHED_OTHER.
pub fn set_normal() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
}

pub const MEMBARRIER_CMD_QUERY: i32 = 0;
pub const MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ: i32 = 1 << 7;
pub const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ: i32 = 1 << 8;
pub const MEMBARRIER_CMD_FLAG_CPU: u32 = 1;

/// `membarrier(cmd, flags, cpu_id)`.
pub fn membarrier(cmd: i32, flags: u32, cpu: i32) -> io::Result<i64> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, cmd, flags, cpu) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// CPU time of the calling thread: (user, sys) in ns.
pub fn thread_times() -> (u64, u64) {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// CPU time of this process and of the children it has waited for:
/// (user, sys) in ns, as time(1) counts a command's.
pub fn process_times() -> (u64, u64) {
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    let (mut user, mut sys) = (0, 0);
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer.
        unsafe { libc::getrusage(who, &mut ru) };
        user += tv(ru.ru_utime);
        sys += tv(ru.ru_stime);
    }
    (user, sys)
}

/// Sum over CPUs of a `/proc/interrupts` line such as `CAL` or `TLB`.
pub fn interrupts(name: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/interrupts") else {
        return 0;
    };
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some(&format!("{name}:")) {
            return words.map_while(|w| w.parse::<u64>().ok()).sum();
        }
    }
    0
}

/// Per-CPU count of a `/proc/interrupts` line (`CAL`: function-call IPIs)
/// on one CPU; None where the line or the CPU's column is missing (not x86,
/// or no procfs), so callers can say they could not check.
pub fn interrupts_on(name: &str, cpu: u32) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    interrupts_on_in(&text, name, cpu)
}

fn interrupts_on_in(text: &str, name: &str, cpu: u32) -> Option<u64> {
    let mut lines = text.lines();
    // The header lists only online CPUs, so a column is found by name.
    let col = lines
        .next()?
        .split_whitespace()
        .position(|w| w == format!("CPU{cpu}"))?;
    let line = lines.find(|l| l.split_whitespace().next() == Some(&format!("{name}:")))?;
    line.split_whitespace().nth(col + 1)?.parse().ok()
}

/// The CPU the calling thread is running on now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// The calling thread's allowed CPUs (to put back after pinning).
pub fn allowed_cpus() -> Vec<u32> {
    let words = possible_cpus().div_ceil(64).max(1);
    let mut mask = vec![0u64; words];
    // SAFETY: the kernel writes at most `words * 8` bytes into the buffer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            0,
            words * 8,
            mask.as_mut_ptr() as *mut libc::c_void,
        )
    };
    if r < 0 {
        return online_cpus();
    }
    (0..words as u32 * 64)
        .filter(|&c| mask[c as usize / 64] & (1 << (c % 64)) != 0)
        .collect()
}

/// Lets the calling thread run on `cpus`, with a mask sized for any CPU
/// count.
pub fn set_allowed(cpus: &[u32]) -> io::Result<()> {
    let max = cpus.iter().copied().max().unwrap_or(0) as usize;
    let words = possible_cpus().max(max + 1).div_ceil(64);
    let mut mask = vec![0u64; words];
    for &c in cpus {
        mask[c as usize / 64] |= 1 << (c % 64);
    }
    // SAFETY: the kernel reads `words * 8` bytes from a buffer of that size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            0,
            words * 8,
            mask.as_ptr() as *const libc::c_void,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// Is the file writable by us (without writing to it)?
pub fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `gettid()`.
pub fn gettid() -> i64 {
    // SAFETY: no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
        assert!(!online_cpus().is_empty());
    }

    #[test]
    fn per_cpu_interrupts_are_read_by_column_name() {
        let text = "           CPU0       CPU1\n 24:  1  0  IO-APIC\nCAL:     177921     217173   Function call interrupts\n";
        assert_eq!(interrupts_on_in(text, "CAL", 1), Some(217173));
        assert_eq!(interrupts_on_in(text, "CAL", 0), Some(177921));
        assert_eq!(interrupts_on_in(text, "CAL", 2), None);
        assert_eq!(interrupts_on_in(text, "TLB", 0), None);
    }

    #[test]
    fn masks_work_for_any_cpu_count() {
        let cpu = online_cpus()[0];
        pin_to(cpu).unwrap();
        assert!(possible_cpus() >= 1);
    }
}
