//! Progress of long commands, on stderr only (stdout carries results).
//!
//! A command registers its work up front as items (one simulation each:
//! a variant run, a sweep point, a seed), each with the simulated time it
//! plans and an estimated cost per simulated nanosecond; the simulations
//! add the simulated time they reach to their item's counter as they go
//! (`smpsim_kernel::simulate_with_progress`). A ticker thread turns that
//! into
//!
//! - an indicatif bar when stderr is a terminal: items done, simulated
//!   time and simulated time per second, ETA;
//! - a plain line every `SMPSIM_PROGRESS_INTERVAL` seconds (default 10)
//!   when it is not (a log, CI), and nothing for commands shorter than that;
//! - nothing with `--quiet`.
//!
//! The ETA is honest: it is the work left divided by the throughput so
//! far, both measured in simulated time weighted by each item's cost. The
//! cost comes from a pilot ([`crate::pilot`]): a hundredth of the run simulated
//! up front, because a simulated second of 384 CPUs costs thousands of
//! times one of 16, and a reproduction mixes both. A weight that is wrong
//! by the same factor for every item cancels out; only the relative costs
//! of items matter.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smpsim_report::fmt_ns;

/// The bar's length: work is shown in thousandths.
const BAR_LEN: u64 = 1000;

/// One unit of work: a simulation.
#[derive(Clone)]
pub struct Item {
    /// Simulated time reached so far (all replicas), for the simulation to
    /// add to.
    pub reached: Arc<AtomicU64>,
    index: usize,
}

struct ItemState {
    planned_ns: u64,
    cost_per_ns: f64,
    reached: Arc<AtomicU64>,
    finished: bool,
    /// Host time the simulation had run when last looked at (set when it
    /// starts), to correct a pilot that saw only the cheap start of a run.
    started: Option<Instant>,
    /// The last sample of the running simulation (host time, simulated
    /// time reached) and its cost per simulated ns since the sample before:
    /// a run whose cost per ns grows as it goes (a storm that starts
    /// halfway) is priced for what is left at its recent cost.
    mark: Option<(Instant, u64)>,
    recent_cost: f64,
    /// What a pilot that is the start of this simulation simulated before
    /// it was registered, and the host time that took.
    head: (u64, f64),
    /// How many threads the simulation runs on at most (its replicas), if
    /// known: what is left of it then takes at least its own cost over
    /// that many threads, however many others are free.
    lanes: Option<f64>,
}

/// How far apart the samples of a running simulation's recent cost are.
const RECENT_WINDOW: Duration = Duration::from_secs(2);

impl ItemState {
    /// The pilot's cost, or what the running simulation has cost so far
    /// per simulated ns if that is more (a run whose steady state is
    /// dearer than its first hundredth).
    fn cost(&self, now: Instant, reached: u64) -> f64 {
        match self.started {
            Some(t) if reached > 0 => {
                let spent = now.saturating_duration_since(t).as_secs_f64();
                if spent >= 1.0 {
                    self.cost_per_ns.max((self.head.1 + spent) / reached as f64)
                } else {
                    self.cost_per_ns
                }
            }
            _ => self.cost_per_ns,
        }
    }

    /// The cost per simulated ns of what is left: the larger of the cost
    /// so far and the recent cost. Takes a new sample when the last one is
    /// `RECENT_WINDOW` old.
    fn cost_left(&mut self, now: Instant, reached: u64) -> f64 {
        let Some(started) = self.started else {
            return self.cost_per_ns;
        };
        let (at, was) = *self.mark.get_or_insert((started, self.head.0));
        let since = now.saturating_duration_since(at);
        if since >= RECENT_WINDOW && reached > was {
            self.recent_cost = since.as_secs_f64() / (reached - was) as f64;
            self.mark = Some((now, reached));
        }
        self.cost(now, reached).max(self.recent_cost)
    }
}

enum Mode {
    Quiet,
    Bar(ProgressBar),
    Lines(Duration),
}

struct Shared {
    label: String,
    unit: String,
    mode: Mode,
    start: Instant,
    items: Mutex<Vec<ItemState>>,
    stop: AtomicBool,
    /// Plain lines printed so far (a command that printed none stays
    /// silent at the end too).
    lines: AtomicU64,
}

