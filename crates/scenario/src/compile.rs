//! The merged document checked and lowered to a [`Spec`].

use std::collections::HashMap;

use serde::Deserialize;
use smpsim_engine::Nanos;
use smpsim_kernel::program::MAX_SPAN;
use smpsim_kernel::LazyTlb;
use smpsim_kernel::{Affinity, Bandwidth, CgroupDecl, Knobs, Policy, Spec, TaskGroupDecl};
use smpsim_machine::CpuId;
use toml::de::DeTable;
use toml::Spanned;

use crate::document::{apply_set, apply_variant, parse_set_value};
use crate::duration::{parse_duration, MachineCosts};
use crate::error::{list, DResult, Diag, Sources};
use crate::objects;
use crate::ops::{self, Ctx, LockKind, ObjEntry};
use crate::raw::{
    RawCgroup, RawCpuMax, RawCpus, RawDoc, RawGenerate, RawKernel, RawOp, RawScenario, RawTask, S,
};
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
    crate::include::merge(&mut root, &scn.includes, srcs)?;
    let variants = root.remove("variant");
    if let Some(name) = variant {
        apply_variant(&mut root, variants, name, doc_span.clone())?;
    }
    for (key, value) in sets {
        let base = srcs.add_set(key, value);
        let span = base..base + value.len();
        let key = match variant_scoped(scn, key, &span)? {
            // `variant.NAME.KEY`: `KEY` in that variant only.
            Some((name, rest)) if Some(name) == variant => rest,
            Some(_) => continue,
            None => key.as_str(),
        };
        let v = parse_set_value(value, base);
        apply_set(&mut root, key, v, span)?;
    }
    // Code written as text (`crate::codepath`) becomes the op arrays it
    // stands for, so nothing after this tells the two forms apart. The
    // arrays borrow from `code`, which must outlive the document.
    let code = crate::codepath::parse_document(&root, srcs)?;
    let mut root = root;
    code.expand(&mut root);
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

