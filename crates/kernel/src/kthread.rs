//! Kernel threads (kernel/kthread.c): tasks the kernel creates itself,
//! scheduled like any other (their class, CPU time, wakeup latency and
//! context switches are real), whose code is the mechanism's own Rust
//! rather than a scenario program.
//!
//! A kthread runs in steps: when it has the CPU and nothing left of its
//! last piece of work, its mechanism is asked what it does next: work for
//! a while (then it is asked again), or sleep until woken (or until a
//! timeout). The mechanism that owns it keeps its state and wakes it.
//!
//! Kthreads are created only for mechanisms the scenario uses, so a
//! scenario without RCU has no `rcu_sched` thread in its results, and one
//! without `stop_machine` no `migration/N` threads.
//!
//! Every kernel thread is a row of [`crate::KTHREADS`]: its name, whether a
//! scenario uses it, how it is spawned (one thread, or one bound to each
//! CPU), the mechanism's step function, and where the mechanism keeps the
//! threads' ids. Adding one is a [`KthreadInfo`] in its mechanism's file and
//! a line in [`crate::KTHREADS`] (see docs/locks.md).

use smpsim_engine::Nanos;

use crate::env::{CoreEnv, SchedVerbs};
use crate::event::{Event, SchedEvent};
use crate::spec::{Affinity, Policy, Spec};
use crate::task::*;

pub use crate::task::Kthread;

/// A kernel thread, as the kernel creates it (a row of [`crate::KTHREADS`]).
pub struct KthreadInfo {
    /// Its `comm`; a per-CPU thread's is `name/N`.
    pub name: &'static str,
    /// Whether a scenario uses the mechanism (and so gets the thread).
    pub used_by: fn(&Spec) -> bool,
    pub spawn: Spawn,
    /// One step of the thread, current on CPU `c` as task `t`.
    pub(crate) step: for<'a, 's> fn(&'a mut HostKernel<'s>, u32, TaskId) -> KthreadStep,
    /// Hands the mechanism its threads' ids (by CPU for a per-CPU thread).
    pub(crate) started: for<'a, 's> fn(&'a mut HostKernel<'s>, Vec<TaskId>),
}

/// The kernel the table's functions run on, named by the core (`sim/`)
/// rather than here: the table is a static of plain function pointers
/// (no generic parameter), and this module stays beneath the core. A
/// mechanism's row calls its own trait's methods on it, which the kernel
/// has through the mechanism's env.
pub(crate) trait KthreadHost {
    type Kernel<'s>;
}

/// The one [`KthreadHost`]: its `Kernel` is the simulated kernel.
pub(crate) struct TheKernel;

/// The kernel a kthread's step runs on (see [`KthreadHost`]).
pub(crate) type HostKernel<'s> = <TheKernel as KthreadHost>::Kernel<'s>;

/// How a kernel thread is created.
pub enum Spawn {
    /// `kthread_create()`: one thread, a normal task starting on the CPU
    /// `cpu` says and allowed on every CPU.
    One { cpu: fn(&Spec) -> u32 },
    /// `smpboot_register_percpu_thread()`: one bound to each CPU, with
    /// `policy`.
    PerCpu { policy: Policy },
    /// One for each CPU `cpus` lists (in that order), a normal task
    /// starting on it and allowed on every CPU, as `kthread_create()`
    /// makes `rcuop/N` for each no-CBs CPU.
    ForCpus { cpus: fn(&Spec) -> Vec<u32> },
}

/// The kernel threads of `table` a spec's mechanisms need, as task group
/// `first` onwards: appends their tasks, returns each kind spawned with its
/// ids (a thread's [`Kthread`] is its kind's place in that list).
pub(crate) fn spawn_all(
    table: &'static [KthreadInfo],
    spec: &Spec,
    tasks: &mut Vec<Task>,
    balance: &mut crate::sched::balance::Balance,
    first: u32,
    nr_cpus: u32,
) -> Vec<(&'static KthreadInfo, Vec<TaskId>)> {
    let mut spawned = Vec::new();
    for info in table {
        if !(info.used_by)(spec) {
            continue;
        }
        let group = first + spawned.len() as u32;
        let which = spawned.len() as Kthread;
        let ids = match info.spawn {
            Spawn::One { cpu } => {
                vec![spawn(tasks, balance, group, nr_cpus, which, cpu(spec))]
            }
            Spawn::ForCpus { cpus } => cpus(spec)
                .into_iter()
                .map(|cpu| {
                    let id = spawn(tasks, balance, group, nr_cpus, which, cpu);
                    // Named after its CPU: rcuop/N.
                    tasks[id as usize].index = cpu;
                    id
                })
                .collect(),
            Spawn::PerCpu { policy } => (0..nr_cpus)
                .map(|cpu| {
                    let mut task = Task::new(group, cpu, cpu, policy, crate::ids::NO_MM);
                    task.kthread = Some(which);
                    task.state = TaskState::Sleeping;
                    task.mode = Mode::Sys;
                    tasks.push(task);
                    (tasks.len() - 1) as TaskId
                })
                .collect(),
        };
        spawned.push((info, ids));
    }
    spawned
}

