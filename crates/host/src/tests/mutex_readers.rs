//! `mutex-readers`: N concurrent readers of a tracefs file whose `read()`
//! holds a kernel mutex per chunk (`available_filter_functions` and
//! `ftrace_lock` where readable, else `available_events` and
//! `event_mutex`), each timed like time(1). One reader reads the file
//! once alone (the baseline); then the N readers read it again and again
//! until `seconds` are up, so the contended phase lasts as long as asked.

use crate::cleanup::{mounts, should_stop, Guard, Undo};
use crate::report::{HostResult, ThreadTimes};
use crate::sys;

fn read_all(path: &std::path::Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 128 * 1024]; // cat's read size
    let mut lines = 0;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 || should_stop() {
            return Ok(lines);
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

pub fn run(
    readers: u32,
    seconds: f64,
    file: std::path::PathBuf,
    mount: bool,
) -> Result<HostResult, String> {
    let mut guard = Guard::default();
    if mount {
        let dir = file
            .parent()
            .unwrap_or(std::path::Path::new("/sys/kernel/tracing"))
            .to_path_buf();
        // Mounted under a source name of ours, so a later run can tell it
        // from the system's tracefs if this one is killed.
        let source = mounts::source_name("mutex-readers");
        guard.before(Undo::UmountTracefs {
            at: dir.clone(),
            source: source.clone(),
        })?;
        if let Err(e) = mounts::mount_tracefs(&dir, &source) {
            guard.not_made();
            return Err(format!("mount tracefs at {}: {e}", dir.display()));
        }
    }
    let mut r = HostResult::new("mutex-readers", seconds);
    r.param("file", file.display());
    r.param("readers", readers);
    let single = std::thread::scope(|s| s.spawn(|| timed_read(&file)).join().unwrap())?;
    r.threads.push(ThreadTimes {
        name: "alone".into(),
        ..single.0
    });
    r.param("lines", single.1);
    let deadline = sys::now_ns() + (seconds * 1e9) as u64;
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..readers)
            .map(|_| s.spawn(|| reads_until(&file, deadline)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut sys_total, mut real_total, mut passes) = (0, 0, 0);
    for (i, res) in results.into_iter().enumerate() {
        let (t, n) = res?;
        sys_total += t.sys_ns;
        real_total += t.real_ns;
        passes += n;
        r.threads.push(ThreadTimes {
            name: format!("reader/{i} ({n} passes)"),
            ..t
        });
    }
    let passes_f = passes.max(1) as f64;
    r.bogo(passes, "whole-file read");
    r.rate("passes", passes as f64, "whole-file reads");
    // Microseconds: one pass of a short file is well under a millisecond.
    r.rate("sys_per_pass_us", sys_total as f64 / passes_f / 1e3, "us");
    r.rate("real_per_pass_us", real_total as f64 / passes_f / 1e3, "us");
    r.rate(
        "single_reader_sys_us",
        r.threads[0].sys_ns as f64 / 1e3,
        "us",
    );
    r.rate(
        "single_reader_real_us",
        r.threads[0].real_ns as f64 / 1e3,
        "us",
    );
    guard.run();
    r.notes.append(&mut guard.log);
    Ok(r)
}

/// Whole-file reads, one after another, until `deadline` (at least one, so
/// a very short run still measures something) or a stop signal; times for
/// them all and the number of passes.
fn reads_until(file: &std::path::Path, deadline: u64) -> Result<(ThreadTimes, u64), String> {
    let (u0, s0) = sys::thread_times();
    let t0 = sys::now_ns();
    let mut passes = 0;
    loop {
        read_all(file).map_err(|e| format!("{}: {e}", file.display()))?;
        passes += 1;
        if sys::now_ns() >= deadline || should_stop() {
            break;
        }
    }
    let (u1, s1) = sys::thread_times();
    Ok((
        ThreadTimes {
            name: String::new(),
            real_ns: sys::now_ns() - t0,
            user_ns: u1 - u0,
            sys_ns: s1 - s0,
        },
        passes,
    ))
}

fn timed_read(file: &std::path::Path) -> Result<(ThreadTimes, u64), String> {
    let (u0, s0) = sys::thread_times();
    let t0 = sys::now_ns();
    let lines = read_all(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let (u1, s1) = sys::thread_times();
    Ok((
        ThreadTimes {
            name: String::new(),
            real_ns: sys::now_ns() - t0,
            user_ns: u1 - u0,
            sys_ns: s1 - s0,
        },
        lines,
    ))
}
