//! A compare-and-exchange retry loop written in the scenario:
//! `atomic_read(x, old)` keeps what the read saw, and
//! `atomic_try_cmpxchg(x, old) { ... }` is the kernel's `while
//! (!atomic_try_cmpxchg(&x, &old, new)) { ... }` (its body runs after each
//! failed attempt, `old` updated, and the attempt is made again);
//! `cpu_relax()` is the spin-wait hint such a loop may run between
//! attempts.

use smpsim_kernel::program::{Dist, LockingOp, Op, Slot};

use super::def::OpDef;
use super::{need, Emitter};
use crate::error::{DResult, Diag};
use crate::object_type::ObjectType;
use crate::raw::{RawOp, S};

/// `atomic_read(x)`, or with `var`, `old = atomic_read(x)`.
pub(super) fn atomic_read(e: &mut Emitter<'_, '_>, op: &S<RawOp>, def: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let obj = e.lock(need(&r.obj, op, "obj")?, ObjectType::Atomic, def)?;
    match &r.var {
        None => e.push(Op::Locking(LockingOp::AtomicRead(obj))),
        Some(v) => {
            let slot = e.slot_of(v)?;
            e.push(Op::Locking(LockingOp::AtomicReadOld { obj, slot }))
        }
    };
    Ok(())
}

/// `atomic_try_cmpxchg(x, old) { body }`: an attempt; on failure the body,
/// then the attempt again; on success, past the loop.
pub(super) fn atomic_try_cmpxchg(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    def: &OpDef,
) -> DResult<()> {
    let r = op.get_ref();
    let written = need(&r.obj, op, "obj")?;
    let obj = e.lock(written, ObjectType::Atomic, def)?;
    let old = need(&r.var, op, "var")?;
    let slot = old_slot(e, old, written, obj.object)?;
    let attempt = e.push(Op::Jump(0));
    let breaks = match &r.body {
        Some(body) => e.loop_body(body.get_ref())?,
        None => Vec::new(),
    };
    e.push(Op::Jump(attempt as u32));
    let done = e.pc();
    e.ops[attempt] = Op::Locking(LockingOp::AtomicTryCmpxchg { obj, slot, done });
    // A `break` in the body gives up after a failed attempt: past the loop
    // too, `old` holding what the last attempt found.
    e.patch_breaks(breaks, done);
    Ok(())
}

/// The slot of `old`, a task variable that an `atomic_read(x, old)` of the
/// same object set earlier in the program: the version the attempt
/// compares with comes from a read of that word.
fn old_slot(e: &Emitter<'_, '_>, old: &S<String>, obj: &S<String>, object: u32) -> DResult<Slot> {
    let name = old.get_ref().trim();
    let x = obj.get_ref().trim();
    let Some(&slot) = e.slots.get(name) else {
        return Err(Diag::new(
            old.span(),
            format!("`{name}` is not a variable: atomic_try_cmpxchg's `var` is the variable `old` that an earlier atomic_read({x}, old) set"),
        )
        .help(format!("read the word first: `atomic_read({x}, old);`, then `atomic_try_cmpxchg({x}, old) {{ ... }}`")));
    };
    let read = e.ops.iter().any(|o| {
        matches!(o, Op::Locking(LockingOp::AtomicReadOld { obj, slot: s })
            if obj.object == object && *s == slot)
    });
    if !read {
        return Err(Diag::new(
            old.span(),
            format!("`{name}` was never read from `{x}`: atomic_try_cmpxchg compares with what an atomic_read({x}, {name}) saw"),
        )
        .help(format!("write `atomic_read({x}, {name});` before the loop (the kernel's `{name} = atomic_read(&{x})`)")));
    }
    Ok(slot)
}

/// `cpu_relax()`: the machine's spin-wait hint (`PAUSE`, `YIELD`), time on
/// this CPU that touches no line.
pub(super) fn cpu_relax(e: &mut Emitter<'_, '_>, _: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let ns = e.ctx.costs.cpu_relax();
    e.push(Op::Work(Dist::Const(ns)));
    Ok(())
}
