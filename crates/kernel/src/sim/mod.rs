//! The kernel model's state and its core loop: event dispatch, time
//! accounting, and the decision of what a CPU does next.

mod collect;
mod driver;
mod hooks_env;
mod locking_env;
mod rcu_env;
mod sched_env;
pub(crate) mod streams;
mod timeline;

pub use collect::{summarize, summarize_exact};
use driver::RunState;
pub use driver::Simulation;

use smpsim_engine::{Engine, Handled, Model, Nanos, Stop};

use crate::cpu::{Activity, Cpu};
use crate::event::*;
use crate::locking::objects::Objects;
use crate::metrics::Metrics;
use crate::result::*;
use crate::spec::Spec;
use crate::task::*;

/// The simulated kernel of one run.
///
/// The core keeps what every mechanism shares: time, the CPUs (with their
/// run queues), the tasks, the event sink and run control, and the
/// machine's costs. Each mechanism's own state is one field, a struct of
/// its module with its invariants stated there: the scheduler's
/// ([`crate::sched::Sched`]), locking's ([`crate::locking::Locking`], each
/// kind's instance table in it), RCU's, the stoppers', the address
/// spaces' ([`crate::mm::MmState`]) and the accounting's
/// ([`Metrics`]). `tests/layout.rs` keeps the count of fields.
pub struct Kernel<'s> {
    /// The compiled scenario; never changes during the run.
    pub(crate) spec: &'s Spec,
    /// The current event's time; never decreases.
    pub(crate) now: Nanos,
    /// One per CPU of the machine, online or not, by CPU number.
    pub(crate) cpus: Vec<Cpu>,
    /// Every task ever created (the scenario's, then kernel threads), by
    /// task id; an exited task keeps its slot. A runnable task is on the
    /// run queue of the CPU in its `cpu`, which is online.
    pub(crate) tasks: Vec<Task>,
    /// The event sink and what decides the run's end.
    run: RunCtl,
    /// The machine's costs in integer nanoseconds, fixed for the run.
    pub(crate) cost: crate::costs::CostNs,
    /// The scheduler's state beside the run queues (`sched/`).
    pub(crate) sched: crate::sched::Sched<'s>,
    /// Every lock kind's instances and lockdep (`locking/`).
    pub(crate) locking: crate::locking::Locking,
    /// RCU's grace-period state (`rcu/`).
    pub(crate) rcu: crate::rcu::Rcu,
    /// The per-CPU stoppers (`migration/N`) and the `stop_machine` call
    /// under way.
    pub(crate) stop: crate::stop_machine::Stoppers,
    /// Address spaces and their counts (`mm.rs`).
    pub(crate) mm: crate::mm::MmState,
    /// Counters, histograms, lock_stat and findings; counts only inside the
    /// measured window (after the warm-up, before the end).
    pub(crate) metrics: Metrics,
}

/// The event sink and the run's control: what the handlers scheduled, the
/// counts of events, when the run ends, and what is reported as it goes.
struct RunCtl {
    /// Events scheduled while handling the current one.
    out: Vec<(Nanos, Event)>,
    /// Events delivered so far, by kind.
    event_counts: crate::result::EventCounts,
    /// Which events are folded (`FOLD_*` bits): handled as soon as they
    /// are scheduled when nothing else can come first. The same handlers
    /// run in the same order at the same times, so results do not depend
    /// on it; a switch for comparing.
    folds: u8,
    /// Tasks that have not exited; the run ends when none are left.
    live_tasks: usize,
    /// Every task has exited; the run ends shortly.
    ending: bool,
    /// A detector found something the run cannot go on from (a task looping
    /// without time, a wild per-CPU index): it ends now.
    halted: bool,
    /// The run stopped at a horizon just short of an event it would have
    /// folded: that event, delivered first when the run goes on, is
    /// counted as folded.
    fold_at_horizon: bool,
    /// A task's condition reads a lock word (`spin_is_locked()`): it is
    /// evaluated at its own time, as a read of a shared variable is.
    reads_lock_words: bool,
    /// The per-CPU random streams of hooks and handlers; each task has its
    /// own in its `rng` (`streams.rs`).
    cpu_streams: streams::CpuStreams,
    /// Simulated time reached, added to as the run goes (for progress
    /// bars); `None` runs the engine in one go.
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The timeline being recorded, if asked for.
    trace: Option<crate::trace::Recorder>,
    /// The kernel threads created, in task-group order after the spec's.
    kthreads: Vec<&'static crate::kthread::KthreadInfo>,
}

