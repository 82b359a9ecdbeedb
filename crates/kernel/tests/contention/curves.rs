//! The published contended curves of `data/contention/curves.csv`, and the
//! machines they were measured on as smpsim presets: which curves the
//! model simulates, how (the benchmark's loop, where its threads ran), and
//! which machines it cannot simulate and why.

/// One published point: the time one thread takes per operation of its
/// own (`ns_per_op_per_thread`) with `threads` threads on one line.
#[derive(Clone, Debug)]
pub struct Published {
    pub machine: String,
    pub benchmark: String,
    pub threads: u32,
    pub ns: f64,
}

/// Every row of `data/contention/curves.csv`.
pub fn published() -> Vec<Published> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/contention/curves.csv"
    );
    let text = std::fs::read_to_string(path).expect("data/contention/curves.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (m, b, n, v, u) = (
        col("machine"),
        col("benchmark"),
        col("threads"),
        col("value"),
        col("unit"),
    );
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[u], "ns_per_op_per_thread", "{l}");
            Published {
                machine: f[m].into(),
                benchmark: f[b].into(),
                threads: f[n].parse().expect("threads"),
                ns: f[v].parse().expect("value"),
            }
        })
        .collect()
}

/// What one iteration of a benchmark's thread does on its group's
/// line(s), before `outside` ns of its own work (+-10%, assumed jitter;
/// none for the tight loops).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loop {
    /// One atomic RMW whose result is unused (`lock add`, `STADD`).
    Rmw { outside: u64 },
    /// A read, then compare-and-exchange until it succeeds.
    Cmpxchg { outside: u64 },
    /// One RMW on each of `lines` lines in turn.
    RmwLines { lines: u32, outside: u64 },
}

impl Loop {
    pub fn outside(self) -> u64 {
        match self {
            Loop::Rmw { outside } | Loop::Cmpxchg { outside } | Loop::RmwLines { outside, .. } => {
                outside
            }
        }
    }
}

/// A machine with published contended curves, as the model runs it.
pub struct Machine {
    /// Its id in `data/contention/curves.csv`.
    pub id: &'static str,
    pub preset: &'static str,
    /// Threads the benchmark runs in all: `threads` per line when the
    /// benchmark puts every thread on one line (`None`), else this many,
    /// in groups of N per line (folly).
    pub all_threads: Option<u32>,
    /// Where thread t runs.
    pub cpu: fn(u32) -> u32,
    /// Its one-line curves: benchmark id and loop.
    pub curves: &'static [(&'static str, Loop)],
}

/// concurrency-hierarchy-bench's tight loops (no work between operations).
const TDOWNS: &[(&str, Loop)] = &[
    ("atomic_add", Loop::Rmw { outside: 0 }),
    ("cas_add", Loop::Cmpxchg { outside: 0 }),
];

/// Threads pinned in CPU order (concurrency-hierarchy-bench's `cpus[tid]`).
fn in_order(t: u32) -> u32 {
    t
}

/// folly on the dual E5-2680 v4: fork balancing's spread (sockets, cores,
/// then SMT siblings; assumed, folly does not pin).
fn e5_spread(t: u32) -> u32 {
    let (thread, i) = (t / 28, t % 28);
    28 * thread + (i % 2) * 14 + i / 2
}

