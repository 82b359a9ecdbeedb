//! What this host can run, probed (never assumed), with the reason and the
//! fix when it cannot.

use std::path::Path;

use crate::sys;

/// A probe of one capability.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Capability {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
    /// What to do when it is missing.
    pub fix: String,
}

fn cap(
    name: &'static str,
    ok: bool,
    detail: impl Into<String>,
    fix: impl Into<String>,
) -> Capability {
    Capability {
        name,
        ok,
        detail: detail.into(),
        fix: if ok { String::new() } else { fix.into() },
    }
}

/// `MEMBARRIER_CMD_QUERY` must list the targeted RSEQ command and its registration.
pub fn membarrier() -> Capability {
    match sys::membarrier(sys::MEMBARRIER_CMD_QUERY, 0, 0) {
        Ok(mask) => {
            let need = (sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ
                | sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ)
                as i64;
            cap(
                "membarrier",
                mask & need == need,
                format!("MEMBARRIER_CMD_QUERY = {mask:#x}"),
                "a kernel with CONFIG_MEMBARRIER and CONFIG_RSEQ (5.10+ for MEMBARRIER_CMD_FLAG_CPU)",
            )
        }
        Err(e) => cap(
            "membarrier",
            false,
            format!("membarrier(QUERY): {e}"),
            "a kernel built with CONFIG_MEMBARRIER",
        ),
    }
}

/// glibc 2.35+ registers rseq for every thread (`__rseq_size` > 0).
pub fn rseq() -> Capability {
    let name = c"__rseq_size";
    // SAFETY: dlsym with RTLD_DEFAULT and a valid C string.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as *const u32;
    // SAFETY: if present, the symbol is a u32 defined by glibc.
    let size = if p.is_null() { 0 } else { unsafe { *p } };
    cap(
        "rseq",
        size > 0,
        format!("__rseq_size = {size}"),
        "glibc 2.35 or later (it registers rseq per thread); or run with GLIBC_TUNABLES unset",
    )
}

/// Where CFS bandwidth control can be set: cgroup v2 `cpu.max` or v1
/// `cpu.cfs_quota_us`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupCpu {
    V2(std::path::PathBuf),
    V1(std::path::PathBuf),
}

pub fn cgroup_cpu() -> (Capability, Option<CgroupCpu>) {
    cgroup_cpu_at(Path::new("/sys/fs/cgroup"))
}

/// The probe against a cgroup mount point (a parameter, for tests).
pub fn cgroup_cpu_at(root: &Path) -> (Capability, Option<CgroupCpu>) {
    let v2 = root.join("cgroup.controllers");
    let v2 = v2.as_path();
    if let Ok(c) = std::fs::read_to_string(v2) {
        if c.split_whitespace().any(|w| w == "cpu") && sys::is_root() {
            let c2 = cap("cgroup-cpu", true, "cgroup v2 with the cpu controller", "");
            return (c2, Some(CgroupCpu::V2(root.into())));
        }
    }
    let v1 = root.join("cpu");
    let v1 = v1.as_path();
    if v1.join("cpu.cfs_quota_us").exists() && sys::writable(v1) {
        let c1 = cap(
            "cgroup-cpu",
            true,
            "cgroup v1 cpu controller (cpu.cfs_quota_us)",
            "",
        );
        return (c1, Some(CgroupCpu::V1(v1.into())));
    }
    let why = if !sys::is_root() {
        "not root"
    } else if v2.exists() {
        "cgroup v2 is mounted without the cpu controller and no v1 cpu hierarchy is mounted"
    } else {
        "no cgroup cpu controller found"
    };
    (
        cap("cgroup-cpu", false, why, "run as root on a host with the cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us)"),
        None,
    )
}

