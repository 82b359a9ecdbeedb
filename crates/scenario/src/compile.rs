//! The merged document checked and lowered to a [`Spec`].

use std::collections::HashMap;

use serde::Deserialize;
use smpsim_engine::Nanos;
use smpsim_kernel::locking;
use smpsim_kernel::{
    Bandwidth, CgroupDecl, Knobs, ObjectDecl, ObjectKind, Policy, Spec, TaskGroupDecl,
};
use smpsim_kernel::{LazyTlb, LockOptions};
use smpsim_machine::CpuId;
use toml::de::DeTable;
use toml::Spanned;

use crate::document::{apply_set, apply_variant, parse_set_value};
use crate::duration::{parse_duration, MachineCosts};
use crate::error::{list, DResult, Diag, Sources, StrErr};
use crate::ops::{self, split_lockref, Ctx, LockKind, ObjEntry};
use crate::raw::{RawCpus, RawDoc, RawKernel, RawObject, RawTask, S};
use crate::Scenario;

/// Upper bound on the tasks of one group.
const MAX_TASKS: u64 = 1 << 20;
/// Upper bound on `replicas`: each one is a whole simulation.
const MAX_REPLICAS: u32 = 100_000;

/// Parses the document, merges the variant and the `--set` overrides, and
/// hands back the pieces: the `[machine]` value and the rest, deserialized.
pub(crate) fn compile<'t>(
    scn: &'t Scenario,
    variant: Option<&str>,
    sets: &'t [(String, String)],
    srcs: &mut Sources,
) -> DResult<Spec> {
    let parsed = DeTable::parse(&scn.text).map_err(|e| Diag::from_toml(&e, 0, 0..0))?;
    let doc_span = parsed.span();
    let mut root = parsed.into_inner();
    let variants = root.remove("variant");
    if let Some(name) = variant {
        apply_variant(&mut root, variants, name, doc_span.clone())?;
    }
    for (key, value) in sets {
        let base = srcs.add_set(key, value);
        let v = parse_set_value(value, base);
        apply_set(&mut root, key, v, base..base + value.len())?;
    }
    let machine_section = root.remove("machine");
    let dir = scn.path.parent().unwrap_or(std::path::Path::new("."));
    let machine = crate::machine::build(machine_section, doc_span.clone(), dir, srcs)?;
    let raw = RawDoc::deserialize(toml::de::Deserializer::from(Spanned::new(
        doc_span.clone(),
        root,
    )))
    .map_err(|e| Diag::from_toml(&e, 0, doc_span.start..doc_span.start))?;
    lower(raw, machine, srcs)
}

/// Where durations are read: the texts for locating errors and the
/// machine's costs for `cost.NAME`.
struct Durations<'a> {
    srcs: &'a Sources,
    costs: &'a MachineCosts,
}

impl Durations<'_> {
    fn get(&self, v: &S<String>) -> DResult<Nanos> {
        parse_duration(v.get_ref(), self.costs).map_err(|e| {
            let span = self.srcs.sub_span(&v.span(), v.get_ref(), e.range.clone());
            e.at(span)
        })
    }

    fn opt(&self, v: &Option<S<String>>, default: Nanos) -> DResult<Nanos> {
        v.as_ref().map_or(Ok(default), |v| self.get(v))
    }
}

