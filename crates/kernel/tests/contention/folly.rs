//! The coherence model against published **contended** micro-benchmark
//! curves: folly's SmallLocksBenchmark (`runContended()`), time per
//! iteration against N threads per lock or line, on the two machines its
//! results were published for.
//!
//! Source of every published figure below: facebook/folly,
//! `folly/synchronization/test/SmallLocksBenchmark.cpp`, the results
//! comment at the end of the file as of commit 886a70d91 (2019-06-12),
//! "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz" (dual socket, 56 threads)
//! and "Intel(R) Xeon(R) D-2191 CPU @ 1.60GHz" (one socket, 36 threads).
//!
//! The benchmark, as simulated here (the same program as
//! `scenarios/contention/folly-small-locks*.toml`, built directly):
//! every hardware thread runs one thread; thread t uses lock or line
//! `t % (threads / N)`; each loops lock, burn(100), `++value`, unlock,
//! burn(1000). The loops are sized from each row's N = 1 figure (a
//! single-thread figure: every thread has its own lock), the scenarios
//! say how. The `atomic_fetch_xor` curve is one of the global rules' fit
//! inputs (`fit`); the `ttas` and `distributed_mutex` curves are
//! predictions under those rules, never inputs. DistributedMutex is `distributed_mutex` (folly's
//! `DistributedMutex-inl.h` at the same commit, plain `lock()`).
//! MicroSpinLock is `ttas` with folly's `Sleeper` (the `sleeper` option:
//! 4000 rounds of the read loop, then a read per 550 us sleep; the pause
//! from Intel's optimization manual, 4 ns on the E5, 88 ns on the D-2191).
//!
//! What holds, and is asserted: over both lock curves of both machines,
//! and over each machine's, the median is within ln 1.5; every lock point
//! is within 2x except the named [`KNOWN_MISSES`], which must be outside
//! it.
//!
//! `cargo test --release -p smpsim-kernel --test contention -- --nocapture`
//! prints the table.

use smpsim_kernel::program::*;
use smpsim_kernel::spec::*;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1_000;

/// The thread counts compared; N = 64 and 128 oversubscribe the machines
/// (left out), N = 1 sized the loops (printed, not counted).
const NS: [u32; 6] = [1, 2, 4, 8, 16, 32];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Bench {
    /// `atomic_fetch_xor`: lock-free, one line per group.
    FetchXor,
    /// `folly_microspin` as smpsim's `ttas` with folly's `Sleeper`.
    MicroSpin,
    /// `folly_distributedmutex` as smpsim's `distributed_mutex`.
    DistributedMutex,
}

struct Machine {
    preset: &'static str,
    threads: u32,
    /// One round of MicroSpinLock's read loop: a `pause` (Intel's
    /// optimization manual: ~10 cycles before Skylake, up to 140 from
    /// Skylake on, at the part's base clock; as in the scenarios).
    pause: u64,
    /// Where thread t runs (fork balancing's spread: sockets, cores, then
    /// SMT siblings; assumed, as in the scenarios).
    cpus: fn(u32) -> u32,
    /// Per benchmark: (burn inside the lock, mean burn outside, in ns),
    /// from the row's N = 1 figure, and the published ns per iteration at
    /// N = 1, 2, 4, 8, 16, 32.
    rows: [(Bench, u64, u64, [f64; 6]); 3],
}

/// Dual E5-2680 v4: CPUs 0-13 socket 0, 14-27 socket 1, 28 + i the
/// sibling of i; threads alternate sockets, then fill the siblings.
fn e5_cpu(t: u32) -> u32 {
    let (thread, i) = (t / 28, t % 28);
    28 * thread + (i % 2) * 14 + i / 2
}

fn d2191_cpu(t: u32) -> u32 {
    t
}

