//! The scenario document as written: serde structs that keep every value's
//! span so later checks can point at it.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

pub(crate) type S<T> = Spanned<T>;

/// A TOML table read as a list of entries in document order.
#[derive(Debug)]
pub(crate) struct Entries<V>(pub Vec<(S<String>, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V_<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<S<String>>()? {
                    out.push((k, m.next_value()?));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V_(PhantomData))
    }
}

/// An integer expression: a TOML integer or an expression string.
#[derive(Debug, Clone)]
pub(crate) enum RawExpr {
    Int(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for RawExpr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_;
        impl Visitor<'_> for V_ {
            type Value = RawExpr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or an expression string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawExpr, E> {
                Ok(RawExpr::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawExpr, E> {
                i64::try_from(v)
                    .map(RawExpr::Int)
                    .map_err(|_| E::custom("integer is too large"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawExpr, E> {
                Ok(RawExpr::Text(v.to_string()))
            }
        }
        d.deserialize_any(V_)
    }
}

/// A CPU list: `"all"`, `"0-15"`, `"0,2,4-7"`, or an array of integers.
#[derive(Debug)]
pub(crate) enum RawCpus {
    Text(String),
    List(Vec<S<i64>>),
}

impl<'de> Deserialize<'de> for RawCpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_;
        impl<'de> Visitor<'de> for V_ {
            type Value = RawCpus;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "\"all\", a CPU list string such as \"0,2,4-7\", or an array of CPU numbers",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawCpus, E> {
                Ok(RawCpus::Text(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<RawCpus, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = s.next_element()? {
                    out.push(v);
                }
                Ok(RawCpus::List(out))
            }
        }
        d.deserialize_any(V_)
    }
}

/// An object's `line`: one name, or an array (an rwsem across two lines;
/// its length and elements are checked in `objects.rs`, where they are
/// located).
#[derive(Debug)]
pub(crate) enum RawLine {
    One(String),
    Many(Vec<S<toml::Value>>),
}

impl<'de> Deserialize<'de> for RawLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_;
        impl<'de> Visitor<'de> for V_ {
            type Value = RawLine;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a line name, or an array of two line names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawLine, E> {
                Ok(RawLine::One(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<RawLine, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = s.next_element()? {
                    out.push(v);
                }
                Ok(RawLine::Many(out))
            }
        }
        d.deserialize_any(V_)
    }
}

/// `[hooks]`: event name -> its code as an op array.
pub(crate) type RawHooks = Entries<S<Vec<S<RawOp>>>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDoc {
    pub scenario: S<RawScenario>,
    /// Handled separately (merged over a preset); always absent here.
    #[allow(dead_code)]
    pub machine: Option<IgnoredAny>,
    pub kernel: Option<S<RawKernel>>,
    pub objects: Option<S<Entries<S<RawObject>>>>,
    pub cgroup: Option<Vec<S<RawCgroup>>>,
    pub functions: Option<Entries<S<Vec<S<RawOp>>>>>,
    /// `[hooks]`: event name -> code the kernel runs there.
    pub hooks: Option<S<RawHooks>>,
    pub tasks: Option<S<Vec<S<RawTask>>>>,
    /// Handled separately; always absent here.
    #[allow(dead_code)]
    pub variant: Option<IgnoredAny>,
    /// Parsed from the base document by `load` (see `reproduce.rs`).
    #[allow(dead_code)]
    pub reproduce: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    // `name` and `description` are read from the base document by `load`.
    #[allow(dead_code)]
    pub name: S<String>,
    #[allow(dead_code)]
    pub description: Option<S<String>>,
    pub duration: S<String>,
    pub warmup: Option<S<String>>,
    pub seed: Option<S<i64>>,
    pub max_events: Option<S<i64>>,
    pub replicas: Option<S<i64>>,
    pub max_tasks: Option<S<i64>>,
    pub max_objects: Option<S<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKernel {
    pub hz: Option<S<i64>>,
    pub sched_slice: Option<S<String>>,
    pub wakeup_granularity: Option<S<String>>,
    pub mutex_spin_on_owner: Option<S<bool>>,
    pub cfs_bandwidth_slice: Option<S<String>>,
    pub tg_walk_cost: Option<S<String>>,
    pub cfs_throttle_base_cost: Option<S<String>>,
    pub latency_window: Option<S<String>>,
    pub csd_wait_preemptible: Option<S<bool>>,
    pub rcu_expedited: Option<S<bool>>,
    pub jiffies_till_first_fqs: Option<S<i64>>,
    pub jiffies_till_next_fqs: Option<S<i64>>,
    pub rcu_node_cost: Option<S<String>>,
    pub rcu_fanout_leaf: Option<S<i64>>,
    pub rcu_gp_kthread_cpu: Option<S<i64>>,
    pub lazy_tlb: Option<S<String>>,
    pub watchdog_thresh: Option<S<String>>,
    pub hung_task_timeout_secs: Option<S<String>>,
    pub csd_lock_timeout: Option<S<String>>,
    pub rcu_cpu_stall_timeout: Option<S<String>>,
    pub load_balance: Option<S<bool>>,
    pub lockdep: Option<S<bool>>,
    pub tg_load_avg_ratelimit: Option<S<String>>,
    pub sched_migration_cost: Option<S<String>>,
    pub migration_footprint_lines: Option<S<i64>>,
    pub tlb_broadcast: Option<S<bool>>,
    pub cfs_bandwidth_slack: Option<S<bool>>,
    pub cfs_slice_expiry: Option<S<bool>>,
    pub asym_cpu_capacity: Option<S<bool>>,
    pub rcu_blimit: Option<S<i64>>,
    pub rcu_qhimark: Option<S<i64>>,
    pub rcu_qlowmark: Option<S<i64>>,
    pub rcu_nocbs: Option<S<RawCpus>>,
    pub rcu_lazy: Option<S<bool>>,
    pub rcu_lazy_flush: Option<S<String>>,
    pub rcu_normal_wake_from_gp: Option<S<bool>>,
    pub kfree_drain_jiffies: Option<S<i64>>,
    pub kfree_rcu_cost: Option<S<String>>,
    pub kfree_rcu_free_cost: Option<S<String>>,
    pub ttwu_queue: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawObject {
    #[serde(rename = "type")]
    pub kind: S<String>,
    pub per_cpu: Option<S<bool>>,
    pub spin: Option<S<bool>>,
    /// An rwsem's readers spin too (before 5.11).
    pub reader_spin: Option<S<bool>>,
    pub to: Option<S<String>>,
    /// Initial tokens of a semaphore.
    pub initial: Option<S<i64>>,
    /// The implementation of a spinlock or rwlock (`kind = "ticket"`), a
    /// name from `smpsim_kernel::locking::LOCK_KINDS`.
    #[serde(rename = "kind")]
    pub lock_kind: Option<S<String>>,
    /// The `backoff` option of the lock kinds that take it.
    pub backoff: Option<S<bool>>,
    /// The `sleeper` option of the lock kinds that take it (`ttas`).
    pub sleeper: Option<S<RawSleeper>>,
    /// The named cache line the object sits on, with the others naming it
    /// (two names: an rwsem straddling two lines).
    pub line: Option<S<RawLine>>,
    /// A per-CPU array's layout: `"line"` (one element per line, the
    /// default) or `"packed"`.
    pub stride: Option<S<String>>,
    /// An object array: this many objects, `name[0]` to `name[N-1]`.
    pub count: Option<S<i64>>,
}

/// folly's `detail::Sleeper` on a `ttas` lock's waiters; every field is
/// required (checked in `objects.rs`, so a missing one is located there).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSleeper {
    pub max_active_spin: Option<S<i64>>,
    pub pause: Option<S<String>>,
    pub sleep: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCgroup {
    pub name: S<String>,
    pub parent: Option<S<String>>,
    pub cpu_max: Option<S<RawCpuMax>>,
    pub generate: Option<S<RawGenerate>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCpuMax {
    pub quota: S<String>,
    pub period: S<String>,
    /// `cpu.max.burst`.
    pub burst: Option<S<String>>,
    /// When the period timer first fires (its expiry modulo the period).
    pub phase: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGenerate {
    pub children: S<i64>,
    pub depth: Option<S<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTask {
    pub name: S<String>,
    pub per_cpu: Option<S<i64>>,
    pub count: Option<S<i64>>,
    pub cpus: Option<S<RawCpus>>,
    /// `"pinned"`, or the CPUs the tasks may run on (default: `cpus`).
    pub affinity: Option<S<RawCpus>>,
    pub policy: Option<S<String>>,
    pub priority: Option<S<i64>>,
    pub cgroup: Option<S<String>>,
    pub mm: Option<S<String>>,
    /// Each task its own address space (processes, not threads).
    pub mm_per_task: Option<S<bool>>,
    pub vars: Option<Entries<S<RawExpr>>>,
    pub code: S<Vec<S<RawOp>>>,
}

/// One op: every field any op kind takes. Which fields a kind allows is
/// checked when compiling, against its entry in the op registry
/// (`ops::registry::OPS`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOp {
    pub op: S<String>,
    pub time: Option<S<String>>,
    pub name: Option<S<String>>,
    pub body: Option<S<Vec<S<RawOp>>>>,
    pub lock: Option<S<String>>,
    pub obj: Option<S<String>>,
    pub cpu: Option<S<RawExpr>>,
    pub func: Option<S<String>>,
    /// A cross-CPU call's handler, a `[functions]` entry run on the target.
    pub handler: Option<S<String>>,
    pub units: Option<S<RawExpr>>,
    pub cpus: Option<S<String>>,
    /// A cpumask expression (`cpumask`, `for_each_cpu`).
    pub mask: Option<S<String>>,
    pub wait: Option<S<bool>>,
    /// `flush_tlb_mm_range`: page tables were freed (every CPU of the mask
    /// is flushed, lazy ones too).
    pub freed_tables: Option<S<bool>>,
    pub irqsave: Option<S<bool>>,
    pub overshoot: Option<S<String>>,
    pub var: Option<S<String>>,
    pub value: Option<S<RawExpr>>,
    pub cond: Option<S<String>>,
    pub then: Option<S<Vec<S<RawOp>>>>,
    #[serde(rename = "else")]
    pub else_: Option<S<Vec<S<RawOp>>>>,
    pub count: Option<S<RawExpr>>,
    pub options: Option<S<Vec<S<RawChoice>>>>,
    pub counter: Option<S<String>>,
    pub hist: Option<S<String>>,
    pub since: Option<S<String>>,
    /// `assert`: what the finding says.
    pub message: Option<S<String>>,
    #[serde(rename = "fn")]
    pub func_name: Option<S<String>>,
}

impl RawOp {
    /// The fields present, with the span of each value.
    pub fn present(&self) -> Vec<(&'static str, std::ops::Range<usize>)> {
        fn sp<T>(v: &Option<S<T>>) -> Option<std::ops::Range<usize>> {
            v.as_ref().map(|s| s.span())
        }
        [
            ("time", sp(&self.time)),
            ("name", sp(&self.name)),
            ("body", sp(&self.body)),
            ("lock", sp(&self.lock)),
            ("obj", sp(&self.obj)),
            ("cpu", sp(&self.cpu)),
            ("func", sp(&self.func)),
            ("handler", sp(&self.handler)),
            ("units", sp(&self.units)),
            ("cpus", sp(&self.cpus)),
            ("mask", sp(&self.mask)),
            ("wait", sp(&self.wait)),
            ("freed_tables", sp(&self.freed_tables)),
            ("irqsave", sp(&self.irqsave)),
            ("overshoot", sp(&self.overshoot)),
            ("var", sp(&self.var)),
            ("value", sp(&self.value)),
            ("cond", sp(&self.cond)),
            ("then", sp(&self.then)),
            ("else", sp(&self.else_)),
            ("count", sp(&self.count)),
            ("options", sp(&self.options)),
            ("counter", sp(&self.counter)),
            ("hist", sp(&self.hist)),
            ("since", sp(&self.since)),
            ("message", sp(&self.message)),
            ("fn", sp(&self.func_name)),
        ]
        .into_iter()
        .filter_map(|(n, s)| Some((n, s?)))
        .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawChoice {
    pub weight: S<i64>,
    pub body: S<Vec<S<RawOp>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReproduce {
    pub case: Option<S<String>>,
    pub seeds: Option<S<i64>>,
    pub quick: Option<Entries<S<IgnoredAny>>>,
    pub metric: Option<Vec<S<RawMetric>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetric {
    pub name: S<String>,
    pub published: Option<S<f64>>,
    pub expr: S<String>,
    pub pass: S<RawPass>,
    pub source: S<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPass {
    pub factor: Option<S<f64>>,
    pub within_pct: Option<S<f64>>,
    pub abs: Option<S<f64>>,
    pub min: Option<S<f64>>,
    pub max: Option<S<f64>>,
}