impl<'s> Kernel<'s> {
    pub fn new(spec: &'s Spec) -> Self {
        let nr_cpus = spec.machine.nr_cpus() as u32;
        let cpus: Vec<Cpu> = (0..nr_cpus).map(Cpu::new).collect();
        let uses_rcu = crate::rcu::used_by(spec);
        let mut metrics = Metrics::new(
            nr_cpus as usize,
            spec.duration,
            spec.warmup,
            spec.knobs.latency_window,
            spec.counters.len(),
            spec.histograms.len() + uses_rcu as usize,
        );
        let (mut objects, lock_stats) = crate::locking::build::objects(spec, nr_cpus);
        let hotplug_lock = crate::locking::percpu_rwsem::new_hotplug_lock(&mut objects);
        metrics.locks = lock_stats;
        metrics.hist_names = spec.histograms.clone();
        metrics.thresholds = crate::metrics::Thresholds::from_knobs(&spec.knobs);

        let (groups, pools, group_index) = crate::sched::cfs_bandwidth::build(spec, nr_cpus);
        let mut balance = crate::sched::balance::Balance::new(&spec.machine);
        let mut tasks = Vec::new();
        for (g, tg) in spec.task_groups.iter().enumerate() {
            let top = tg.cgroup.and_then(|c| group_index[c]);
            let affinity = balance.add_affinity(&tg.affinity);
            for (i, &cpu) in tg.placement.iter().enumerate() {
                let mm = tg.mm + if tg.mm_per_task { i as u32 } else { 0 };
                let mut task = Task::new(g as u32, i as u32, cpu, tg.policy, mm);
                task.rng = streams::task_stream(spec.seed, &task);
                task.group_rq = top.map(|t| t * nr_cpus + cpu);
                task.top_group = top;
                task.affinity = affinity;
                task.vars = vec![0; tg.program.slots as usize];
                tasks.push(task);
            }
        }
        let nr_user_tasks = tasks.len();
        let first_kthread_group = spec.task_groups.len() as u32;
        let spawned = crate::kthread::spawn_all(
            crate::KTHREADS,
            spec,
            &mut tasks,
            &mut balance,
            first_kthread_group,
            nr_cpus,
        );
        for (info, ids) in &spawned {
            let kind = crate::KTHREADS
                .iter()
                .position(|k| std::ptr::eq(k, *info))
                .expect("a spawned kernel thread's kind is in the table");
            for &id in ids {
                let task = &mut tasks[id as usize];
                task.rng = streams::kthread_stream(spec.seed, kind, task.index);
            }
        }
        let kthreads = spawned.iter().map(|(k, _)| *k).collect();
        let nr_tasks = tasks.len();
        let mut kernel = Kernel {
            spec,
            now: 0,
            cpus,
            tasks,
            run: RunCtl {
                out: Vec::with_capacity(64),
                event_counts: Default::default(),
                folds: default_folds(),
                live_tasks: 0,
                ending: false,
                halted: false,
                fold_at_horizon: false,
                reads_lock_words: spec.task_groups.iter().any(|g| {
                    g.program.ops.iter().any(|op| match op {
                        crate::program::Op::JumpUnless(c, _)
                        | crate::program::Op::Check(crate::program::CheckOp::Assert {
                            cond: c,
                            ..
                        }) => c.reads_lock_word(),
                        _ => false,
                    })
                }),
                cpu_streams: streams::CpuStreams::new(
                    spec.seed,
                    nr_cpus,
                    spec.hooks.iter().any(Option::is_some),
                    !spec.handlers.is_empty(),
                ),
                progress: None,
                trace: None,
                kthreads,
            },
            cost: crate::costs::CostNs::new(&spec.machine),
            sched: crate::sched::Sched::new(spec, nr_cpus, nr_tasks, groups, pools, balance),
            locking: crate::locking::Locking::new(objects, hotplug_lock),
            rcu: crate::rcu::Rcu::new(nr_cpus as usize),
            stop: crate::stop_machine::Stoppers::new(nr_cpus, Vec::new()),
            mm: Default::default(),
            metrics,
        };
        for (info, ids) in spawned {
            (info.started)(&mut kernel, ids);
        }
        if spec.knobs.lockdep {
            let classes = spec.objects.len() + 1;
            let ld = crate::locking::lockdep::Lockdep::new(kernel.tasks.len(), classes);
            kernel.locking.enable_lockdep(ld);
        }
        if uses_rcu {
            kernel
                .metrics
                .hist_names
                .push(crate::rcu::GP_HISTOGRAM.into());
        }
        kernel.run.live_tasks = nr_user_tasks;
        let user_tasks = &kernel.tasks[..nr_user_tasks];
        let nr_mms = user_tasks.iter().map(|t| t.mm + 1).max().unwrap_or(0);
        kernel.mm = crate::mm::MmState::new(
            (0..nr_mms)
                .map(|mm| {
                    let users = user_tasks.iter().filter(|t| t.mm == mm).count() as u32;
                    crate::mm::Mm::new(users, nr_cpus as usize)
                })
                .collect(),
        );
        // Initial variable values, then every task on its runqueue.
        for t in 0..nr_user_tasks as u32 {
            let tg = &spec.task_groups[kernel.tasks[t as usize].group as usize];
            for (slot, expr) in &tg.program.init {
                let v = kernel.eval(t, expr);
                kernel.tasks[t as usize].vars[*slot as usize] = v;
            }
            kernel.enqueue_task(t);
            let task = &kernel.tasks[t as usize];
            kernel.cpus[task.cpu as usize].nr_running += 1;
            if task.affinity != PINNED {
                kernel.sched.movable_queued(true);
            }
        }
        kernel
    }

