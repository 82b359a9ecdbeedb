//! What a scenario can state and check about itself, and the perturbed
//! schedules that look for the run in which it fails.
//!
//! - **Shared variables** (`variable` objects): plain memory that ops
//!   write with `WRITE_ONCE()` and expressions read with `READ_ONCE()`,
//!   at the simulated time the op runs (an op that reads one waits for
//!   the task's batch of local work to reach it first).
//! - **Assertions** (`CheckOp::Assert`): a condition that must hold where the
//!   op stands; when it does not, an `assertion` finding names the task,
//!   CPU, time and message.
//! - **Perturbed schedules** ([`Perturb`]): the model is deterministic, so
//!   a race that needs an unlucky interleaving never shows in the default
//!   schedule. With a perturbation, each shared-state op may be preceded by
//!   a small random delay; each decision has an index, and the indices of
//!   the delays taken are in the result, so that a failing schedule can be
//!   shrunk to the few delays it needs and replayed exactly.

use smpsim_engine::{Nanos, Rng};

use crate::env::CoreEnv;
use crate::mechanism::{Flow, MechanismOp};
use crate::program::{CheckOp, Cond, ObjRef};
use crate::spec::Perturb;
use crate::task::{Resume, TaskId};

/// What the checks need from the rest of the kernel: the core's time,
/// CPUs and tasks, the interpreter's expressions, the `variable` objects
/// (locking's instance table), the accounting and the explored schedule.
/// The one implementation, for the kernel, is in `sim/sched_env.rs`.
pub(crate) trait CheckEnv: CoreEnv {
    /// The run's length (what happens past it is not checked).
    fn duration(&self) -> Nanos;
    /// The perturbed schedule being explored, if any (the scheduler's).
    fn perturber(&mut self) -> Option<&mut Perturber>;
    /// Evaluates `c` for task `t` (the interpreter).
    fn cond(&mut self, t: TaskId, c: &Cond) -> bool;
    /// The instance `r` names for task `t` (the interpreter).
    fn instance(&mut self, t: TaskId, r: &ObjRef) -> u32;
    /// `WRITE_ONCE()` of variable instance `i` (locking's objects).
    fn set_variable(&mut self, i: u32, v: i64);
}

impl<K: CheckEnv> MechanismOp<K> for CheckOp {
    fn local(&self) -> bool {
        // The membarrier checker's marks are local: where the command
        // begins, its batch has run to; checking at its end adds no event,
        // as what it reads (other CPUs' barriers) does not move within the
        // batch.
        matches!(
            self,
            CheckOp::MembarrierBegin { .. } | CheckOp::MembarrierEnd
        )
    }

    fn run(&self, k: &mut K, c: u32, t: TaskId, _: Resume) -> Flow {
        match self {
            CheckOp::WriteOnce { var, value } => {
                let v = k.eval(t, value);
                let i = k.instance(t, var);
                k.set_variable(i, v);
                k.advance(t);
            }
            CheckOp::Assert { cond, message } => {
                if !k.cond(t, cond) {
                    let (name, pc, now) = (k.task_name(t), k.tasks()[t as usize].pc, k.now());
                    k.metrics_mut().assertion(c, now, &name, pc, message);
                }
                k.advance(t);
            }
            CheckOp::MembarrierBegin { target } => {
                let vt = k.now().saturating_add(k.tasks()[t as usize].batch.total());
                let target = target.as_ref().map_or(-1, |e| k.eval(t, e));
                k.tasks_mut()[t as usize].smp.membarrier = Some((vt, target));
                k.tasks_mut()[t as usize].pc += 1;
            }
            CheckOp::MembarrierEnd => {
                membarrier_check(k, c, t);
                k.tasks_mut()[t as usize].pc += 1;
            }
        }
        Flow::Next
    }
}

/// The state of a perturbed schedule.
pub struct Perturber {
    rng: Rng,
    max_delay: Nanos,
    one_in: u64,
    keep: Option<Vec<u32>>,
    next: u32,
    /// Indices of the delays taken, in order.
    pub applied: Vec<u32>,
}

impl Perturber {
    pub fn new(p: &Perturb) -> Self {
        let mut keep = p.keep.clone();
        if let Some(k) = keep.as_mut() {
            k.sort_unstable();
        }
        Perturber {
            rng: Rng::seed_from_u64(p.seed),
            max_delay: p.max_delay.max(1),
            one_in: p.one_in.max(1),
            keep,
            next: 0,
            applied: Vec::new(),
        }
    }

    /// The next decision: a delay, or none. Both draws are made whether
    /// or not the delay is kept, so indices mean the same in every replay
    /// up to the first difference in timing.
    fn decide(&mut self) -> Option<Nanos> {
        let index = self.next;
        self.next += 1;
        let hit = self.rng.below(self.one_in) == 0;
        let delay = 1 + self.rng.below(self.max_delay);
        let kept = self
            .keep
            .as_ref()
            .is_none_or(|k| k.binary_search(&index).is_ok());
        (hit && kept).then(|| {
            self.applied.push(index);
            delay
        })
    }
}

/// A delay before the shared-state op a task is about to run, if the
/// explored schedule takes one here.
pub(crate) fn perturb_delay<K: CheckEnv + ?Sized>(k: &mut K) -> Option<Nanos> {
    k.perturber()?.decide()
}

/// The membarrier checker at a command's return: a CPU it covers that
/// has run a thread of the caller's mm since before the command began,
/// with no full barrier since then (no IPI handler, no context switch),
/// may still see memory accesses the caller ordered before the call.
fn membarrier_check<K: CheckEnv + ?Sized>(k: &mut K, c: u32, t: TaskId) {
    let Some((begin, target)) = k.tasks_mut()[t as usize].smp.membarrier.take() else {
        return;
    };
    let (tasks, cpus) = (k.tasks(), k.cpus());
    let mm = tasks[t as usize].mm;
    let unordered = |x: u32| {
        let cpu = &cpus[x as usize];
        x != c
            && cpu.curr != crate::task::NO_TASK
            && tasks[cpu.curr as usize].mm == mm
            && cpu.last_barrier < begin
    };
    let nr_cpus = k.nr_cpus();
    let missed = if target >= 0 {
        (target < nr_cpus as i64 && unordered(target as u32)).then_some(target as u32)
    } else {
        (0..nr_cpus).find(|&x| unordered(x))
    };
    // The command returns where the task's batch has run to (it is
    // checked while planned, never before its own beginning).
    let returned = k.now().saturating_add(tasks[t as usize].batch.total());
    if let Some(x) = missed.filter(|_| returned <= k.duration()) {
        let name = k.task_name(t);
        let runner = k.task_name(k.cpus()[x as usize].curr);
        k.metrics_mut()
            .membarrier_missed(c, returned, &name, x, &runner, begin);
    }
}
