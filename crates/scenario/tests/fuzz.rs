//! A fuzz harness over the shipped scenarios: token-level mutations
//! (delete, duplicate, swap in another token of the file, numbers set to
//! extremes, also inside duration strings) of every file in `scenarios/`,
//! each then parsed, compiled in every variant, and simulated briefly.
//! Nothing may panic, hang or abort; errors must render and be located;
//! and every run must make sense ([`judge`]): each CPU's time adds up to
//! the time simulated, histograms hold no more time than the run had,
//! and every number of the JSON result is finite.
//!
//! The default is a few cases so the test suite stays fast;
//! `SMPSIM_FUZZ_CASES=N` runs N per shipped file (docs/fuzzing.md records
//! the largest run).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const SHIPPED: &[(&str, &str)] = &[
    (
        "hotplug-smt.toml",
        include_str!("../../../scenarios/hotplug-smt.toml"),
    ),
    (
        "ipi-preempt.toml",
        include_str!("../../../scenarios/ipi-preempt.toml"),
    ),
    (
        "lazy-tlb.toml",
        include_str!("../../../scenarios/lazy-tlb.toml"),
    ),
    (
        "lock-scaling.toml",
        include_str!("../../../scenarios/lock-scaling.toml"),
    ),
    (
        "membarrier-percpu.toml",
        include_str!("../../../scenarios/membarrier-percpu.toml"),
    ),
    (
        "mm-lifetime.toml",
        include_str!("../../../scenarios/mm-lifetime.toml"),
    ),
    (
        "slow-mutex.toml",
        include_str!("../../../scenarios/slow-mutex.toml"),
    ),
    (
        "mutex-contention.toml",
        include_str!("../../../scenarios/examples/mutex-contention.toml"),
    ),
    (
        "mmap-lock.toml",
        include_str!("../../../scenarios/examples/mmap-lock.toml"),
    ),
    (
        "abba.toml",
        include_str!("../../../scenarios/checks/abba.toml"),
    ),
    (
        "irq-lock.toml",
        include_str!("../../../scenarios/checks/irq-lock.toml"),
    ),
    (
        "membarrier.toml",
        include_str!("../../../scenarios/checks/membarrier.toml"),
    ),
    (
        "race.toml",
        include_str!("../../../scenarios/checks/race.toml"),
    ),
];

/// Numbers that break naive arithmetic, then ordinary ones (off by one,
/// small, large), which keep more documents valid so they reach the run.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1e308",
    "nan",
    "0.5",
    "1",
    "1",
    "2",
    "3",
    "7",
    "33",
    "100",
    "1000",
    "100000",
];

/// Cases per shipped file: small by default, `SMPSIM_FUZZ_CASES` for more.
fn cases() -> u32 {
    std::env::var("SMPSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// Byte ranges of the file's tokens: quoted strings, numbers, words,
/// single punctuation characters (comments and blanks are not tokens).
fn tokens(text: &str) -> Vec<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += 1;
            }
            i = (i + 1).min(b.len());
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_-.".contains(&b[i])) {
                i += 1;
            }
        } else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
        out.push(start..i);
    }
    out
}

/// One edit: `kind` picks what, `a` and `b` pick tokens (modulo their
/// count), `x` an extreme number.
#[derive(Clone, Debug)]
struct Edit {
    kind: u8,
    a: usize,
    b: usize,
    x: usize,
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut s = text.to_string();
    for e in edits {
        let toks = tokens(&s);
        if toks.is_empty() {
            break;
        }
        // Most edits change a value that holds a number (the document
        // stays well-formed TOML and reaches the compiler and the kernel);
        // the rest break the document's shape.
        let kind = match e.kind % 20 {
            0..=1 => 0,
            2..=3 => 1,
            4..=6 => 2,
            7..=12 => 3,
            13..=18 => 4,
            _ => 5,
        };
        let numeric: Vec<_> = toks
            .iter()
            .filter(|t| s[(*t).clone()].bytes().any(|c| c.is_ascii_digit()))
            .cloned()
            .collect();
        let t = if (kind == 3 || kind == 4) && !numeric.is_empty() {
            numeric[e.a % numeric.len()].clone()
        } else {
            toks[e.a % toks.len()].clone()
        };
        let other = s[toks[e.b % toks.len()].clone()].to_string();
        let extreme = EXTREMES[e.x % EXTREMES.len()];
        let replacement = match kind {
            0 => String::new(),
            1 => format!("{} {}", &s[t.clone()], &s[t.clone()]),
            2 => other,
            3 => extreme.to_string(),
            4 => {
                // A number inside the token (a duration, a CPU list) made extreme.
                let tok = &s[t.clone()];
                match tok.find(|c: char| c.is_ascii_digit()) {
                    Some(d) => {
                        let end = tok[d..]
                            .find(|c: char| !c.is_ascii_digit())
                            .map_or(tok.len(), |n| d + n);
                        format!(
                            "{}{}{}",
                            &tok[..d],
                            extreme.trim_start_matches('-'),
                            &tok[end..]
                        )
                    }
                    None => tok.to_string(),
                }
            }
            _ => {
                // A whole line dropped.
                let start = s[..t.start].rfind('\n').map_or(0, |i| i + 1);
                let end = s[t.start..].find('\n').map_or(s.len(), |i| t.start + i);
                s.replace_range(start..end, "");
                continue;
            }
        };
        s.replace_range(t, &replacement);
    }
    s
}