    /// Puts each CPU's first task on it at time zero. The run starts on a
    /// system already up: the switch that made a task current happened
    /// before it, so it costs nothing here. Charging it would serialise
    /// every CPU's first switch on the mm's cpumask line (48 ns a CPU) and
    /// book that wait as sys time with IRQs off: CPU 4095 of a 4,096-CPU
    /// machine would first run a task 197 us into the run.
    fn boot(&mut self) {
        // Every CPU's task is current (and in its mm's cpumask) before the
        // first one runs, as on a running system.
        self.sched.set_booting(true);
        for c in 0..self.nr_cpus() {
            self.cpus[c as usize].need_resched = true;
            self.kick(c);
        }
        self.sched.set_booting(false);
        for c in 0..self.nr_cpus() {
            self.kick(c);
        }
    }

    /// The machine's CPUs, online or not.
    #[inline]
    pub(crate) fn nr_cpus(&self) -> u32 {
        self.cpus.len() as u32
    }

    /// Picks the folds (`FOLD_*` bits) the run makes; results do not
    /// depend on them.
    pub fn set_folds(&mut self, folds: u8) {
        self.run.folds = folds;
    }

    /// Adds the simulated time reached to `progress` as the run goes.
    pub fn report_progress(
        &mut self,
        progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    ) {
        self.run.progress = progress;
    }

    /// Records every CPU's timeline into `recorder` during the run.
    pub fn record_timeline_into(&mut self, recorder: crate::trace::Recorder) {
        self.run.trace = Some(recorder);
    }

    /// The timeline recorded, if one was asked for.
    pub fn take_timeline(&mut self) -> Option<crate::trace::Recorder> {
        self.run.trace.take()
    }

    /// Ends the run now: a detector found something it cannot go on from
    /// (a task looping without time, a wild per-CPU index).
    pub(crate) fn halt(&mut self) {
        self.run.halted = true;
    }

    /// Whether a task's condition reads a lock word (`spin_is_locked()`).
    #[inline]
    pub(crate) fn reads_lock_words(&self) -> bool {
        self.run.reads_lock_words
    }

    /// Whether the run was halted ([`Self::halt`]).
    #[inline]
    pub(crate) fn halted(&self) -> bool {
        self.run.halted
    }

    /// A task exited: the run ends when none are left.
    pub(crate) fn task_exited(&mut self) {
        self.run.live_tasks -= 1;
    }

