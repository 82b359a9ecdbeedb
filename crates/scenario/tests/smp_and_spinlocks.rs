//! Cross-CPU calls to many CPUs, spinlocks, machine costs as durations,
//! log-normal distributions and replicas.

mod common;

use std::path::Path;

use smpsim_kernel::program::{
    BinOp, CallFunc, CpuSet, Dist, Expr, LockMode, LockingOp, ObjRef, Op, SmpOp, StopOp,
};
use smpsim_kernel::{LockOptions, ObjectKind};
use smpsim_scenario::{parse, Scenario, ScenarioError};

const BASE: &str = scenario_text!(
    r#"[objects]
m = { type = "mutex" }
zone_lock = { type = "spinlock" }
pcp = { type = "spinlock", per_cpu = true }
ZONE = { type = "alias", to = "zone_lock" }

[[tasks]]
name = "w"
count = 2
vars = { target = 2, pages = 8 }
code = [ { op = "work", time = "1us" } ]
"#
);

/// The base with the task's code replaced by `code`.
fn with_code(code: &str) -> String {
    BASE.replace("{ op = \"work\", time = \"1us\" }", code)
}

fn scenario(text: &str) -> Scenario {
    parse(Path::new("t.toml"), text.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

/// The ops of the only task group, without the trailing `Exit`.
fn ops_of(text: &str) -> Vec<Op> {
    let spec = scenario(text).compile(None, &[]).unwrap();
    let mut ops = spec.task_groups[0].program.ops.clone();
    assert_eq!(ops.pop(), Some(Op::Exit));
    ops
}

fn err(text: &str) -> ScenarioError {
    match parse(Path::new("t.toml"), text.to_string()) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => {
            println!("{e}\n");
            e
        }
    }
}

/// Line and the text under the caret.
fn at(e: &ScenarioError) -> (usize, String) {
    let (line, _, under) = common::at(e);
    (line, under)
}

/// The line the task's code is on.
const CODE_LINE: usize = 19;

#[test]
fn smp_call_function_many_with_each_cpuset() {
    let ops = ops_of(&with_code(
        r#"{ op = "smp_call_function_many", cpus = "mm_cpumask", func = "cost.tlb_flush_page", units = "pages" },
  { op = "smp_call_function_many", cpus = " all_but_self ", func = "2us", wait = false },
  { op = "smp_call_function_many", cpus = "0, 3, target, uniform(0, 4)", func = "exp(1us)", units = 4 }"#,
    ));
    let spec = scenario(BASE).compile(None, &[]).unwrap();
    let page = spec.machine.costs.tlb_flush_page.nanos();
    assert_eq!(
        ops,
        vec![
            Op::Smp(SmpOp::SmpCallFunctionMany {
                cpus: CpuSet::MmCpumask,
                func: CallFunc {
                    cost: Dist::Const(page),
                    units: Some(Expr::Var(1)),
                    handler: None,
                },
                wait: true,
            }),
            Op::Smp(SmpOp::SmpCallFunctionMany {
                cpus: CpuSet::AllButSelf,
                func: CallFunc {
                    cost: Dist::Const(2000),
                    units: None,
                    handler: None,
                },
                wait: false,
            }),
            Op::Smp(SmpOp::SmpCallFunctionMany {
                cpus: CpuSet::List(vec![
                    Expr::Const(0),
                    Expr::Const(3),
                    Expr::Var(0),
                    Expr::Uniform(Box::new(Expr::Const(0)), Box::new(Expr::Const(4))),
                ]),
                func: CallFunc {
                    cost: Dist::Exp { mean: 1000 },
                    units: Some(Expr::Const(4)),
                    handler: None,
                },
                wait: true,
            }),
        ]
    );
}

/// `stop_machine_cpuslocked(fn, NULL, cpus)`: `func` is `fn`'s cost on
/// the active CPU, `cpu` that CPU (none: `cpumask_first(cpu_online_mask)`).
#[test]
fn stop_machine_cpuslocked_takes_func_and_an_optional_cpu() {
    let ops = ops_of(&with_code(
        r#"{ op = "stop_machine_cpuslocked", func = "20us", cpu = "target" },
  { op = "stop_machine_cpuslocked", func = "5us" }"#,
    ));
    assert_eq!(
        ops,
        vec![
            Op::Stop(StopOp::StopMachine {
                func: Dist::Const(20_000),
                cpu: Some(Expr::Var(0)),
            }),
            Op::Stop(StopOp::StopMachine {
                func: Dist::Const(5_000),
                cpu: None,
            }),
        ]
    );
    let e = err(&with_code(r#"{ op = "stop_machine_cpuslocked", cpu = 1 }"#));
    assert_eq!(e.message, "op `stop_machine_cpuslocked` needs `func`");
    let e = err(&with_code(
        r#"{ op = "stop_machine_cpuslocked", func = "1us", cpu = 100000 }"#,
    ));
    assert!(e.message.contains("CPU 100000 does not exist"), "{e}");
}

#[test]
fn smp_call_function_single_takes_units() {
    let ops = ops_of(&with_code(
        r#"{ op = "smp_call_function_single", cpu = "target", func = "100ns", units = "pages * 2" },
  { op = "smp_call_function_single", cpu = 1, func = "100ns" }"#,
    ));
    assert_eq!(
        ops,
        vec![
            Op::Smp(SmpOp::SmpCallFunctionSingle {
                cpu: Expr::Var(0),
                func: CallFunc {
                    cost: Dist::Const(100),
                    units: Some(Expr::Bin(
                        BinOp::Mul,
                        Box::new(Expr::Var(1)),
                        Box::new(Expr::Const(2))
                    )),
                    handler: None,
                },
                wait: true,
            }),
            Op::Smp(SmpOp::SmpCallFunctionSingle {
                cpu: Expr::Const(1),
                func: CallFunc {
                    cost: Dist::Const(100),
                    units: None,
                    handler: None,
                },
                wait: true,
            }),
        ]
    );
}

#[test]
fn cpuset_errors() {
    let call = |cpus: &str| {
        with_code(&format!(
            r#"{{ op = "smp_call_function_many", cpus = "{cpus}", func = "1us" }}"#
        ))
    };
    let e = err(&call("all"));
    assert!(e.message.contains("calling CPU"), "{}", e.message);
    assert!(e.help.as_deref().unwrap().contains("all_but_self"));
    assert_eq!(at(&e), (CODE_LINE, "\"all\"".to_string()));

    let e = err(&call("0, , 2"));
    assert!(e.message.contains("expected a CPU expression"));
    assert_eq!(at(&e), (CODE_LINE, " ".to_string()));

    let e = err(&call("1, nope"));
    assert!(
        e.message.contains("unknown variable `nope`"),
        "{}",
        e.message
    );
    assert_eq!(at(&e), (CODE_LINE, "nope".to_string()));

    let e = err(&call(""));
    assert!(e.message.contains("expected a CPU expression"));

    let e = err(&with_code(
        r#"{ op = "smp_call_function_many", func = "1us" }"#,
    ));
    assert!(e.message.contains("needs `cpus`"), "{}", e.message);

    let e = err(&with_code(
        r#"{ op = "smp_call_function_many", cpus = "mm_cpumask", func = "1us", units = -1 }"#,
    ));
    assert!(e.message.contains("`units` cannot be negative"));
    assert_eq!(at(&e), (CODE_LINE, "-1".to_string()));
}

#[test]
fn spin_guard_with_irqsave_emits_exact_ops() {
    // Inside a syscall: user code cannot disable interrupts (issue 37),
    // and a syscall must release what it takes (the mutex, at the end).
    let ops = ops_of(&with_code(
        r#"{ op = "syscall", name = "s", body = [
  { op = "spin_guard", lock = "ZONE", irqsave = true, body = [ { op = "work", time = "1us" } ] },
  { op = "spin_guard", lock = "pcp[this_cpu()]", body = [ { op = "mutex_lock", lock = "m" } ] },
  { op = "spin_lock", lock = "zone_lock" },
  { op = "spin_unlock", lock = "zone_lock" },
  { op = "spin_lock_irqsave", lock = "zone_lock" },
  { op = "spin_unlock_irqrestore", lock = "zone_lock" },
  { op = "mutex_unlock", lock = "m" } ] }"#,
    ));
    let zone = ObjRef {
        object: 1,
        index: None,
    };
    let pcp = ObjRef {
        object: 2,
        index: Some(Expr::ThisCpu),
    };
    let m = ObjRef {
        object: 0,
        index: None,
    };
    let lock = |lock: &ObjRef, irqsave| {
        Op::Locking(LockingOp::Lock {
            lock: lock.clone(),
            mode: LockMode::Exclusive,
            irqsave,
        })
    };
    let unlock = |lock: &ObjRef, irqrestore| {
        Op::Locking(LockingOp::Unlock {
            lock: lock.clone(),
            mode: LockMode::Exclusive,
            irqrestore,
        })
    };
    assert_eq!(
        ops,
        vec![
            Op::SyscallEnter,
            lock(&zone, true),
            Op::Work(Dist::Const(1000)),
            unlock(&zone, true),
            // Sleeping in atomic context is written freely; the kernel
            // model reports it when it happens.
            lock(&pcp, false),
            Op::mutex_lock(m.clone()),
            unlock(&pcp, false),
            lock(&zone, false),
            unlock(&zone, false),
            lock(&zone, true),
            unlock(&zone, true),
            Op::mutex_unlock(m),
            Op::SyscallExit,
        ]
    );
    let spec = scenario(BASE).compile(None, &[]).unwrap();
    assert_eq!(
        spec.objects[1].kind,
        ObjectKind::Spinlock {
            kind: smpsim_kernel::locking::qspinlock::KIND.handle(),
            options: LockOptions::default()
        }
    );
    assert!(!spec.objects[1].per_cpu);
    assert!(spec.objects[2].per_cpu);
}

#[test]
fn lock_kind_mismatch_errors() {
    let e = err(&with_code(r#"{ op = "mutex_lock", lock = "zone_lock" }"#));
    assert_eq!(e.message, "`zone_lock` is a spinlock; use spin_lock");
    assert_eq!(at(&e), (CODE_LINE, "zone_lock".to_string()));
    assert!(e.help.as_deref().unwrap().contains("spin_guard"));

    let e = err(&with_code(
        r#"{ op = "mutex_guard", lock = "ZONE", body = [] }"#,
    ));
    assert_eq!(
        e.message,
        "`ZONE` stands for `zone_lock`, a spinlock; use spin_guard"
    );
    assert_eq!(at(&e), (CODE_LINE, "ZONE".to_string()));

    let e = err(&with_code(
        r#"{ op = "spin_unlock_irqrestore", lock = "m" }"#,
    ));
    assert_eq!(e.message, "`m` is a mutex; use mutex_unlock");
    assert_eq!(at(&e), (CODE_LINE, "m".to_string()));

    let e = err(&with_code(r#"{ op = "spin_lock", lock = "pcp" }"#));
    assert!(e.message.contains("per-CPU"), "{}", e.message);
}

#[test]
fn spinlock_object_errors() {
    let e = err(&BASE.replace(
        "zone_lock = { type = \"spinlock\" }",
        "zone_lock = { type = \"spinlock\", spin = false }",
    ));
    assert_eq!(e.message, "`spin` is not a field of a `spinlock` object");
    assert_eq!(at(&e), (11, "false".to_string()));

    let e = err(&BASE.replace(
        "zone_lock = { type = \"spinlock\" }",
        "zone_lock = { type = \"seqlock\" }",
    ));
    assert!(
        e.message.contains(
            "mutex, spinlock, rwlock, atomic, semaphore, rwsem, percpu_rwsem, seqcount, variable, percpu_ref, alias"
        ),
        "{}",
        e.message
    );

    let e = err(&with_code(
        r#"{ op = "spin_lock", lock = "zone_lock", irqsave = true }"#,
    ));
    assert!(e
        .message
        .contains("`irqsave` is not a field of op `spin_lock`"));
}

#[test]
fn machine_costs_resolve_after_overrides() {
    let text = with_code(
        r#"{ op = "work", time = "cost.line_transfer.cross_socket" },
  { op = "sleep", time = "exp(cost.tlb_flush_full)" },
  { op = "smp_call_function_single", cpu = 1, func = "cost.tlb_flush_page" }"#,
    )
    .replace(
        "[objects]",
        "[kernel]\ntg_walk_cost = \"cost.wakeup\"\n\n[objects]",
    );
    let spec = scenario(&text).compile(None, &[]).unwrap();
    let c = &spec.machine.costs;
    let ops = &spec.task_groups[0].program.ops;
    assert_eq!(
        ops[0],
        Op::Work(Dist::Const(c.line_transfer.cross_socket.nanos()))
    );
    assert_eq!(
        ops[1],
        Op::Sleep {
            dist: Dist::Exp {
                mean: c.tlb_flush_full.nanos()
            },
            overshoot: None
        }
    );
    let Op::Smp(SmpOp::SmpCallFunctionSingle { func, .. }) = &ops[2] else {
        panic!("{:?}", ops[2]);
    };
    assert_eq!(func.cost, Dist::Const(c.tlb_flush_page.nanos()));
    assert_eq!(spec.knobs.tg_walk_cost, c.wakeup.nanos());

    // A `[machine]` override is what `cost.NAME` sees.
    let over = text.replace(
        "[objects]",
        "[machine.costs.tlb_flush_page]\nns = 333.4\nsource = \"assumed: test\"\n\n[objects]",
    );
    let spec = scenario(&over).compile(None, &[]).unwrap();
    let Op::Smp(SmpOp::SmpCallFunctionSingle { func, .. }) = &spec.task_groups[0].program.ops[2]
    else {
        panic!();
    };
    assert_eq!(func.cost, Dist::Const(333));
}

#[test]
fn unknown_machine_cost_is_located() {
    let e = err(&with_code(
        r#"{ op = "work", time = "uniform(1us, cost.tlb_flush)" }"#,
    ));
    assert_eq!(e.message, "unknown machine cost `tlb_flush`");
    assert_eq!(at(&e), (CODE_LINE, "tlb_flush".to_string()));
    let help = e.help.unwrap();
    assert!(help.contains("`cost.tlb_flush_page`"), "{help}");
    assert!(help.contains("`cost.line_transfer.cross_socket`"), "{help}");

    let e = err(&BASE.replace("duration = \"1s\"", "duration = \"cost.nope\""));
    assert_eq!(at(&e), (3, "nope".to_string()));
}

#[test]
fn lognormal_distributions() {
    let ops = ops_of(&with_code(
        r#"{ op = "work", time = "lognormal(50us, 1.5)" }"#,
    ));
    assert_eq!(
        ops,
        vec![Op::Work(Dist::LogNormal {
            median: 50_000,
            sigma: 1.5
        })]
    );
    let e = err(&with_code(
        r#"{ op = "work", time = "lognormal(50us, -2)" }"#,
    ));
    assert!(e.message.contains("SIGMA cannot be negative"));
    assert_eq!(at(&e), (CODE_LINE, "-2".to_string()));
    let e = err(&with_code(r#"{ op = "work", time = "lognormal(50, 2)" }"#));
    assert!(e.message.contains("no unit"));
    assert_eq!(at(&e), (CODE_LINE, "50".to_string()));
    let e = err(&with_code(
        r#"{ op = "work", time = "lognormal(50us, 2s)" }"#,
    ));
    assert_eq!(at(&e), (CODE_LINE, "2s".to_string()));
}

#[test]
fn knob_and_replicas() {
    let spec = scenario(BASE).compile(None, &[]).unwrap();
    assert_eq!(spec.replicas, 1);
    assert!(!spec.knobs.csd_wait_preemptible);

    let text = BASE
        .replace("duration = \"1s\"", "duration = \"1s\"\nreplicas = 8")
        .replace(
            "[objects]",
            "[kernel]\ncsd_wait_preemptible = true\n\n[objects]",
        );
    let spec = scenario(&text).compile(None, &[]).unwrap();
    assert_eq!(spec.replicas, 8);
    assert!(spec.knobs.csd_wait_preemptible);
    let set = [("scenario.replicas".to_string(), "3".to_string())];
    assert_eq!(scenario(&text).compile(None, &set).unwrap().replicas, 3);

    for bad in ["0", "-1", "4294967296"] {
        let e = err(&BASE.replace(
            "duration = \"1s\"",
            &format!("duration = \"1s\"\nreplicas = {bad}"),
        ));
        assert!(
            e.message.contains("`replicas` must be between 1 and"),
            "{}",
            e.message
        );
        assert_eq!(at(&e), (4, bad.to_string()));
    }
}