/// Splits a variant-scoped `--set variant.NAME.KEY` into the variant's
/// name and `KEY`; `None` for an ordinary key. The variant must exist and
/// `KEY` must be given.
fn variant_scoped<'k>(
    scn: &Scenario,
    key: &'k str,
    span: &std::ops::Range<usize>,
) -> DResult<Option<(&'k str, &'k str)>> {
    let Some(rest) = key.strip_prefix("variant") else {
        return Ok(None);
    };
    if !(rest.is_empty() || rest.starts_with('.')) {
        return Ok(None);
    }
    let rest = rest.strip_prefix('.').unwrap_or(rest);
    let (name, field) = rest.split_once('.').unwrap_or((rest, ""));
    let example = format!(
        "write `variant.{}.scenario.duration=...` to change one variant, or `scenario.duration=...` for every variant",
        if name.is_empty() { "NAME" } else { name }
    );
    if !scn.variants.iter().any(|v| v.name == name) {
        let msg = if name.is_empty() {
            "`variant` needs a variant name and a key inside it".to_string()
        } else {
            format!("unknown variant `{name}`")
        };
        let known = if scn.variants.is_empty() {
            "this scenario has no variants".to_string()
        } else {
            format!("variants: {}", list(scn.variant_names()))
        };
        return Err(Diag::new(span.clone(), msg).help(format!("{known}; {example}")));
    }
    if field.is_empty() {
        return Err(Diag::new(
            span.clone(),
            format!("`variant.{name}` is a whole variant; set a key inside it"),
        )
        .help(example));
    }
    if field == "description" {
        return Err(Diag::new(
            span.clone(),
            format!("`variant.{name}.description` is only the variant's label and cannot be set"),
        ));
    }
    Ok(Some((name, field)))
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
        lazy_tlb: lazy_tlb(&k.lazy_tlb, d.lazy_tlb)?,
        rcu_fanout_leaf: rcu_fanout_leaf(&k.rcu_fanout_leaf, d.rcu_fanout_leaf)?,
        rcu_gp_kthread_cpu: match &k.rcu_gp_kthread_cpu {
            None => None,
            Some(v) => Some(u32::try_from(*v.get_ref()).map_err(|_| {
                Diag::new(
                    v.span(),
                    "`rcu_gp_kthread_cpu` must be a CPU number (0 or more)",
                )
            })?),
        },
        watchdog_thresh: positive(&k.watchdog_thresh, d.watchdog_thresh, "watchdog_thresh")?,
        hung_task_timeout: positive(
            &k.hung_task_timeout_secs,
            d.hung_task_timeout,
            "hung_task_timeout_secs",
        )?,
        csd_lock_timeout: positive(&k.csd_lock_timeout, d.csd_lock_timeout, "csd_lock_timeout")?,
        rcu_cpu_stall_timeout: positive(
            &k.rcu_cpu_stall_timeout,
            d.rcu_cpu_stall_timeout,
            "rcu_cpu_stall_timeout",
        )?,
        load_balance: k
            .load_balance
            .as_ref()
            .map_or(d.load_balance, |v| *v.get_ref()),
        lockdep: k.lockdep.as_ref().map_or(d.lockdep, |v| *v.get_ref()),
        tg_load_avg_ratelimit: dur.opt(&k.tg_load_avg_ratelimit, d.tg_load_avg_ratelimit)?,
        sched_migration_cost: dur.opt(&k.sched_migration_cost, d.sched_migration_cost)?,
        migration_footprint_lines: footprint_lines(
            &k.migration_footprint_lines,
            d.migration_footprint_lines,
        )?,
        tlb_broadcast: k
            .tlb_broadcast
            .as_ref()
            .map_or(d.tlb_broadcast, |v| *v.get_ref()),
        cfs_bandwidth_slack: k
            .cfs_bandwidth_slack
            .as_ref()
            .map_or(d.cfs_bandwidth_slack, |v| *v.get_ref()),
        cfs_slice_expiry: k
            .cfs_slice_expiry
            .as_ref()
            .map_or(d.cfs_slice_expiry, |v| *v.get_ref()),
        asym_cpu_capacity: k
            .asym_cpu_capacity
            .as_ref()
            .map_or(d.asym_cpu_capacity, |v| *v.get_ref()),
        // Set by rcu_callback_knobs(), which needs the machine.
        ..d
    })
}

/// `migration_footprint_lines`: at most 1 GiB of 64-byte lines.
fn footprint_lines(v: &Option<S<i64>>, default: u32) -> DResult<u32> {
    match v {
        None => Ok(default),
        Some(n) => match u32::try_from(*n.get_ref()) {
            Ok(x) if x <= 1 << 24 => Ok(x),
            _ => Err(Diag::new(
                n.span(),
                "`migration_footprint_lines` must be between 0 and 16777216 (1 GiB of lines)",
            )),
        },
    }
}

/// The `lazy_tlb` knob: a mode of docs/lazy-tlb.md.
fn lazy_tlb(v: &Option<S<String>>, default: LazyTlb) -> DResult<LazyTlb> {
    let Some(v) = v else { return Ok(default) };
    match v.get_ref().as_str() {
        "refcount" => Ok(LazyTlb::Refcount),
        "shootdown" => Ok(LazyTlb::Shootdown),
        "cpumask-refcount" => Ok(LazyTlb::CpumaskRefcount),
        "cpumask-refcount-naive" => Ok(LazyTlb::CpumaskRefcountNaive),
        other => Err(Diag::new(
            v.span(),
            format!("unknown lazy_tlb mode `{other}`; expected one of: refcount, shootdown, cpumask-refcount, cpumask-refcount-naive"),
        )),
    }
}

