//! `[tasks.*]`: task groups, their placement, policy and code.

use std::collections::HashMap;

use smpsim_kernel::{Affinity, CgroupDecl, Policy, TaskGroupDecl};
use smpsim_machine::CpuId;

use super::cpus::cpus;
use crate::error::{list, DResult, Diag};
use crate::ops::{self, Ctx};
use crate::raw::{RawCpus, RawDoc, RawOp, RawTask, S};

/// Upper bound on the tasks of one group.
pub(super) const MAX_TASKS: u64 = 1 << 20;

/// `[functions]` by name, and their names in file order.
type Functions<'d> = HashMap<String, &'d S<Vec<S<RawOp>>>>;

pub(super) fn functions(raw: &RawDoc) -> (Functions<'_>, Vec<String>) {
    let mut functions = HashMap::new();
    let mut order = Vec::new();
    for (name, body) in raw.functions.as_ref().map_or(&[][..], |f| &f.0) {
        functions.insert(name.get_ref().clone(), body);
        order.push(name.get_ref().clone());
    }
    (functions, order)
}

/// `[[tasks]]`: at least one group.
pub(super) fn task_groups(
    ctx: &mut Ctx<'_>,
    tasks: Option<&S<Vec<S<RawTask>>>>,
    nr: usize,
    cgroups: &[CgroupDecl],
    max_tasks: &super::run::Bound,
) -> DResult<Vec<TaskGroupDecl>> {
    let Some(list) = tasks.filter(|t| !t.get_ref().is_empty()) else {
        let at = tasks.map_or(0..0, |t| t.span());
        return Err(Diag::new(at, "the scenario has no tasks")
            .help("add a `[[tasks]]` table with `name`, `count` or `per_cpu`, and `code`"));
    };
    let mut task_groups: Vec<TaskGroupDecl> = Vec::new();
    let mut mms: Vec<String> = Vec::new();
    // Counted before each group's tasks are made, so that the bound holds
    // before the memory is asked for.
    let mut total: u64 = 0;
    for t in list.get_ref() {
        let r = t.get_ref();
        let cpus = cpus(ctx.srcs, r.cpus.as_ref(), nr)?;
        if let Some((n, span)) = group_size(r, cpus.len() as u64) {
            total = total.saturating_add(n);
            if total > max_tasks.value {
                return Err(Diag::new(
                    span,
                    format!(
                        "the scenario has more than `max_tasks` = {} tasks: group `{}` brings them to {total}",
                        max_tasks.value,
                        r.name.get_ref()
                    ),
                )
                .help(format!(
                    "each task holds its state for the whole run (about 400 bytes); if the machine has the memory, raise the bound with `[scenario] {} = N` (default {})",
                    max_tasks.key,
                    super::run::DEFAULT_MAX_TASKS
                )));
            }
        }
        let group = task_group(ctx, t, nr, cgroups, &task_groups, &mut mms)?;
        task_groups.push(group);
    }
    Ok(task_groups)
}

pub(super) fn task_group(
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
    // Named address spaces are shared; an unnamed one is the group's own;
    // with `mm_per_task` each task has one of its own (ids mm..mm+n).
    let mm_per_task = match (&r.mm_per_task, &r.mm) {
        (Some(p), Some(_)) if *p.get_ref() => {
            return Err(Diag::new(
                p.span(),
                "`mm_per_task = true` gives each task an address space of its own; it cannot also share the named `mm`",
            )
            .help("remove `mm` (threads of one process) or `mm_per_task` (processes)"));
        }
        (Some(p), None) => *p.get_ref(),
        _ => false,
    };
    let mm = if mm_per_task {
        let first = mms.len() as u32;
        for i in 0..placement.len() {
            mms.push(format!("\0{name}\0{i}"));
        }
        first
    } else {
        let key =
            r.mm.as_ref()
                .map_or_else(|| format!("\0{name}"), |m| m.get_ref().clone());
        match mms.iter().position(|x| *x == key) {
            Some(i) => i as u32,
            None => {
                mms.push(key);
                (mms.len() - 1) as u32
            }
        }
    };
    let program = ops::compile(ctx, r.vars.as_ref(), &r.code, true)?;
    Ok(TaskGroupDecl {
        name: name.clone(),
        placement,
        affinity,
        policy,
        cgroup,
        mm,
        mm_per_task,
        program,
    })
}

/// How many tasks a group asks for, and where it says so (`None` where
/// `per_cpu`/`count` is missing or contradictory: [`placement`] says so).
fn group_size(r: &RawTask, nr_cpus: u64) -> Option<(u64, std::ops::Range<usize>)> {
    match (&r.per_cpu, &r.count) {
        (Some(p), None) => Some((
            u64::try_from(*p.get_ref()).ok()?.saturating_mul(nr_cpus),
            p.span(),
        )),
        (None, Some(c)) => Some((u64::try_from(*c.get_ref()).ok()?, c.span())),
        _ => None,
    }
}

/// A task group's `per_cpu` or `count`, giving the CPU of each task.
pub(super) fn placement(r: &RawTask, cpus: &[CpuId]) -> DResult<Vec<CpuId>> {
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
pub(super) fn policy(t: &S<RawTask>) -> DResult<Policy> {
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
