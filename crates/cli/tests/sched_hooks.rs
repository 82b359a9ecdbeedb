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
    let dir = std::env::temp_dir().join(format!("smpsim-hooks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, line, says) in cases {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, &text).unwrap();
        let out_file = dir.join(format!("{name}.json"));
        let out = run_json(&path, &out_file);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(!out_file.exists(), "{name}: no result file on bad input");
        let loc = format!("{}:{line}:", path.display());
        assert!(err.contains(&loc), "{name}: expected {loc} in:\n{err}");
        assert!(err.contains(says), "{name}: expected {says:?} in:\n{err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
}

/// The switch hook's atomic is charged to the switching CPU (sys) and
/// bounces its line between CPUs; without the hook neither happens.
#[test]
fn a_switch_hook_is_charged_and_contended() {
    let dir = std::env::temp_dir().join(format!("smpsim-hooks-good-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let dir = std::env::temp_dir().join(format!("smpsim-hooks-enq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let out = smpsim()
        .args(["run"])
        .arg(repo("scenarios/examples/sched-hooks.toml"))
        .args([
            "--set",
            "scenario.duration=20ms",
            "--set",
            "scenario.warmup=5ms",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
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
    let dir = std::env::temp_dir().join(format!("smpsim-hooks-idle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let count = |v: &serde_json::Value, name: &str| -> i64 {
        v["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["count"]
            .as_i64()
            .unwrap()
    };
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
