//! Issue 41 item 2, the scheduler's side: what a hook sees of its event
//! (`task_cpu()`, `prev_mm()`, `next_mm()`, `prev_active_mm()`), `if` in
//! hooks, and a `sched_tick` hook's wakeup (`up()`). Bad input is a
//! located error (file:line:col, exit 2, no result file); the two
//! examples show the behaviour their docs entry quotes.

mod common;

use common::{dir, refused_at, run_example, scenario, smpsim, stderr, At};
use serde_json::Value;

const OBJECTS: &str =
    "[objects]\nrq_lock = { type = \"spinlock\", per_cpu = true }\ns = { type = \"semaphore\" }\n";

/// A task group whose code is `code`.
fn task(code: &str) -> String {
    format!("[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''for (;;) {{ {code} }}'''\n")
}

/// A hook at `event` running `code`, and a task that sleeps.
fn hook(event: &str, code: &str) -> String {
    format!(
        "{OBJECTS}[hooks]\n{event} = '''{code}'''\n{}",
        task("work(1us); sleep(1us);")
    )
}

#[test]
fn hook_view_mistakes_are_located_errors_without_a_result() {
    let d = dir("hook-views");
    for (what, rest, bad, says) in [
        (
            "task_cpu() in a task",
            format!("{OBJECTS}{}", task("spin_guard(rq_lock[task_cpu()]) { work(1us); }")),
            "task_cpu()",
            "`task_cpu()` is a hook's view of the task its event is about",
        ),
        (
            "task_cpu() in a hook about no other task",
            hook("sched_tick", "spin_guard(rq_lock[task_cpu()]) { work(10ns); }"),
            "task_cpu()",
            "hook `sched_tick` is about no task but the CPU's own",
        ),
        (
            "next_mm() in a task",
            format!("{OBJECTS}{}", task("if (next_mm() == 1) { work(1us); } work(1us);")),
            "next_mm()",
            "`next_mm()` is a switch's hook view",
        ),
        (
            "prev_mm() in a wakeup's hook",
            hook("try_to_wake_up", "if (prev_mm() != 0) { work(10ns); }"),
            "prev_mm()",
            "hook `try_to_wake_up` runs at no switch",
        ),
        (
            "prev_active_mm() in the tick's hook",
            hook("sched_tick", "if (prev_active_mm() != 0) { work(10ns); }"),
            "prev_active_mm()",
            "hook `sched_tick` runs at no switch",
        ),
        (
            "up() in a switch's hook",
            hook("sched_switch", "work(10ns); up(s);"),
            "up(s)",
            "hook `sched_switch` wakes a task (`up()`)",
        ),
        (
            "a lock on one side of an if",
            hook(
                "sched_switch",
                "if (next_mm() != -1) { spin_lock(rq_lock[this_cpu()]); } spin_unlock(rq_lock[this_cpu()]);",
            ),
            "'''if", // the hook's code as a whole
            "takes or releases a lock on one side of an `if` only",
        ),
    ] {
        let p = scenario(&d, "s.toml", &rest);
        refused_at(what, &p, At::Text(bad), says);
    }
}

fn variant<'v>(v: &'v Value, name: &str) -> &'v Value {
    v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["variant"] == name)
        .unwrap_or_else(|| panic!("no variant {name}"))
}

fn counter(v: &Value, name: &str) -> u64 {
    v["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .map_or(0, |c| c["count"].as_u64().unwrap())
}

/// (acquisitions, contentions) of the lock whose name starts with `name`.
fn lock(v: &Value, name: &str) -> (u64, u64) {
    let l = v["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no lock {name}"));
    (
        l["acquisitions"].as_u64().unwrap(),
        l["contentions"].as_u64().unwrap(),
    )
}