fn knobs(dur: &Durations<'_>, k: Option<&S<RawKernel>>) -> DResult<Knobs> {
    let d = Knobs::default();
    let Some(k) = k else { return Ok(d) };
    let k = k.get_ref();
    let hz = match &k.hz {
        None => d.hz,
        Some(hz) => match u32::try_from(*hz.get_ref()) {
            Ok(v) if (1..=100_000).contains(&v) => v,
            _ => return Err(Diag::new(hz.span(), "`hz` must be between 1 and 100000")),
        },
    };
    let positive = |v: &Option<S<String>>, default: Nanos, what: &str| -> DResult<Nanos> {
        let n = dur.opt(v, default)?;
        match v {
            Some(s) if n == 0 => Err(Diag::new(
                s.span(),
                format!("`{what}` must be greater than zero"),
            )),
            _ => Ok(n),
        }
    };
    Ok(Knobs {
        hz,
        sched_slice: positive(&k.sched_slice, d.sched_slice, "sched_slice")?,
        wakeup_granularity: dur.opt(&k.wakeup_granularity, d.wakeup_granularity)?,
        mutex_spin_on_owner: k
            .mutex_spin_on_owner
            .as_ref()
            .map_or(d.mutex_spin_on_owner, |v| *v.get_ref()),
        cfs_bandwidth_slice: positive(
            &k.cfs_bandwidth_slice,
            d.cfs_bandwidth_slice,
            "cfs_bandwidth_slice",
        )?,
        tg_walk_cost: dur.opt(&k.tg_walk_cost, d.tg_walk_cost)?,
        cfs_throttle_base_cost: dur.opt(&k.cfs_throttle_base_cost, d.cfs_throttle_base_cost)?,
        latency_window: positive(&k.latency_window, d.latency_window, "latency_window")?,
        csd_wait_preemptible: k
            .csd_wait_preemptible
            .as_ref()
            .map_or(d.csd_wait_preemptible, |v| *v.get_ref()),
        rcu_expedited: k
            .rcu_expedited
            .as_ref()
            .map_or(d.rcu_expedited, |v| *v.get_ref()),
        jiffies_till_first_fqs: jiffies(&k.jiffies_till_first_fqs, "jiffies_till_first_fqs")?,
        jiffies_till_next_fqs: jiffies(&k.jiffies_till_next_fqs, "jiffies_till_next_fqs")?,
        rcu_node_cost: dur.opt(&k.rcu_node_cost, d.rcu_node_cost)?,
        lazy_tlb: match &k.lazy_tlb {
            None => d.lazy_tlb,
            Some(v) => match v.get_ref().as_str() {
                "refcount" => LazyTlb::Refcount,
                "shootdown" => LazyTlb::Shootdown,
                "cpumask-refcount" => LazyTlb::CpumaskRefcount,
                "cpumask-refcount-naive" => LazyTlb::CpumaskRefcountNaive,
                other => {
                    return Err(Diag::new(
                        v.span(),
                        format!("unknown lazy_tlb mode `{other}`; expected one of: refcount, shootdown, cpumask-refcount, cpumask-refcount-naive"),
                    ))
                }
            },
        },
        rcu_fanout_leaf: match &k.rcu_fanout_leaf {
            None => d.rcu_fanout_leaf,
            Some(v) => match u32::try_from(*v.get_ref()) {
                Ok(n) if (2..=64).contains(&n) => n,
                _ => {
                    return Err(Diag::new(
                        v.span(),
                        "`rcu_fanout_leaf` must be between 2 and 64 (CONFIG_RCU_FANOUT_LEAF)",
                    ))
                }
            },
        },
        watchdog_thresh: positive(&k.watchdog_thresh, d.watchdog_thresh, "watchdog_thresh")?,
        hung_task_timeout: positive(
            &k.hung_task_timeout_secs,
            d.hung_task_timeout,
            "hung_task_timeout_secs",
        )?,
        csd_lock_timeout: positive(&k.csd_lock_timeout, d.csd_lock_timeout, "csd_lock_timeout")?,
    })
}

/// Per-CPU maxima are kept per `latency_window` of the measured time (two
/// tables of one u64 per CPU per window): refuse a run whose tables would
/// not fit in memory, rather than abort allocating them.
fn check_window_tables(
    raw: &RawDoc,
    measured: Nanos,
    window: Nanos,
    nr_cpus: usize,
) -> DResult<()> {
    /// 2^27 cells: 1 GiB of tables.
    const MAX_CELLS: u64 = 1 << 27;
    let windows = (measured / window).max(1);
    let cells = windows.saturating_mul(2 * nr_cpus as u64);
    if cells <= MAX_CELLS {
        return Ok(());
    }
    let fits = (MAX_CELLS / (2 * nr_cpus as u64)).max(1);
    let at = raw
        .kernel
        .as_ref()
        .and_then(|k| k.get_ref().latency_window.as_ref())
        .map_or(raw.scenario.get_ref().duration.span(), |w| w.span());
    Err(Diag::new(
        at,
        format!(
            "{windows} latency windows per CPU on {nr_cpus} CPUs do not fit in memory (at most {fits}): \
             make `latency_window` longer or `duration` shorter"
        ),
    ))
}