const E5: Machine = Machine {
    preset: "xeon-e5-2680v4-56",
    threads: 56,
    pause: 4,
    cpus: e5_cpu,
    rows: [
        // atomic_fetch_xor: N = 1 603 ns less the uncontended atomic 5.47 ns.
        (
            Bench::FetchXor,
            0,
            598,
            [603.0, 661.0, 731.0, 1320.0, 2500.0, 3880.0],
        ),
        // folly_microspin: (822 - 11) / 11 inside, ten times that outside.
        (
            Bench::MicroSpin,
            74,
            737,
            [822.0, 861.0, 2360.0, 4600.0, 11060.0, 30740.0],
        ),
        // folly_distributedmutex: (695 - 29) / 11 inside.
        (
            Bench::DistributedMutex,
            61,
            605,
            [695.0, 938.0, 1900.0, 2990.0, 6840.0, 17830.0],
        ),
    ],
};

const D2191: Machine = Machine {
    preset: "xeon-d2191-36",
    threads: 36,
    pause: 88,
    cpus: d2191_cpu,
    rows: [
        // atomic_fetch_xor: N = 1 1530 ns less the uncontended atomic 10.67 ns.
        (
            Bench::FetchXor,
            0,
            1519,
            [1530.0, 1260.0, 1270.0, 1390.0, 2480.0, 4120.0],
        ),
        // folly_microspin: (1340 - 22) / 11 inside.
        (
            Bench::MicroSpin,
            120,
            1198,
            [1340.0, 1380.0, 1770.0, 5230.0, 14300.0, 34350.0],
        ),
        // folly_distributedmutex: (1390 - 51) / 11 inside.
        (
            Bench::DistributedMutex,
            122,
            1217,
            [1390.0, 1490.0, 2720.0, 5530.0, 9360.0, 17930.0],
        ),
    ],
};

/// Points outside 2x, each a finding of docs/contention.md.
///
/// - E5, MicroSpinLock, N = 4: three waiters poll one line and race at
///   every release; under the global rules the model hands the lock over
///   faster than measured (x0.39). With the E5's own fitted occupancy of
///   115 ns (before the rules were global) it was x1.36: the point is
///   where a per-machine constant stood in for a global rule.
const KNOWN_MISSES: [(&str, Bench, u32); 1] = [("xeon-e5-2680v4-56", Bench::MicroSpin, 4)];

/// The benchmark with `n` threads per lock or line: model ns per
/// iteration of a thread (all threads' iterations over the measured time).
fn model_ns(m: &Machine, bench: Bench, inside: u64, outside: u64, n: u32) -> f64 {
    let groups = i64::from(m.threads / n);
    // MicroSpinLock's sleepers need a long run (the scenarios say why).
    let (duration, warmup) = if bench == Bench::MicroSpin {
        (150_000 * US, 100_000 * US)
    } else {
        (3_000 * US, 200 * US)
    };
    let mut s = spec(preset_machine(m.preset), duration);
    s.warmup = warmup;
    let per_cpu = |s: &mut Spec, name: &str, kind: ObjectKind| {
        s.objects.push(ObjectDecl {
            name: name.into(),
            kind,
            per_cpu: true,
        });
        ObjRef {
            object: s.objects.len() as u32 - 1,
            index: Some(Expr::Bin(
                BinOp::Rem,
                Box::new(Expr::TaskIndex),
                Box::new(Expr::Const(groups)),
            )),
        }
    };
    let spinlock = |kind: &str, sleeper| ObjectKind::Spinlock {
        kind: smpsim_kernel::spec::SpinKind::named(kind).expect("a spinning lock kind"),
        options: LockOptions {
            sleeper,
            ..LockOptions::default()
        },
    };
    let iterations = counter(&mut s, "iterations");
    let mut ops = match bench {
        // No locked x86 instruction returns the old value of an xor: a
        // cmpxchg loop.
        Bench::FetchXor => vec![Op::Locking(LockingOp::AtomicCmpxchgLoop(per_cpu(
            &mut s,
            "line",
            ObjectKind::Atomic,
        )))],
        Bench::MicroSpin | Bench::DistributedMutex => {
            // folly::detail::Sleeper at commit 886a70d91: kMaxActiveSpin =
            // 4000, then nanosleep() of 500 us, plus the 50 us default timer
            // slack.
            let kind = if bench == Bench::MicroSpin {
                spinlock(
                    "ttas",
                    Some(Sleeper {
                        max_active_spin: 4000,
                        pause: m.pause,
                        sleep: 550 * US,
                    }),
                )
            } else {
                spinlock("distributed_mutex", None)
            };
            let lock = per_cpu(&mut s, "lock", kind);
            let value = per_cpu(&mut s, "value", ObjectKind::Atomic);
            vec![
                lock_op(&lock, LockMode::Exclusive, true),
                Op::Work(Dist::Const(inside)),
                Op::Locking(LockingOp::AtomicRmw(value)),
                lock_op(&lock, LockMode::Exclusive, false),
            ]
        }
    };
    // burn(1000) outside, +-10% (assumed jitter, as in the scenarios).
    let jitter = outside / 10;
    ops.extend([
        Op::Count(iterations),
        Op::Work(Dist::Uniform {
            lo: outside - jitter,
            hi: outside + jitter,
        }),
    ]);
    let cpus = (0..m.threads).map(m.cpus).collect();
    forever(&mut s, "thread", cpus, Policy::Normal, ops);
    let rate = simulate(&s).counter("iterations").unwrap().rate;
    f64::from(m.threads) * 1e9 / rate
}

