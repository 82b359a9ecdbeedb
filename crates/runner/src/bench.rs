//! The benchmark behind `smpsim bench`: model events per second on the plain global-mutex model
//! (N CPUs, each loops: lock, hold Exp(1 us), unlock, work Exp(20 us)),
//! the same with lockdep on, and two bare event loops doing nothing but
//! reschedule each event an Exp(10 us) later with the same `Rng`: the
//! reference, a `std` binary heap of (time, sequence) keys (`bare-heap`),
//! and smpsim's own event queue (`bare-engine`). Each model row gives its
//! rate as a fraction of both.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use serde::Serialize;
use smpsim_engine::{Engine, Handled, Model, Rng, Stop};

#[derive(Serialize)]
pub struct Point {
    model: String,
    cpus: u32,
    simulated_ms: u64,
    events: u64,
    stale_events: u64,
    wall_seconds: f64,
    /// CPU time of the simulating thread: on a shared machine, what the
    /// run cost when other work takes turns on its core.
    cpu_seconds: f64,
    /// Events per second of `cpu_seconds`.
    events_per_second: f64,
    /// A model's `events_per_second` over the `bare-heap` loop's, at the
    /// same CPU count (none for the bare loops).
    #[serde(skip_serializing_if = "Option::is_none")]
    fraction_of_bare_heap: Option<f64>,
    /// The same over the `bare-engine` loop's.
    #[serde(skip_serializing_if = "Option::is_none")]
    fraction_of_bare_engine: Option<f64>,
    /// A model's operations and its events per operation (none for the
    /// bare loops).
    #[serde(skip_serializing_if = "Option::is_none")]
    per_op: Option<PerOp>,
}

/// What a model run did, and its events per operation: all events (what
/// `events` counts), and those the queue delivered (the rest were folded:
/// handled as soon as scheduled, see docs/performance.md).
#[derive(Serialize)]
struct PerOp {
    lock_acquisitions: u64,
    /// Function-call and reschedule IPIs received.
    ipis: u64,
    context_switches: u64,
    /// Events that went through the queue (`events + stale - folded`).
    queued_events: u64,
    events_per_acquisition: f64,
    queued_per_acquisition: f64,
    events_per_ipi: f64,
    events_per_switch: f64,
}

impl PerOp {
    /// The run's operations over its whole length (the benchmark has no
    /// warm-up, so `lock_stat` and `nr_switches` cover all of it).
    fn of(r: &smpsim_kernel::result::RunResult) -> PerOp {
        use smpsim_kernel::event::EVENT_KINDS;
        let done = |name: &str| {
            let k = EVENT_KINDS.iter().position(|n| *n == name);
            k.map_or(0, |k| r.stats.by_kind.done[k])
        };
        let acquisitions = r.locks.iter().map(|l| l.acquisitions).sum();
        let ipis = done("smp.ipi") + done("sched.resched_ipi");
        let events = r.stats.events;
        let queued = r.stats.by_kind.delivered();
        let per = |n: u64, ops: u64| n as f64 / ops.max(1) as f64;
        PerOp {
            lock_acquisitions: acquisitions,
            ipis,
            context_switches: r.context_switches,
            queued_events: queued,
            events_per_acquisition: per(events, acquisitions),
            queued_per_acquisition: per(queued, acquisitions),
            events_per_ipi: per(events, ipis),
            events_per_switch: per(events, r.context_switches),
        }
    }
}

/// CPU time this thread has used, in seconds (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Times `run`, which returns (simulated ns reached, events delivered).
fn timed(model: &str, cpus: u32, run: impl FnOnce() -> (u64, u64)) -> Point {
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    let (now, events) = run();
    let cpu = thread_cpu_seconds() - cpu_start;
    Point {
        model: model.into(),
        cpus,
        simulated_ms: now / 1_000_000,
        events,
        stale_events: 0,
        wall_seconds: start.elapsed().as_secs_f64(),
        cpu_seconds: cpu,
        events_per_second: events as f64 / cpu,
        fraction_of_bare_heap: None,
        fraction_of_bare_engine: None,
        per_op: None,
    }
}

/// The reference floor: a binary heap of (time, sequence) keys (equal
/// times in schedule order), each popped event pushed back Exp(10 us) on.
fn bare_heap(cpus: u32, events: u64) -> Point {
    timed("bare-heap", cpus, || {
        let mut heap = BinaryHeap::with_capacity(cpus as usize);
        for i in 0..cpus {
            heap.push(Reverse((i as u64, i as u64, i)));
        }
        let (mut rng, mut seq, mut now) = (Rng::seed_from_u64(1), cpus as u64, 0);
        for _ in 0..events {
            let Reverse((time, _, cpu)) = heap.pop().expect("one event per CPU");
            now = time;
            heap.push(Reverse((time + rng.exp(10_000), seq, cpu)));
            seq += 1;
        }
        (now, events)
    })
}

/// The same loop on smpsim's own event queue and `Engine::run`.
struct BareLoop {
    rng: Rng,
}

impl Model for BareLoop {
    type Event = u32;
    fn handle(&mut self, engine: &mut Engine<u32>, e: u32) -> Handled {
        let d = self.rng.exp(10_000);
        engine.schedule_in(d, e);
        Handled::Done
    }
}

