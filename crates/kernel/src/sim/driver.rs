//! Driving a run: the engine and the kernel together, run through or
//! stopped at a simulated time and continued with the same result.

use super::*;

/// The engine of a run in progress: [`Kernel::run`] is `new`, `advance`
/// to the end, `finish`.
pub(super) struct RunState {
    engine: Engine<Event>,
    /// Simulated time the engine has reached.
    pub(super) reached: Nanos,
    /// Why the run ended, once it has.
    ended: Option<smpsim_engine::StopReason>,
}

impl RunState {
    /// The kernel's first events queued at time zero.
    pub(super) fn new(k: &mut Kernel) -> Self {
        let mut engine: Engine<Event> = Engine::with_capacity(4 * k.tasks.len() + 1024);
        k.boot();
        for (at, ev) in k.run.out.drain(..) {
            engine.schedule(at, ev);
        }
        // Booting scheduled an event or two per CPU at once (48 MB kept
        // for the whole run at 1,048,576 CPUs); a handler schedules a few.
        k.run.out.shrink_to(64);
        for pool in 0..k.sched.pools.len() as u32 {
            let first = crate::sched::cfs_bandwidth::first_period(&k.sched.pools[pool as usize]);
            engine.schedule(first, Event::Cfs(CfsEvent::Period { pool }));
        }
        if k.spec.warmup > 0 {
            engine.schedule(k.spec.warmup, Event::Run(RunEvent::WarmupEnd));
        }
        RunState {
            engine,
            reached: 0,
            ended: None,
        }
    }

    /// Simulates up to `horizon` (at most the spec's duration); true when
    /// the run is over (its duration reached, its event budget spent, or
    /// every task exited). Never inlined: it is the event loop's one frame,
    /// where a profile of the loop alone starts.
    #[inline(never)]
    pub(super) fn advance(&mut self, k: &mut Kernel, horizon: Nanos) -> bool {
        if self.ended.is_some() {
            return true;
        }
        // A fault at boot (a task's first op) stops the run at time zero.
        if k.run.halted {
            self.ended = Some(smpsim_engine::StopReason::ModelRequested);
            return true;
        }
        let duration = k.spec.duration;
        let horizon = horizon.min(duration);
        let max_events = k.spec.max_events.unwrap_or(u64::MAX);
        let r = self.engine.run(
            k,
            Stop {
                horizon,
                max_events,
            },
        );
        let now = self.engine.now().max(self.reached);
        self.reached = if r == smpsim_engine::StopReason::Horizon {
            // Nothing left to deliver before the horizon: it is reached.
            now.max(horizon)
        } else {
            now
        };
        if r != smpsim_engine::StopReason::Horizon || horizon >= duration {
            self.ended = Some(r);
        }
        self.ended.is_some()
    }

    /// Ends the run (wherever it stopped) and returns its result.
    pub(super) fn finish(self, k: &mut Kernel) -> RunResult {
        let (engine_now, stats) = (self.engine.now(), self.engine.stats());
        // The pending events are dropped before the results are built: the
        // peak memory of a huge machine is at the end of its run.
        drop(self.engine);
        // An event budget, or every task having exited, ends the run early:
        // report what was simulated.
        k.now = match self.ended {
            Some(smpsim_engine::StopReason::EventBudget)
            | Some(smpsim_engine::StopReason::ModelRequested) => engine_now,
            Some(_) => k.spec.duration,
            None => self.reached,
        };
        for cpu in 0..k.nr_cpus() {
            k.settle(cpu);
            k.close_sections(cpu);
            // Every nanosecond measured is in exactly one of the CPU's times.
            let base = if k.metrics.cpu_times_base.is_empty() {
                0
            } else {
                k.spec.warmup
            };
            let measured = k.now.saturating_sub(base);
            let times = k.measured_cpu_times(cpu as usize);
            crate::invariants::check(crate::invariants::cpu_time_adds_up(cpu, &times, measured));
        }
        k.mm_check_leaks();
        k.finish(stats)
    }
}

/// A run that stops at a simulated time and goes on later with the result
/// of one that ran through: a pilot that is the start of the run it
/// prices. Replicas are not split (one spec, one kernel).
pub struct Simulation<'s> {
    kernel: Kernel<'s>,
    run: RunState,
}

impl<'s> Simulation<'s> {
    pub fn new(spec: &'s Spec) -> Self {
        let mut kernel = Kernel::new(spec);
        let run = RunState::new(&mut kernel);
        Simulation { kernel, run }
    }

    /// Simulates up to `horizon`; true when the run is over.
    pub fn advance(&mut self, horizon: Nanos) -> bool {
        self.run.advance(&mut self.kernel, horizon)
    }

    /// The kernel as it stands, for tests that look inside it.
    #[cfg(test)]
    pub(crate) fn kernel(&self) -> &Kernel<'s> {
        &self.kernel
    }

    /// Simulated time reached so far.
    pub fn reached(&self) -> Nanos {
        self.run.reached
    }

    /// The simulated time the run lasts at most.
    pub fn duration(&self) -> Nanos {
        self.kernel.spec.duration
    }

    /// Ends the run wherever it stopped and returns its result.
    pub fn finish(mut self) -> RunResult {
        self.run.finish(&mut self.kernel)
    }
}
