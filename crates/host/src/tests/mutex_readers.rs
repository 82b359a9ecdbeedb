//! `mutex-readers`: N concurrent readers of a tracefs file whose `read()`
//! holds a kernel mutex per chunk (`available_filter_functions` and
//! `ftrace_lock` where readable, else `available_events` and
//! `event_mutex`), each timed like time(1).

use crate::cleanup::{should_stop, Guard, Undo};
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

pub fn run(readers: u32, file: std::path::PathBuf, mount: bool) -> Result<HostResult, String> {
    let mut guard = Guard::default();
    if mount {
        let dir = file
            .parent()
            .unwrap_or(std::path::Path::new("/sys/kernel/tracing"))
            .to_path_buf();
        let (src, fs) = (c"nodev", c"tracefs");
        let target = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|e| e.to_string())?;
        // SAFETY: valid C strings.
        if unsafe {
            libc::mount(
                src.as_ptr(),
                target.as_ptr(),
                fs.as_ptr(),
                0,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(format!(
                "mount tracefs at {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            ));
        }
        guard.push(Undo::Umount(dir));
    }
    let mut r = HostResult::new("mutex-readers", 0.0);
    r.param("file", file.display());
    r.param("readers", readers);
    let single = std::thread::scope(|s| s.spawn(|| timed_read(&file)).join().unwrap())?;
    r.threads.push(ThreadTimes {
        name: "alone".into(),
        ..single.0
    });
    r.param("lines", single.1);
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..readers)
            .map(|_| s.spawn(|| timed_read(&file)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut sys_total = 0;
    let mut real_total = 0;
    for (i, res) in results.into_iter().enumerate() {
        let (t, _) = res?;
        sys_total += t.sys_ns;
        real_total += t.real_ns;
        r.threads.push(ThreadTimes {
            name: format!("reader/{i}"),
            ..t
        });
    }
    r.rate(
        "sys_per_reader_s",
        sys_total as f64 / readers.max(1) as f64 / 1e9,
        "s",
    );
    r.rate(
        "real_per_reader_s",
        real_total as f64 / readers.max(1) as f64 / 1e9,
        "s",
    );
    r.rate("single_reader_sys_s", r.threads[0].sys_ns as f64 / 1e9, "s");
    r.rate(
        "single_reader_real_s",
        r.threads[0].real_ns as f64 / 1e9,
        "s",
    );
    guard.run();
    r.notes.append(&mut guard.log);
    Ok(r)
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
