//! The scenario constructs of issue 41 item 2, run: durations computed
//! from variables (`work(TIME, units = EXPR)`, `work(VAR)`), object
//! arrays indexed by `hash()`, a variant removing a key
//! (`{ unset = true }`); and every example docs/scenario-format.md marks
//! `<!-- example: runs as written -->`, compiled in each variant and run.

mod common;

use std::path::Path;

use smpsim_kernel::program::{hash_64_32, BinOp, Dist, Expr, ObjRef, Op};
use smpsim_kernel::RunResult;
use smpsim_scenario::{parse, Scenario};

fn scenario(text: &str) -> Scenario {
    parse(Path::new("t.toml"), text.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn run(text: &str, variant: Option<&str>, sets: &[(&str, &str)]) -> RunResult {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let spec = scenario(text)
        .compile(variant, &sets)
        .unwrap_or_else(|e| panic!("{e}"));
    smpsim_kernel::simulate(&spec)
}

/// The ops of the only task group.
fn ops_of(text: &str) -> Vec<Op> {
    common::spec(text).task_groups[0].program.ops.clone()
}

fn count(r: &RunResult, name: &str) -> u64 {
    r.counter(name).map_or(0, |c| c.count)
}

/// The doc's examples marked to run as written: each a whole scenario.
fn doc_examples() -> Vec<String> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md"),
    )
    .unwrap();
    doc.split("<!-- example: runs as written -->\n```toml\n")
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap().to_string())
        .collect()
}

#[test]
fn the_docs_examples_run_as_written() {
    let examples = doc_examples();
    assert!(examples.len() >= 3, "{} examples marked", examples.len());
    for text in &examples {
        let scn = scenario(text);
        let variants: Vec<Option<&str>> = if scn.variants.is_empty() {
            vec![None]
        } else {
            scn.variant_names().map(Some).collect()
        };
        for v in variants {
            let spec = scn.compile(v, &[]).unwrap_or_else(|e| panic!("{e}"));
            let r = smpsim_kernel::simulate(&spec);
            assert!(r.findings.is_empty(), "{v:?}: {:?}", r.findings);
            assert!(
                r.counters.iter().any(|c| c.count > 0),
                "{v:?} of\n{text}\ncounted nothing"
            );
        }
    }
}

// ---- durations computed from variables ------------------------------

const WALK: &str = scenario_text!(
    r#"[objects]
list_len = { type = "variable", initial = 1 }

[[tasks]]
name = "w"
count = 1
vars = { per_entry = "100ns", n = 1 }
code = '''for (;;) { work(per_entry, units = n); n = n + 1; count(walks); }'''
"#
);

#[test]
fn a_constant_units_scales_the_distribution_when_compiled() {
    let text = WALK.replace("work(per_entry, units = n)", "work(exp(15ns), units = 64)");
    let ops = ops_of(&text);
    assert_eq!(ops[0], Op::Work(Dist::Exp { mean: 960 }), "{ops:?}");
}

#[test]
fn a_variable_time_and_units_multiply_when_the_op_runs() {
    let ops = ops_of(WALK);
    let Op::WorkUnits { time, units } = &ops[0] else {
        panic!("{ops:?}")
    };
    assert_eq!(*time, Dist::Const(1));
    assert!(matches!(units, Expr::Bin(BinOp::Mul, _, _)), "{units:?}");
    // The duration in `vars` is nanoseconds.
    let init = &common::spec(WALK).task_groups[0].program.init;
    assert_eq!(init[0], (0, Expr::Const(100)));
}

/// A walk that grows by one entry each time: walk k takes 100 ns x k, so
/// in 1 s the task ends about sqrt(2 x 1e9 / 100) = 4472 walks (a little
/// fewer for the ticks' interrupts); at a fixed size it would end 10M.
#[test]
fn a_growing_walk_takes_longer_each_time() {
    let r = run(WALK, None, &[]);
    let walks = count(&r, "walks");
    assert!((4_300..=4_472).contains(&walks), "{walks}");
    let fixed = run(&WALK.replace("n = n + 1;", ""), None, &[]);
    let fixed = count(&fixed, "walks");
    assert!((9_500_000..=10_000_000).contains(&fixed), "{fixed}");
    // The per-entry time is a setting: twice as long, about 1/sqrt(2)
    // as many walks.
    let r = run(WALK, None, &[("tasks.w.vars.per_entry", "200ns")]);
    let slower = count(&r, "walks");
    assert!((3_100..=3_163).contains(&slower), "{slower}");
}