/// Progress of one command.
pub struct Progress {
    shared: Arc<Shared>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

/// What the items add up to at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub done: usize,
    pub total: usize,
    /// Simulated time reached by all items.
    pub simulated_ns: u64,
    /// Weighted work done and left.
    pub work_done: f64,
    pub work_left: f64,
    /// Host seconds the unfinished simulation with the most left needs on
    /// its own: no schedule ends sooner.
    pub longest_left: f64,
}

impl Snapshot {
    fn of(items: &mut [ItemState], now: Instant) -> Snapshot {
        let mut s = Snapshot {
            total: items.len(),
            ..Default::default()
        };
        for it in items {
            let reached = it.reached.load(Ordering::Relaxed);
            s.simulated_ns += reached;
            let cost = it.cost(now, reached);
            if it.finished {
                s.done += 1;
                s.work_done += cost * reached as f64;
            } else {
                let r = reached.min(it.planned_ns);
                s.work_done += cost * r as f64;
                let left = it.cost_left(now, reached) * (it.planned_ns - r) as f64;
                s.work_left += left;
                if let Some(lanes) = it.lanes {
                    s.longest_left = s.longest_left.max(left / lanes);
                }
            }
        }
        s
    }

    /// Fraction of the work done, 0 to 1.
    pub fn fraction(&self) -> f64 {
        let all = self.work_done + self.work_left;
        if all > 0.0 {
            self.work_done / all
        } else if self.total > 0 {
            self.done as f64 / self.total as f64
        } else {
            0.0
        }
    }
}

/// Seconds left: the work left at the throughput so far, and no less
/// than the longest single simulation left takes on its own (`longest`:
/// when one dear run is all that is left, the other threads idle and the
/// throughput so far overstates what is to come). None until there is
/// something to measure the throughput on.
pub fn eta(elapsed: f64, work_done: f64, work_left: f64, longest: f64) -> Option<f64> {
    if work_done <= 0.0 || elapsed < 0.2 {
        return None;
    }
    Some((work_left * elapsed / work_done).max(longest))
}

/// `1h02m`, `3m05s`, `42s`.
pub fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

impl Shared {
    fn message(&self) -> (Snapshot, String) {
        let snap = Snapshot::of(
            &mut self.items.lock().expect("no panic holding it"),
            Instant::now(),
        );
        let elapsed = self.start.elapsed().as_secs_f64();
        let rate = snap.simulated_ns as f64 / elapsed.max(1e-9);
        let eta = match eta(elapsed, snap.work_done, snap.work_left, snap.longest_left) {
            Some(s) => fmt_secs(s),
            None => "?".into(),
        };
        let msg = format!(
            "{}/{} {}, {} sim ({}/s), ETA {eta}",
            snap.done,
            snap.total,
            self.unit,
            fmt_ns(snap.simulated_ns as f64),
            fmt_ns(rate),
        );
        (snap, msg)
    }

