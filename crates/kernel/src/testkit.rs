//! Small builders for specs in tests and benchmarks (not a scenario
//! language: that is the scenario crate's job).

use smpsim_machine::Machine;

use crate::program::*;
use crate::spec::*;

/// A one-socket machine of `cpus` CPUs with the generic x86 costs.
pub fn flat_machine(cpus: u32) -> Machine {
    let mut m = smpsim_machine::preset("generic-x86")
        .expect("preset")
        .expect("preset parses");
    m.topology = smpsim_machine::Topology::flat(cpus);
    m
}

/// A spec with the given machine and no tasks yet.
pub fn spec(machine: Machine, duration: u64) -> Spec {
    Spec {
        machine,
        knobs: Knobs::default(),
        objects: Vec::new(),
        cgroups: Vec::new(),
        cfs_burst: Vec::new(),
        task_groups: Vec::new(),
        counters: Vec::new(),
        histograms: Vec::new(),
        duration,
        warmup: 0,
        seed: 1,
        max_events: None,
        replicas: 1,
        perturb: None,
        handlers: Vec::new(),
        hooks: Default::default(),
        layout: Default::default(),
    }
}

pub fn mutex(spec: &mut Spec, name: &str, spin: bool, per_cpu: bool) -> ObjectId {
    spec.objects.push(ObjectDecl {
        name: name.into(),
        kind: ObjectKind::Mutex { spin },
        per_cpu,
    });
    spec.objects.len() as u32 - 1
}

/// A spinning lock of implementation `kind` (`qspinlock`, `ticket`, `tas`,
/// `qrwlock`).
pub fn spinning_lock(spec: &mut Spec, name: &str, kind: &str, options: LockOptions) -> ObjectId {
    spec.objects.push(ObjectDecl {
        name: name.into(),
        kind: ObjectKind::Spinlock {
            kind: crate::spec::SpinKind::named(kind).expect("a spinning lock kind"),
            options,
        },
        per_cpu: false,
    });
    spec.objects.len() as u32 - 1
}

/// A machine preset by name (panics on an unknown one: for tests).
pub fn preset_machine(name: &str) -> Machine {
    smpsim_machine::preset(name)
        .expect("preset")
        .expect("preset parses")
}

/// The lock-scaling model: `cpus` CPUs (the first ones of the machine)
/// loop taking spinning lock `kind` for `hold` (a critical section that
/// touches nothing shared), releasing it, then working `think` outside.
pub fn lock_scaling(
    machine: Machine,
    kind: &str,
    options: LockOptions,
    cpus: u32,
    hold: u64,
    think: u64,
    duration: u64,
) -> Spec {
    let times = (Dist::Const(hold), Dist::Const(think));
    lock_scaling_with(machine, kind, options, cpus, times, duration)
}

/// [`lock_scaling`] with hold and think times drawn from distributions
/// (constant times make CPUs run in lockstep).
pub fn lock_scaling_with(
    machine: Machine,
    kind: &str,
    options: LockOptions,
    cpus: u32,
    (hold, think): (Dist, Dist),
    duration: u64,
) -> Spec {
    let mut s = spec(machine, duration);
    let lock = ObjRef {
        object: spinning_lock(&mut s, "lock", kind, options),
        index: None,
    };
    let take = Op::Locking(LockingOp::Lock {
        lock: lock.clone(),
        mode: LockMode::Exclusive,
        irqsave: false,
    });
    let release = Op::Locking(LockingOp::Unlock {
        lock,
        mode: LockMode::Exclusive,
        irqrestore: false,
    });
    hammer(s, cpus, [take, release], hold, think)
}

/// Every one of the first `cpus` CPUs loops: enter a syscall, `take`, hold
/// for `hold`, `release`, leave, count `acquired`, work `think`.
fn hammer(mut s: Spec, cpus: u32, [take, release]: [Op; 2], hold: Dist, think: Dist) -> Spec {
    let c = counter(&mut s, "acquired");
    forever(
        &mut s,
        "lockers",
        (0..cpus).collect(),
        Policy::Normal,
        vec![
            Op::SyscallEnter,
            take,
            Op::Work(hold),
            release,
            Op::SyscallExit,
            Op::Count(c),
            Op::Work(think),
        ],
    );
    s
}

