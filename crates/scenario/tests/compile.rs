//! Compiling scenarios to the kernel's IR.

use std::path::Path;

use smpsim_kernel::program::{BinOp, CmpOp, Cond, Dist, Expr, LockingOp, ObjRef, Op};
use smpsim_kernel::Policy;
use smpsim_scenario::{load, parse, PassRule};

const SMALL: &str = r#"[scenario]
name = "small"
duration = "10ms"

[machine]
preset = "generic-x86"
topology = { sockets = 1, numa_nodes_per_socket = 1, llcs_per_node = 1, cores_per_llc = 4, threads_per_core = 1 }

[objects]
lock = { type = "mutex" }
cpu_locks = { type = "mutex", per_cpu = true, spin = false }
MINE = { type = "alias", to = "cpu_locks[this_cpu()]" }

[functions]
hold = [ { op = "mutex_guard", lock = "lock", body = [ { op = "work", time = "2us" } ] } ]

[[tasks]]
name = "rt"
count = 3
cpus = "1-2"
policy = "fifo"
priority = 50
mm = "shared"
vars = { n = 4 }
code = [
  { op = "mark", var = "t0" },
  { op = "loop", count = "n * 2", body = [
    { op = "if", cond = "task_index == 0", then = [ { op = "call", fn = "hold" } ],
      else = [ { op = "mutex_lock", lock = "MINE" }, { op = "mutex_unlock", lock = "MINE" } ] },
  ] },
  { op = "choose", options = [
    { weight = 3, body = [ { op = "count", counter = "a" } ] },
    { weight = 1, body = [ { op = "sleep", time = "uniform(1us, 3us)", overshoot = "late" } ] },
  ] },
  { op = "record", hist = "lat", since = "t0" },
]

[[tasks]]
name = "other"
per_cpu = 2
cpus = [0, 3]
mm = "shared"
code = [ { op = "loop", count = "forever", body = [ { op = "work", time = "exp(5us)" }, { op = "count", counter = "b" } ] } ]
"#;