/// The RCU callback knobs (`rcutree.blimit`, `qhimark`, `qlowmark`,
/// `rcu_nocbs=`, lazy RCU, `rcu_normal_wake_from_gp`).
fn rcu_callback_knobs(
    knobs: &mut Knobs,
    k: &RawKernel,
    dur: &Durations<'_>,
    srcs: &Sources,
    nr: usize,
) -> DResult<()> {
    let count = |v: &Option<S<i64>>, default: u64, what: &str| -> DResult<u64> {
        match v {
            None => Ok(default),
            Some(n) if (1..=1 << 40).contains(n.get_ref()) => Ok(*n.get_ref() as u64),
            Some(n) => Err(Diag::new(
                n.span(),
                format!("`{what}` must be a number of callbacks, 1 or more"),
            )),
        }
    };
    knobs.rcu_blimit = count(&k.rcu_blimit, knobs.rcu_blimit, "rcu_blimit")?;
    knobs.rcu_qhimark = count(&k.rcu_qhimark, knobs.rcu_qhimark, "rcu_qhimark")?;
    knobs.rcu_qlowmark = count(&k.rcu_qlowmark, knobs.rcu_qlowmark, "rcu_qlowmark")?;
    if let Some(v) = &k.rcu_nocbs {
        knobs.rcu_nocbs = cpus(srcs, Some(v), nr)?.into_iter().collect();
    }
    if let Some(v) = &k.rcu_lazy {
        knobs.rcu_lazy = *v.get_ref();
    }
    if let Some(v) = &k.rcu_lazy_flush {
        knobs.rcu_lazy_flush = dur.opt(&k.rcu_lazy_flush, knobs.rcu_lazy_flush)?;
        if knobs.rcu_lazy_flush == 0 {
            return Err(Diag::new(
                v.span(),
                "`rcu_lazy_flush` must be greater than zero",
            ));
        }
    }
    if let Some(v) = &k.rcu_normal_wake_from_gp {
        knobs.rcu_normal_wake_from_gp = *v.get_ref();
    }
    Ok(())
}

/// `CONFIG_RCU_FANOUT_LEAF`: 2 to 64.
fn rcu_fanout_leaf(v: &Option<S<i64>>, default: u32) -> DResult<u32> {
    let Some(v) = v else { return Ok(default) };
    match u32::try_from(*v.get_ref()) {
        Ok(n) if (2..=64).contains(&n) => Ok(n),
        _ => Err(Diag::new(
            v.span(),
            "`rcu_fanout_leaf` must be between 2 and 64 (CONFIG_RCU_FANOUT_LEAF)",
        )),
    }
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
        RawCpus::Text(t) => cpu_list(srcs, v.span(), t, &mut out)?,
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

/// A CPU list string such as `"0,2,4-7"`, written at `span`: its CPUs,
/// each with the span of the piece naming it, appended to `out`.
fn cpu_list(
    srcs: &Sources,
    span: std::ops::Range<usize>,
    t: &str,
    out: &mut Vec<(i64, std::ops::Range<usize>)>,
) -> DResult<()> {
    let err = |r: std::ops::Range<usize>, m: String| Diag::new(srcs.sub_span(&span, t, r), m);
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
            out.push((c, srcs.sub_span(&span, t, range.clone())));
        }
    }
    Ok(())
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
    let run = run(raw.scenario.get_ref(), &dur)?;
    let mut knobs = knobs(&dur, raw.kernel.as_ref())?;
    let nr = machine.nr_cpus();
    if let Some(k) = raw.kernel.as_ref() {
        rcu_callback_knobs(&mut knobs, k.get_ref(), &dur, srcs, nr)?;
    }
    if let (Some(cpu), Some(v)) = (
        knobs.rcu_gp_kthread_cpu,
        raw.kernel
            .as_ref()
            .and_then(|k| k.get_ref().rcu_gp_kthread_cpu.as_ref()),
    ) {
        if cpu as usize >= nr {
            return Err(Diag::new(
                v.span(),
                format!(
                    "`rcu_gp_kthread_cpu = {cpu}`: the machine has CPUs 0 to {}",
                    nr - 1
                ),
            ));
        }
    }
    if let Some(v) = raw
        .kernel
        .as_ref()
        .and_then(|k| k.get_ref().tlb_broadcast.as_ref())
    {
        let has = machine.tlb.as_ref().is_some_and(|t| t.broadcast);
        if *v.get_ref() && !has {
            return Err(Diag::new(
                v.span(),
                format!(
                    "`tlb_broadcast = true`, but machine `{}` has no broadcast TLB invalidation",
                    machine.name
                ),
            )
            .help("give the machine `[machine.tlb] broadcast = true` with its `invlpgb` and `tlbsync` costs and `count_max`, or use a machine that has it"));
        }
    }
    check_window_tables(&raw, run.duration - run.warmup, knobs.latency_window, nr)?;
    let mut objects = objects::declare(srcs, raw.objects.as_ref())?;
    let layout = std::mem::take(&mut objects.layout);
    let cgroups = cgroups(&dur, raw.cgroup.as_deref().unwrap_or_default())?;
    let cfs_burst = bursts(&dur, raw.cgroup.as_deref().unwrap_or_default(), &cgroups)?;
    let (functions, function_order) = functions(&raw);
    ops::check_function_cycles(&functions, &function_order)?;
    let mut ctx = Ctx {
        srcs,
        objects: objects.entries,
        object_names: objects.names,
        functions,
        counters: Vec::new(),
        histograms: Vec::new(),
        handlers: Vec::new(),
        in_handler: None,
        costs,
        nr_cpus: nr as u32,
    };
    let task_groups = task_groups(&mut ctx, raw.tasks.as_ref(), nr, &cgroups)?;
    let hooks = hooks(&mut ctx, raw.hooks.as_ref())?;
    Ok(Spec {
        machine,
        knobs,
        objects: objects.decls,
        cgroups,
        cfs_burst,
        task_groups,
        counters: ctx.counters,
        histograms: ctx.histograms,
        duration: run.duration,
        warmup: run.warmup,
        seed: run.seed,
        max_events: run.max_events,
        replicas: run.replicas,
        perturb: None,
        handlers: ctx.handlers.into_iter().map(|(_, p)| p).collect(),
        hooks,
        layout,
    })
}

