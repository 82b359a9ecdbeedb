//! What every mechanism needs from the kernel's core, in one place
//! ([`CoreEnv`]), and the scheduler's verbs the other mechanisms call
//! ([`SchedVerbs`]).
//!
//! Each mechanism sees the kernel through a narrow env trait of its own
//! (`rcu::RcuEnv`, `sched::SchedEnv`, `smp::SmpEnv`, `kthread::KthreadEnv`,
//! ...) naming what it needs beyond the core: its own state and the verbs
//! of the mechanisms it calls. Those traits extend [`CoreEnv`] (and, but
//! for the scheduler's own, [`SchedVerbs`]), so the core's accessors and
//! verbs are declared once here and implemented once for the kernel (in
//! `sim/`), instead of being repeated, delegation by delegation, in every
//! env. The split keeps a mechanism's dependencies readable from its env
//! trait alone, and this module beneath the mechanisms: they need not name
//! `Kernel` or `sim`.
//!
//! The lifecycle: `Kernel::new` builds the core (CPUs, tasks, costs) and
//! each mechanism's state; during the run every event handler is a
//! mechanism's method called on the kernel as its env (monomorphised: no
//! run-time cost), which reads and changes the core through [`CoreEnv`],
//! its own state through its env's accessor, and another mechanism only
//! through that mechanism's verbs.
//!
//! The scheduler's env ([`crate::sched::SchedEnv`]) extends [`CoreEnv`]
//! but not [`SchedVerbs`]: the scheduler provides those verbs itself, and
//! the two would name the same methods.

use smpsim_engine::Nanos;

use crate::costs::CostNs;
use crate::cpu::Cpu;
use crate::event::Event;
use crate::mechanism::Flow;
use crate::metrics::Metrics;
use crate::task::{Resume, Task, TaskId, TaskState};

/// The kernel's core as a mechanism sees it: time, the CPUs (with their run
/// queues), the tasks, the costs, the accounting and the event sink, and
/// the core's and the interpreter's verbs.
pub(crate) trait CoreEnv {
    /// The current event's time.
    fn now(&self) -> Nanos;
    /// How many CPUs the machine has, online or not.
    fn nr_cpus(&self) -> u32;
    /// The machine's costs.
    fn cost(&self) -> &CostNs;
    /// The CPUs, by number.
    fn cpus(&self) -> &[Cpu];
    /// The CPUs, to change their run queues and flags.
    fn cpus_mut(&mut self) -> &mut [Cpu];
    /// CPU `c`.
    #[inline]
    fn cpu(&self, c: u32) -> &Cpu {
        &self.cpus()[c as usize]
    }
    /// CPU `c`, to change.
    #[inline]
    fn cpu_mut(&mut self, c: u32) -> &mut Cpu {
        &mut self.cpus_mut()[c as usize]
    }
    /// Every task, by id.
    fn tasks(&self) -> &[Task];
    /// Every task, to change.
    fn tasks_mut(&mut self) -> &mut [Task];
    /// Task `t`.
    #[inline]
    fn task(&self, t: TaskId) -> &Task {
        &self.tasks()[t as usize]
    }
    /// Task `t`, to change.
    #[inline]
    fn task_mut(&mut self, t: TaskId) -> &mut Task {
        &mut self.tasks_mut()[t as usize]
    }
    /// A task as reports name it.
    fn task_name(&self, t: TaskId) -> String;
    /// The accounting (counts only inside the measured window).
    fn metrics(&self) -> &Metrics;
    /// The accounting, to record into.
    fn metrics_mut(&mut self) -> &mut Metrics;

    /// Schedules an event.
    fn at(&mut self, t: Nanos, e: Event);
    /// Charges CPU `c`'s time up to now.
    fn settle(&mut self, c: u32);
    /// CPU `c` decides what it does next.
    fn kick(&mut self, c: u32);
    /// Arms CPU `c`'s activity end.
    fn arm_cpu(&mut self, c: u32, end: Nanos);
    /// Moves a task to a new state, accounting the old one.
    fn set_state(&mut self, t: TaskId, state: TaskState);
    /// Whether CPU `c` can take an interrupt now.
    fn irqs_enabled(&self, c: u32) -> bool;
    /// CPU `c` starts an IRQs-off stretch.
    fn irq_off_begin(&mut self, c: u32);
    /// CPU `c` ends an IRQs-off stretch.
    fn irq_off_end(&mut self, c: u32);
    /// `preempt_disable()` of task `t`.
    fn preempt_disable(&mut self, t: TaskId);
    /// `preempt_enable()` of task `t`: whether its CPU should reschedule
    /// now.
    fn preempt_enable(&mut self, t: TaskId) -> bool;

    /// The value of an op's argument for task `t` (the interpreter).
    fn eval(&mut self, t: TaskId, e: &crate::program::Expr) -> i64;
    /// Task `t` goes on to its next op (the interpreter).
    fn advance(&mut self, t: TaskId);
}

/// The scheduler's verbs that the other mechanisms call: waking, blocking
/// and rescheduling tasks and CPUs.
pub(crate) trait SchedVerbs: CoreEnv {
    /// `wake_up_process()` of task `t` from CPU `from`.
    fn wake_up(&mut self, t: TaskId, from: u32);
    /// `wake_up_process()` of task `t` from CPU `waker`, in its softirq
    /// context if `softirq`.
    fn wake_up_from(&mut self, t: TaskId, waker: u32, softirq: bool);
    /// Task `t`, current on CPU `c`, sleeps.
    fn block(&mut self, c: u32, t: TaskId);
    /// `schedule()` on CPU `c`.
    fn schedule(&mut self, c: u32);
    /// `resched_cpu(c)` from CPU `from`.
    fn resched_cpu(&mut self, c: u32, from: u32);
    /// Task `t`, current on CPU `c`, sleeps until woken, then goes on at
    /// `resume`.
    fn sleep_until_woken(&mut self, c: u32, t: TaskId, resume: Resume) -> Flow;
}
