//! `hotplug`: take a CPU offline and bring it back, timing each step.
//! Only with an explicit `--allow-hotplug`; the CPU is brought back on
//! every exit path (the guard).

use crate::cleanup::{should_stop, Guard, Undo};
use crate::report::{histogram, HostResult};
use crate::sys;

pub fn run(cpu: u32, reps: u32) -> Result<HostResult, String> {
    let file = format!("/sys/devices/system/cpu/cpu{cpu}/online");
    let mut guard = Guard::default();
    // Recorded before the first offline: a SIGKILL mid-loop leaves the
    // record, and the next run brings the CPU back.
    guard.before(Undo::OnlineCpu(cpu))?;
    let (mut off, mut on) = (histogram(), histogram());
    let mut r = HostResult::by_reps("hotplug", reps);
    r.param("cpu", cpu);
    r.param("reps", reps);
    let mut done = 0;
    for _ in 0..reps {
        if should_stop() {
            r.notes.push("stopped early by a signal".into());
            break;
        }
        let t0 = sys::now_ns();
        std::fs::write(&file, "0").map_err(|e| format!("{file}: offline: {e}"))?;
        let t1 = sys::now_ns();
        std::fs::write(&file, "1").map_err(|e| format!("{file}: online: {e}"))?;
        let t2 = sys::now_ns();
        off.saturating_record((t1 - t0).max(1));
        on.saturating_record((t2 - t1).max(1));
        done += 1;
    }
    r.bogo(done, "offline and online of a CPU");
    r.hist("offline", &off);
    r.hist("online", &on);
    r.rate(
        "offline_median_ms",
        off.value_at_quantile(0.5) as f64 / 1e6,
        "ms",
    );
    r.rate(
        "online_median_ms",
        on.value_at_quantile(0.5) as f64 / 1e6,
        "ms",
    );
    guard.run();
    r.notes.append(&mut guard.log);
    Ok(r)
}
