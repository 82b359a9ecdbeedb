//! `[kernel] ttwu_queue` and the `sched_ttwu_pending` hook (the wakee
//! CPU's side of `ttwu_queue_wakelist()`): bad input is a located error
//! (file:line:col, exit 2, no result file); a run with the knob reports
//! its wake-list counts.

mod common;

use common::{dir, refused_at, scenario, smpsim, stderr, At};
use serde_json::Value;

const OBJECTS: &str =
    "[objects]\nrq_lock = { type = \"spinlock\", per_cpu = true }\ns = { type = \"semaphore\" }\n";

/// A producer on CPU 0 and its consumer on CPU 1.
const TASKS: &str = "[[tasks]]\nname = \"producer\"\ncount = 1\ncpus = \"0\"\naffinity = \"pinned\"\ncode = '''for (;;) { work(5us); up(s); }'''\n[[tasks]]\nname = \"consumer\"\ncount = 1\ncpus = \"1\"\naffinity = \"pinned\"\ncode = '''for (;;) { down(s); work(1us); }'''\n";

/// Two CPUs (two LLCs of one core; the header's `[machine.topology]` goes on),
/// `kernel` in `[kernel]`, a `sched_ttwu_pending` hook `code`.
fn with(kernel: &str, code: &str) -> String {
    format!(
        "llcs_per_node = 2\n[kernel]\nload_balance = false\n{kernel}\n{OBJECTS}[hooks]\nsched_ttwu_pending = '''{code}'''\n{TASKS}"
    )
}

#[test]
fn wake_list_mistakes_are_located_errors_without_a_result() {
    let d = dir("ttwu-queue");
    let lock = "spin_guard(rq_lock[this_cpu()]) { work(50ns); }";
    for (what, rest, bad, says) in [
        (
            "a sched_ttwu_pending hook without the wake list",
            with("", lock),
            "sched_ttwu_pending",
            "hook `sched_ttwu_pending` would never run",
        ),
        (
            "the same with ttwu_queue = \"rq_lock\"",
            with("ttwu_queue = \"rq_lock\"", lock),
            "sched_ttwu_pending",
            "unless `[kernel] ttwu_queue` says so",
        ),
        (
            "an unknown ttwu_queue mode",
            with("ttwu_queue = \"remote\"", lock),
            "\"remote\"",
            "unknown ttwu_queue mode `remote`; expected one of: rq_lock, wakelist, cross_llc",
        ),
        (
            "task_cpu() in sched_ttwu_pending (about no one task)",
            with(
                "ttwu_queue = \"wakelist\"",
                "spin_guard(rq_lock[task_cpu()]) { work(50ns); }",
            ),
            "task_cpu()",
            "hook `sched_ttwu_pending` is about no task but the CPU's own",
        ),
        (
            "up() in sched_ttwu_pending (under the rq lock)",
            with("ttwu_queue = \"wakelist\"", "work(10ns); up(s);"),
            "up(s)",
            "hook `sched_ttwu_pending` wakes a task (`up()`)",
        ),
    ] {
        let p = scenario(&d, "s.toml", &rest);
        refused_at(what, &p, At::Text(bad), says);
    }
}

/// The knob reaches the kernel: every wakeup of the consumer crosses to
/// CPU 1's wake list, and its handler's hook takes CPU 1's own lock.
#[test]
fn a_wake_list_run_reports_its_counts() {
    let d = dir("ttwu-queue-run");
    let p = scenario(
        &d,
        "s.toml",
        &with(
            "ttwu_queue = \"wakelist\"",
            "spin_guard(rq_lock[this_cpu()]) { work(50ns); }",
        ),
    );
    let o = smpsim()
        .args(["run", "--format", "json"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["variants"][0];
    let q = &r["ttwu_queue"];
    let n = |k: &str| q[k].as_u64().unwrap_or_else(|| panic!("{k} in {q}"));
    assert!(n("queued") > 50, "{q}");
    assert!(n("ipis") <= n("queued"), "{q}");
    let rq = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"].as_str().unwrap().starts_with("rq_lock"))
        .expect("rq_lock");
    assert!(
        rq["acquisitions"].as_u64().unwrap() >= n("handler_runs"),
        "{rq}"
    );
    assert!(r["cpus"][1]["irq"].as_u64().unwrap() > 0);
}