/// Ops that may sleep: in a hook (atomic context) each is the kernel's
/// "BUG: scheduling while atomic".
const SLEEPING_OPS: &[&str] = &[
    "sleep",
    "mutex_lock",
    "mutex_guard",
    "down",
    "down_read",
    "down_write",
    "rwsem_read_guard",
    "rwsem_write_guard",
    "synchronize_rcu",
    "synchronize_rcu_expedited",
    "cpus_read_lock",
    "cpus_write_lock",
    "percpu_down_read",
    "percpu_down_write",
    "stop_machine_cpuslocked",
    "set_cpu_offline",
    "set_cpu_online",
    "exit",
];

/// `[hooks]`: each event's code, compiled and checked for what a hook
/// may run (no sleep, no loops, no task state).
fn hooks(
    ctx: &mut Ctx<'_>,
    raw: Option<&S<crate::raw::RawHooks>>,
) -> DResult<[Option<smpsim_kernel::Program>; smpsim_kernel::hooks::HOOK_EVENTS]> {
    use smpsim_kernel::hooks::{allowed_in_hook, hook_event, HOOK_NAMES};
    let mut out: [Option<smpsim_kernel::Program>; smpsim_kernel::hooks::HOOK_EVENTS] =
        Default::default();
    let Some(raw) = raw else {
        return Ok(out);
    };
    for (name, body) in &raw.get_ref().0 {
        let Some(ev) = hook_event(name.get_ref()) else {
            return Err(Diag::new(
                name.span(),
                format!("unknown hook event `{}`", name.get_ref()),
            )
            .help(format!("known events: {}", list(HOOK_NAMES))));
        };
        for op in body.get_ref() {
            let n = op.get_ref().op.get_ref().as_str();
            if SLEEPING_OPS.contains(&n) {
                return Err(Diag::new(
                    op.get_ref().op.span(),
                    format!("`{n}` may sleep, but hook `{}` runs in atomic context: the kernel's \"BUG: scheduling while atomic\"", name.get_ref()),
                )
                .help("a hook may only `work`, `count` and use atomics (`atomic_inc`, `atomic_dec`, `atomic_read`)"));
            }
        }
        let program = ops::compile(ctx, None, body)?;
        if let Some(op) = program.ops.iter().find(|op| !allowed_in_hook(op)) {
            return Err(Diag::new(
                body.span(),
                format!("hook `{}` runs a `{}` op (through a function it calls): a hook runs in atomic context with no task of its own, where smpsim runs only `work`, `count`, atomics (`atomic_inc`, `atomic_dec`, `atomic_read`) and, in some hooks, spinlocks, indexed by constants or `this_cpu()`", name.get_ref(), format!("{op:?}").split([' ', '(', '{']).next().unwrap_or("?")),
            ));
        }
        hook_locks(ctx, name, body, ev, &program)?;
        out[ev] = Some(program);
    }
    Ok(out)
}

