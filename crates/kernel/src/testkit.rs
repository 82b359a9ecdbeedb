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
        task_groups: Vec::new(),
        counters: Vec::new(),
        histograms: Vec::new(),
        duration,
        warmup: 0,
        seed: 1,
        max_events: None,
        replicas: 1,
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
    spec.task_groups.push(TaskGroupDecl {
        name: name.into(),
        placement,
        policy,
        cgroup: None,
        mm: spec.task_groups.len() as u32,
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
    let m = mutex(&mut s, "global", true, false);
    let c = counter(&mut s, "acquired");
    let lock = ObjRef {
        object: m,
        index: None,
    };
    forever(
        &mut s,
        "lockers",
        (0..cpus).collect(),
        Policy::Normal,
        vec![
            Op::SyscallEnter,
            Op::MutexLock(lock.clone()),
            Op::Work(Dist::Exp { mean: hold }),
            Op::MutexUnlock(lock),
            Op::SyscallExit,
            Op::Count(c),
            Op::Work(Dist::Exp { mean: think }),
        ],
    );
    s
}