/// A jiffies count knob: 1 to 300 jiffies, as the kernel clamps them.
fn jiffies(v: &Option<S<i64>>, what: &str) -> DResult<Option<u32>> {
    match v {
        None => Ok(None),
        Some(j) => match u32::try_from(*j.get_ref()) {
            Ok(n) if (1..=300).contains(&n) => Ok(Some(n)),
            _ => Err(Diag::new(
                j.span(),
                format!("`{what}` must be between 1 and 300 jiffies"),
            )),
        },
    }
}

/// Parses a CPU list against a machine of `nr` CPUs.
fn cpus(srcs: &Sources, v: Option<&S<RawCpus>>, nr: usize) -> DResult<Vec<CpuId>> {
    let all = || (0..nr as CpuId).collect();
    let Some(v) = v else { return Ok(all()) };
    let mut out: Vec<(i64, std::ops::Range<usize>)> = Vec::new();
    match v.get_ref() {
        RawCpus::List(items) => {
            for i in items {
                out.push((*i.get_ref(), i.span()));
            }
        }
        RawCpus::Text(t) if t.trim() == "all" => return Ok(all()),
        RawCpus::Text(t) => {
            let sv = S::new(v.span(), t.clone());
            let err = |r: std::ops::Range<usize>, m: String| {
                Diag::new(srcs.sub_span(&sv.span(), t, r), m)
            };
            let mut at = 0;
            for piece in t.split(',') {
                let range = at..at + piece.len();
                at += piece.len() + 1;
                let num = |s: &str| s.trim().parse::<i64>().ok();
                let (lo, hi) = match piece.split_once('-') {
                    Some((a, b)) => (num(a), num(b)),
                    None => (num(piece), num(piece)),
                };
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err(err(
                        range,
                        format!(
                            "expected a CPU number or range such as `4-7`, found `{}`",
                            piece.trim()
                        ),
                    )
                    .help("write \"all\", \"0-15\", \"0,2,4-7\" or an array of CPU numbers"));
                };
                if lo > hi {
                    return Err(err(
                        range,
                        format!("CPU range `{}` is backwards", piece.trim()),
                    ));
                }
                if hi - lo >= 1 << 21 {
                    return Err(err(range, "CPU range is too large".into()));
                }
                for c in lo..=hi {
                    out.push((c, srcs.sub_span(&sv.span(), t, range.clone())));
                }
            }
        }
    }
    if out.is_empty() {
        return Err(Diag::new(v.span(), "the CPU list is empty"));
    }
    let mut seen = vec![false; nr];
    let mut cpus = Vec::with_capacity(out.len());
    for (c, span) in out {
        if c < 0 || c as u64 >= nr as u64 {
            return Err(Diag::new(
                span,
                format!("CPU {c} does not exist: the machine has CPUs 0-{}", nr - 1),
            ));
        }
        if std::mem::replace(&mut seen[c as usize], true) {
            return Err(Diag::new(span, format!("CPU {c} is listed twice")));
        }
        cpus.push(c as CpuId);
    }
    Ok(cpus)
}

/// `[scenario] replicas`: how many independent runs are merged.
fn replicas(v: &Option<S<i64>>) -> DResult<u32> {
    let Some(v) = v else { return Ok(1) };
    match u32::try_from(*v.get_ref()) {
        Ok(n) if (1..=MAX_REPLICAS).contains(&n) => Ok(n),
        _ => Err(Diag::new(
            v.span(),
            format!(
                "`replicas` must be between 1 and {MAX_REPLICAS}, not {}",
                v.get_ref()
            ),
        )),
    }
}