/// The variant `variant` of the shipped example `example` with the text
/// `from` (which must stand in it) replaced by `to` everywhere, run for
/// 6 ms after 1 ms from a fresh directory for `test`: the variant's JSON
/// result (exit status 0 asserted).
fn modified_example(test: &str, example: &str, (from, to): (&str, &str), variant: &str) -> Value {
    let shipped = format!("scenarios/examples/{example}.toml");
    let text = std::fs::read_to_string(common::repo(&shipped)).unwrap();
    assert!(text.contains(from), "`{from}` is not in {shipped}");
    let p = dir(test).join(format!("{example}.toml"));
    std::fs::write(&p, text.replace(from, to)).unwrap();
    let o = smpsim()
        .args(["run", "--format", "json", "--variant", variant])
        .args([
            "--set",
            "scenario.duration=6ms",
            "--set",
            "scenario.warmup=1ms",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["variants"][0]["variant"], variant,
        "{test}: the variant run"
    );
    v["variants"][0].clone()
}

/// `task_cpu()` is the wakee's CPU: wakers on one socket taking
/// `rq_lock[task_cpu()]` contend with each other and with the wakees'
/// CPUs' own switches; the wake list takes no remote lock, and neither
/// does the same hook written with `this_cpu()` (the wakers' own
/// runqueues, which nobody else takes).
#[test]
fn a_remote_wakeup_locks_the_wakees_runqueue() {
    let v = run_example("scenarios/examples/ttwu-rq-lock.toml", "6ms", "1ms");
    let remote = variant(&v, "remote_rq_lock");
    let wakelist = variant(&v, "wakelist");
    let (remote_acq, remote_con) = lock(remote, "rq_lock");
    let (list_acq, list_con) = lock(wakelist, "rq_lock");
    assert!(remote_con > 500, "remote rq->lock contentions {remote_con}");
    assert_eq!(
        list_con, 0,
        "the wake list takes no remote rq->lock: only each CPU its own"
    );
    let items = counter(remote, "items_made");
    assert!(counter(wakelist, "items_made") > items);
    assert!(
        remote.get("ttwu_queue").is_none(),
        "no wake list by default"
    );
    let q = &wakelist["ttwu_queue"];
    let n = |k: &str| q[k].as_u64().unwrap_or_else(|| panic!("{k} in {q}"));
    // Every wakeup here crosses sockets: all are queued, and all but those
    // still in flight at the end (at most one a consumer) are activated.
    assert!(n("queued") > 1_000, "{q}");
    assert!(n("queued").abs_diff(n("activated")) <= 16, "{q}");
    // Every remote wakeup took the wakee's lock; with the wake list the
    // wakee's CPU takes its own once per handler run, for all it found.
    assert!(
        remote_acq > list_acq + n("activated") - n("handler_runs"),
        "{remote_acq} vs {list_acq}, {items} items, {q}"
    );
    // One IPI for the wakeups queued before the handler ran.
    assert!(n("ipis") < n("queued"), "{q}");
    assert!(n("handler_runs") < n("activated"), "{q}");
    // The consumers' CPUs (14-17) pay the handlers in hardirq: at least
    // an interrupt entry an IPI (the preset's irq_entry_exit, 500 ns) and
    // ttwu_do_activate()'s cost.wakeup (300 ns) a wakee.
    let irq = |v: &Value| -> u64 {
        (14..18)
            .map(|c| v["cpus"][c]["irq"].as_u64().unwrap())
            .sum()
    };
    assert!(
        irq(wakelist) > irq(remote) + n("ipis") * 500 + n("activated") * 300,
        "irq {} vs {} ns, {q}",
        irq(wakelist),
        irq(remote)
    );

    let own = modified_example(
        "ttwu-this-cpu",
        "ttwu-rq-lock",
        (
            "spin_guard(rq_lock[task_cpu()])",
            "spin_guard(rq_lock[this_cpu()])",
        ),
        "remote_rq_lock",
    );
    let (_, own_con) = lock(&own, "rq_lock");
    assert_eq!(own_con, 0, "the wakers' own runqueues: no contention");
}

/// `next_mm() != prev_active_mm()` holds at a part of the switches
/// between two programs, at none between threads of one.
#[test]
fn a_switch_hook_sees_whether_the_mm_changes() {
    let v = run_example("scenarios/examples/switch-mm-hook.toml", "6ms", "1ms");
    let changes = variant(&v, "mm_changes");
    let every = variant(&v, "every_switch");
    let threads = variant(&v, "threads");
    let (c, e) = (
        counter(changes, "mm_switches"),
        counter(every, "mm_switches"),
    );
    assert!(counter(changes, "switches") > 1000);
    assert!(
        c > 0 && c < e * 9 / 10,
        "mm changes {c}, switches to an mm {e}"
    );
    assert!(e <= counter(every, "switches"));
    assert!(counter(threads, "switches") > 1000);
    assert_eq!(counter(threads, "mm_switches"), 0, "one process: no change");
}

/// The tick's hook wakes each CPU's worker at every tick.
#[test]
fn the_ticks_hook_wakes_a_worker_at_every_tick() {
    let v = run_example("scenarios/examples/tick-hook-wakeup.toml", "6ms", "1ms");
    let hook = counter(variant(&v, "tick_hook"), "worker_runs");
    // 4 CPUs, a tick a millisecond, 5 ms measured.
    assert!(
        (18..=20).contains(&hook),
        "{hook} runs woken by the tick's hook"
    );
    // Without the hook's up() nobody wakes them: the worker's own timer
    // is the other variant's.
    let silent = modified_example(
        "tick-hook-silent",
        "tick-hook-wakeup",
        ("    up(kick[this_cpu()]);", "    work(0ns);"),
        "tick_hook",
    );
    assert_eq!(counter(&silent, "worker_runs"), 0);
}