/// What a kthread does next.
pub(crate) enum KthreadStep {
    /// Kernel work for this long; then it is asked again.
    Work(Nanos),
    /// Sleep until woken, or until `timeout` (a jiffies timer) fires.
    Sleep { timeout: Option<Nanos> },
    /// Spin: the mechanism has set what the thread spins on and sends its
    /// `SpinEnd`; then it is asked again.
    Spin,
}

/// Creates kthread `which` as task group `group`, on `cpu` and allowed on
/// every CPU (`kthread_create()`: it sleeps until its mechanism first
/// wakes it). Returns its task id.
fn spawn(
    tasks: &mut Vec<Task>,
    balance: &mut crate::sched::balance::Balance,
    group: u32,
    nr_cpus: u32,
    which: Kthread,
    cpu: u32,
) -> TaskId {
    let mut task = Task::new(group, 0, cpu, Policy::Normal, crate::ids::NO_MM);
    task.affinity = balance.add_affinity(&Affinity::Cpus((0..nr_cpus).collect()));
    task.kthread = Some(which);
    task.state = TaskState::Sleeping;
    task.mode = Mode::Sys;
    tasks.push(task);
    (tasks.len() - 1) as TaskId
}

/// What running a kernel thread needs from the kernel: time, its task,
/// its mechanism's step function, and the core's and scheduler's verbs
/// that let it work or sleep. Implemented for the kernel in
/// `sim/rcu_env.rs`.
pub(crate) trait KthreadEnv: CoreEnv + SchedVerbs {
    /// One step of kthread `t` of kind `which` ([`KthreadInfo::step`]),
    /// current on CPU `c`.
    fn kthread_step(&mut self, which: Kthread, c: u32, t: TaskId) -> KthreadStep;
    /// Lets the task's unfinished batch run on first; false if none.
    fn resume_batch(&mut self, c: u32, t: TaskId) -> bool;
}

/// Running and waking kernel threads, for any kernel.
pub(crate) trait Kthreads: KthreadEnv {
    /// Runs kthread `t`, current on CPU `c`, until it works or sleeps.
    fn run_kthread(&mut self, c: u32, t: TaskId) {
        // A piece of work interrupted earlier finishes first.
        if self.resume_batch(c, t) {
            return;
        }
        let which = self.task(t).kthread.expect("a kthread");
        let step = self.kthread_step(which, c, t);
        match step {
            KthreadStep::Work(ns) => {
                let now = self.now();
                let task = self.task_mut(t);
                task.batch.push(Mode::Sys, ns.max(1));
                let end = now.saturating_add(task.batch.total());
                self.arm_cpu(c, end);
            }
            KthreadStep::Sleep { timeout } => {
                let task = self.task_mut(t);
                let gen = task.gen.wrapping_add(1);
                task.gen = gen;
                if let Some(at) = timeout {
                    self.at(at, Event::Sched(SchedEvent::Timer { task: t, gen }));
                }
                self.block(c, t);
                self.task_mut(t).wait.interruptible = true;
            }
            KthreadStep::Spin => {}
        }
    }

    /// `wake_up_process()` of a kthread from CPU `from`'s softirq or IRQ
    /// context (a no-op if it is not sleeping).
    fn wake_kthread(&mut self, t: TaskId, from: u32) {
        if self.task(t).state == TaskState::Sleeping {
            self.wake_up_from(t, from, true);
        }
    }
}
impl<K: KthreadEnv + ?Sized> Kthreads for K {}