    /// Kernel thread kind `k` of those created (a task's `kthread`).
    #[inline]
    pub(crate) fn kthread_info(&self, k: u8) -> &'static crate::kthread::KthreadInfo {
        self.run.kthreads[k as usize]
    }

    /// CPU `c`'s random stream for hooks.
    #[inline]
    pub(crate) fn hook_stream(&mut self, c: u32) -> &mut smpsim_engine::Rng {
        &mut self.run.cpu_streams.hook[c as usize]
    }

    /// CPU `c`'s random stream for interrupt handlers.
    #[inline]
    pub(crate) fn handler_stream(&mut self, c: u32) -> &mut smpsim_engine::Rng {
        &mut self.run.cpu_streams.handler[c as usize]
    }

    /// Schedules an event (flushed into the engine after the current one).
    #[inline]
    pub(crate) fn at(&mut self, time: Nanos, event: Event) {
        self.run.out.push((time, event));
    }

    /// Runs the spec's duration and returns the result.
    pub fn run(&mut self) -> RunResult {
        let mut run = RunState::new(self);
        match self.run.progress.clone() {
            None => {
                run.advance(self, Nanos::MAX);
            }
            // In steps of a hundredth of the run: the engine delivers the
            // same events in the same order whether it stops at a horizon
            // and goes on or runs through.
            Some(progress) => {
                let step = (self.spec.duration / 100).max(1);
                loop {
                    let was = run.reached;
                    let done = run.advance(self, was.saturating_add(step));
                    progress.fetch_add(run.reached - was, std::sync::atomic::Ordering::Relaxed);
                    if done {
                        break;
                    }
                }
            }
        }
        run.finish(self)
    }

    // ----- accounting -------------------------------------------------

    /// Charges the time since the CPU was last accounted to whatever it was
    /// doing: idle, irq, the context switch, or the current task (user, sys
    /// or spin, following its work batch).
    pub(crate) fn settle(&mut self, c: u32) {
        let now = self.now;
        let from = self.cpus[c as usize].accounted_to;
        if now > from && self.run.trace.is_some() {
            self.record_timeline(c, from, now);
        }
        let cpu = &mut self.cpus[c as usize];
        let dt = now - from;
        cpu.accounted_to = now;
        if dt == 0 {
            return;
        }
        match cpu.activity {
            Activity::Idle => cpu.times.idle += dt,
            Activity::Switch { .. } => cpu.times.sys += dt,
            Activity::Irq { .. } => {
                // The softirq tail of the handler, if it runs one.
                let soft = now.saturating_sub(cpu.softirq_from.max(from));
                cpu.times.softirq += soft;
                cpu.times.irq += dt - soft;
                if cpu.interrupted != NO_TASK {
                    self.tasks[cpu.interrupted as usize].times.irq += dt;
                }
            }
            Activity::Task => {
                let task = &mut self.tasks[cpu.curr as usize];
                if task.wait.spin != Spin::None {
                    cpu.times.spin += dt;
                    task.times.spin += dt;
                    task.times.sys += dt;
                    if let Some((obj, _)) = spun_on(self.locking.objects(), task.wait.spin) {
                        self.metrics.lock_spin(now, obj, dt);
                    }
                } else {
                    let mut left = dt;
                    let (times, batch, mode) = (&mut task.times, &mut task.batch, task.mode);
                    let mut charge = |m: Mode, ns: u64| match m {
                        Mode::User => {
                            times.user += ns;
                            cpu.times.user += ns
                        }
                        Mode::Sys => {
                            times.sys += ns;
                            cpu.times.sys += ns
                        }
                    };
                    batch.consume(dt, |m, ns| {
                        left -= ns;
                        charge(m, ns)
                    });
                    // Time past the batch runs in the task's current mode.
                    if left > 0 {
                        charge(mode, left);
                    }
                    // The counts and samples the batch has now run past
                    // happened, each at its place in `[from, now)`.
                    let clock = task.batch_clock;
                    task.batch_clock += dt - left;
                    while let Some(cr) = task.credits.front() {
                        if cr.at > task.batch_clock {
                            break;
                        }
                        let at = from + cr.at.saturating_sub(clock);
                        self.metrics.credit(at, cr.what);
                        task.credits.pop_front();
                    }
                }
            }
        }
    }

    /// A task as reports name it: `group/index`.
    pub(crate) fn task_name(&self, t: TaskId) -> String {
        let task = &self.tasks[t as usize];
        if let Some(k) = task.kthread {
            let info = self.run.kthreads[k as usize];
            return match info.spawn {
                crate::kthread::Spawn::PerCpu { .. } | crate::kthread::Spawn::ForCpus { .. } => {
                    format!("{}/{}", info.name, task.index)
                }
                crate::kthread::Spawn::One { .. } => info.name.to_string(),
            };
        }
        format!(
            "{}/{}",
            self.spec.task_groups[task.group as usize].name, task.index
        )
    }

    /// Moves a task to a new scheduler state, accounting the old one (and
    /// its CPU's `nr_running`).
    pub(crate) fn set_state(&mut self, t: TaskId, state: TaskState) {
        let now = self.now;
        let task = &mut self.tasks[t as usize];
        let dt = now - task.since;
        let old = task.state;
        match old {
            TaskState::Sleeping => task.times.sleep += dt,
            TaskState::Runnable => task.times.runnable += dt,
            _ => {}
        }
        task.state = state;
        task.since = now;
        let active = |s| matches!(s, TaskState::Running | TaskState::Runnable);
        let nr = &mut self.cpus[task.cpu as usize].nr_running;
        match (active(old), active(state)) {
            (false, true) => *nr += 1,
            (true, false) => *nr -= 1,
            _ => {}
        }
        if task.affinity != PINNED {
            match (old == TaskState::Runnable, state == TaskState::Runnable) {
                (false, true) => self.sched.movable_queued(true),
                (true, false) => self.sched.movable_queued(false),
                _ => {}
            }
        }
    }

    pub(crate) fn preempt_disable(&mut self, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        task.irq.preempt_count += 1;
        if task.irq.preempt_count == 1 {
            self.cpus[task.cpu as usize].preempt_off_since = Some(self.now);
        }
    }

    /// Returns true when the CPU should reschedule now.
    pub(crate) fn preempt_enable(&mut self, t: TaskId) -> bool {
        if self.tasks[t as usize].irq.preempt_count == 0 {
            // preempt_count_sub(): DEBUG_LOCKS_WARN_ON(val > preempt_count())
            // warns and leaves the count alone.
            let (c, name) = (self.tasks[t as usize].cpu, self.task_name(t));
            self.metrics.preempt_underflow(c, self.now, &name);
            return false;
        }
        let task = &mut self.tasks[t as usize];
        task.irq.preempt_count -= 1;
        let c = task.cpu;
        if task.irq.preempt_count == 0 {
            if let Some(start) = self.cpus[c as usize].preempt_off_since.take() {
                self.metrics.preempt_off_section(c, start, self.now);
            }
            return self.cpus[c as usize].need_resched;
        }
        false
    }

    pub(crate) fn irq_off_begin(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if cpu.irq_off_since.is_none() {
            cpu.irq_off_since = Some(self.now);
        }
    }

    pub(crate) fn irq_off_end(&mut self, c: u32) {
        if let Some(start) = self.cpus[c as usize].irq_off_since.take() {
            self.metrics.irq_off_section(c, start, self.now);
        }
    }

    fn close_sections(&mut self, c: u32) {
        self.irq_off_end(c);
        if let Some(start) = self.cpus[c as usize].preempt_off_since.take() {
            self.metrics.preempt_off_section(c, start, self.now);
        }
    }

    // ----- the CPU's next step ------------------------------------------

    /// Can the CPU take an interrupt now?
    pub(crate) fn irqs_enabled(&self, c: u32) -> bool {
        let cpu = &self.cpus[c as usize];
        match cpu.activity {
            Activity::Irq { .. } | Activity::Switch { .. } => false,
            Activity::Idle => true,
            Activity::Task => !self.tasks[cpu.curr as usize].irq.irqs_off,
        }
    }

    /// Decides what CPU `c` does from now on. Called whenever something the
    /// CPU waits for may have changed, while it is idle or running a task.
    pub(crate) fn kick(&mut self, c: u32) {
        debug_assert!(matches!(
            self.cpus[c as usize].activity,
            Activity::Idle | Activity::Task
        ));
        if crate::hooks::Hooks::hook_run_waiting(self, c) {
            // A wakeup's hooks that take locks hold the CPU up first.
            crate::hooks::Hooks::start_held_run(self, c);
            return;
        }
        self.settle(c);
        let cpu = &self.cpus[c as usize];
        let t = cpu.curr;
        // Preemption on the way back from an interrupt comes before the
        // next interrupt is taken (the switch runs with IRQs off).
        if t != NO_TASK && cpu.need_resched {
            let task = &self.tasks[t as usize];
            // A preemptible csd_lock_wait() can be preempted mid-spin; mutex
            // spinners run with preemption off and stop on their own.
            let preemptible_spin = matches!(task.wait.spin, Spin::None | Spin::CsdWait);
            if task.preemptible() && preemptible_spin && !task.wait.spin_done {
                self.schedule(c);
                return;
            }
        }
        if self.irqs_enabled(c) && cpu.has_pending_irq() {
            self.enter_irq(c);
            return;
        }
        if t == NO_TASK {
            if cpu.rt.is_empty() && cpu.cfs.is_empty() {
                self.cpus[c as usize].activity = Activity::Idle;
                self.cpus[c as usize].need_resched = false;
                // Back to idle after an interrupt: an extended QS again.
                self.rcu.eqs_enter(c);
            } else {
                self.schedule(c);
            }
            return;
        }
        let need_resched = cpu.need_resched;
        let task = &self.tasks[t as usize];
        match task.wait.spin {
            Spin::None if task.kthread.is_some() => self.run_kthread(c, t),
            Spin::None => self.run_task(c, t),
            Spin::CsdWait | Spin::StopMachine | Spin::Lock { .. } => {
                if task.wait.spin_done {
                    self.finish_spin(c, t);
                }
            }
            Spin::Sleeping { kind, lock, .. } => {
                if task.wait.spin_done {
                    self.finish_spin(c, t);
                } else if need_resched {
                    self.sleeping_spin_need_resched(c, t, kind, lock);
                }
            }
        }
    }

    /// Line transfers so far on each object's cache lines, all instances.
    fn lock_line_transfers(&self) -> Vec<u64> {
        crate::locking::build::line_transfers(self.locking.objects(), self.spec, self.nr_cpus())
    }

    /// Failed compare-and-exchanges so far on each object's atomic lines.
    fn cmpxchg_fails(&self) -> Vec<u64> {
        crate::locking::atomic::cmpxchg_fails(self.locking.objects(), self.spec, self.nr_cpus())
    }

    /// OSQ head-role passes so far of each object (0 for a non-mutex).
    fn osq_passes(&self) -> Vec<crate::locking::osq_numa::Passes> {
        crate::locking::osq_numa::passes_by_object(
            self.locking.objects(),
            self.spec,
            self.nr_cpus(),
        )
    }

    /// Starts the CPU's next activity end event.
    pub(crate) fn arm_cpu(&mut self, c: u32, end: Nanos) {
        let cpu = &mut self.cpus[c as usize];
        cpu.gen = cpu.gen.wrapping_add(1);
        let gen = cpu.gen;
        self.at(end, Event::Sched(SchedEvent::Cpu { cpu: c, gen }));
    }

    pub(crate) fn on_cpu_event(&mut self, c: u32, gen: u32) -> Handled {
        if self.cpus[c as usize].gen != gen {
            return Handled::Stale;
        }
        // Invalidate this event's generation so nothing double-fires.
        self.cpus[c as usize].gen = gen.wrapping_add(1);
        match self.cpus[c as usize].activity {
            Activity::Irq { .. } => self.exit_irq(c),
            Activity::Switch { next, .. } => self.finish_switch(c, next),
            Activity::Task | Activity::Idle => self.kick(c),
        }
        Handled::Done
    }
}

