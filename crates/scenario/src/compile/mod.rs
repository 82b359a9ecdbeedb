//! The merged document checked and lowered to a [`Spec`].
//!
//! [`compile`] parses the text, merges includes, the variant and `--set`
//! overrides, expands code written as text, builds the machine and
//! deserializes the rest; `lower` then checks each section in its own
//! file and assembles the `Spec`: `run` (`[scenario]`), `knobs`
//! (`[kernel]`), `cgroups`, `tasks` (task groups and their code), `hooks`,
//! with `cpus` (CPU lists) and `durations` shared among them.

mod cgroups;
mod cpus;
mod durations;
mod hooks;
mod knobs;
mod run;
mod tasks;

use serde::Deserialize;
use smpsim_kernel::Spec;
use toml::de::DeTable;
use toml::Spanned;

use crate::document::{apply_set, apply_variant, parse_set_value};
use crate::duration::MachineCosts;
use crate::error::{list, DResult, Diag, Sources};
use crate::objects;
use crate::ops::{self, Ctx};
use crate::raw::RawDoc;
use crate::Scenario;
use cgroups::{bursts, cgroups};
use durations::Durations;
use hooks::hooks;
use knobs::{check_window_tables, kfree_rcu_knobs, knobs, rcu_callback_knobs};
use run::run;
use tasks::{functions, task_groups};

/// Parses the document, merges the variant and the `--set` overrides, and
/// hands back the pieces: the `[machine]` value and the rest, deserialized.
pub(crate) fn compile<'t>(
    scn: &'t Scenario,
    variant: Option<&str>,
    sets: &'t [(String, String)],
    srcs: &mut Sources,
) -> DResult<Spec> {
    let (root, doc_span) = merged(scn, variant, sets, srcs)?;
    // Code written as text (`crate::codepath`) becomes the op arrays it
    // stands for, so nothing after this tells the two forms apart. The
    // arrays borrow from `code`, which must outlive the document.
    let code = crate::codepath::parse_document(&root, srcs)?;
    let mut root = root;
    code.expand(&mut root);
    let machine_section = root.remove("machine");
    let dir = scn.path.parent().unwrap_or(std::path::Path::new("."));
    let machine = crate::machine::build(machine_section, doc_span.clone(), dir, &scn.access, srcs)?;
    let raw = RawDoc::deserialize(toml::de::Deserializer::from(Spanned::new(
        doc_span.clone(),
        root,
    )))
    .map_err(|e| Diag::from_toml(&e, 0, doc_span.start..doc_span.start))?;
    lower(raw, machine, srcs)
}

/// The task groups that say where their tasks run (`cpus`) in the merged
/// document of `variant` with `sets`: each group's name and its `cpus` as
/// written.
pub(crate) fn explicit_cpus(
    scn: &Scenario,
    variant: Option<&str>,
    sets: &[(String, String)],
    srcs: &mut Sources,
) -> DResult<Vec<(String, String)>> {
    let (root, _) = merged(scn, variant, sets, srcs)?;
    let Some(tasks) = root.get("tasks").and_then(|t| t.get_ref().as_array()) else {
        return Ok(Vec::new());
    };
    Ok(tasks
        .iter()
        .filter_map(|t| {
            let t = t.get_ref().as_table()?;
            let name = t.get("name")?.get_ref().as_str()?.to_string();
            let cpus = t.get("cpus")?.get_ref();
            let text = match cpus {
                toml::de::DeValue::String(s) => format!("\"{s}\""),
                toml::de::DeValue::Array(a) => {
                    let items: Vec<String> = a
                        .iter()
                        .map(|v| match v.get_ref() {
                            toml::de::DeValue::Integer(i) => i.as_str().to_string(),
                            other => format!("{other:?}"),
                        })
                        .collect();
                    format!("[{}]", items.join(", "))
                }
                other => format!("{other:?}"),
            };
            Some((name, text))
        })
        .collect())
}

/// The document with its includes, the variant and the `--set` overrides
/// merged in, assumed values unwrapped to their plain values
/// ([`crate::assumed`]), and the span of the whole file.
fn merged<'t>(
    scn: &'t Scenario,
    variant: Option<&str>,
    sets: &'t [(String, String)],
    srcs: &mut Sources,
) -> DResult<(DeTable<'t>, std::ops::Range<usize>)> {
    let (mut root, span) = merged_as_written(scn, variant, sets, srcs)?;
    crate::assumed::unwrap(&mut root, &mut Vec::new())?;
    Ok((root, span))
}

/// The values written with a range (or an assumed value's default range)
/// in the merged document of `variant` with `sets`, in key order.
pub(crate) fn assumed_values(
    scn: &Scenario,
    variant: Option<&str>,
    sets: &[(String, String)],
    srcs: &mut Sources,
) -> DResult<Vec<crate::assumed::AssumedValue>> {
    let (mut root, _) = merged_as_written(scn, variant, sets, srcs)?;
    let mut out = Vec::new();
    crate::assumed::unwrap(&mut root, &mut out)?;
    Ok(out)
}

/// [`merged`], the assumed values still in their tables.
fn merged_as_written<'t>(
    scn: &'t Scenario,
    variant: Option<&str>,
    sets: &'t [(String, String)],
    srcs: &mut Sources,
) -> DResult<(DeTable<'t>, std::ops::Range<usize>)> {
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
    Ok((root, doc_span))
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

/// Object instances (one, or one per CPU) within `[scenario] max_objects`;
/// the error is at the object that crosses it.
fn check_object_total(
    decls: &[smpsim_kernel::ObjectDecl],
    table: Option<&crate::raw::S<crate::raw::Entries<crate::raw::S<crate::raw::RawObject>>>>,
    nr: usize,
    max: &run::Bound,
) -> DResult<()> {
    let mut total: u64 = 0;
    for d in decls {
        total = total.saturating_add(if d.per_cpu { nr as u64 } else { 1 });
        if total > max.value {
            let span = table
                .and_then(|t| {
                    // An array's element `name[i]` is written as `name`.
                    let written = d.name.split('[').next().unwrap_or(&d.name);
                    t.get_ref().0.iter().find(|(n, _)| n.get_ref() == written)
                })
                .map_or(0..0, |(n, _)| n.span());
            return Err(Diag::new(
                span,
                format!(
                    "the scenario has more than `max_objects` = {} object instances (a `per_cpu` object is one per CPU, {nr} here): `{}` brings them to {total}",
                    max.value, d.name
                ),
            )
            .help(format!(
                "if the machine has the memory, raise the bound with `[scenario] {} = N` (default {})",
                max.key,
                run::DEFAULT_MAX_OBJECTS
            )));
        }
    }
    Ok(())
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
        kfree_rcu_knobs(&mut knobs, k.get_ref(), &dur)?;
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
    let mut objects = objects::declare(srcs, &costs, raw.objects.as_ref(), run.max_objects.value)?;
    check_object_total(&objects.decls, raw.objects.as_ref(), nr, &run.max_objects)?;
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
        hook_view: None,
        costs,
        nr_cpus: nr as u32,
    };
    let task_groups = task_groups(&mut ctx, raw.tasks.as_ref(), nr, &cgroups, &run.max_tasks)?;
    let hooks = hooks(&mut ctx, raw.hooks.as_ref(), knobs.ttwu_queue)?;
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
