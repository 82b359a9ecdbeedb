//! `[hooks]`: code the kernel runs on its own at an event, compiled and
//! checked for what atomic context allows.

use crate::error::{list, DResult, Diag};
use crate::object_type::ObjectType;
use crate::ops::{self, Ctx, ObjEntry};
use crate::raw::S;

/// Ops that may sleep: in a hook (atomic context) each is the kernel's
/// "BUG: scheduling while atomic".
pub(super) const SLEEPING_OPS: &[&str] = &[
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
/// may run (no sleep, no loops, no task state) and may see of its event
/// ([`crate::expr::HookView`]).
pub(super) fn hooks(
    ctx: &mut Ctx<'_>,
    raw: Option<&S<crate::raw::RawHooks>>,
    ttwu_queue: smpsim_kernel::TtwuQueue,
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
        if ev == smpsim_kernel::hooks::HookEvent::SchedTtwuPending as usize
            && ttwu_queue == smpsim_kernel::TtwuQueue::RqLock
        {
            return Err(Diag::new(
                name.span(),
                "hook `sched_ttwu_pending` would never run: no wakeup is queued on a wake list unless `[kernel] ttwu_queue` says so",
            )
            .help("set `ttwu_queue = \"wakelist\"` (every remote wakeup) or `\"cross_llc\"` (across LLCs, as ttwu_queue_cond()) in `[kernel]`"));
        }
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
        ctx.hook_view = Some(crate::expr::HookView::of(HOOK_NAMES[ev]));
        let program = ops::compile(ctx, None, body, false);
        ctx.hook_view = None;
        let program = program?;
        let bad = program
            .ops
            .iter()
            .enumerate()
            .find(|(pc, op)| !allowed_in_hook(*pc, op));
        if let Some((_, op)) = bad {
            return Err(Diag::new(
                body.span(),
                format!("hook `{}` runs a `{}` op (through a function it calls): a hook runs in atomic context with no task of its own, where smpsim runs only `work`, `count`, `if` (no loop), atomics (`atomic_inc`, `atomic_dec`, `atomic_read`) and, in some hooks, spinlocks, indexed by constants, `this_cpu()`, `task_cpu()`", name.get_ref(), format!("{op:?}").split([' ', '(', '{']).next().unwrap_or("?")),
            ));
        }
        hook_wakes(name, body, ev, &program)?;
        hook_locks(ctx, name, body, ev, &program)?;
        out[ev] = Some(program);
    }
    Ok(out)
}

/// A hook wakes a task (`up()`) only where the kernel can call
/// `try_to_wake_up()`: the tick's hardirq. The op is located in the hook's
/// code when the hook writes it there.
fn hook_wakes(
    name: &S<String>,
    body: &S<Vec<S<crate::raw::RawOp>>>,
    ev: usize,
    program: &smpsim_kernel::Program,
) -> DResult<()> {
    use smpsim_kernel::hooks::{wakes_allowed, HOOK_NAMES};
    use smpsim_kernel::program::{LockingOp, Op};
    let wakes = |op: &Op| matches!(op, Op::Locking(LockingOp::Up(_)));
    if wakes_allowed(ev) || !program.ops.iter().any(wakes) {
        return Ok(());
    }
    let span = body
        .get_ref()
        .iter()
        .find(|op| op.get_ref().op.get_ref() == "up")
        .map_or(body.span(), |op| op.get_ref().op.span());
    let allowed: Vec<&str> = (0..HOOK_NAMES.len())
        .filter(|e| wakes_allowed(*e))
        .map(|e| HOOK_NAMES[e])
        .collect();
    Err(Diag::new(
        span,
        format!("hook `{}` wakes a task (`up()`), but it runs with a runqueue's lock or `p->pi_lock` held (or in the idle entry), where the kernel cannot call `try_to_wake_up()`", name.get_ref()),
    )
    .help(format!("a hook may wake in {}, a hardirq, as an hrtimer wakes", list(allowed))))
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
    use smpsim_kernel::program::{LockMode, LockingOp, Op};
    let hook = name.get_ref();
    let object = |id: u32| -> (&str, Option<ObjectType>) {
        let entry = ctx.objects.iter().find_map(|(n, e)| match e {
            // An array's element is the object `first + i`.
            ObjEntry::Lock {
                id: i, array, kind, ..
            } if (*i..*i + array.unwrap_or(1)).contains(&id) => Some((n.as_str(), *kind)),
            _ => None,
        });
        entry.map_or(("?", None), |(n, k)| (n, Some(k)))
    };
    let op_name = |mode: LockMode, lock: bool| {
        let verb = if lock { "lock" } else { "unlock" };
        format!("{}_{verb}", mode.op_prefix())
    };
    let mut held: Vec<&smpsim_kernel::program::ObjRef> = Vec::new();
    // What is held before each op, for the `if`s.
    let mut held_at = Vec::with_capacity(program.ops.len() + 1);
    for op in &program.ops {
        held_at.push(held.clone());
        let (lock, mode, take) = match op {
            Op::Locking(LockingOp::Lock { lock, mode, .. }) => (lock, *mode, true),
            Op::Locking(LockingOp::Unlock { lock, mode, .. }) => (lock, *mode, false),
            _ => continue,
        };
        let (obj, kind) = object(lock.object);
        let what = op_name(mode, take);
        if !matches!(kind, Some(ObjectType::Spinlock | ObjectType::Rwlock)) {
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
                format!("`{what}({obj})` is not allowed in a `{hook}` hook yet: smpsim cannot hold up what the kernel does there (an idle CPU's entry, a task group's load update) while the hook waits for the lock"),
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
    held_at.push(held.clone());
    // An `if` skips ops: what they take they release, or a lock would be
    // held (or released) on one side only.
    for (pc, op) in program.ops.iter().enumerate() {
        if let Op::Jump(to) | Op::JumpUnless(_, to) = op {
            if held_at[pc + 1] != held_at[*to as usize] {
                return Err(Diag::new(
                    body.span(),
                    format!("hook `{hook}` takes or releases a lock on one side of an `if` only: a lock taken inside an `if`'s branch is released in that branch (`spin_guard(l) {{ ... }}` inside it)"),
                ));
            }
        }
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
