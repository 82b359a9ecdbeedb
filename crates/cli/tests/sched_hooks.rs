//! Issue 28 item 1 (hooks): kernel events run scenario code on the CPU
//! where they happen. Bad hooks are located errors (exit 2, no result
//! file); the example's two variants differ as its doc says.

mod common;

use common::{repo, smpsim};

const GOOD: &str = r#"[scenario]
name = "t"
duration = "2ms"
[machine]
preset = "generic-x86"
[objects]
a = { type = "atomic" }
m = { type = "mutex" }
[functions]
f = '''mutex_lock(m); mutex_unlock(m);'''
[[tasks]]
name = "w"
per_cpu = 2
code = '''for (;;) { work(5us); sleep(5us); }'''
[hooks]
sched_switch = '''atomic_inc(a);'''
"#;

fn run_json(path: &std::path::Path, out_file: &std::path::Path) -> std::process::Output {
    smpsim()
        .args(["run", path.to_str().unwrap(), "--format", "json", "-o"])
        .arg(out_file)
        .output()
        .unwrap()
}

/// Writes `text` as `NAME.toml` in `dir`, runs it to JSON (it must
/// succeed) and returns its first variant's result.
fn first_variant(dir: &std::path::Path, name: &str, text: &str) -> serde_json::Value {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let out_file = dir.join(format!("{name}.json"));
    let out = run_json(&path, &out_file);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    v["variants"][0].clone()
}

#[test]
fn bad_hooks_are_located_and_exit_2_without_output() {
    let cases = [
        (
            "unknown-event",
            GOOD.replace("sched_switch =", "sched_swtich ="),
            16,
            "sched_tick",
        ),
        (
            "sleeping-op",
            GOOD.replace("'''atomic_inc(a);'''", "'''work(1us); sleep(1us);'''"),
            16,
            "scheduling while atomic",
        ),
        (
            "mutex",
            GOOD.replace(
                "'''atomic_inc(a);'''",
                "'''mutex_lock(m); mutex_unlock(m);'''",
            ),
            16,
            "scheduling while atomic",
        ),
        (
            "through-a-function",
            GOOD.replace("'''atomic_inc(a);'''", "'''f();'''"),
            16,
            "atomic context",
        ),
    ];
    // The same scenario with a spinlock `s` (its hooks one line lower).
    let with_spinlock = |hooks: &str| {
        GOOD.replace(
            "m = { type = \"mutex\" }",
            "m = { type = \"mutex\" }\ns = { type = \"spinlock\" }",
        )
        .replace("sched_switch = '''atomic_inc(a);'''", hooks)
    };
    let cases = cases.into_iter().chain([
        (
            "spinlock-in-idle-enter",
            with_spinlock("idle_enter = '''spin_lock(s); spin_unlock(s);'''"),
            17,
            "is not allowed in a `idle_enter` hook yet",
        ),
        (
            "spinlock-in-tg-hook",
            with_spinlock("update_tg_load_avg = '''spin_lock(s); spin_unlock(s);'''"),
            17,
            "is not allowed in a `update_tg_load_avg` hook yet",
        ),
        (
            "unbalanced",
            with_spinlock("sched_switch = '''spin_lock(s); work(1us);'''"),
            17,
            "does not release it",
        ),
        (
            "unlock-not-taken",
            with_spinlock("sched_tick = '''spin_unlock(s);'''"),
            17,
            "never takes it",
        ),
        (
            "unlocked-twice",
            with_spinlock("sched_switch = '''spin_lock(s); spin_unlock(s); spin_unlock(s);'''"),
            17,
            "without taking it first",
        ),
    ]);
    common::refused_variants(&common::dir("hooks"), GOOD, cases);
}