/// A take (`take`) or release of `lock` in `mode`, without `_irqsave`.
pub fn lock_op(lock: &ObjRef, mode: LockMode, take: bool) -> Op {
    if take {
        Op::Locking(LockingOp::Lock {
            lock: lock.clone(),
            mode,
            irqsave: false,
        })
    } else {
        Op::Locking(LockingOp::Unlock {
            lock: lock.clone(),
            mode,
            irqrestore: false,
        })
    }
}

/// `clock_nanosleep()` for a constant `ns`, its lateness not recorded.
pub fn sleep_for(ns: u64) -> Op {
    Op::Sleep {
        dist: Dist::Const(ns),
        overshoot: None,
    }
}

/// `call_rcu()` of a callback costing a constant `func` ns, `lazy` or
/// not, inside a syscall (a task queues callbacks in the kernel).
pub fn call_rcu_in_syscall(func: u64, lazy: bool) -> Vec<Op> {
    vec![
        Op::SyscallEnter,
        Op::Rcu(RcuOp::CallRcu {
            func: Dist::Const(func),
            lazy,
        }),
        Op::SyscallExit,
    ]
}

/// A cross-CPU function costing `cost` ns, one unit, with no handler
/// program.
pub fn call_func(cost: u64) -> CallFunc {
    CallFunc {
        cost: Dist::Const(cost),
        units: None,
        handler: None,
    }
}

/// `smp_call_function_single(cpu, func, wait)` of a function costing
/// `cost` ns ([`call_func`]).
pub fn smp_call_function_single(cpu: Expr, cost: u64, wait: bool) -> Op {
    Op::Smp(SmpOp::SmpCallFunctionSingle {
        cpu,
        func: call_func(cost),
        wait,
    })
}

pub fn counter(spec: &mut Spec, name: &str) -> CounterId {
    spec.counters.push(name.into());
    spec.counters.len() as u32 - 1
}

pub fn histogram(spec: &mut Spec, name: &str) -> HistId {
    spec.histograms.push(name.into());
    spec.histograms.len() as u32 - 1
}

/// Adds a task group running `ops` forever (a `Jump(0)` is appended).
pub fn forever(spec: &mut Spec, name: &str, placement: Vec<u32>, policy: Policy, mut ops: Vec<Op>) {
    ops.push(Op::Jump(0));
    let mm = spec.task_groups.len() as u32;
    task_group(spec, name, placement, policy, mm, ops);
}

/// [`forever`] with `slots` time-mark slots for its program (`Op::Mark`,
/// `Op::RecordSince`).
pub fn group(
    spec: &mut Spec,
    name: &str,
    cpus: Vec<u32>,
    policy: Policy,
    ops: Vec<Op>,
    slots: u16,
) {
    forever(spec, name, cpus, policy, ops);
    spec.task_groups.last_mut().unwrap().program.slots = slots;
}

/// A task group of one task per CPU in `placement`, running `ops` in `mm`.
pub fn task_group(
    spec: &mut Spec,
    name: &str,
    placement: Vec<u32>,
    policy: Policy,
    mm: u32,
    ops: Vec<Op>,
) {
    spec.task_groups.push(TaskGroupDecl {
        name: name.into(),
        placement,
        affinity: Affinity::Pinned,
        policy,
        cgroup: None,
        mm,
        mm_per_task: false,
        program: Program {
            ops,
            slots: 4,
            init: vec![],
        },
    });
}

/// The engine benchmark model: every CPU loops lock, hold Exp(hold),
/// unlock, work Exp(think), on one global mutex.
pub fn global_mutex_bench(cpus: u32, hold: u64, think: u64, duration: u64) -> Spec {
    let mut s = spec(flat_machine(cpus), duration);
    let lock = ObjRef {
        object: mutex(&mut s, "global", true, false),
        index: None,
    };
    let ops = [Op::mutex_lock(lock.clone()), Op::mutex_unlock(lock)];
    hammer(
        s,
        cpus,
        ops,
        Dist::Exp { mean: hold },
        Dist::Exp { mean: think },
    )
}