/// How far the mutated texts got: parsed, variants compiled, runs.
static PARSED: AtomicU64 = AtomicU64::new(0);
static COMPILED: AtomicU64 = AtomicU64::new(0);
static SIMULATED: AtomicU64 = AtomicU64::new(0);
/// Errors (load or compile) rendered, and those without a place.
static ERRORS: AtomicU64 = AtomicU64::new(0);
static UNLOCATED: AtomicU64 = AtomicU64::new(0);
/// Runs whose result broke an invariant of [`judge`].
static VIOLATIONS: AtomicU64 = AtomicU64::new(0);
/// Cases slower than [`HANG`]: counted as hangs.
static HANGS: AtomicU64 = AtomicU64::new(0);
/// A case (parse, compile and up to 2 ms simulated per variant) that takes
/// longer than this, in a debug build, is a hang.
const HANG: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether an error says where it is: a line and column of the scenario
/// (not of a preset the mutations never touch), or a `--set` option.
fn located(e: &smpsim_scenario::ScenarioError) -> bool {
    use smpsim_scenario::Location;
    match &e.location {
        Location::Text { name, line, .. } => *line >= 1 && !name.starts_with('<'),
        Location::Set { .. } => true,
        Location::File { .. } => false,
    }
}

/// Counts an error and asserts it is located, unless `SMPSIM_FUZZ_COUNT`
/// asks for counting only (a long run reports every kind of problem).
fn error(name: &str, e: &smpsim_scenario::ScenarioError) {
    let text = e.to_string();
    ERRORS.fetch_add(1, Relaxed);
    if !located(e) {
        UNLOCATED.fetch_add(1, Relaxed);
        if !count_only() {
            panic!("{name}: an error without a place in the scenario:\n{text}");
        }
        eprintln!("unlocated: {text}");
    }
}

fn count_only() -> bool {
    std::env::var_os("SMPSIM_FUZZ_COUNT").is_some()
}

