//! `spin_is_locked(L)` in a condition: whether the spinlock is held when
//! the task reads its word, charged as a load of the word's line (as
//! `atomic_read()` is), evaluated only where `&&`/`||` reach it; bad
//! input as a located error, exit 2 and no result file.

mod common;

use common::{dir, refused_snippets, smpsim, stderr};
use serde_json::Value;

/// A spinlock `l` on the line of the atomic `w`, and `v`, one per CPU.
const OBJECTS: &str = "[objects]\nw = { type = \"atomic\", line = \"word\" }\n\
     l = { type = \"spinlock\", line = \"word\" }\n\
     v = { type = \"spinlock\", per_cpu = true }\n";

/// Two CPUs, 2 ms, [`OBJECTS`], then `rest`.
fn scenario(rest: &str) -> String {
    format!(
        "[scenario]\nname = \"c\"\nduration = \"2ms\"\n\
         [machine]\npreset = \"generic-x86\"\ntopology = {{ cores_per_llc = 2 }}\n{OBJECTS}{rest}"
    )
}

fn run(name: &str, text: &str) -> Value {
    let d = dir(&format!("spin-is-locked-{name}"));
    let p = d.join("s.toml");
    std::fs::write(&p, text).unwrap();
    let out = smpsim()
        .args(["run", p.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["variants"][0].clone()
}

fn counter(r: &Value, name: &str) -> u64 {
    common::find_counter(r, name).unwrap_or(0)
}

/// A holder on CPU 0 keeps `l` for 9 us of every 10; a reader on CPU 1
/// sees it held about 9 times in 10, never when nobody takes it.
#[test]
fn it_sees_the_lock_held_as_often_as_it_is() {
    let reader = "[[tasks]]\nname = \"reader\"\ncpus = \"1\"\ncount = 1\ncode = '''for (;;) {\n\
         syscall(x) { if (spin_is_locked(l)) { count(held); } else { count(free); } }\n\
         work(exp(700ns)); }'''\n";
    let holder = "[[tasks]]\nname = \"holder\"\ncpus = \"0\"\ncount = 1\ncode = '''for (;;) {\n\
         syscall(x) { spin_guard(l) { work(9us); } }\nwork(1us); }'''\n";
    let r = run("held", &scenario(&format!("{holder}{reader}")));
    let (held, free) = (counter(&r, "held"), counter(&r, "free"));
    let share = held as f64 / (held + free) as f64;
    assert!(held + free > 500, "{held} + {free}");
    assert!((0.8..0.97).contains(&share), "held {share:.3} of the reads");
    let r = run("never", &scenario(reader));
    assert_eq!(counter(&r, "held"), 0);
    assert!(counter(&r, "free") > 500);
}

/// The read is a load of the lock word's line: with a writer of that
/// line on the other CPU, a reader that asks `spin_is_locked()` each pass
/// takes fewer passes than one that does not (each ask a miss on the
/// written line) and pulls the line to itself (more bounces). Behind a
/// `||` whose left side holds, it is not evaluated: the same run as
/// without it.
#[test]
fn it_is_a_load_of_the_line_made_only_when_evaluated() {
    let writer = "[[tasks]]\nname = \"writer\"\ncpus = \"0\"\ncount = 1\ncode = '''for (;;) {\n\
         syscall(x) { atomic_inc(w); } work(200ns); }'''\n";
    let reader = |cond: &str| {
        format!(
            "[[tasks]]\nname = \"reader\"\ncpus = \"1\"\ncount = 1\nvars = {{ one = 1 }}\ncode = '''for (;;) {{\n\
             syscall(x) {{ if ({cond}) {{ count(held); }} }}\n\
             count(passes); work(200ns); }}'''\n"
        )
    };
    let base = run(
        "base",
        &scenario(&format!("{writer}{}", reader("one == 0"))),
    );
    let read = run(
        "read",
        &scenario(&format!("{writer}{}", reader("spin_is_locked(l)"))),
    );
    let skipped = run(
        "skipped",
        &scenario(&format!(
            "{writer}{}",
            reader("!(one == 1 || spin_is_locked(l))")
        )),
    );
    let passes = |r: &Value| counter(r, "passes");
    let bounces = |r: &Value| {
        r["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == "l")
            .map_or(0, |l| l["bounces"].as_u64().unwrap_or(0))
    };
    assert!(
        passes(&read) < passes(&base),
        "{} vs {}",
        passes(&read),
        passes(&base)
    );
    assert!(
        bounces(&read) > bounces(&base),
        "{} vs {}",
        bounces(&read),
        bounces(&base)
    );
    assert_eq!(passes(&skipped), passes(&base));
    assert_eq!(bounces(&skipped), bounces(&base));
    assert_eq!(counter(&read, "held"), 0);
}

/// Bad input: a located error at the mistake, exit 2, no result file.
#[test]
fn spin_is_locked_mistakes_are_refused_where_they_stand() {
    let task = |cond: &str| {
        format!(
            "{OBJECTS}[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''syscall(x) {{ if ({cond}) {{ work(1us); }} }}'''\n"
        )
    };
    let hook = format!(
        "{}[hooks]\nsched_tick = '''if (spin_is_locked(l)) {{ work(10ns); }}'''\n",
        task("1 == 1")
    );
    let hook = hook.replacen("syscall(x)", "work(1us); syscall(x)", 1);
    refused_snippets(
        "spin-is-locked-refused",
        &[
            (
                "not a spinlock",
                task("spin_is_locked(w)"),
                "w)",
                "`w` is not a spinlock; declared: `l`, `v`",
            ),
            (
                "no such object",
                task("spin_is_locked(m)"),
                "m)",
                "`m` is not a spinlock",
            ),
            (
                "per-CPU without an index",
                task("spin_is_locked(v)"),
                "v)",
                "`v` is per-CPU: say whose",
            ),
            (
                "an index on one lock",
                task("spin_is_locked(l[0])"),
                "0]",
                "`l` is one spinlock",
            ),
            (
                "a negative index",
                task("spin_is_locked(v[-1])"),
                "-1]",
                "index -1 is outside `v`",
            ),
            (
                "as a number",
                task("1 + spin_is_locked(l) == 2"),
                "spin_is_locked",
                "is a condition, not a number",
            ),
            (
                "in a hook",
                hook,
                "spin_is_locked",
                "not available in hooks (hook `sched_tick`)",
            ),
        ],
    );
}