impl Model for Kernel<'_> {
    type Event = Event;

    fn handle(&mut self, engine: &mut Engine<Event>, event: Event) -> Handled {
        // The first event after a stop at a horizon may be one a run going
        // through would have folded: counted so (results never differ).
        let folded = std::mem::take(&mut self.run.fold_at_horizon);
        let handled = self.handle_one(engine, event, folded);
        if handled != Handled::Done || self.run.folds == 0 {
            self.flush(engine);
            return handled;
        }
        // Fold: while the earliest event just scheduled is one the folds
        // take and would be the very next delivered, handle it now.
        while let Some(i) = self.fold_candidate() {
            let (at, next) = self.run.out[i];
            if !engine.fold(at) {
                self.run.fold_at_horizon =
                    at <= self.spec.duration && engine.folds_after_horizon(at);
                break;
            }
            self.run.out.remove(i);
            self.flush(engine);
            let h = self.handle_one(engine, next, true);
            engine.count_folded(h);
            if h == Handled::Stop {
                self.flush(engine);
                return Handled::Stop;
            }
        }
        self.flush(engine);
        handled
    }
}

impl Kernel<'_> {
    /// Handles one event at the engine's time (delivered, or `folded`):
    /// the mechanism's handler, its count by kind, and the end of the run.
    /// What it schedules stays in `out`.
    #[inline]
    fn handle_one(&mut self, engine: &mut Engine<Event>, event: Event, folded: bool) -> Handled {
        self.now = engine.now();
        // The end of a CPU's activity is counted by the activity that
        // ends (read before the handler moves it on).
        let kind = match event {
            Event::Sched(SchedEvent::Cpu { cpu, .. }) => match self.cpus[cpu as usize].activity {
                Activity::Task => KIND_CPU_TASK,
                Activity::Idle => KIND_CPU_IDLE,
                Activity::Irq { .. } => KIND_CPU_IRQ_EXIT,
                Activity::Switch { .. } => KIND_CPU_SWITCH,
            },
            e => e.kind(),
        };
        // Read while the event is at hand (a flag kept in a register costs
        // less than matching the event again after the handlers ran).
        let all_exited = matches!(event, Event::Run(RunEvent::AllExited));
        let handled = match event {
            Event::Sched(e) => self.on_sched_event(e),
            Event::Smp(e) => self.on_smp_event(e),
            Event::Cfs(e) => self.on_cfs_event(e),
            Event::Rcu(e) => self.on_rcu_event(e),
            Event::Mm(e) => self.on_mm_event(e),
            Event::Lock(e) => self.on_lock_event(e),
            Event::Stop(e) => self.on_stop_event(e),
            Event::Run(RunEvent::AllExited) => Handled::Done,
            Event::Run(RunEvent::WarmupEnd) => {
                self.metrics.bounce_base = self.lock_line_transfers();
                self.metrics.cmpxchg_fails_base = self.cmpxchg_fails();
                self.metrics.osq_passes_base = self
                    .osq_passes()
                    .iter()
                    .map(|p| (p.within_node, p.across_nodes))
                    .collect();
                self.warmup_end_times();
                Handled::Done
            }
        };
        match handled {
            Handled::Stale => self.run.event_counts.stale[kind] += 1,
            _ => self.run.event_counts.done[kind] += 1,
        }
        if folded {
            self.run.event_counts.folded[kind] += 1;
        }
        if all_exited {
            return Handled::Stop;
        }
        if self.run.halted {
            return Handled::Stop;
        }
        if self.run.live_tasks == 0 && handled == Handled::Done && !self.run.ending {
            // Let in-flight work (IPIs, frees, callbacks) land, then stop.
            // Scheduled after what the handler scheduled.
            self.run.ending = true;
            self.flush(engine);
            engine.schedule(self.now + 1_000_000, Event::Run(RunEvent::AllExited));
        }
        handled
    }

    /// Hands the events scheduled so far to the engine, in order.
    #[inline]
    fn flush(&mut self, engine: &mut Engine<Event>) {
        for (at, ev) in self.run.out.drain(..) {
            engine.schedule(at, ev);
        }
    }

    /// The event of `out` that would be delivered first among them (the
    /// earliest, the first scheduled of equal times), if it is of a kind
    /// the folds take (`folds`, by [`FOLD_SPIN_END`] and the others).
    #[inline]
    fn fold_candidate(&self) -> Option<usize> {
        let mut best: Option<(usize, Nanos)> = None;
        for (i, &(at, _)) in self.run.out.iter().enumerate() {
            if best.is_none_or(|(_, b)| at < b) {
                best = Some((i, at));
            }
        }
        let (i, at) = best?;
        if at < self.now {
            return None;
        }
        let fold = match self.run.out[i].1 {
            Event::Sched(SchedEvent::SpinEnd { .. }) => FOLD_SPIN_END,
            Event::Sched(SchedEvent::Cpu { cpu, .. }) => match self.cpus[cpu as usize].activity {
                Activity::Irq { .. } => FOLD_IRQ_EXIT,
                Activity::Task => FOLD_TASK,
                Activity::Idle | Activity::Switch { .. } => 0,
            },
            _ => 0,
        };
        (self.run.folds & fold != 0).then_some(i)
    }
}