/// What must hold of any run's result, as a list of what does not.
fn judge(spec: &smpsim_kernel::Spec, r: &smpsim_kernel::RunResult) -> Vec<String> {
    let mut bad = Vec::new();
    let simulated = r.stats.simulated_ns;
    let measured = simulated.saturating_sub(spec.warmup);
    // Each CPU's time split (user, sys, spin, irq, idle) is 100% of the
    // time simulated, with or without the warm-up.
    for c in &r.cpus {
        let t = c.times.total();
        if t != simulated && t != measured {
            bad.push(format!(
                "CPU {}: times add up to {t} ns, the run simulated {simulated} ns ({measured} measured)",
                c.cpu
            ));
        }
        for (what, v) in [
            ("max_preempt_off_ns", c.max_preempt_off_ns),
            ("max_irq_off_ns", c.max_irq_off_ns),
        ] {
            if v > simulated {
                bad.push(format!("CPU {}: {what} {v} > simulated {simulated}", c.cpu));
            }
        }
    }
    // A histogram's samples are times within the run: no sample longer
    // than the run, and no more time than every task's whole run.
    let tasks: u64 = spec
        .task_groups
        .iter()
        .map(|g| g.placement.len() as u64)
        .sum::<u64>()
        .max(1);
    let budget = tasks as f64 * simulated as f64 * f64::from(r.replicas.max(1));
    for h in &r.histograms {
        if h.count > 0 && h.max > simulated {
            bad.push(format!(
                "histogram {}: a sample of {} ns in a run of {simulated} ns",
                h.name, h.max
            ));
        }
        if h.total > budget * 1.001 {
            bad.push(format!(
                "histogram {}: {} ns of samples from {tasks} tasks in {simulated} ns",
                h.name, h.total
            ));
        }
    }
    // A finding that stops the run ends it there: the run's end is dated
    // at it, so nothing after it is counted (issue 37, item 5).
    for f in &r.findings {
        let stops = matches!(f.detector.as_str(), "divide_error" | "bad_percpu_index")
            || (f.detector == "soft_lockup" && f.message.contains("the run stops"));
        if stops && f.time_ns != simulated {
            bad.push(format!(
                "{} at {} ns stops the run, which went on to {simulated} ns",
                f.detector, f.time_ns
            ));
        }
    }
    // A spinning lock's waiters wait at least as long as they spin:
    // lock_stat books (write and read side) every wait its spin-total
    // counts, waits still going on at the end included (item 9).
    for l in &r.locks {
        let spinning = spec.objects.iter().any(|o| {
            o.name == l.name && matches!(o.kind, smpsim_kernel::spec::ObjectKind::Spinlock { .. })
        });
        let wait = l.wait_total_ns + l.read.as_ref().map_or(0, |r| r.wait_total_ns);
        if spinning && wait < l.spin_total_ns {
            bad.push(format!(
                "lock {}: {wait} ns of wait booked for {} ns of spinning",
                l.name, l.spin_total_ns
            ));
        }
    }
    // A group's totals are the sum of its tasks' times, saturated (and
    // flagged) rather than wrapped (item 10).
    for g in &r.task_groups {
        if g.per_task.len() != g.tasks as usize {
            continue;
        }
        let sum = |f: fn(&smpsim_kernel::task::TaskTimes) -> u64| -> u128 {
            g.per_task.iter().map(|t| u128::from(f(&t.times))).sum()
        };
        let fields: [(&str, u64, u128); 6] = [
            ("user", g.total.user, sum(|t| t.user)),
            ("sys", g.total.sys, sum(|t| t.sys)),
            ("spin", g.total.spin, sum(|t| t.spin)),
            ("sleep", g.total.sleep, sum(|t| t.sleep)),
            ("runnable", g.total.runnable, sum(|t| t.runnable)),
            ("irq", g.total.irq, sum(|t| t.irq)),
        ];
        let mut saturated = false;
        for (what, total, sum) in fields {
            let want = sum.min(u128::from(u64::MAX));
            saturated |= sum > u128::from(u64::MAX);
            if u128::from(total) != want {
                bad.push(format!(
                    "group {}: total {what} {total} ns, its tasks' sum {sum} ns",
                    g.name
                ));
            }
        }
        if saturated != g.total_saturated {
            bad.push(format!(
                "group {}: total_saturated {} for a sum that {} u64",
                g.name,
                g.total_saturated,
                if saturated { "exceeds" } else { "fits" }
            ));
        }
    }
    // Locks are balanced at every return to user space: loading refuses a
    // syscall that can return holding one (item 8), so lockdep's report
    // never comes, but for trylocks, which loading does not follow.
    let trylocks = spec.task_groups.iter().any(|g| {
        g.program.ops.iter().any(|op| {
            matches!(
                op,
                smpsim_kernel::program::Op::Locking(
                    smpsim_kernel::program::LockingOp::RwsemTrylock { .. }
                )
            )
        })
    });
    if let Some(f) = r
        .finding("lock_held_returning_to_user")
        .filter(|_| !trylocks)
    {
        bad.push(format!(
            "a lock held at a return to user space: {}",
            f.message
        ));
    }
    // A grace period never ends through an IRQ-off or preempt-off section
    // of a CPU it waits for (item 7): a kernel invariant, checked as the
    // run goes (the `invariants` feature; a violation panics).
    // Every number of the JSON report is finite (serde_json writes NaN and
    // infinity as null; no field of a result is otherwise null).
    fn walk(v: &serde_json::Value, path: &str, bad: &mut Vec<String>) {
        match v {
            serde_json::Value::Null => bad.push(format!("{path}: not a finite number")),
            serde_json::Value::Number(n) if n.as_f64().is_some_and(|x| !x.is_finite()) => {
                bad.push(format!("{path}: {n}"))
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{path}[{i}]"), bad);
                }
            }
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    // An optional field (a task that has not exited).
                    if k == "wall_ns" && x.is_null() {
                        continue;
                    }
                    walk(x, &format!("{path}.{k}"), bad);
                }
            }
            _ => {}
        }
    }
    match serde_json::to_value(r) {
        Ok(v) => walk(&v, "", &mut bad),
        Err(e) => bad.push(format!("the result does not serialize: {e}")),
    }
    bad
}

/// Parses, compiles every variant and runs each briefly. Machines too big
/// to simulate quickly are only compiled.
fn exercise(name: &str, text: String) {
    let started = std::time::Instant::now();
    exercise_inner(name, text);
    if started.elapsed() > HANG {
        HANGS.fetch_add(1, Relaxed);
    }
}

