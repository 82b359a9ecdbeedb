//! `[hooks]`: code the kernel runs on its own at an event, compiled and
//! checked for what atomic context allows.

use crate::error::{list, DResult, Diag};
use crate::ops::{self, Ctx};
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
/// may run (no sleep, no loops, no task state).
pub(super) fn hooks(
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
                format!("hook `{}` runs a `{}` op (through a function it calls): a hook runs in atomic context with no task of its own, where smpsim runs only `work`, `count` and atomics (`atomic_inc`, `atomic_dec`, `atomic_read`, indexed by constants or `this_cpu()`)", name.get_ref(), format!("{op:?}").split([' ', '(', '{']).next().unwrap_or("?")),
            ));
        }
        out[ev] = Some(program);
    }
    Ok(out)
}