/// The switch hook's atomic is charged to the switching CPU (sys) and
/// bounces its line between CPUs; without the hook neither happens.
#[test]
fn a_switch_hook_is_charged_and_contended() {
    let dir = common::dir("hooks-good");
    let run = |name: &str, text: &str| first_variant(&dir, name, text);
    let with = run("with", GOOD);
    let without = run(
        "without",
        &GOOD.replace("[hooks]\nsched_switch = '''atomic_inc(a);'''\n", ""),
    );
    let bounces = |v: &serde_json::Value| v["locks"][0]["bounces"].as_u64().unwrap();
    assert!(bounces(&with) > 1000, "{}", with["locks"]);
    assert_eq!(bounces(&without), 0);
    let sys = |v: &serde_json::Value| -> u64 {
        v["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["sys"].as_u64().unwrap())
            .sum()
    };
    assert!(
        sys(&with) > sys(&without),
        "the hook's time is the switching CPU's sys"
    );
}

/// A wakeup's enqueue hook runs on the waking CPU: here the hrtimer
/// interrupt that ends each sleep, so its time is irq.
#[test]
fn an_enqueue_hook_runs_at_each_wakeup_in_the_waking_context() {
    let dir = common::dir("hooks-enq");
    let mut irq = Vec::new();
    for (name, hook) in [
        ("none", ""),
        (
            "enq",
            "enqueue_task_fair = '''work(2us); atomic_inc(a);'''\n",
        ),
    ] {
        let text = GOOD.replace("sched_switch = '''atomic_inc(a);'''\n", hook);
        let v = &first_variant(&dir, name, &text);
        let bounces = v["locks"][0]["bounces"].as_u64().unwrap();
        assert_eq!(bounces > 0, name == "enq", "{name}: {}", v["locks"]);
        let total: u64 = v["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["irq"].as_u64().unwrap())
            .sum();
        irq.push(total);
    }
    assert!(
        irq[1] > irq[0],
        "the hook lengthens the timer interrupt: {irq:?}"
    );
}

#[test]
fn the_example_folds_per_cpu_contributions_at_the_tick() {
    let v = common::run_example("scenarios/examples/sched-hooks.toml", "20ms", "5ms");
    let (every, rated) = (&v["variants"][0], &v["variants"][1]);
    assert_eq!(every["variant"], "every_update");
    assert_eq!(rated["variant"], "ratelimited");
    let shared = |r: &serde_json::Value| r["locks"][0]["bounces"].as_u64().unwrap();
    let local = |r: &serde_json::Value| r["locks"][1]["bounces"].as_u64().unwrap();
    assert!(
        shared(every) > 10 * shared(rated),
        "{} vs {}",
        shared(every),
        shared(rated)
    );
    assert!(shared(rated) > 0, "the tick still adds to the shared line");
    assert_eq!(local(rated), 0, "per-CPU lines stay on their CPU");
    let split = |r: &serde_json::Value, k: &str| -> u64 {
        r["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c[k].as_u64().unwrap())
            .sum()
    };
    // The shared line's transfers lengthen the switches (sys) and the
    // timer interrupts whose wakeups enqueue (irq).
    assert!(split(every, "sys") > split(rated, "sys"));
    assert!(split(every, "irq") > split(rated, "irq"));
}

/// `smpsim fmt` leaves the example (written as code) as it is, and its
/// TOML form compiles to the same program.
#[test]
fn fmt_round_trips_the_example() {
    let path = repo("scenarios/examples/sched-hooks.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let out = smpsim()
        .args(["fmt"])
        .arg(&path)
        .args(["--to", "code"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
    let out = smpsim()
        .args(["fmt"])
        .arg(&path)
        .args(["--to", "toml"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `idle_enter` and `idle_exit` run once per idle period each (a CPU may
/// still be idle, or not yet have idled, at the ends of the run), and
/// `set_task_cpu` once per migration: none when nothing may move.
#[test]
fn idle_and_migration_hooks_run_at_their_events() {
    let dir = common::dir("hooks-idle");
    let text = r#"[scenario]
name = "t"
duration = "20ms"
[machine]
preset = "generic-x86"
[objects]
nohz_nr_cpus = { type = "atomic" }
[[tasks]]
name = "w"
count = 40
code = '''for (;;) { work(5us); sleep(20us); }'''
[hooks]
idle_enter = '''count(idle_in); atomic_inc(nohz_nr_cpus);'''
idle_exit = '''count(idle_out); atomic_dec(nohz_nr_cpus);'''
set_task_cpu = '''count(moved);'''
"#;
    let run = |name: &str, text: &str| first_variant(&dir, name, text);
    let count = |v: &serde_json::Value, name: &str| common::counter(v, name) as i64;
    let v = run("moving", text);
    let nr_cpus = v["nr_cpus"].as_i64().unwrap();
    let (idle_in, idle_out) = (count(&v, "idle_in"), count(&v, "idle_out"));
    assert!(idle_in > 1000, "{idle_in}");
    assert!(
        (idle_in - idle_out).abs() <= nr_cpus,
        "{idle_in} vs {idle_out}"
    );
    assert!(count(&v, "moved") > 0, "40 threads on 16 CPUs move");
    assert!(
        v["locks"][0]["bounces"].as_u64().unwrap() > 1000,
        "{}",
        v["locks"]
    );

    let pinned = run(
        "pinned",
        &text.replace("count = 40", "count = 40\naffinity = \"pinned\""),
    );
    assert_eq!(count(&pinned, "moved"), 0, "pinned tasks never move");
}

/// A `sched_tick` hook and the tasks take one spinlock: the hook waits
/// for the tasks' holds (lock_stat counts its contentions), the handler
/// lasts until it is done (irq time), and every CPU's time adds up.
#[test]
fn a_tick_hook_spinlock_is_contended_with_tasks() {
    let dir = common::dir("hooks-tick");
    let text = |hook: &str| {
        format!(
            r#"[scenario]
name = "t"
duration = "20ms"
warmup = "2ms"
[machine]
preset = "generic-x86"
[objects]
s = {{ type = "spinlock" }}
[[tasks]]
name = "w"
per_cpu = 1
code = '''for (;;) {{ syscall(x) {{ spin_lock_irqsave(s); work(2us); spin_unlock_irqrestore(s); }} count(task_locks); work(exp(20us)); }}'''
[hooks]
sched_tick = '''{hook}'''
"#
        )
    };
    let with = first_variant(
        &dir,
        "with",
        &text("count(ticks); spin_lock(s); work(1us); spin_unlock(s);"),
    );
    let without = first_variant(&dir, "without", &text("count(ticks); work(1us);"));
    let lock = |v: &serde_json::Value, k: &str| v["locks"][0][k].as_u64().unwrap();
    let count = common::counter;
    // Every busy CPU ticks once a millisecond, and each tick's hook takes
    // the lock once: the acquisitions are the tasks' and the ticks'.
    let nr_cpus = with["nr_cpus"].as_u64().unwrap();
    let ticks = count(&with, "ticks");
    assert!(ticks.abs_diff(18 * nr_cpus) <= nr_cpus, "{ticks} ticks");
    let takers = ticks + count(&with, "task_locks");
    assert!(
        lock(&with, "acquisitions").abs_diff(takers) <= 2 * nr_cpus,
        "{} vs {takers}",
        lock(&with, "acquisitions")
    );
    assert!(
        lock(&with, "contentions") > lock(&without, "contentions"),
        "{}",
        with["locks"]
    );
    let sum = |v: &serde_json::Value, k: &str| -> u64 {
        v["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c[k].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(
        sum(&with, "irq") > sum(&without, "irq"),
        "the wait is the handler's"
    );
    for v in [&with, &without] {
        let total: u64 = ["user", "sys", "spin", "irq", "softirq", "idle"]
            .iter()
            .map(|k| sum(v, k))
            .sum();
        assert_eq!(total, 18_000_000 * nr_cpus, "CPU time adds up");
    }
}

/// A task takes the lock with IRQs on and the tick's hook takes it in
/// hardirq context: lockdep's inconsistent-lock-state report, as for a
/// cross-CPU call handler.
#[test]
fn lockdep_marks_a_tick_hook_lock_as_hardirq() {
    let dir = common::dir("hooks-lockdep");
    let text = r#"[scenario]
name = "t"
duration = "5ms"
[machine]
preset = "generic-x86"
[kernel]
lockdep = true
[objects]
s = { type = "spinlock" }
[[tasks]]
name = "w"
per_cpu = 1
code = '''for (;;) { spin_lock(s); work(1us); spin_unlock(s); work(exp(20us)); }'''
[hooks]
sched_tick = '''spin_lock(s); spin_unlock(s);'''
"#;
    let v = first_variant(&dir, "irq-unsafe", text);
    let findings = v["findings"].to_string();
    assert!(
        findings.contains("inconsistent") && findings.contains("sched_tick hook"),
        "{findings}"
    );
}

/// The example's three variants differ as docs/sched-hooks.md says.
#[test]
fn the_locks_example_shows_its_counters() {
    let v = common::run_example("scenarios/examples/sched-hooks-locks.toml", "8ms", "2ms");
    let vs = &v["variants"];
    let (global, percpu, unlimited) = (&vs[0], &vs[1], &vs[2]);
    assert_eq!(global["variant"], "global_lock");
    assert_eq!(percpu["variant"], "percpu_lock");
    assert_eq!(unlimited["variant"], "no_ratelimit");
    let stat = |r: &serde_json::Value, i: usize, k: &str| r["locks"][i][k].as_u64().unwrap();
    // One lock for every CPU's switches: most acquisitions wait.
    assert!(stat(global, 0, "contentions") * 2 > stat(global, 0, "acquisitions"));
    // One per CPU: none does, and the lines stay home.
    assert!(stat(percpu, 1, "acquisitions") > 0);
    assert_eq!(stat(percpu, 1, "contentions"), 0);
    assert_eq!(stat(percpu, 1, "bounces"), 0);
    // Without the rate limit tg->load_avg's line moves several times more.
    assert!(stat(unlimited, 2, "bounces") > 3 * stat(percpu, 2, "bounces"));
    let switches = |r: &serde_json::Value| -> u64 {
        r["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["nr_switches"].as_u64().unwrap())
            .sum()
    };
    assert!(switches(percpu) > 2 * switches(global));
}

/// `smpsim fmt` leaves the locks example as it is, and converts it.
#[test]
fn fmt_round_trips_the_locks_example() {
    let path = repo("scenarios/examples/sched-hooks-locks.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    for to in ["code", "toml"] {
        let out = smpsim()
            .args(["fmt"])
            .arg(&path)
            .args(["--to", to])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if to == "code" {
            assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
        }
    }
}

/// `update_tg_load_avg` runs for tasks in a cgroup at most once a
/// millisecond per CPU (the kernel's rate limit), at every call without
/// it; `update_cfs_group` at every enqueue, dequeue and tick; neither for
/// tasks of the root group.
#[test]
fn group_hooks_run_for_cgroup_tasks_with_the_rate_limit() {
    let dir = common::dir("hooks-tg");
    let text = |extra: &str| {
        format!(
            r#"[scenario]
name = "t"
duration = "10ms"
[machine]
preset = "generic-x86"
{extra}
[objects]
tg_load_avg = {{ type = "atomic" }}
[[cgroup]]
name = "g"
[[tasks]]
name = "w"
per_cpu = 2
cgroup = "g"
code = '''for (;;) {{ work(exp(10us)); count(sleeps); sleep(exp(10us)); }}'''
[hooks]
update_tg_load_avg = '''count(tg_updates); atomic_inc(tg_load_avg);'''
update_cfs_group = '''count(shares); atomic_read(tg_load_avg);'''
"#
        )
    };
    let count = |v: &serde_json::Value, name: &str| common::find_counter(v, name).unwrap_or(0);
    let limited = first_variant(&dir, "limited", &text(""));
    let nr_cpus = limited["nr_cpus"].as_u64().unwrap();
    // At most one update per CPU per millisecond (and at least one: every
    // CPU keeps switching).
    let updates = count(&limited, "tg_updates");
    assert!(updates <= 11 * nr_cpus, "{updates}");
    assert!(updates >= 9 * nr_cpus, "{updates}");
    // update_cfs_group: a dequeue per sleep and an enqueue per wakeup.
    let sleeps = count(&limited, "sleeps");
    assert!(count(&limited, "shares") >= 2 * sleeps - 2 * nr_cpus * 2);
    let unlimited = first_variant(
        &dir,
        "unlimited",
        &text("[kernel]\ntg_load_avg_ratelimit = \"0ns\""),
    );
    // Every call: enqueue, dequeue and pick of each sleep cycle, at least.
    let sleeps = count(&unlimited, "sleeps");
    assert!(count(&unlimited, "tg_updates") >= 3 * sleeps - 3 * nr_cpus * 2);
    assert!(count(&unlimited, "tg_updates") > 20 * updates);
    let root = first_variant(&dir, "root", &text("").replace("cgroup = \"g\"\n", ""));
    assert_eq!(count(&root, "tg_updates"), 0);
    assert_eq!(count(&root, "shares"), 0);
}

/// Item 1 of issue 41: `try_to_wake_up` is an event, and a wakeup's hooks
/// may take spinlocks; its mistakes are located (line and column), exit
/// 2, no result file.
#[test]
fn wakeup_hook_mistakes_are_located_with_their_column() {
    let with_spinlock = |hooks: &str| {
        GOOD.replace(
            "m = { type = \"mutex\" }",
            "m = { type = \"mutex\" }\ns = { type = \"spinlock\" }",
        )
        .replace("sched_switch = '''atomic_inc(a);'''", hooks)
    };
    let cases = [
        (
            "misspelt",
            with_spinlock("try_to_wakeup = '''spin_lock(s); spin_unlock(s);'''"),
            17,
            1,
            "try_to_wake_up",
        ),
        (
            "sleeps",
            with_spinlock("try_to_wake_up = '''spin_lock(s); mutex_lock(m);'''"),
            17,
            35,
            "scheduling while atomic",
        ),
        (
            "keeps-the-lock",
            with_spinlock("set_task_cpu = '''spin_lock(s); work(1us);'''"),
            17,
            16,
            "does not release it",
        ),
    ];
    let dir = common::dir("hooks-ttwu");
    for (name, text, line, col, says) in cases {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, &text).unwrap();
        common::refused_at(name, &path, common::At::LineCol(line, col), says);
    }
}

/// A `try_to_wake_up` hook that spins on a lock a task holds holds up
/// the waking task: the producer's rate falls, the lock's contentions
/// rise, and every CPU's time still adds up.
#[test]
fn a_try_to_wake_up_spinlock_holds_up_the_waker() {
    let dir = common::dir("hooks-ttwu-run");
    let text = |hook: &str| {
        format!(
            r#"[scenario]
name = "t"
duration = "20ms"
warmup = "2ms"
[machine]
preset = "generic-x86"
[kernel]
load_balance = false
[objects]
items = {{ type = "semaphore" }}
s = {{ type = "spinlock" }}
[[tasks]]
name = "producer"
per_cpu = 1
cpus = [0]
code = '''for (;;) {{ up(items); count(ups); work(5us); }}'''
[[tasks]]
name = "consumer"
per_cpu = 1
cpus = [1]
code = '''for (;;) {{ down(items); }}'''
[[tasks]]
name = "holder"
per_cpu = 1
cpus = [2]
code = '''for (;;) {{ syscall(x) {{ spin_lock_irqsave(s); work(20us); spin_unlock_irqrestore(s); }} work(1us); }}'''
[hooks]
try_to_wake_up = '''{hook}'''
"#
        )
    };
    let with = first_variant(&dir, "with", &text("spin_lock(s); spin_unlock(s);"));
    let without = first_variant(&dir, "without", &text("work(10ns);"));
    let count = |v: &serde_json::Value| common::counter(v, "ups");
    assert!(
        count(&with) * 2 < count(&without),
        "{} vs {}",
        count(&with),
        count(&without)
    );
    let contentions = |v: &serde_json::Value| v["locks"][1]["contentions"].as_u64().unwrap();
    assert_eq!(contentions(&without), 0);
    assert!(contentions(&with) > 500, "{}", with["locks"]);
}