/// The hold time follows a shared variable read when the op runs: the
/// spinlock's hold is exactly `per_entry x list_len` each time.
#[test]
fn a_hold_time_follows_the_structure_it_walks() {
    let text = scenario_text!(
        r#"[objects]
l = { type = "spinlock" }
list_len = { type = "variable", initial = 10 }

[[tasks]]
name = "w"
count = 1
vars = { per_entry = "7ns" }
code = '''for (;;) { syscall(s) { spin_guard(l) { work(per_entry, units = read_once(list_len)); } } count(walks); work(1us); }'''
"#
    );
    let r = run(text, None, &[]);
    let l = r.lock("l").unwrap();
    assert_eq!((l.hold_min_ns, l.hold_max_ns), (70, 70));
    let r = run(text, None, &[("objects.list_len.initial", "1000")]);
    let l = r.lock("l").unwrap();
    assert_eq!((l.hold_min_ns, l.hold_max_ns), (7_000, 7_000));
}

#[test]
fn a_negative_units_at_run_time_is_a_finding() {
    let r = run(&WALK.replace("n = n + 1;", "n = n - 2;"), None, &[]);
    assert!(
        r.findings
            .iter()
            .any(|f| f.detector == "negative_count" && f.message.contains("work units")),
        "{:?}",
        r.findings
    );
}

/// A duration variable written with its range is an assumed value bands
/// vary, reached by its `--set` key.
#[test]
fn a_duration_variable_with_a_range_is_an_assumed_value() {
    let text = WALK.replace(
        r#"per_entry = "100ns""#,
        r#"per_entry = { value = "100ns", range = ["50ns", "400ns"], source = "assumed: a miss per entry" }"#,
    );
    let scn = scenario(&text);
    let values = scn.assumed_values(None, &[]).unwrap();
    let v = values
        .iter()
        .find(|v| v.key == "tasks.w.vars.per_entry")
        .unwrap_or_else(|| panic!("{values:?}"));
    assert_eq!((v.lo.as_str(), v.hi.as_str()), ("\"50ns\"", "\"400ns\""));
    assert_eq!(
        scn.compile(None, &[]).unwrap(),
        scenario(WALK).compile(None, &[]).unwrap()
    );
}

// ---- object arrays ---------------------------------------------------

const BUCKETS: &str = scenario_text!(
    r#"[objects]
b = { type = "spinlock", count = 64 }

[[tasks]]
name = "w"
per_cpu = 2
vars = { key = "1000 + task_index" }
code = '''for (;;) { syscall(futex) { spin_guard(b[hash(key) % 64]) { work(2us); } } count(ops); work(exp(1us)); }'''
"#
);

#[test]
fn hash_is_the_kernels_hash_64() {
    assert_eq!(hash_64_32(1), 1_640_531_526);
    assert_eq!(hash_64_32(0), 0);
    // Known when compiled: a loop count of hash(1) % 1000 - 527 = -1.
    let e = common::err(&WALK.replace("n = n + 1;", "loop (hash(1) % 1000 - 527) { work(1ns); }"));
    assert!(e.message.contains("cannot be negative (got -1)"), "{e}");
}

#[test]
fn an_array_is_n_objects_and_an_index_picks_one() {
    let spec = common::spec(BUCKETS);
    assert_eq!(spec.objects.len(), 64);
    assert_eq!(spec.objects[17].name, "b[17]");
    assert_eq!(spec.layout.arrays, vec![(0, 64)]);
    // A constant index is the element itself.
    let spec = common::spec(&BUCKETS.replace("b[hash(key) % 64]", "b[17]"));
    let lock = spec.task_groups[0]
        .program
        .ops
        .iter()
        .find_map(|op| match op {
            Op::Locking(smpsim_kernel::program::LockingOp::Lock { lock, .. }) => Some(lock.clone()),
            _ => None,
        });
    assert_eq!(
        lock,
        Some(ObjRef {
            object: 17,
            index: None
        })
    );
}

/// The tasks take exactly the buckets their keys hash to, and spread over
/// 64 buckets they wait far less than all on one.
#[test]
fn tasks_take_the_buckets_their_keys_hash_to() {
    let r = run(BUCKETS, None, &[]);
    let mut want: Vec<i64> = (0..8).map(|i| hash_64_32(1000 + i) % 64).collect();
    want.sort();
    want.dedup();
    for i in 0..64 {
        let l = r.lock(&format!("b[{i}]")).unwrap();
        assert_eq!(
            l.acquisitions > 0,
            want.contains(&i),
            "b[{i}]: {} acquisitions",
            l.acquisitions
        );
    }
    let spread = count(&r, "ops");
    let one = run(&BUCKETS.replace("b[hash(key) % 64]", "b[5]"), None, &[]);
    let one = count(&one, "ops");
    assert!(spread > 2 * one, "64 buckets {spread}, one {one}");
}

#[test]
fn an_index_outside_the_array_at_run_time_stops_the_run() {
    let r = run(
        &BUCKETS.replace("b[hash(key) % 64]", "b[task_index * 10]"),
        None,
        &[],
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.detector == "bad_percpu_index")
        .unwrap_or_else(|| panic!("{:?}", r.findings));
    assert!(
        f.message
            .contains("indexed array `b[64]` with 70, outside [0, 64)")
            && !f.message.contains("per-CPU"),
        "{}",
        f.message
    );
}