#[test]
fn emits_exactly_these_ops() {
    let scn = parse(Path::new("small.toml"), SMALL.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let spec = scn.compile(None, &[]).unwrap();
    assert_eq!(spec.duration, 10_000_000);
    assert_eq!(spec.objects.len(), 2);
    assert_eq!(spec.counters, vec!["a", "b"]);
    assert_eq!(spec.histograms, vec!["late", "lat"]);

    let rt = &spec.task_groups[0];
    assert_eq!(rt.placement, vec![1, 2, 1]);
    assert_eq!(rt.policy, Policy::Fifo(50));
    let lock = ObjRef {
        object: 0,
        index: None,
    };
    let mine = ObjRef {
        object: 1,
        index: Some(Expr::ThisCpu),
    };
    // Slots: n = 0, t0 = 1, loop counter = 2.
    assert_eq!(rt.program.slots, 3);
    assert_eq!(rt.program.init, vec![(0, Expr::Const(4))]);
    let expected = vec![
        /* 0 */ Op::Mark(1),
        /* 1 */
        Op::LoopCount {
            slot: 2,
            expr: Expr::Bin(BinOp::Mul, Box::new(Expr::Var(0)), Box::new(Expr::Const(2))),
        },
        /* 2 */ Op::JumpUnless(Cond::Cmp(CmpOp::Gt, Expr::Var(2), Expr::Const(0)), 11),
        /* 3 */ Op::JumpUnless(Cond::Cmp(CmpOp::Eq, Expr::TaskIndex, Expr::Const(0)), 8),
        /* 4 */ Op::mutex_lock(lock.clone()),
        /* 5 */ Op::Work(Dist::Const(2000)),
        /* 6 */ Op::mutex_unlock(lock),
        /* 7 */ Op::Jump(10),
        /* 8 */ Op::mutex_lock(mine.clone()),
        /* 9 */ Op::mutex_unlock(mine),
        /* 10 */ Op::LoopBack { slot: 2, target: 3 },
        /* 11 */ Op::Choose {
            cumulative: vec![(3, 12), (4, 14)],
        },
        /* 12 */ Op::Count(0),
        /* 13 */ Op::Jump(15),
        /* 14 */
        Op::Sleep {
            dist: Dist::Uniform { lo: 1000, hi: 3000 },
            overshoot: Some(0),
        },
        /* 15 */ Op::RecordSince { hist: 1, slot: 1 },
        /* 16 */ Op::Exit,
    ];
    assert_eq!(rt.program.ops, expected);

    let other = &spec.task_groups[1];
    assert_eq!(other.placement, vec![0, 0, 3, 3]);
    assert_eq!(other.policy, Policy::Normal);
    assert_eq!(other.mm, rt.mm);
    assert_eq!(
        other.program.ops,
        vec![
            Op::Work(Dist::Exp { mean: 5000 }),
            Op::Count(1),
            Op::Jump(0)
        ]
    );
}

#[test]
fn membarrier_example_and_variants() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/membarrier.toml"
    ));
    let scn = load(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scn.name, "membarrier-percpu");
    let names: Vec<&str> = scn.variant_names().collect();
    assert_eq!(names, vec!["global-mutex", "percpu-mutex"]);
    let global = scn.compile(Some("global-mutex"), &[]).unwrap();
    let percpu = scn.compile(Some("percpu-mutex"), &[]).unwrap();
    let lock_of = |spec: &smpsim_kernel::Spec| {
        spec.task_groups[0]
            .program
            .ops
            .iter()
            .find_map(|op| match op {
                Op::Locking(LockingOp::Lock { lock: r, .. }) => Some(r.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        lock_of(&global),
        ObjRef {
            object: 0,
            index: None
        }
    );
    assert_eq!(
        lock_of(&percpu),
        ObjRef {
            object: 1,
            index: Some(Expr::Var(0))
        }
    );
    assert_eq!(global.warmup, 100_000_000);
    assert_eq!(global.machine.nr_cpus(), 8);
    assert_eq!(global.task_groups[0].placement.len(), 16);

    let r = scn.reproduce.as_ref().unwrap();
    assert_eq!(
        r.quick,
        vec![("scenario.duration".to_string(), "\"2s\"".to_string())]
    );
    assert_eq!(r.metrics[0].pass, PassRule::Factor(2.0));
    let quick: Vec<(String, String)> = r.quick.clone();
    assert_eq!(
        scn.compile(Some("percpu-mutex"), &quick).unwrap().duration,
        2_000_000_000
    );
}

#[test]
fn machine_overrides_and_cgroups() {
    let text = SMALL.replace(
        "[objects]",
        "[machine.costs.ipi_latency]\nns = 900\nsource = \"assumed: test\"\n\n[kernel]\nsched_slice = \"750us\"\ntg_walk_cost = \"150ns\"\n\n[[cgroup]]\nname = \"base\"\ncpu_max = { quota = \"1ms\", period = \"5ms\" }\n\n[[cgroup]]\nname = \"kids\"\nparent = \"base\"\ngenerate = { children = 2000, depth = 5 }\n\n[objects]",
    )
    .replace("mm = \"shared\"\nvars", "cgroup = \"kids\"\nvars");
    let scn = parse(Path::new("small.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let spec = scn.compile(None, &[]).unwrap();
    assert_eq!(spec.machine.costs.ipi_latency.ns, 900.0);
    assert_eq!(spec.knobs.sched_slice, 750_000);
    assert_eq!(spec.knobs.tg_walk_cost, 150);
    assert_eq!(spec.cgroups[1].parent, Some(0));
    assert_eq!(spec.cgroups[1].generated_descendants, 12_000);
    assert_eq!(spec.cgroups[0].bandwidth.unwrap().quota, 1_000_000);
    assert_eq!(spec.task_groups[0].cgroup, Some(1));
    assert_ne!(spec.task_groups[0].mm, spec.task_groups[1].mm);
}

/// The detectors' thresholds are `[kernel]` knobs with the kernel's names.
#[test]
fn detector_thresholds_are_kernel_knobs() {
    let text = SMALL.replace(
        "[objects]",
        "[kernel]\nwatchdog_thresh = \"2s\"\nhung_task_timeout_secs = \"30s\"\ncsd_lock_timeout = \"100ms\"\n\n[objects]",
    );
    let spec = parse(Path::new("t.toml"), text)
        .unwrap()
        .compile(None, &[])
        .unwrap();
    assert_eq!(spec.knobs.watchdog_thresh, 2_000_000_000);
    assert_eq!(spec.knobs.hung_task_timeout, 30_000_000_000);
    assert_eq!(spec.knobs.csd_lock_timeout, 100_000_000);
    let defaults = parse(Path::new("t.toml"), SMALL.to_string())
        .unwrap()
        .compile(None, &[])
        .unwrap();
    assert_eq!(defaults.knobs.hung_task_timeout, 120_000_000_000);
}

/// A metric without a published figure is reported with none (not 0), and
/// may only be bounded; a rule relative to `published` without one is a
/// located error.
#[test]
fn published_is_optional_under_bounds_only() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/membarrier-percpu.toml"
    ));
    let text = std::fs::read_to_string(path).unwrap();
    let scn = parse(path, text.clone()).unwrap_or_else(|e| panic!("{e}"));
    let metrics = &scn.reproduce.as_ref().unwrap().metrics;
    let sentinel = metrics
        .iter()
        .find(|m| m.name == "sentinel_max_latency_ms_before")
        .unwrap();
    assert_eq!(sentinel.published, None);
    assert!(metrics.iter().any(|m| m.published.is_some()));

    let broken = text.replacen("published = ", "# published = ", 1);
    let err = parse(path, broken).expect_err("a factor rule needs a published figure");
    let msg = err.to_string();
    assert!(msg.contains("no `published` figure"), "{msg}");
    assert!(msg.contains("membarrier-percpu.toml:"), "{msg}");
}