fn lower(raw: RawDoc, machine: smpsim_machine::Machine, srcs: &Sources) -> DResult<Spec> {
    // Costs after `[machine]` overrides, so `cost.NAME` follows them.
    let costs = MachineCosts::of(&machine);
    let dur = Durations {
        srcs,
        costs: &costs,
    };
    // [scenario]
    let sc = raw.scenario.get_ref();
    let duration_ns = dur.get(&sc.duration)?;
    if duration_ns == 0 {
        return Err(Diag::new(
            sc.duration.span(),
            "`duration` must be greater than zero",
        ));
    }
    let max_events = match &sc.max_events {
        None => None,
        Some(v) if *v.get_ref() > 0 => Some(*v.get_ref() as u64),
        Some(v) => {
            return Err(Diag::new(
                v.span(),
                "`max_events` must be a positive number of events",
            ))
        }
    };
    let replicas = replicas(&sc.replicas)?;
    let warmup = dur.opt(&sc.warmup, 0)?;
    if warmup >= duration_ns {
        let at = sc.warmup.as_ref().map_or(sc.duration.span(), |w| w.span());
        return Err(Diag::new(
            at,
            format!(
                "`warmup` ({}) must be shorter than `duration` ({})",
                sc.warmup.as_ref().map_or("0s", |w| w.get_ref().as_str()),
                sc.duration.get_ref()
            ),
        ));
    }
    let seed = match &sc.seed {
        None => 1,
        Some(s) => u64::try_from(*s.get_ref())
            .map_err(|_| Diag::new(s.span(), "`seed` cannot be negative"))?,
    };
    let knobs = knobs(&dur, raw.kernel.as_ref())?;
    let nr = machine.nr_cpus();
    check_window_tables(&raw, duration_ns - warmup, knobs.latency_window, nr)?;

    // [objects]
    let mut objects = Vec::new();
    let mut entries: HashMap<String, ObjEntry> = HashMap::new();
    let mut object_names = Vec::new();
    let mut aliases = Vec::new();
    for (name, obj) in raw.objects.as_ref().map_or(&[][..], |o| &o.get_ref().0) {
        let o = obj.get_ref();
        let n = name.get_ref();
        if split_lockref(n)
            .map(|(r, i)| r.len() != n.len() || i.is_some())
            .unwrap_or(true)
            || n.contains(['[', ']'])
        {
            return Err(Diag::new(
                name.span(),
                format!("`{n}` cannot be an object name"),
            ));
        }
        let type_name = o.kind.get_ref().as_str();
        const TYPES: &[&str] = &[
            "mutex",
            "spinlock",
            "rwlock",
            "atomic",
            "semaphore",
            "alias",
        ];
        if !TYPES.contains(&type_name) {
            return Err(Diag::new(
                o.kind.span(),
                format!(
                    "unknown object type `{type_name}`; expected one of: {}",
                    TYPES.join(", ")
                ),
            ));
        }
        if !matches!(type_name, "spinlock" | "rwlock") {
            not_for(&o.lock_kind, "kind", type_name)?;
            not_for(&o.backoff, "backoff", type_name)?;
        }
        if type_name != "semaphore" {
            not_for(&o.initial, "initial", type_name)?;
        }
        if type_name != "alias" {
            if let Some(to) = &o.to {
                return Err(Diag::new(to.span(), "`to` is only for `type = \"alias\"`"));
            }
        }
        let per_cpu = o.per_cpu.as_ref().is_some_and(|v| *v.get_ref());
        let (obj_kind, lock_kind) = match type_name {
            "mutex" => {
                let spin = o.spin.as_ref().map(|v| *v.get_ref()).unwrap_or(true);
                (ObjectKind::Mutex { spin }, LockKind::Mutex)
            }
            "spinlock" | "rwlock" => {
                // A spinning lock always spins: `spin` would be meaningless.
                not_for(&o.spin, "spin", type_name)?;
                let kind = spinning_kind(o, type_name)?;
                let lock_kind = if type_name == "rwlock" {
                    LockKind::Rwlock
                } else {
                    LockKind::Spinlock
                };
                (kind, lock_kind)
            }
            "atomic" => {
                not_for(&o.spin, "spin", type_name)?;
                (ObjectKind::Atomic, LockKind::Atomic)
            }
            "semaphore" => {
                not_for(&o.spin, "spin", type_name)?;
                let initial = match &o.initial {
                    None => 0,
                    Some(v) => u32::try_from(*v.get_ref()).map_err(|_| {
                        Diag::new(v.span(), "`initial` must be a count of tokens, >= 0")
                    })?,
                };
                (ObjectKind::Semaphore { initial }, LockKind::Semaphore)
            }
            "alias" => {
                not_for(&o.per_cpu, "per_cpu", "alias")?;
                not_for(&o.spin, "spin", "alias")?;
                let Some(to) = &o.to else {
                    return Err(Diag::new(
                        obj.span(),
                        "an alias needs `to = \"OBJECT\"` or `to = \"OBJECT[INDEX]\"`",
                    ));
                };
                aliases.push(to.clone());
                object_names.push(n.clone());
                entries.insert(n.clone(), ObjEntry::Alias { to: to.clone() });
                continue;
            }
            _ => unreachable!("object types are checked above"),
        };
        objects.push(ObjectDecl {
            name: n.clone(),
            kind: obj_kind,
            per_cpu,
        });
        let entry = ObjEntry::Lock {
            id: (objects.len() - 1) as u32,
            per_cpu,
            kind: lock_kind,
        };
        object_names.push(n.clone());
        entries.insert(n.clone(), entry);
    }
    check_aliases(srcs, &entries, &object_names)?;

    // [[cgroup]]
    let mut cgroups: Vec<CgroupDecl> = Vec::new();
    for cg in raw.cgroup.iter().flatten() {
        let c = cg.get_ref();
        let name = c.name.get_ref();
        if cgroups.iter().any(|g| &g.name == name) {
            return Err(Diag::new(
                c.name.span(),
                format!("a cgroup named `{name}` is already declared"),
            ));
        }
        let parent = match &c.parent {
            None => None,
            Some(p) => Some(
                cgroups
                    .iter()
                    .position(|g| &g.name == p.get_ref())
                    .ok_or_else(|| {
                        Diag::new(p.span(), format!("unknown parent cgroup `{}`", p.get_ref()))
                            .help(format!(
                            "a parent must be declared before its children; declared so far: {}",
                            list(cgroups.iter().map(|g| &g.name))
                        ))
                    })?,
            ),
        };
        let bandwidth = match &c.cpu_max {
            None => None,
            Some(m) => {
                let quota = dur.get(&m.get_ref().quota)?;
                let period = dur.get(&m.get_ref().period)?;
                if quota == 0 {
                    return Err(Diag::new(
                        m.get_ref().quota.span(),
                        "`quota` must be greater than zero",
                    ));
                }
                if period == 0 {
                    return Err(Diag::new(
                        m.get_ref().period.span(),
                        "`period` must be greater than zero",
                    ));
                }
                Some(Bandwidth { quota, period })
            }
        };
        let generated_descendants = match &c.generate {
            None => 0,
            Some(g) => {
                let g = g.get_ref();
                let children = u64::try_from(*g.children.get_ref())
                    .map_err(|_| Diag::new(g.children.span(), "`children` cannot be negative"))?;
                let depth = match &g.depth {
                    None => 0,
                    Some(d) => u64::try_from(*d.get_ref())
                        .map_err(|_| Diag::new(d.span(), "`depth` cannot be negative"))?,
                };
                children
                    .checked_mul(depth + 1)
                    .filter(|n| *n <= 1 << 40)
                    .ok_or_else(|| Diag::new(g.children.span(), "too many generated cgroups"))?
            }
        };
        cgroups.push(CgroupDecl {
            name: name.clone(),
            parent,
            bandwidth,
            generated_descendants,
        });
    }

    // [functions]
    let mut functions = HashMap::new();
    let mut function_order = Vec::new();
    for (name, body) in raw.functions.as_ref().map_or(&[][..], |f| &f.0) {
        functions.insert(name.get_ref().clone(), body);
        function_order.push(name.get_ref().clone());
    }
    ops::check_function_cycles(&functions, &function_order)?;

    // [[tasks]]
    let mut ctx = Ctx {
        srcs,
        objects: entries,
        object_names,
        functions,
        counters: Vec::new(),
        histograms: Vec::new(),
        costs,
    };
    let mut task_groups: Vec<TaskGroupDecl> = Vec::new();
    let mut mms: Vec<String> = Vec::new();
    let no_tasks = Vec::new();
    let tasks = raw.tasks.as_ref().map_or(&no_tasks, |t| t.get_ref());
    if tasks.is_empty() {
        let at = raw.tasks.as_ref().map_or(0..0, |t| t.span());
        return Err(Diag::new(at, "the scenario has no tasks")
            .help("add a `[[tasks]]` table with `name`, `count` or `per_cpu`, and `code`"));
    }
    for t in tasks {
        let group = task_group(&mut ctx, t, nr, &cgroups, &task_groups, &mut mms)?;
        task_groups.push(group);
    }
    Ok(Spec {
        machine,
        knobs,
        objects,
        cgroups,
        task_groups,
        counters: ctx.counters,
        histograms: ctx.histograms,
        duration: duration_ns,
        warmup,
        seed,
        max_events,
        replicas,
    })
}