fn exercise_inner(name: &str, text: String) {
    let scn = match smpsim_scenario::parse(Path::new(name), text.clone()) {
        Ok(s) => s,
        Err(e) => {
            error(name, &e);
            return;
        }
    };
    PARSED.fetch_add(1, Relaxed);
    let variants: Vec<Option<String>> = if scn.variants.is_empty() {
        vec![None]
    } else {
        scn.variant_names().map(|v| Some(v.to_string())).collect()
    };
    for v in variants {
        let mut spec = match scn.compile(v.as_deref(), &[]) {
            Ok(s) => s,
            Err(e) => {
                error(name, &e);
                continue;
            }
        };
        COMPILED.fetch_add(1, Relaxed);
        let tasks: usize = spec.task_groups.iter().map(|g| g.placement.len()).sum();
        if spec.machine.nr_cpus() > 1024 || tasks > 20_000 {
            continue;
        }
        spec.duration = spec.duration.min(2_000_000);
        spec.warmup = spec.warmup.min(spec.duration / 2);
        spec.max_events = Some(spec.max_events.unwrap_or(u64::MAX).min(20_000));
        spec.replicas = 1;
        SIMULATED.fetch_add(1, Relaxed);
        let r = smpsim_kernel::simulate(&spec);
        assert!(r.stats.simulated_ns <= spec.duration, "{name} {v:?}");
        let bad = judge(&spec, &r);
        if !bad.is_empty() {
            VIOLATIONS.fetch_add(1, Relaxed);
            let what = format!(
                "{name} {v:?}: the result breaks an invariant:\n  {}\n--- scenario:\n{text}",
                bad.join("\n  ")
            );
            if !count_only() {
                panic!("{what}");
            }
            eprintln!("{}", what.lines().take(4).collect::<Vec<_>>().join("\n"));
        }
    }
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    proptest::collection::vec(
        (any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(kind, a, b, x)| Edit { kind, a, b, x }),
        1..3,
    )
}

#[test]
fn mutated_shipped_scenarios_never_panic() {
    let n = cases();
    for (name, text) in SHIPPED {
        // `cargo test` (CI) runs the same cases every time; a run by hand
        // with SMPSIM_FUZZ_CASES draws new ones (or PROPTEST_RNG_SEED's).
        let rng_seed = match std::env::var_os("SMPSIM_FUZZ_CASES") {
            None => proptest::test_runner::RngSeed::Fixed(25),
            Some(_) => Config::default().rng_seed,
        };
        let mut runner = TestRunner::new(Config {
            cases: n,
            failure_persistence: None,
            rng_seed,
            ..Config::default()
        });
        runner
            .run(&edits(), |e| {
                exercise(name, mutate(text, &e));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    eprintln!(
        "fuzz: {} mutated files, {} parsed, {} variants compiled, {} simulated; \
         0 panics, {} hangs (over {HANG:?}), {} invariant violations, {} errors of which {} unlocated",
        u64::from(n) * SHIPPED.len() as u64,
        PARSED.load(Relaxed),
        COMPILED.load(Relaxed),
        SIMULATED.load(Relaxed),
        HANGS.load(Relaxed),
        VIOLATIONS.load(Relaxed),
        ERRORS.load(Relaxed),
        UNLOCATED.load(Relaxed),
    );
    assert_eq!(HANGS.load(Relaxed), 0, "cases took over {HANG:?}");
    assert_eq!(VIOLATIONS.load(Relaxed), 0, "results broke invariants");
    assert_eq!(UNLOCATED.load(Relaxed), 0, "errors without a place");
}

/// The unmutated files pass through the same harness (and the tokenizer
/// sees every part of them).
#[test]
fn shipped_scenarios_run_in_the_harness() {
    for (name, text) in SHIPPED {
        let toks = tokens(text);
        assert!(toks.len() > 50, "{name}");
        exercise(name, text.to_string());
        smpsim_scenario::parse(Path::new(name), text.to_string()).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn mutations_do_what_they_say() {
    let t = "a = \"10us\"\nb = [1, 2]\n";
    let e = |kind, a, b, x| Edit { kind, a, b, x };
    assert_eq!(mutate(t, &[e(0, 0, 0, 0)]), " = \"10us\"\nb = [1, 2]\n");
    assert_eq!(
        mutate(t, &[e(7, 1, 0, 4)]),
        "a = \"10us\"\nb = [9223372036854775807, 2]\n"
    );
    assert_eq!(
        mutate(t, &[e(13, 0, 0, 6)]),
        "a = \"18446744073709551615us\"\nb = [1, 2]\n"
    );
    assert_eq!(mutate(t, &[e(19, 4, 0, 0)]), "a = \"10us\"\n\n");
}