struct Point {
    machine: &'static str,
    bench: Bench,
    n: u32,
    published: f64,
    model: f64,
}

impl Point {
    fn ln_err(&self) -> f64 {
        (self.model / self.published).ln().abs()
    }
}

fn points(m: &Machine) -> Vec<Point> {
    let mut out = Vec::new();
    for &(bench, _, _, published) in &m.rows {
        for (i, &n) in NS.iter().enumerate() {
            out.push(Point {
                machine: m.preset,
                bench,
                n,
                published: published[i],
                model: 0.0,
            });
        }
    }
    // Each point is its own deterministic simulation: run them on every
    // host CPU, each thread taking the next point not yet taken.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = std::sync::Mutex::new(vec![0.0; out.len()]);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = out.get(i) else { break };
                let &(_, inside, outside, _) = m.rows.iter().find(|r| r.0 == p.bench).unwrap();
                let ns = model_ns(m, p.bench, inside, outside, p.n);
                results.lock().unwrap()[i] = ns;
            });
        }
    });
    for (p, ns) in out.iter_mut().zip(results.into_inner().unwrap()) {
        p.model = ns;
    }
    for p in &out {
        eprintln!(
            "{:18} {:16} N={:2}: published {:6.0} ns, model {:7.0} ns, x{:.2}",
            p.machine,
            format!("{:?}", p.bench),
            p.n,
            p.published,
            p.model,
            p.model / p.published
        );
    }
    out
}

/// The compared points: N = 1 sized the loops.
fn compared(points: &[Point]) -> impl Iterator<Item = &Point> {
    points.iter().filter(|p| p.n > 1)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "150 ms runs of 56 threads: cargo test --release"
)]
fn folly_small_locks_against_the_model_on_both_machines() {
    let (ln15, ln2) = (1.5f64.ln(), 2f64.ln());
    let mut everywhere = Vec::new();
    for m in [&E5, &D2191] {
        let all = points(m);
        // The N = 1 points reproduce the single-thread sizing.
        for p in all.iter().filter(|p| p.n == 1) {
            assert!(p.ln_err() < 0.05, "{} {:?} N=1", p.machine, p.bench);
        }
        // The lock curves, predictions (fetch_xor is a fit input: `fit`).
        let locks = || compared(&all).filter(|p| p.bench != Bench::FetchXor);
        let every: Vec<f64> = locks().map(Point::ln_err).collect();
        everywhere.extend(every.iter().copied());
        let med = median(every);
        assert!(med <= ln15, "{}: median x{:.2}", m.preset, med.exp());
        // Every point within 2x except the known misses, which are not.
        for p in locks() {
            let known = KNOWN_MISSES.contains(&(p.machine, p.bench, p.n));
            assert_eq!(
                p.ln_err() > ln2,
                known,
                "{} {:?} N={}: model {:.0} ns, published {:.0} ns (known miss: {known})",
                p.machine,
                p.bench,
                p.n,
                p.model,
                p.published
            );
        }
    }
    // Both machines, both lock curves: the median bound holds.
    let med = median(everywhere);
    assert!(med <= ln15, "both machines: median x{:.2}", med.exp());
}