/// The folds ([`Kernel::folds`]): the next event handled at once, without
/// the queue, when it is a spinner's end (a lock granted, a CSD
/// unlocked)...
pub const FOLD_SPIN_END: u8 = 1;
/// ... the end of an interrupt handler ...
pub const FOLD_IRQ_EXIT: u8 = 2;
/// ... or the end of a task's batch (the shared op it runs up to).
pub const FOLD_TASK: u8 = 4;
/// Every fold.
pub const FOLD_ALL: u8 = FOLD_SPIN_END | FOLD_IRQ_EXIT | FOLD_TASK;
/// The folds a run makes unless told otherwise.
pub const DEFAULT_FOLDS: u8 = FOLD_ALL;

/// [`DEFAULT_FOLDS`], or the `FOLD_*` bits in `SMPSIM_FOLDS` (a number,
/// e.g. `0` for none): for measuring what a fold saves with one binary.
/// Results do not depend on it.
fn default_folds() -> u8 {
    static FOLDS: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *FOLDS.get_or_init(|| {
        std::env::var("SMPSIM_FOLDS")
            .ok()
            .and_then(|v| v.trim().parse::<u8>().ok())
            .map_or(DEFAULT_FOLDS, |f| f & FOLD_ALL)
    })
}

/// The lock a spin is on: its declared object (the `lock_stat` row the
/// spin time is charged to) and the instance; `None` for a wait that is
/// not on a lock (`csd_lock_wait()`, `multi_cpu_stop()`).
fn spun_on(objects: &Objects, spin: Spin) -> Option<(u32, u32)> {
    match spin {
        Spin::Lock { lock } => Some((objects.spinlocks()[lock as usize].object, lock)),
        Spin::Sleeping { kind, lock, .. } => Some((
            crate::locking::sleeping::kind(kind)
                .imp
                .object(objects, lock),
            lock,
        )),
        Spin::CsdWait | Spin::StopMachine | Spin::None => None,
    }
}