/// The spinlocks of hook `name` (event `ev`): only at events where the
/// kernel's work can wait for them, only spinning locks, and each one
/// taken released again within the hook, in its mode.
fn hook_locks(
    ctx: &Ctx<'_>,
    name: &S<String>,
    body: &S<Vec<S<crate::raw::RawOp>>>,
    ev: usize,
    program: &smpsim_kernel::Program,
) -> DResult<()> {
    use smpsim_kernel::hooks::{locks_allowed, HOOK_NAMES};
    use smpsim_kernel::program::{LockMode, Op};
    let hook = name.get_ref();
    let object = |id: u32| -> (&str, Option<LockKind>) {
        let entry = ctx.objects.iter().find_map(|(n, e)| match e {
            ObjEntry::Lock { id: i, kind, .. } if *i == id => Some((n.as_str(), *kind)),
            _ => None,
        });
        entry.map_or(("?", None), |(n, k)| (n, Some(k)))
    };
    let op_name = |mode: LockMode, lock: bool| {
        let verb = if lock { "lock" } else { "unlock" };
        format!("{}_{verb}", mode.op_prefix())
    };
    let mut held: Vec<&smpsim_kernel::program::ObjRef> = Vec::new();
    for op in &program.ops {
        let (lock, mode, take) = match op {
            Op::Lock { lock, mode, .. } => (lock, *mode, true),
            Op::Unlock { lock, mode, .. } => (lock, *mode, false),
            _ => continue,
        };
        let (obj, kind) = object(lock.object);
        let what = op_name(mode, take);
        if !matches!(kind, Some(LockKind::Spinlock | LockKind::Rwlock)) {
            return Err(Diag::new(
                body.span(),
                format!("hook `{hook}` takes `{obj}`, a sleeping lock (through a function it calls): a hook runs in atomic context, where a sleeping lock is the kernel's \"BUG: scheduling while atomic\""),
            ));
        }
        if !locks_allowed(ev) {
            let allowed: Vec<&str> = (0..HOOK_NAMES.len())
                .filter(|e| locks_allowed(*e))
                .map(|e| HOOK_NAMES[e])
                .collect();
            return Err(Diag::new(
                body.span(),
                format!("`{what}({obj})` is not allowed in a `{hook}` hook yet: smpsim cannot hold up what the kernel does there (a task's next op, an idle CPU) while the hook waits for the lock"),
            )
            .help(format!("spinlocks may be taken in {} hooks", list(allowed))));
        }
        if take {
            held.push(lock);
            continue;
        }
        let Some(i) = held.iter().position(|h| *h == lock) else {
            return Err(Diag::new(
                body.span(),
                format!("hook `{hook}` does `{what}({obj})` without taking it first: a hook releases only the locks it took"),
            ));
        };
        held.remove(i);
    }
    if let Some(lock) = held.first() {
        let (obj, _) = object(lock.object);
        return Err(Diag::new(
            body.span(),
            format!("hook `{hook}` takes `{obj}` and does not release it: a hook has no task to hold a lock after it, so it must release every lock it takes"),
        ));
    }
    Ok(())
}

