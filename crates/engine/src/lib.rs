//! The deterministic discrete-event core of smpsim.
//!
//! # Lifecycle
//!
//! A model (anything implementing [`Model`]) is driven by an [`Engine`]:
//!
//! 1. The caller builds the model and an `Engine`, and schedules the first
//!    events with [`Engine::schedule`].
//! 2. [`Engine::run`] pops events in time order and hands each to
//!    [`Model::handle`], which may schedule more. Events with equal time are
//!    delivered in the order they were scheduled, so a run depends only on the
//!    model and its seed, never on the host.
//! 3. The run ends at a [`Stop`] condition: the simulated horizon is reached,
//!    the event budget is spent, the queue is empty, or the model asks to stop.
//!
//! The engine knows nothing of kernels. Time is an integer count of
//! nanoseconds ([`Nanos`]); randomness comes from [`Rng`]
//! (xoshiro256\*\*, seeded through SplitMix64), whose output is identical on
//! every platform.

pub mod detmath;
mod queue;
mod rng;

pub use queue::EventQueue;
pub use rng::Rng;

/// Simulated time, in nanoseconds since the start of the run.
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_S: Nanos = 1_000_000_000;

/// What a model says about an event it was handed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// The event changed the model's state.
    Done,
    /// The event had been superseded (e.g. a timer re-armed since) and was
    /// ignored. Counted apart so event rates stay honest.
    Stale,
    /// The model wants the run to end now.
    Stop,
}

/// A simulated system driven by the engine.
pub trait Model {
    type Event: Copy;
    fn handle(&mut self, engine: &mut Engine<Self::Event>, event: Self::Event) -> Handled;
}

/// When a run ends.
#[derive(Clone, Copy, Debug)]
pub struct Stop {
    /// Events after this simulated time are not delivered.
    pub horizon: Nanos,
    /// At most this many events are delivered (stale ones included).
    pub max_events: u64,
}

impl Stop {
    pub fn at(horizon: Nanos) -> Self {
        Stop {
            horizon,
            max_events: u64::MAX,
        }
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    Horizon,
    EventBudget,
    QueueEmpty,
    ModelRequested,
}

/// Counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Events that changed the model.
    pub events: u64,
    /// Events delivered but found superseded.
    pub stale_events: u64,
}

/// Simulated clock plus pending events.
pub struct Engine<E> {
    now: Nanos,
    queue: EventQueue<E>,
    stats: EngineStats,
    /// The current run's horizon and the events it may still deliver
    /// (for [`Engine::fold`]).
    horizon: Nanos,
    budget: u64,
    /// Events handled by folding rather than through the queue.
    folded: u64,
}

impl<E: Copy> Engine<E> {
    pub fn new() -> Self {
        Self::with_capacity(1024)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        Engine {
            now: 0,
            queue: EventQueue::with_capacity(capacity),
            stats: EngineStats::default(),
            horizon: 0,
            budget: 0,
            folded: 0,
        }
    }

    /// Current simulated time.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at absolute time `at` (clamped to now: the past is closed).
    #[inline]
    pub fn schedule(&mut self, at: Nanos, event: E) {
        self.queue.push(at.max(self.now), event);
    }