    fn tick(&self) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => {
                let (snap, msg) = self.message();
                bar.set_position((snap.fraction() * BAR_LEN as f64) as u64);
                bar.set_message(msg);
            }
            Mode::Lines(_) => {
                let (snap, msg) = self.message();
                if snap.total == 0 {
                    // Nothing registered yet (pilots running): the note
                    // said so.
                    return;
                }
                eprintln!(
                    "{}: {msg} [{} elapsed]",
                    self.label,
                    fmt_secs(self.start.elapsed().as_secs_f64())
                );
                self.lines.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Progress {
    /// Progress of the command `label`, counting `unit`s ("runs",
    /// "points"); a bar on a terminal, lines otherwise, nothing if `quiet`.
    pub fn new(label: &str, unit: &str, quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(BAR_LEN), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:20}] {msg}")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            Mode::Bar(bar)
        } else {
            let secs = std::env::var("SMPSIM_PROGRESS_INTERVAL")
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| *v > 0.0 && v.is_finite())
                .unwrap_or(10.0);
            Mode::Lines(Duration::from_secs_f64(secs))
        };
        let shared = Arc::new(Shared {
            label: label.into(),
            unit: unit.into(),
            mode,
            start: Instant::now(),
            items: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            lines: AtomicU64::new(0),
        });
        let ticker = match shared.mode {
            Mode::Quiet => None,
            Mode::Bar(_) => Some(Duration::from_millis(150)),
            Mode::Lines(every) => Some(every),
        }
        .map(|every| {
            let s = shared.clone();
            std::thread::spawn(move || {
                let mut next = Instant::now() + every;
                while !s.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50).min(every));
                    if Instant::now() >= next {
                        s.tick();
                        next += every;
                    }
                }
            })
        });
        Progress { shared, ticker }
    }

    pub fn quiet(&self) -> bool {
        matches!(self.shared.mode, Mode::Quiet)
    }

    /// Registers a simulation of `planned_ns` simulated time (all
    /// replicas) costing `cost_per_ns` per simulated nanosecond.
    pub fn add(&self, planned_ns: u64, cost_per_ns: f64) -> Item {
        self.add_piloted(planned_ns, cost_per_ns, (0, 0.0), None)
    }

    /// [`Progress::add`] for a simulation whose pilot was its own start:
    /// `head` is the simulated time the pilot reached and its host time;
    /// `lanes`, the threads the simulation can use at most, if known.
    pub fn add_piloted(
        &self,
        planned_ns: u64,
        cost_per_ns: f64,
        head: (u64, f64),
        lanes: Option<u32>,
    ) -> Item {
        let mut items = self.shared.items.lock().expect("no panic holding it");
        let reached = Arc::new(AtomicU64::new(head.0));
        items.push(ItemState {
            planned_ns,
            cost_per_ns: if cost_per_ns.is_finite() && cost_per_ns > 0.0 {
                cost_per_ns
            } else {
                1.0
            },
            reached: reached.clone(),
            finished: false,
            started: None,
            mark: None,
            recent_cost: 0.0,
            head,
            lanes: lanes.map(|n| n.max(1) as f64),
        });
        Item {
            reached,
            index: items.len() - 1,
        }
    }

    /// The simulation of `item` starts now.
    pub fn start(&self, item: &Item) {
        let mut items = self.shared.items.lock().expect("no panic holding it");
        items[item.index].started = Some(Instant::now());
    }

    /// `n` runs of `spec` that cost about the same (seeds, schedules),
    /// priced by one pilot of it (none when quiet).
    pub fn add_runs(&self, spec: &smpsim_kernel::Spec, n: usize) -> Vec<Item> {
        let (planned, cost) = if self.quiet() {
            (0, 1.0)
        } else {
            crate::pilot::pilot(spec)
        };
        (0..n).map(|_| self.add(planned, cost)).collect()
    }

    /// The simulation of `item` is over (it may have ended before its
    /// planned time: its work is then what it reached).
    pub fn finish(&self, item: &Item) {
        let mut items = self.shared.items.lock().expect("no panic holding it");
        let it = &mut items[item.index];
        // Its cost as it ended, for good.
        it.cost_per_ns = it.cost(Instant::now(), it.reached.load(Ordering::Relaxed));
        it.started = None;
        it.finished = true;
    }

    /// A line above the bar, or on its own; nothing if quiet.
    pub fn note(&self, msg: &str) {
        match &self.shared.mode {
            Mode::Quiet => {}
            Mode::Bar(bar) => bar.println(msg),
            Mode::Lines(_) => eprintln!("{msg}"),
        }
    }

    /// Stops the ticker; the bar is cleared, and a command that printed
    /// progress lines prints a last one.
    pub fn done(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
            match &self.shared.mode {
                Mode::Bar(bar) => bar.finish_and_clear(),
                Mode::Lines(_) if self.shared.lines.load(Ordering::Relaxed) > 0 => {
                    self.shared.tick()
                }
                _ => {}
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(planned: u64, cost: f64, reached: u64, finished: bool) -> ItemState {
        ItemState {
            planned_ns: planned,
            cost_per_ns: cost,
            reached: Arc::new(AtomicU64::new(reached)),
            finished,
            started: None,
            mark: None,
            recent_cost: 0.0,
            head: (0, 0.0),
            lanes: None,
        }
    }

    /// A synthetic schedule: a cheap case (16 CPUs, 100 s simulated at
    /// 1 us of host time per simulated ms) then a dear one (384 CPUs, 1 s
    /// simulated at 100x the cost per simulated ns), run one after the
    /// other on 2 threads. After a tenth of the run the ETA, from the
    /// weighted throughput so far, is within 30% of the real time left;
    /// unweighted simulated time would be off by orders of magnitude.
    #[test]
    fn eta_from_weighted_throughput_tracks_a_mixed_schedule() {
        let cheap = 1e-6 / 1e6 * 1e3; // host s per simulated ns
        let dear = cheap * 2_000.0;
        let (cheap_ns, dear_ns) = (100_000_000_000u64, 1_000_000_000u64);
        let threads = 2.0;
        let cheap_wall = cheap * cheap_ns as f64 / threads;
        let dear_wall = dear * dear_ns as f64 / threads;
        let total = cheap_wall + dear_wall;
        // The pilot's costs: off by the same factor for both, and 10%
        // relative noise.
        let (pc, pd) = (cheap * 3.0, dear * 3.0 * 1.1);
        for tenth in [0.1f64, 0.3, 0.5, 0.7, 0.9] {
            let t = total * tenth;
            let reached =
                |start: f64, wall: f64, ns: u64| ((t - start) / wall).clamp(0.0, 1.0) * ns as f64;
            let mut items = [
                item(
                    cheap_ns,
                    pc,
                    reached(0.0, cheap_wall, cheap_ns) as u64,
                    false,
                ),
                item(
                    dear_ns,
                    pd,
                    reached(cheap_wall, dear_wall, dear_ns) as u64,
                    false,
                ),
            ];
            let s = Snapshot::of(&mut items, Instant::now());
            let left = eta(t, s.work_done, s.work_left, 0.0).unwrap();
            let real = total - t;
            assert!(
                (left - real).abs() <= 0.3 * real,
                "at {tenth}: eta {left:.3} real {real:.3}"
            );
        }
        // Plain simulated time: after a tenth, it would say almost done.
        let t = total * 0.1;
        let done = t / cheap_wall * cheap_ns as f64;
        let left = (cheap_ns as f64 - done) + dear_ns as f64;
        let naive = eta(t, done, left, 0.0).unwrap();
        assert!(naive < 0.5 * (total - t), "{naive} vs {}", total - t);
    }

    /// A run whose pilot saw only its cheap start: once it has run a
    /// while, what it has really cost per simulated ns takes over.
    #[test]
    fn a_running_item_dearer_than_its_pilot_is_costed_as_it_runs() {
        let now = Instant::now();
        let mut it = item(1_000, 0.001, 100, false);
        it.started = Some(now - Duration::from_secs(10));
        // 10 s for 100 ns: 0.1 s per ns, not the pilot's 0.001.
        let s = Snapshot::of(&mut [it], now);
        assert!((s.work_done - 10.0).abs() < 1e-6, "{s:?}");
        assert!((s.work_left - 90.0).abs() < 1e-6, "{s:?}");
        // Cheaper than its pilot: the pilot stands.
        let mut it = item(1_000, 1.0, 100, false);
        it.started = Some(now - Duration::from_secs(10));
        assert_eq!(Snapshot::of(&mut [it], now).work_left, 900.0);
    }

    /// A run that turns dearer halfway (a throttling storm): once a window
    /// of it has been seen, what is left is priced at the recent cost, not
    /// the average.
    #[test]
    fn a_run_that_turns_dearer_is_priced_at_its_recent_cost() {
        let t0 = Instant::now();
        let mut it = item(1_000, 0.01, 0, false);
        it.started = Some(t0);
        // 4 s for the first 400 ns (0.01 s/ns), then 6 s for the next 100.
        it.reached.store(400, Ordering::Relaxed);
        let first = it.cost_left(t0 + Duration::from_secs(4), 400);
        assert!((first - 0.01).abs() < 1e-9, "{first}");
        it.reached.store(500, Ordering::Relaxed);
        let left = it.cost_left(t0 + Duration::from_secs(10), 500);
        assert!((left - 0.06).abs() < 1e-9, "{left}");
    }

    #[test]
    fn finished_items_count_what_they_reached_and_leave_nothing() {
        // A run planned for 900 s that ended at 75 s.
        let mut items = [item(900, 1.0, 75, true), item(100, 1.0, 50, false)];
        let s = Snapshot::of(&mut items, Instant::now());
        assert_eq!((s.done, s.total, s.simulated_ns), (1, 2, 125));
        assert_eq!((s.work_done, s.work_left), (125.0, 50.0));
        assert_eq!(eta(0.1, 1.0, 1.0, 0.0), None);
        assert_eq!(eta(10.0, 0.0, 1.0, 0.0), None);
        assert_eq!(eta(10.0, 125.0, 50.0, 0.0), Some(4.0));
        // One run with 30 s left on its own: the throughput's 4 s is wrong.
        assert_eq!(eta(10.0, 125.0, 50.0, 30.0), Some(30.0));
        assert_eq!(fmt_secs(3725.0), "1h02m");
        assert_eq!(fmt_secs(185.0), "3m05s");
    }
}