#[test]
fn array_mistakes_are_located_errors() {
    for (from, to, says, under) in [
        (
            "count = 64",
            "count = 0",
            "must be from 1 to 1048576, not 0",
            "0",
        ),
        (
            "count = 64",
            "count = 64, per_cpu = true",
            "cannot be per-CPU too",
            "true",
        ),
        (
            "count = 64",
            "count = 64, line = \"x\"",
            "`line` and `stride` do not apply",
            "\"x\"",
        ),
        (
            "b[hash(key) % 64]",
            "b",
            "`b` is an array of 64 objects: say which one",
            "b",
        ),
        (
            "b[hash(key) % 64]",
            "b[64]",
            "`b` has 64 elements, 0 to 63; there is no element 64",
            "64",
        ),
        ("hash(key)", "hash", "`hash` is a function", "hash"),
    ] {
        let text = BUCKETS.replacen(from, to, 1);
        let e = match parse(Path::new("t.toml"), text.clone()) {
            Err(e) => e,
            Ok(s) => s.compile(None, &[]).unwrap_err(),
        };
        assert!(e.message.contains(says), "{to}: {e}");
        let (_, _, at) = common::at(&e);
        assert!(at.contains(under), "{to}: under the caret `{at}`: {e}");
    }
}

#[test]
fn a_hook_picks_an_array_element_by_a_constant_or_a_cpu() {
    let base = BUCKETS.to_string()
        + "\n[hooks]\nsched_tick = '''spin_lock(b[3]); work(10ns); spin_unlock(b[3]);'''\n";
    for index in ["b[3]", "b[this_cpu() % 64]", "b[hash(this_cpu()) % 64]"] {
        scenario(&base.replace("b[3]", index))
            .compile(None, &[])
            .unwrap_or_else(|e| panic!("{index}: {e}"));
    }
}

// ---- a variant removes a key ----------------------------------------

/// The doc's `unset` example: the aligned variant drops the line and the
/// counting CPUs, so the lock's line moves only between its two lockers.
#[test]
fn the_unset_example_removes_the_line_and_the_task_group() {
    let text = doc_examples()
        .into_iter()
        .find(|t| t.contains("[variant.aligned]"))
        .expect("the unset example");
    let scn = scenario(&text);
    let shared = scn.compile(Some("shared"), &[]).unwrap();
    let aligned = scn.compile(Some("aligned"), &[]).unwrap();
    assert_eq!(shared.task_groups.len(), 2);
    assert_eq!(aligned.task_groups.len(), 1);
    assert!(!shared.layout.lines.is_empty());
    assert!(aligned.layout.lines.is_empty());
    let (s, a) = (
        smpsim_kernel::simulate(&shared),
        smpsim_kernel::simulate(&aligned),
    );
    assert!(
        count(&a, "sections") > count(&s, "sections"),
        "aligned {} vs shared {}",
        count(&a, "sections"),
        count(&s, "sections")
    );
}

// ---- an rwsem across two lines ---------------------------------------

/// `line = ["a", "b"]` on an rwsem: the rwsem hosts line `a` (its
/// `count`) with the atomic there, and its `wait_lock` line `b` with the
/// atomic there; a single name keeps it whole on one line.
#[test]
fn an_rwsem_on_two_lines_hosts_both() {
    let text = |line: &str| {
        format!(
            r#"[scenario]
name = "t"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
sem = {{ type = "rwsem", line = {line} }}
near_count = {{ type = "atomic", line = "a" }}
near_wait = {{ type = "atomic", line = "b" }}
[[tasks]]
name = "w"
per_cpu = 1
code = '''
    for (;;) {{ down_write(sem); atomic_inc(near_count); atomic_inc(near_wait); up_write(sem); work(1us); }}
'''
"#
        )
    };
    let two = scenario(&text(r#"["a", "b"]"#)).compile(None, &[]).unwrap();
    assert_eq!(two.layout.lines, vec![vec![0, 1]]);
    assert_eq!(two.layout.split, vec![(0, vec![2])]);
    smpsim_kernel::simulate(&two);
    // Alone on both lines: still two lines (the split is the layout).
    let alone = text(r#"["x", "y"]"#)
        .replace("line = \"a\" ", "")
        .replace("line = \"b\" ", "");
    let alone = scenario(&alone).compile(None, &[]).unwrap();
    assert!(alone.layout.lines.is_empty());
    assert_eq!(alone.layout.split, vec![(0, vec![])]);
    let one = text(r#""a""#).replace(r#"line = "b""#, r#"line = "a""#);
    let one = scenario(&one).compile(None, &[]).unwrap();
    assert_eq!(one.layout.lines, vec![vec![0, 1, 2]]);
    assert!(one.layout.split.is_empty());
}