    /// Schedules `event` `delay` nanoseconds from now.
    #[inline]
    pub fn schedule_in(&mut self, delay: Nanos, event: E) {
        self.queue.push(self.now.saturating_add(delay), event);
    }

    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Events handled by [`Engine::fold`] (counted in [`Engine::stats`]
    /// too): the queue delivered `events + stale_events - folded()`.
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Called by a model while it handles an event, about an event it is
    /// about to schedule at `at`: true if that event would be the very
    /// next one delivered (nothing pending at or before `at`: an event
    /// already queued for `at` was scheduled first and goes first), within
    /// the run's horizon and event budget. The clock is then at `at` and
    /// the model handles the event at once instead of scheduling it,
    /// telling [`Engine::count_folded`] how it went: the same handlers run
    /// in the same order at the same times, without the queue's push and
    /// pop. The model must not schedule anything before `at` first.
    #[inline]
    pub fn fold(&mut self, at: Nanos) -> bool {
        if self.budget == 0 || at > self.horizon || at < self.now {
            return false;
        }
        if !self.queue.none_until(at) {
            return false;
        }
        self.budget -= 1;
        self.now = at;
        true
    }

    /// Whether an event at `at` that [`Engine::fold`] refused would have
    /// been folded but for the horizon: the run stopped short of `at` and
    /// will deliver it first when it goes on. A run that stops and goes on
    /// then counts the folds of one that runs through.
    #[inline]
    pub fn folds_after_horizon(&self, at: Nanos) -> bool {
        at > self.horizon && self.budget > 0 && at >= self.now && self.queue.none_until(at)
    }

    /// Counts an event handled by [`Engine::fold`] as [`Engine::run`]
    /// counts a delivered one (a folded `Stop` is an event too; the model
    /// then returns `Stop` for the event it was handling).
    #[inline]
    pub fn count_folded(&mut self, handled: Handled) {
        self.folded += 1;
        match handled {
            Handled::Done | Handled::Stop => self.stats.events += 1,
            Handled::Stale => self.stats.stale_events += 1,
        }
    }

    /// Delivers events to `model` until `stop` says otherwise.
    pub fn run<M: Model<Event = E>>(&mut self, model: &mut M, stop: Stop) -> StopReason {
        // The events still allowed, counted down (one subtraction an event
        // rather than re-adding the two counters).
        let delivered = self.stats.events + self.stats.stale_events;
        self.budget = stop.max_events.saturating_sub(delivered);
        self.horizon = stop.horizon;
        loop {
            if self.budget == 0 {
                return StopReason::EventBudget;
            }
            // One look at the queue an event: the earliest time, then that
            // same event taken out.
            match self.queue.peek_time() {
                None => return StopReason::QueueEmpty,
                Some(t) if t > stop.horizon => {
                    self.now = stop.horizon;
                    return StopReason::Horizon;
                }
                Some(_) => {}
            }
            let (at, event) = self.queue.pop_peeked();
            self.budget -= 1;
            debug_assert!(at >= self.now, "time went backwards");
            self.now = at;
            match model.handle(self, event) {
                Handled::Done => self.stats.events += 1,
                Handled::Stale => self.stats.stale_events += 1,
                Handled::Stop => {
                    self.stats.events += 1;
                    return StopReason::ModelRequested;
                }
            }
        }
    }
}

impl<E: Copy> Default for Engine<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every delivery; each event reschedules itself `period` later.
    struct Ticker {
        seen: Vec<(Nanos, u32)>,
        period: Nanos,
    }

    impl Model for Ticker {
        type Event = u32;
        fn handle(&mut self, engine: &mut Engine<u32>, id: u32) -> Handled {
            self.seen.push((engine.now(), id));
            engine.schedule_in(self.period, id);
            Handled::Done
        }
    }

    #[test]
    fn equal_times_are_delivered_in_schedule_order() {
        let mut engine = Engine::new();
        for id in 0..5 {
            engine.schedule(10, id);
        }
        let mut model = Ticker {
            seen: vec![],
            period: 100,
        };
        engine.run(&mut model, Stop::at(10));
        assert_eq!(model.seen, (0..5).map(|id| (10, id)).collect::<Vec<_>>());
    }

    #[test]
    fn horizon_and_budget_stop_the_run() {
        let mut engine = Engine::new();
        engine.schedule(0, 1);
        let mut model = Ticker {
            seen: vec![],
            period: 10,
        };
        assert_eq!(engine.run(&mut model, Stop::at(95)), StopReason::Horizon);
        assert_eq!(model.seen.len(), 10);
        assert_eq!(engine.now(), 95);
        let budget = Stop {
            horizon: u64::MAX,
            max_events: 13,
        };
        assert_eq!(engine.run(&mut model, budget), StopReason::EventBudget);
        assert_eq!(engine.stats().events, 13);
    }

    proptest::proptest! {
        /// Whatever is scheduled, delivery times never decrease.
        #[test]
        fn time_is_monotonic(times in proptest::collection::vec(0u64..1_000_000, 1..200)) {
            struct Check { last: Nanos, ok: bool }
            impl Model for Check {
                type Event = ();
                fn handle(&mut self, engine: &mut Engine<()>, _: ()) -> Handled {
                    self.ok &= engine.now() >= self.last;
                    self.last = engine.now();
                    Handled::Done
                }
            }
            let mut engine = Engine::new();
            for t in &times { engine.schedule(*t, ()); }
            let mut m = Check { last: 0, ok: true };
            engine.run(&mut m, Stop::at(u64::MAX));
            proptest::prop_assert!(m.ok);
            proptest::prop_assert_eq!(engine.stats().events, times.len() as u64);
        }
    }
}