/// `[scenario]`: what is simulated for how long.
struct Run {
    duration: Nanos,
    warmup: Nanos,
    seed: u64,
    max_events: Option<u64>,
    replicas: u32,
}

fn run(sc: &RawScenario, dur: &Durations<'_>) -> DResult<Run> {
    let duration = dur.get(&sc.duration)?;
    if duration == 0 {
        return Err(Diag::new(
            sc.duration.span(),
            "`duration` must be greater than zero",
        ));
    }
    if duration > MAX_SPAN {
        return Err(Diag::new(
            sc.duration.span(),
            format!("`duration` is longer than a run can be ({MAX_SPAN}ns, about 36 years)"),
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
    if warmup >= duration {
        let warmup_text = sc.warmup.as_ref().map_or("0s", |w| w.get_ref().as_str());
        let message = format!(
            "`warmup` ({warmup_text}) must be shorter than `duration` ({})",
            sc.duration.get_ref()
        );
        let warmup_set = sc
            .warmup
            .as_ref()
            .is_some_and(|w| dur.srcs.set_key(&w.span()).is_some());
        if let Some(key) = dur
            .srcs
            .set_key(&sc.duration.span())
            .filter(|_| !warmup_set)
        {
            // A shorter run asked for on the command line: say what else to set.
            let warmup_key = match key.strip_suffix("duration") {
                Some(prefix) => format!("{prefix}warmup"),
                None => "scenario.warmup".to_string(),
            };
            return Err(Diag::new(sc.duration.span(), message).help(format!(
                "the scenario's warm-up is {warmup_text}; shorten it too, e.g. `--set {warmup_key}=0s`"
            )));
        }
        let at = sc.warmup.as_ref().map_or(sc.duration.span(), |w| w.span());
        return Err(Diag::new(at, message));
    }
    let seed = match &sc.seed {
        None => 1,
        Some(s) => u64::try_from(*s.get_ref())
            .map_err(|_| Diag::new(s.span(), "`seed` cannot be negative"))?,
    };
    Ok(Run {
        duration,
        warmup,
        seed,
        max_events,
        replicas,
    })
}

/// `[[cgroup]]`, in order: a parent comes before its children.
fn cgroups(dur: &Durations<'_>, raw: &[S<RawCgroup>]) -> DResult<Vec<CgroupDecl>> {
    let mut cgroups: Vec<CgroupDecl> = Vec::new();
    for cg in raw {
        let c = cgroup(dur, cg.get_ref(), &cgroups)?;
        cgroups.push(c);
    }
    Ok(cgroups)
}

/// Each cgroup's `cpu_max.burst` (`cpu.max.burst`), by index; empty if
/// none has one. `tg_set_cfs_bandwidth()` refuses a burst above the quota.
fn bursts(
    dur: &Durations<'_>,
    raw: &[S<RawCgroup>],
    cgroups: &[CgroupDecl],
) -> DResult<Vec<Nanos>> {
    let mut out = vec![0; raw.len()];
    for (i, cg) in raw.iter().enumerate() {
        let Some(m) = &cg.get_ref().cpu_max else {
            continue;
        };
        let Some(b) = &m.get_ref().burst else {
            continue;
        };
        let burst = dur.get(b)?;
        let quota = cgroups[i].bandwidth.map_or(0, |bw| bw.quota);
        if burst > quota {
            return Err(Diag::new(
                b.span(),
                "`burst` cannot be more than `quota` (the kernel's cpu.max.burst refuses it with -EINVAL)",
            ));
        }
        out[i] = burst;
    }
    if out.iter().all(|&b| b == 0) {
        out.clear();
    }
    Ok(out)
}

fn cgroup(dur: &Durations<'_>, c: &RawCgroup, earlier: &[CgroupDecl]) -> DResult<CgroupDecl> {
    let name = c.name.get_ref();
    if earlier.iter().any(|g| &g.name == name) {
        return Err(Diag::new(
            c.name.span(),
            format!("a cgroup named `{name}` is already declared"),
        ));
    }
    let parent = match &c.parent {
        None => None,
        Some(p) => Some(
            earlier
                .iter()
                .position(|g| &g.name == p.get_ref())
                .ok_or_else(|| {
                    Diag::new(p.span(), format!("unknown parent cgroup `{}`", p.get_ref())).help(
                        format!(
                            "a parent must be declared before its children; declared so far: {}",
                            list(earlier.iter().map(|g| &g.name))
                        ),
                    )
                })?,
        ),
    };
    let bandwidth = match &c.cpu_max {
        None => None,
        Some(m) => Some(bandwidth(dur, m.get_ref())?),
    };
    let generated_descendants = match &c.generate {
        None => 0,
        Some(g) => generated_descendants(g.get_ref())?,
    };
    Ok(CgroupDecl {
        name: name.clone(),
        parent,
        bandwidth,
        generated_descendants,
    })
}

/// A cgroup's `cpu_max`.
fn bandwidth(dur: &Durations<'_>, m: &RawCpuMax) -> DResult<Bandwidth> {
    let quota = dur.get(&m.quota)?;
    let period = dur.get(&m.period)?;
    if quota == 0 {
        return Err(Diag::new(
            m.quota.span(),
            "`quota` must be greater than zero",
        ));
    }
    if period == 0 {
        return Err(Diag::new(
            m.period.span(),
            "`period` must be greater than zero",
        ));
    }
    Ok(Bandwidth { quota, period })
}

/// How many descendants a cgroup's `generate` makes.
fn generated_descendants(g: &RawGenerate) -> DResult<u64> {
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
        .ok_or_else(|| Diag::new(g.children.span(), "too many generated cgroups"))
}

/// `[functions]` by name, and their names in file order.
type Functions<'d> = HashMap<String, &'d S<Vec<S<RawOp>>>>;

fn functions(raw: &RawDoc) -> (Functions<'_>, Vec<String>) {
    let mut functions = HashMap::new();
    let mut order = Vec::new();
    for (name, body) in raw.functions.as_ref().map_or(&[][..], |f| &f.0) {
        functions.insert(name.get_ref().clone(), body);
        order.push(name.get_ref().clone());
    }
    (functions, order)
}

/// `[[tasks]]`: at least one group.
fn task_groups(
    ctx: &mut Ctx<'_>,
    tasks: Option<&S<Vec<S<RawTask>>>>,
    nr: usize,
    cgroups: &[CgroupDecl],
) -> DResult<Vec<TaskGroupDecl>> {
    let Some(list) = tasks.filter(|t| !t.get_ref().is_empty()) else {
        let at = tasks.map_or(0..0, |t| t.span());
        return Err(Diag::new(at, "the scenario has no tasks")
            .help("add a `[[tasks]]` table with `name`, `count` or `per_cpu`, and `code`"));
    };
    let mut task_groups: Vec<TaskGroupDecl> = Vec::new();
    let mut mms: Vec<String> = Vec::new();
    for t in list.get_ref() {
        let group = task_group(ctx, t, nr, cgroups, &task_groups, &mut mms)?;
        task_groups.push(group);
    }
    Ok(task_groups)
}

fn task_group(
    ctx: &mut Ctx<'_>,
    t: &S<RawTask>,
    nr: usize,
    cgroups: &[CgroupDecl],
    earlier: &[TaskGroupDecl],
    mms: &mut Vec<String>,
) -> DResult<TaskGroupDecl> {
    let r = t.get_ref();
    let name = r.name.get_ref();
    if earlier.iter().any(|g| &g.name == name) {
        return Err(Diag::new(
            r.name.span(),
            format!("a task group named `{name}` is already declared"),
        ));
    }
    let cpus = cpus(ctx.srcs, r.cpus.as_ref(), nr)?;
    let placement = placement(r, &cpus)?;
    // Per-CPU workers are bound to their CPU, as per-CPU kthreads and
    // pinned benchmark threads are; a `count` of tasks may use all of
    // `cpus`, as threads of a process do.
    let affinity = match &r.affinity {
        None if r.per_cpu.is_some() => Affinity::Pinned,
        None => Affinity::Cpus(cpus),
        Some(a) if matches!(a.get_ref(), RawCpus::Text(t) if t.trim() == "pinned") => {
            Affinity::Pinned
        }
        Some(a) => {
            let allowed = self::cpus(ctx.srcs, Some(a), nr)?;
            if let Some(c) = placement.iter().find(|c| !allowed.contains(c)) {
                return Err(Diag::new(
                    a.span(),
                    format!("the tasks start on CPU {c}, which `affinity` does not allow"),
                )
                .help("`affinity` must include every CPU of `cpus`; `\"pinned\"` keeps each task on the CPU it starts on"));
            }
            Affinity::Cpus(allowed)
        }
    };
    let policy = policy(t)?;
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
        affinity,
        policy,
        cgroup,
        mm,
        program,
    })
}

/// A task group's `per_cpu` or `count`, giving the CPU of each task.
fn placement(r: &RawTask, cpus: &[CpuId]) -> DResult<Vec<CpuId>> {
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
    match (&r.per_cpu, &r.count) {
        (Some(_), Some(c)) => {
            Err(Diag::new(c.span(), "`per_cpu` and `count` contradict each other; give exactly one")
                .help("`per_cpu = N` puts N tasks on each CPU of `cpus`; `count = N` spreads N tasks over them"))
        }
        (None, None) => Err(Diag::new(
            r.name.span(),
            format!(
                "task group `{}` needs `per_cpu = N` or `count = N`",
                r.name.get_ref()
            ),
        )),
        (Some(p), None) => {
            let n = count(p, "per_cpu")?;
            if n.saturating_mul(cpus.len() as u64) > MAX_TASKS {
                return Err(Diag::new(
                    p.span(),
                    format!("too many tasks (at most {MAX_TASKS} per group)"),
                ));
            }
            Ok(cpus
                .iter()
                .flat_map(|&c| std::iter::repeat_n(c, n as usize))
                .collect())
        }
        (None, Some(c)) => {
            let n = count(c, "count")?;
            Ok((0..n as usize).map(|i| cpus[i % cpus.len()]).collect())
        }
    }
}

/// A task group's `policy` and `priority`.
fn policy(t: &S<RawTask>) -> DResult<Policy> {
    let r = t.get_ref();
    match (r.policy.as_ref().map(|p| p.get_ref().as_str()), &r.priority) {
        (None | Some("normal"), None) => Ok(Policy::Normal),
        (None | Some("normal"), Some(p)) => Err(Diag::new(
            p.span(),
            "`priority` is only for `policy = \"fifo\"`",
        )
        .help("SCHED_OTHER tasks have no priority; remove it or set `policy = \"fifo\"`")),
        (Some("fifo"), None) => Err(Diag::new(
            r.policy.as_ref().map_or(t.span(), |p| p.span()),
            "`policy = \"fifo\"` needs `priority = 1..99`",
        )),
        (Some("fifo"), Some(p)) => match u8::try_from(*p.get_ref()) {
            Ok(v) if (1..=99).contains(&v) => Ok(Policy::Fifo(v)),
            _ => Err(Diag::new(
                p.span(),
                format!(
                    "FIFO priority must be between 1 and 99, not {}",
                    p.get_ref()
                ),
            )),
        },
        (Some(other), _) => {
            let at = r.policy.as_ref().map_or(t.span(), |p| p.span());
            Err(Diag::new(
                at,
                format!("unknown policy `{other}`; expected one of: normal, fifo"),
            ))
        }
    }
}