fn bare_engine(cpus: u32, events: u64) -> Point {
    let mut engine = Engine::with_capacity(cpus as usize);
    for i in 0..cpus {
        engine.schedule(i as u64, i);
    }
    let mut model = BareLoop {
        rng: Rng::seed_from_u64(1),
    };
    timed("bare-engine", cpus, || {
        let stop = Stop {
            horizon: u64::MAX,
            max_events: events,
        };
        engine.run(&mut model, stop);
        (engine.now(), engine.stats().events)
    })
}

/// Runs the benchmark at each CPU count of `cpus`, `millis` simulated
/// milliseconds a model point: the global-mutex model, the same with
/// lockdep, and the two bare loops at its event count.
pub fn run(cpus: &[u32], millis: u64, quiet: bool) -> Vec<Point> {
    // The models' cost grows with the CPUs that loop on the mutex: that is
    // the weight of a point (the bare loops are not counted).
    let progress = crate::progress::Progress::new("bench", "runs", quiet);
    let items: Vec<_> = cpus
        .iter()
        .flat_map(|&c| [c, c])
        .map(|c| progress.add(millis * 1_000_000, c as f64))
        .collect();
    let mut items = items.iter();
    let mut points = Vec::new();
    for &cpus in cpus {
        let mut spec =
            smpsim_kernel::testkit::global_mutex_bench(cpus, 1_000, 20_000, millis * 1_000_000);
        let first = points.len();
        // The same model with lockdep's checks on every acquisition.
        for (model, lockdep) in [("global-mutex", false), ("+lockdep", true)] {
            spec.knobs.lockdep = lockdep;
            let item = items.next().expect("one per model");
            progress.start(item);
            let mut stale = 0;
            let mut per_op = None;
            let mut point = timed(model, cpus, || {
                let r = smpsim_kernel::simulate_with_progress(&spec, &item.reached);
                stale = r.stats.stale_events;
                per_op = Some(PerOp::of(&r));
                (spec.duration, r.stats.events)
            });
            progress.finish(item);
            point.stale_events = stale;
            point.per_op = per_op;
            points.push(point);
        }
        let events = points[first].events.max(1_000_000);
        let (heap, engine) = (bare_heap(cpus, events), bare_engine(cpus, events));
        for p in &mut points[first..] {
            p.fraction_of_bare_heap = Some(p.events_per_second / heap.events_per_second);
            p.fraction_of_bare_engine = Some(p.events_per_second / engine.events_per_second);
        }
        points.extend([heap, engine]);
        progress.note(&format!("bench: {cpus} CPUs done"));
    }
    progress.done();
    points
}

/// The points as text: a row per point, then the models' events per
/// operation.
pub fn text(points: &[Point]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:>6} {:>12} {:>10} {:>9} {:>9} {:>12} {:>6} {:>7}",
        "model", "cpus", "events", "stale", "wall s", "cpu s", "events/s", "/heap", "/engine"
    );
    let fraction = |f: Option<f64>| f.map(|f| format!("{f:.2}")).unwrap_or_default();
    for p in points {
        let _ = writeln!(
            out,
            "{:<14} {:>6} {:>12} {:>10} {:>9.2} {:>9.2} {:>11.1}M {:>6} {:>7}",
            p.model,
            p.cpus,
            p.events,
            p.stale_events,
            p.wall_seconds,
            p.cpu_seconds,
            p.events_per_second / 1e6,
            fraction(p.fraction_of_bare_heap),
            fraction(p.fraction_of_bare_engine)
        );
    }
    let _ = writeln!(
        out,
        "\n{:<14} {:>6} {:>12} {:>10} {:>10} {:>8} {:>8} {:>9} {:>10}",
        "per operation",
        "cpus",
        "acquisitions",
        "events/acq",
        "queued/acq",
        "ipis",
        "ev/ipi",
        "switches",
        "ev/switch"
    );
    let per = |n: u64, v: f64| match n {
        0 => "-".to_string(),
        _ => format!("{v:.2}"),
    };
    for p in points {
        let Some(o) = &p.per_op else { continue };
        let _ = writeln!(
            out,
            "{:<14} {:>6} {:>12} {:>10.3} {:>10.3} {:>8} {:>8} {:>9} {:>10}",
            p.model,
            p.cpus,
            o.lock_acquisitions,
            o.events_per_acquisition,
            o.queued_per_acquisition,
            o.ipis,
            per(o.ipis, o.events_per_ipi),
            o.context_switches,
            per(o.context_switches, o.events_per_switch)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short run gives the two models and the two bare loops at each
    /// CPU count, the models with their operations and fractions.
    #[test]
    fn a_short_bench_gives_every_row() {
        let points = run(&[2], 1, true);
        let models: Vec<_> = points.iter().map(|p| p.model.as_str()).collect();
        assert_eq!(
            models,
            ["global-mutex", "+lockdep", "bare-heap", "bare-engine"]
        );
        let mutex = &points[0];
        assert!(mutex.events > 0 && mutex.per_op.as_ref().unwrap().lock_acquisitions > 0);
        assert!(mutex.fraction_of_bare_heap.is_some());
        assert!(points[2].per_op.is_none());
        let table = text(&points);
        assert!(table.contains("global-mutex") && table.contains("per operation"));
    }
}
