//! `smpsim bench`: model events per second on the plain global-mutex model
//! (N CPUs, each loops: lock, hold Exp(1 us), unlock, work Exp(20 us)),
//! the same with lockdep on, and a bare binary-heap event loop doing
//! nothing but reschedule.

use std::time::Instant;

use serde::Serialize;
use smpsim_engine::{Engine, Handled, Model, Rng, Stop};

use crate::cli::{BenchArgs, Format};

#[derive(Serialize)]
struct Point {
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

/// The floor: every event reschedules itself an Exp(10 us) later.
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

fn bare(cpus: u32, events: u64) -> Point {
    let mut engine = Engine::with_capacity(cpus as usize);
    for i in 0..cpus {
        engine.schedule(i as u64, i);
    }
    let mut model = BareLoop {
        rng: Rng::seed_from_u64(1),
    };
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    engine.run(
        &mut model,
        Stop {
            horizon: u64::MAX,
            max_events: events,
        },
    );
    let wall = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds() - cpu_start;
    Point {
        model: "bare-heap".into(),
        cpus,
        simulated_ms: engine.now() / 1_000_000,
        events: engine.stats().events,
        stale_events: 0,
        wall_seconds: wall,
        cpu_seconds: cpu,
        events_per_second: engine.stats().events as f64 / cpu,
    }
}

pub fn main(args: BenchArgs) -> i32 {
    if args.cpus.contains(&0) {
        return crate::output::fail("error: --cpus: a benchmark needs at least one CPU");
    }
    // The models' cost grows with the CPUs that loop on the mutex: that is
    // the weight of a point (the bare loop is not counted).
    let progress = smpsim_runner::progress::Progress::new("bench", "runs", args.quiet);
    let items: Vec<_> = args
        .cpus
        .iter()
        .flat_map(|&c| [c, c])
        .map(|c| progress.add(args.millis * 1_000_000, c as f64))
        .collect();
    let mut items = items.iter();
    let mut points = Vec::new();
    for &cpus in &args.cpus {
        let mut spec = smpsim_kernel::testkit::global_mutex_bench(
            cpus,
            1_000,
            20_000,
            args.millis * 1_000_000,
        );
        let mut events = 0;
        // The same model with lockdep's checks on every acquisition.
        for (model, lockdep) in [("global-mutex", false), ("+lockdep", true)] {
            spec.knobs.lockdep = lockdep;
            let item = items.next().expect("one per model");
            progress.start(item);
            let start = Instant::now();
            let cpu_start = thread_cpu_seconds();
            let r = smpsim_kernel::simulate_with_progress(&spec, &item.reached);
            let wall = start.elapsed().as_secs_f64();
            let cpu = thread_cpu_seconds() - cpu_start;
            progress.finish(item);
            events = r.stats.events;
            points.push(Point {
                model: model.into(),
                cpus,
                simulated_ms: args.millis,
                events,
                stale_events: r.stats.stale_events,
                wall_seconds: wall,
                cpu_seconds: cpu,
                events_per_second: events as f64 / cpu,
            });
        }
        points.push(bare(cpus, events.max(1_000_000)));
        progress.note(&format!("bench: {cpus} CPUs done"));
    }
    progress.done();
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&points).expect("serializable")
        ),
        Format::Text => {
            println!(
                "{:<14} {:>6} {:>12} {:>10} {:>9} {:>9} {:>12}",
                "model", "cpus", "events", "stale", "wall s", "cpu s", "events/s"
            );
            for p in &points {
                println!(
                    "{:<14} {:>6} {:>12} {:>10} {:>9.2} {:>9.2} {:>11.1}M",
                    p.model,
                    p.cpus,
                    p.events,
                    p.stale_events,
                    p.wall_seconds,
                    p.cpu_seconds,
                    p.events_per_second / 1e6
                );
            }
        }
    }
    0
}