/// The tracefs file a `mutex-readers` test can read, and whether tracefs
/// must be mounted first.
pub fn trace_file() -> (Capability, Option<(std::path::PathBuf, bool)>) {
    let dir = Path::new("/sys/kernel/tracing");
    let mounted = dir.join("available_events").exists();
    if mounted {
        for f in ["available_filter_functions", "available_events"] {
            let p = dir.join(f);
            if std::fs::File::open(&p)
                .and_then(|mut h| {
                    use std::io::Read;
                    let mut b = [0u8; 64];
                    h.read(&mut b)
                })
                .is_ok()
            {
                let note = if f == "available_events" {
                    "available_filter_functions is not readable here; falls back to available_events (event_mutex per chunk)"
                } else {
                    "available_filter_functions (ftrace_lock per chunk)"
                };
                return (cap("tracefs", true, note, ""), Some((p, false)));
            }
        }
        return (
            cap(
                "tracefs",
                false,
                "tracefs files not readable",
                "run as root",
            ),
            None,
        );
    }
    if sys::is_root() && dir.exists() {
        return (
            cap(
                "tracefs",
                true,
                "tracefs not mounted: will mount it at /sys/kernel/tracing and unmount after",
                "",
            ),
            Some((dir.join("available_events"), true)),
        );
    }
    (
        cap(
            "tracefs",
            false,
            "tracefs not mounted and not root",
            "mount -t tracefs nodev /sys/kernel/tracing, as root",
        ),
        None,
    )
}

/// A CPU whose `online` file we could write (CPU 0 usually cannot go).
pub fn hotplug() -> (Capability, Option<u32>) {
    for cpu in sys::online_cpus().into_iter().filter(|&c| c > 0) {
        let p = format!("/sys/devices/system/cpu/cpu{cpu}/online");
        if Path::new(&p).exists() && sys::writable(Path::new(&p)) {
            return (
                cap("cpu-hotplug", true, format!("cpu{cpu}/online writable"), ""),
                Some(cpu),
            );
        }
    }
    (
        cap(
            "cpu-hotplug",
            false,
            "no writable /sys/devices/system/cpu/cpuN/online",
            "run as root on a kernel with CONFIG_HOTPLUG_CPU and more than one CPU",
        ),
        None,
    )
}

/// Can a thread become SCHED_FIFO? Tried on a short-lived thread.
pub fn sched_fifo() -> Capability {
    let r = std::thread::spawn(|| {
        let r = sys::set_fifo(1);
        sys::set_normal();
        r
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")));
    match r {
        Ok(()) => cap("sched-fifo", true, "SCHED_FIFO allowed", ""),
        Err(e) => cap(
            "sched-fifo",
            false,
            format!("sched_setscheduler(SCHED_FIFO): {e}"),
            "run as root or with CAP_SYS_NICE (and RLIMIT_RTPRIO)",
        ),
    }
}

pub fn cpus() -> Capability {
    let n = sys::online_cpus().len();
    cap(
        "cpus",
        n >= 2,
        format!("{n} CPUs online"),
        "a host with at least 2 online CPUs",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_without_the_cpu_controller_says_so_and_what_to_do() {
        let dir = std::env::temp_dir().join(format!("smpsim-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // cgroup v2 mounted, but without the cpu controller.
        std::fs::write(dir.join("cgroup.controllers"), "memory pids\n").unwrap();
        let (c, found) = cgroup_cpu_at(&dir);
        assert!(!c.ok && found.is_none());
        assert!(
            c.fix.contains("cpu.max") && c.fix.contains("cpu.cfs_quota_us"),
            "{}",
            c.fix
        );
        if sys::is_root() {
            assert!(
                c.detail.contains("without the cpu controller"),
                "{}",
                c.detail
            );
        } else {
            assert_eq!(c.detail, "not root");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_test_is_listed_with_reasons_when_it_cannot_run() {
        for s in crate::list() {
            assert_eq!(s.runnable, s.missing.is_empty(), "{s:?}");
            for m in &s.missing {
                assert!(!m.detail.is_empty() && !m.fix.is_empty(), "{m:?}");
            }
        }
    }
}