/// An error at a field that the object's type does not take.
fn not_for<T>(f: &Option<S<T>>, field: &str, type_name: &str) -> DResult<()> {
    match f {
        Some(v) => Err(Diag::new(
            v.span(),
            format!("`{field}` is not a field of a `{type_name}` object"),
        )),
        None => Ok(()),
    }
}

/// The implementation of a `spinlock` or `rwlock` object: its `kind` (the
/// registry's default without one) and options, checked against
/// [`locking::LOCK_KINDS`].
fn spinning_kind(o: &RawObject, type_name: &str) -> DResult<ObjectKind> {
    let name = o.lock_kind.as_ref().map(|k| k.get_ref().as_str());
    let Some(info) = locking::find_kind(type_name, name) else {
        let known = list(locking::kind_names(type_name));
        return Err(match &o.lock_kind {
            Some(k) => Diag::new(
                k.span(),
                format!(
                    "unknown {type_name} kind `{}`; expected one of: {known}",
                    k.get_ref()
                ),
            )
            .help(kind_summaries(type_name)),
            None => Diag::new(
                o.kind.span(),
                format!("no {type_name} kind is the default; choose one with `kind`: {known}"),
            ),
        });
    };
    let mut options = LockOptions::default();
    if let Some(b) = &o.backoff {
        if !info.options.contains(&"backoff") {
            let takers: Vec<&str> = locking::LOCK_KINDS
                .iter()
                .filter(|k| k.options.contains(&"backoff"))
                .map(|k| k.name)
                .collect();
            let which = if o.lock_kind.is_some() {
                format!("`{}`", info.name)
            } else {
                format!("`{}` (the default {type_name})", info.name)
            };
            return Err(Diag::new(
                b.span(),
                format!(
                    "kind {which} has no `backoff` option; only {} take it",
                    list(&takers)
                ),
            )
            .help(kind_summaries(type_name)));
        }
        options.backoff = *b.get_ref();
    }
    Ok(ObjectKind::Spinlock {
        kind: info.name.to_string(),
        options,
    })
}