pub const MACHINES: &[Machine] = &[
    Machine {
        id: "i7-6700hq",
        preset: "core-i7-6700hq-4",
        all_threads: None,
        cpu: in_order,
        curves: TDOWNS,
    },
    Machine {
        id: "i5-1035g4",
        preset: "core-i5-1035g4-4",
        all_threads: None,
        cpu: in_order,
        curves: TDOWNS,
    },
    // smpsim calibrate --contention on a 2-vCPU KVM guest of an AMD EPYC
    // Zen 5 (data/contention/README.md): pinned, tight loops; `xchg` is
    // a locked RMW like `lock xadd`.
    Machine {
        id: "epyc-zen5-kvm-2v",
        preset: "amd-epyc-zen5-kvm-2",
        all_threads: None,
        cpu: in_order,
        curves: &[
            ("atomic_add", Loop::Rmw { outside: 0 }),
            ("cas_add", Loop::Cmpxchg { outside: 0 }),
            ("xchg", Loop::Rmw { outside: 0 }),
        ],
    },
    Machine {
        id: "graviton2-16c",
        preset: "graviton2-16",
        all_threads: None,
        cpu: in_order,
        curves: TDOWNS,
    },
    // folly: burn(1000) and the loop outside, each curve's N = 1 figure
    // less its uncontended atomics (folly's AtomicFetchAddUncontended:
    // 5.47 ns on the E5, 10.67 on the D-2191). fetch_xor has no locked
    // x86 instruction that returns the old value: a cmpxchg loop.
    Machine {
        id: "e5-2680v4-2s",
        preset: "xeon-e5-2680v4-56",
        all_threads: Some(56),
        cpu: e5_spread,
        curves: &[
            ("fetch_xor", Loop::Cmpxchg { outside: 597 }),
            ("cas_loop", Loop::Cmpxchg { outside: 601 }),
            (
                "fetch_add_5lines",
                Loop::RmwLines {
                    lines: 5,
                    outside: 588,
                },
            ),
        ],
    },
    Machine {
        id: "d-2191",
        preset: "xeon-d2191-36",
        all_threads: Some(36),
        cpu: in_order,
        curves: &[
            ("fetch_xor", Loop::Cmpxchg { outside: 1519 }),
            ("cas_loop", Loop::Cmpxchg { outside: 1299 }),
            (
                "fetch_add_5lines",
                Loop::RmwLines {
                    lines: 5,
                    outside: 1127,
                },
            ),
        ],
    },
];

/// Machines of `curves.csv` the model does not run, and why: each is a
/// gap in the data, not in the model.
pub const NOT_RUN: &[(&str, &str)] = &[
    (
        "graviton1-16c",
        "no idle transfer of a Graviton 1 / Cortex-A72 server was found, and its cluster layout on an a1.4xlarge is unknown",
    ),
    (
        "epyc-milan-vm-166",
        "a virtual machine: the host part (Zen 3 or 4) and where its vCPUs ran are unknown, so there is no idle transfer to give it",
    ),
    (
        "power6-32c-unverified",
        "two points, a machine known only by its host name, no idle transfer",
    ),
    (
        "power5p-595-64c",
        "no idle transfer of a POWER5+ was found",
    ),
    (
        "gold6130-2s",
        "pinned thread i on CPU i, but how the 64 CPUs are numbered is not stated: whether N = 2 and N = 16 ran on one socket or two (a 48 or a 141 ns transfer) is unknown, and its idle transfers are a proxy's (docs/contention.md: run once with an assumed numbering)",
    ),
    (
        "neoverse-n1-16c-unidentified",
        "the machine is not identified (16 Neoverse-N1 cores, no clock, no instance type): no idle transfer can be given it, nor is it known whether its outline-atomics helper ran LSE",
    ),
    (
        "platinum8176-8s",
        "no preset yet: the 8-socket topology (which socket pairs are one UPI hop apart) and the unpinned threads' placement are not in the data",
    ),
];

/// A point to simulate: machine, curve, threads per line, published ns.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub machine: usize,
    pub curve: usize,
    pub threads: u32,
    pub published: f64,
}

/// The published points of every machine's curves, N >= 2 (N = 1 is the
/// idle figure a preset's `atomic` cost or a loop's size comes from).
pub fn points(all: &[Published]) -> Vec<Point> {
    let mut out = Vec::new();
    for (mi, m) in MACHINES.iter().enumerate() {
        for (ci, (bench, _)) in m.curves.iter().enumerate() {
            let before = out.len();
            out.extend(
                all.iter()
                    .filter(|p| p.machine == m.id && p.benchmark == *bench && p.threads >= 2)
                    .filter(|p| m.all_threads.is_none_or(|t| p.threads <= t))
                    .map(|p| Point {
                        machine: mi,
                        curve: ci,
                        threads: p.threads,
                        published: p.ns,
                    }),
            );
            assert!(out.len() > before, "{}: no {bench} points", m.id);
        }
    }
    out
}
