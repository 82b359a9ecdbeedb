//! What the scheduler needs from the rest of the kernel ([`SchedEnv`]):
//! the core ([`crate::env::CoreEnv`]: time, CPUs with their run queues,
//! tasks, costs, the event sink), its own state ([`super::Sched`]), and
//! the verbs of the mechanisms
//! a context switch, a wakeup or the tick reach (RCU's quiescent states,
//! the hooks, the mm switch, the lock owners leaving the CPU). The
//! scheduler's methods are traits over it (`Scheduler`, `Capacity`,
//! `TgLoadAvg`, `CfsBandwidth`, `Balancer`); the one implementation, for
//! the kernel, is in `sim/sched_env.rs`. Monomorphised: no run-time cost.

use smpsim_engine::Nanos;

use crate::cpu::Cpu;
use crate::env::CoreEnv;
use crate::hooks::{HookEvent, HookRun, HookSubject};
use crate::program::Program;
use crate::task::{Task, TaskId};

/// The scheduler's view of the kernel.
pub(crate) trait SchedEnv<'s>: CoreEnv {
    /// The compiled scenario.
    fn spec(&self) -> &'s crate::spec::Spec;
    /// The scheduler's own state.
    fn sched(&self) -> &super::Sched<'s>;
    /// The scheduler's own state, to change.
    fn sched_mut(&mut self) -> &mut super::Sched<'s>;
    /// The CPUs, the tasks and the scheduler's state at once (disjoint
    /// borrows for run-queue surgery).
    fn sched_parts(&mut self) -> SchedParts<'_, 's>;

    /// Takes the interrupt pending on CPU `c` (`smp.rs`).
    fn enter_irq(&mut self, c: u32);

    /// Takes the interrupt path on CPU `c` for what is pending (`smp.rs`).
    fn interrupt(&mut self, c: u32);
    /// How long a reschedule of CPU `c` from `from` takes to land (`smp.rs`).
    fn wake_idle_latency(&self, c: u32, from: u32) -> Nanos;
    /// Queues a cross-CPU call on `target` (`smp.rs`).
    fn queue_csd(&mut self, target: u32, csd: crate::cpu::Csd, at: Nanos, from: u32);
    /// `llist_add()` (or `llist_del_all()`) by CPU `by` at `at` on CPU
    /// `owner`'s `call_single_queue` head, a line of the coherence model
    /// (`ttwu_queue.rs`): when it is done.
    fn call_single_queue_add(&mut self, owner: u32, by: u32, at: Nanos) -> Nanos;
    /// A CPU event: its activity ends (the core's loop).
    fn on_cpu_event(&mut self, c: u32, gen: u32) -> smpsim_engine::Handled;
    /// A spinning task's spin ends (the interpreter).
    fn on_spin_end(&mut self, t: TaskId, gen: u32) -> smpsim_engine::Handled;

    /// `rcu_note_context_switch()` on CPU `c` (`rcu/`).
    fn rcu_note_context_switch(&mut self, c: u32);
    /// A quiescent state of CPU `c` (`rcu/`).
    fn rcu_qs(&mut self, c: u32);
    /// The tick's urgent-QS check on CPU `c` (`rcu/`).
    fn rcu_urgent_qs_tick(&mut self, c: u32, in_kernel: bool);
    /// The tick's RCU CPU stall check on CPU `c` (`rcu/`).
    fn rcu_check_cpu_stall(&mut self, c: u32);
    /// CPU `c` enters an extended quiescent state (idle) (`rcu/`).
    fn rcu_eqs_enter(&mut self, c: u32);
    /// Owner `prev` leaves its CPU: optimistic spinners on its sleeping
    /// locks give up (`locking/`).
    fn sleeping_owner_leaves_cpu(&mut self, prev: TaskId);
    /// The mm side of a switch from `prev` to `next` on `c`, inside the
    /// switch (`mm.rs`): its cost.
    fn mm_switch_start(&mut self, c: u32, prev: TaskId, next: TaskId) -> Nanos;
    /// The mm side of the switch, once done, charged to `next` (`mm.rs`).
    fn mm_switch_finish(&mut self, c: u32, next: TaskId) -> Nanos;

    /// The scenario's hook at `ev`, if any (`hooks.rs`).
    fn hook(&self, ev: HookEvent) -> Option<&'s Program>;
    /// Runs hook `h` straight on CPU `c` from `at`; returns when it ends.
    fn run_hook(&mut self, c: u32, h: &Program, at: Nanos) -> Nanos;
    /// A hook inside `__schedule()` on CPU `c`, `cost` into the switch.
    fn switch_hook(
        &mut self,
        c: u32,
        ev: HookEvent,
        subject: HookSubject,
        cost: Nanos,
        run: &mut Option<Box<HookRun<'s>>>,
    ) -> Nanos;
    /// A wakeup's hook at `ev` about task `p` on CPU `on`, now (`hooks.rs`).
    fn wake_hook(&mut self, on: u32, ev: HookEvent, p: TaskId);
    /// Whether the hook at `ev` takes spinlocks (`hooks.rs`).
    fn hook_takes_locks(&self, ev: HookEvent) -> bool;
    /// Charges `d` of hook time to CPU `c`'s current context.
    fn charge_hook(&mut self, c: u32, d: Nanos);
    /// The hook time CPU `c` owes its next switch.
    fn take_hook_debt(&mut self, c: u32) -> Nanos;
    /// The switch's hooks wait for locks: the switch goes on as a hook run.
    fn start_switch_run(&mut self, c: u32, next: TaskId, cost: Nanos, run: Box<HookRun<'s>>);
    /// Whether a hook run of CPU `c` waits to go on.
    fn hook_run_waiting(&self, c: u32) -> bool;
    /// Drives CPU `c`'s hook run on.
    fn drive_hook_run(&mut self, c: u32);
}

/// The CPUs, the tasks and the scheduler's state, borrowed together.
pub(crate) struct SchedParts<'a, 's> {
    pub(crate) cpus: &'a mut [Cpu],
    pub(crate) tasks: &'a mut [Task],
    pub(crate) sched: &'a mut super::Sched<'s>,
}