/// One line per implementation of `type_name`, for help texts.
fn kind_summaries(type_name: &str) -> String {
    let kinds: Vec<String> = locking::LOCK_KINDS
        .iter()
        .filter(|k| k.object_type == type_name)
        .map(|k| {
            let options = if k.options.is_empty() {
                String::new()
            } else {
                format!(" [options: {}]", k.options.join(", "))
            };
            format!(
                "`{}`{}{options}: {}",
                k.name,
                if k.default { " (default)" } else { "" },
                k.summary
            )
        })
        .collect();
    format!("{type_name} kinds: {}", kinds.join("; "))
}

/// Every alias must lead to a declared object without a cycle.
fn check_aliases(
    srcs: &Sources,
    entries: &HashMap<String, ObjEntry>,
    names: &[String],
) -> DResult<()> {
    for start in names {
        let mut seen = vec![start.as_str()];
        let mut cur = start.as_str();
        while let Some(ObjEntry::Alias { to }) = entries.get(cur) {
            let (r, _) = split_lockref(to.get_ref()).map_err(|e: StrErr| {
                let span = srcs.sub_span(&to.span(), to.get_ref(), e.range.clone());
                e.at(span)
            })?;
            let target = &to.get_ref()[r.clone()];
            if !entries.contains_key(target) {
                return Err(Diag::new(
                    srcs.sub_span(&to.span(), to.get_ref(), r),
                    format!("unknown object `{target}`"),
                )
                .help(format!("declared objects: {}", list(names))));
            }
            if seen.contains(&target) {
                return Err(Diag::new(
                    to.span(),
                    format!("aliases form a cycle: {} -> {target}", seen.join(" -> ")),
                ));
            }
            seen.push(target);
            cur = target;
        }
    }
    Ok(())
}