/// The core as every mechanism's env sees it ([`crate::env::CoreEnv`]):
/// the core's fields and its and the interpreter's verbs, each delegated
/// by its full path.
impl crate::env::CoreEnv for Kernel<'_> {
    #[inline]
    fn now(&self) -> Nanos {
        self.now
    }
    #[inline]
    fn nr_cpus(&self) -> u32 {
        Kernel::nr_cpus(self)
    }
    #[inline]
    fn cost(&self) -> &crate::costs::CostNs {
        &self.cost
    }
    #[inline]
    fn cpus(&self) -> &[Cpu] {
        &self.cpus
    }
    #[inline]
    fn cpus_mut(&mut self) -> &mut [Cpu] {
        &mut self.cpus
    }
    #[inline]
    fn tasks(&self) -> &[Task] {
        &self.tasks
    }
    #[inline]
    fn tasks_mut(&mut self) -> &mut [Task] {
        &mut self.tasks
    }
    fn task_name(&self, t: TaskId) -> String {
        Kernel::task_name(self, t)
    }
    #[inline]
    fn metrics(&self) -> &Metrics {
        &self.metrics
    }
    #[inline]
    fn metrics_mut(&mut self) -> &mut Metrics {
        &mut self.metrics
    }
    #[inline]
    fn at(&mut self, t: Nanos, e: Event) {
        Kernel::at(self, t, e)
    }
    #[inline]
    fn settle(&mut self, c: u32) {
        Kernel::settle(self, c)
    }
    #[inline]
    fn kick(&mut self, c: u32) {
        Kernel::kick(self, c)
    }
    #[inline]
    fn arm_cpu(&mut self, c: u32, end: Nanos) {
        Kernel::arm_cpu(self, c, end)
    }
    fn set_state(&mut self, t: TaskId, state: TaskState) {
        Kernel::set_state(self, t, state)
    }
    #[inline]
    fn irqs_enabled(&self, c: u32) -> bool {
        Kernel::irqs_enabled(self, c)
    }
    #[inline]
    fn irq_off_begin(&mut self, c: u32) {
        Kernel::irq_off_begin(self, c)
    }
    #[inline]
    fn irq_off_end(&mut self, c: u32) {
        Kernel::irq_off_end(self, c)
    }
    fn preempt_disable(&mut self, t: TaskId) {
        Kernel::preempt_disable(self, t)
    }
    fn preempt_enable(&mut self, t: TaskId) -> bool {
        Kernel::preempt_enable(self, t)
    }
    fn eval(&mut self, t: TaskId, e: &crate::program::Expr) -> i64 {
        Kernel::eval(self, t, e)
    }
    fn advance(&mut self, t: TaskId) {
        Kernel::advance(self, t)
    }
}

/// Kernel threads' steps run on the simulated kernel (see
/// [`crate::kthread::KthreadHost`]).
impl crate::kthread::KthreadHost for crate::kthread::TheKernel {
    type Kernel<'s> = Kernel<'s>;
}