fn task_group(
    ctx: &mut Ctx<'_>,
    t: &S<RawTask>,
    nr: usize,
    cgroups: &[CgroupDecl],
    earlier: &[TaskGroupDecl],
    mms: &mut Vec<String>,
) -> DResult<TaskGroupDecl> {
    let srcs = ctx.srcs;
    let r = t.get_ref();
    let name = r.name.get_ref();
    if earlier.iter().any(|g| &g.name == name) {
        return Err(Diag::new(
            r.name.span(),
            format!("a task group named `{name}` is already declared"),
        ));
    }
    let cpus = cpus(srcs, r.cpus.as_ref(), nr)?;
    let count = |v: &S<i64>, what: &str| -> DResult<u64> {
        match u64::try_from(*v.get_ref()) {
            Ok(n) if n <= MAX_TASKS => Ok(n),
            Ok(_) => Err(Diag::new(
                v.span(),
                format!("`{what}` is too large (at most {MAX_TASKS})"),
            )),
            Err(_) => Err(Diag::new(v.span(), format!("`{what}` cannot be negative"))),
        }
    };
    let placement: Vec<CpuId> = match (&r.per_cpu, &r.count) {
        (Some(_), Some(c)) => {
            return Err(Diag::new(c.span(), "`per_cpu` and `count` contradict each other; give exactly one")
                .help("`per_cpu = N` puts N tasks on each CPU of `cpus`; `count = N` spreads N tasks over them"));
        }
        (None, None) => {
            return Err(Diag::new(
                r.name.span(),
                format!("task group `{name}` needs `per_cpu = N` or `count = N`"),
            ));
        }
        (Some(p), None) => {
            let n = count(p, "per_cpu")?;
            if n.saturating_mul(cpus.len() as u64) > MAX_TASKS {
                return Err(Diag::new(
                    p.span(),
                    format!("too many tasks (at most {MAX_TASKS} per group)"),
                ));
            }
            cpus.iter()
                .flat_map(|&c| std::iter::repeat_n(c, n as usize))
                .collect()
        }
        (None, Some(c)) => {
            let n = count(c, "count")?;
            (0..n as usize).map(|i| cpus[i % cpus.len()]).collect()
        }
    };
    let policy = match (r.policy.as_ref().map(|p| p.get_ref().as_str()), &r.priority) {
        (None | Some("normal"), None) => Policy::Normal,
        (None | Some("normal"), Some(p)) => {
            return Err(
                Diag::new(p.span(), "`priority` is only for `policy = \"fifo\"`").help(
                    "SCHED_OTHER tasks have no priority; remove it or set `policy = \"fifo\"`",
                ),
            );
        }
        (Some("fifo"), None) => {
            return Err(Diag::new(
                r.policy.as_ref().map_or(t.span(), |p| p.span()),
                "`policy = \"fifo\"` needs `priority = 1..99`",
            ));
        }
        (Some("fifo"), Some(p)) => match u8::try_from(*p.get_ref()) {
            Ok(v) if (1..=99).contains(&v) => Policy::Fifo(v),
            _ => {
                return Err(Diag::new(
                    p.span(),
                    format!(
                        "FIFO priority must be between 1 and 99, not {}",
                        p.get_ref()
                    ),
                ))
            }
        },
        (Some(other), _) => {
            let at = r.policy.as_ref().map_or(t.span(), |p| p.span());
            return Err(Diag::new(
                at,
                format!("unknown policy `{other}`; expected one of: normal, fifo"),
            ));
        }
    };
    let cgroup = match &r.cgroup {
        None => None,
        Some(c) => Some(
            cgroups
                .iter()
                .position(|g| &g.name == c.get_ref())
                .ok_or_else(|| {
                    Diag::new(c.span(), format!("unknown cgroup `{}`", c.get_ref())).help(format!(
                        "declared cgroups: {}",
                        list(cgroups.iter().map(|g| &g.name))
                    ))
                })?,
        ),
    };
    // Named address spaces are shared; an unnamed one is the group's own.
    let key =
        r.mm.as_ref()
            .map_or_else(|| format!("\0{name}"), |m| m.get_ref().clone());
    let mm = match mms.iter().position(|x| *x == key) {
        Some(i) => i as u32,
        None => {
            mms.push(key);
            (mms.len() - 1) as u32
        }
    };
    let program = ops::compile(ctx, r.vars.as_ref(), &r.code)?;
    Ok(TaskGroupDecl {
        name: name.clone(),
        placement,
        policy,
        cgroup,
        mm,
        program,
    })
}
