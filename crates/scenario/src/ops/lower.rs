//! The lowering functions of the op registry: each emits one checked op's
//! IR. The ops without fields, the CPU ops and the object ops are lowered
//! by `Emitter::op` from their registry entry alone.

use smpsim_kernel::program::{
    BinOp, CallFunc, CheckOp, CmpOp, Cond, CpuSet, Dist, Expr, LockingOp, ObjectId, Op, RcuOp,
    SmpOp, StopOp,
};

use super::def::{Family, OpDef};
use super::{intern, need, split_top_level, Emitter, Enclosing};
use crate::error::{list, DResult, Diag, StrErr};
use crate::object_type::ObjectType;
use crate::raw::{RawExpr, RawOp, S};

pub(super) fn work(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let time = need(&op.get_ref().time, op, "time")?;
    // `work(VAR)`: a variable holding nanoseconds (a duration in `vars`).
    if let Some(&slot) = e.slots.get(time.get_ref().trim()) {
        let units = match &op.get_ref().units {
            Some(u) => Expr::Bin(
                BinOp::Mul,
                Box::new(Expr::Var(slot)),
                Box::new(e.count_expr(u, "`units`")?),
            ),
            None => Expr::Var(slot),
        };
        e.push(Op::WorkUnits {
            time: Dist::Const(1),
            units,
        });
        return Ok(());
    }
    let d = e.dist(time)?;
    let Some(units) = &op.get_ref().units else {
        e.push(Op::Work(d));
        return Ok(());
    };
    let units = e.count_expr(units, "`units`")?;
    // A constant count scales the distribution here: the plain `work`
    // the kernel runs fastest.
    match crate::expr::const_value(&units, Some(e.ctx.nr_cpus)) {
        Some(n) => e.push(Op::Work(scaled(d, n as u64))),
        None => e.push(Op::WorkUnits { time: d, units }),
    };
    Ok(())
}

/// `d` times `n` (one draw of `d`, `n` times as long), at most
/// [`smpsim_kernel::program::MAX_SPAN`] per end.
fn scaled(d: Dist, n: u64) -> Dist {
    use smpsim_kernel::program::MAX_SPAN;
    let x = |v: u64| v.saturating_mul(n).min(MAX_SPAN);
    match d {
        Dist::Const(v) => Dist::Const(x(v)),
        Dist::Exp { mean } => Dist::Exp { mean: x(mean) },
        Dist::Uniform { lo, hi } => Dist::Uniform {
            lo: x(lo),
            hi: x(hi),
        },
        Dist::Normal { mean, sd } => Dist::Normal {
            mean: x(mean),
            sd: x(sd),
        },
        Dist::LogNormal { median, sigma } => Dist::LogNormal {
            median: x(median),
            sigma,
        },
    }
}

pub(super) fn syscall(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    need(&r.name, op, "name")?;
    e.push(Op::SyscallEnter);
    let start = e.ops.len();
    e.syscall_depth += 1;
    let body = e.scoped_block(
        need(&r.body, op, "body")?.get_ref(),
        "`syscall`'s body".into(),
    );
    e.syscall_depth -= 1;
    body?;
    e.check_syscall_balance(op, start)?;
    e.push(Op::SyscallExit);
    Ok(())
}

pub(super) fn call_single(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let cpu = e.cpu_expr(need(&r.cpu, op, "cpu")?)?;
    let func = e.call_func(op)?;
    e.push(Op::Smp(SmpOp::SmpCallFunctionSingle {
        cpu,
        func,
        wait: wait(r),
    }));
    Ok(())
}

pub(super) fn call_many(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let written = need(&r.cpus, op, "cpus")?;
    let cpus = match e.mask_var(written, false)? {
        Some(slot) => CpuSet::Mask(slot),
        None => e.cpuset(written)?,
    };
    let func = e.call_func(op)?;
    e.push(Op::Smp(SmpOp::SmpCallFunctionMany {
        cpus,
        func,
        wait: wait(r),
    }));
    Ok(())
}

/// `stop_machine_cpuslocked(fn, NULL, cpus)`: `func` is what `fn` costs
/// on the active CPU, `cpu` (default: the first online CPU).
pub(super) fn stop_machine(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let func = e.dist(need(&r.func, op, "func")?)?;
    let cpu = match &r.cpu {
        Some(c) => Some(e.cpu_expr(c)?),
        None => None,
    };
    e.push(Op::Stop(StopOp::StopMachine { func, cpu }));
    Ok(())
}

/// `WRITE_ONCE(VAR, value)` of a shared variable (`VAR[cpu]` for one CPU's
/// instance of a per-CPU one).
pub(super) fn write_once(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    emit_write(e, op, false)
}

/// `this_cpu_write(VAR, value)` of a per-CPU shared variable.
pub(super) fn this_cpu_write(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    emit_write(e, op, true)
}

fn emit_write(e: &mut Emitter<'_, '_>, op: &S<RawOp>, this_cpu: bool) -> DResult<()> {
    let r = op.get_ref();
    let var = e.variable(need(&r.obj, op, "obj")?, this_cpu)?;
    let value = e.expr(need(&r.value, op, "value")?)?;
    e.push(Op::Check(CheckOp::WriteOnce { var, value }));
    Ok(())
}

/// `membarrier_begin`: a membarrier command starts (targeted at `cpu`, or
/// at every CPU running the mm).
pub(super) fn membarrier_begin(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let target = match &op.get_ref().cpu {
        Some(c) => Some(e.expr(c)?),
        None => None,
    };
    e.push(Op::Check(CheckOp::MembarrierBegin { target }));
    Ok(())
}

/// `assert`: the condition must hold where the op stands.
pub(super) fn assert(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let cond = e.cond(need(&r.cond, op, "cond")?)?;
    let message = need(&r.message, op, "message")?.get_ref().clone();
    e.push(Op::Check(CheckOp::Assert { cond, message }));
    Ok(())
}

/// `flush_tlb_mm_range()` of the task's mm (x86 `native_flush_tlb_multi()`):
/// `func` on every CPU `should_flush_tlb()` picks, waiting for them all.
pub(super) fn flush_tlb(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let freed_tables = r.freed_tables.as_ref().is_some_and(|f| *f.get_ref());
    let mask = match &r.cpus {
        Some(c) => e.mask_var(c, true)?,
        None => None,
    };
    let func = e.call_func(op)?;
    e.push(Op::Smp(SmpOp::SmpCallFunctionMany {
        cpus: CpuSet::TlbFlush { freed_tables, mask },
        func,
        wait: true,
    }));
    Ok(())
}

/// `call_rcu(func)`: a callback costing `func` once its grace period
/// has ended (lazy where lazy RCU applies).
pub(super) fn call_rcu(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let func = e.dist(need(&op.get_ref().func, op, "func")?)?;
    e.push(Op::Rcu(RcuOp::CallRcu { func, lazy: true }));
    Ok(())
}

/// `call_rcu_hurry(func)`: never lazy.
pub(super) fn call_rcu_hurry(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let func = e.dist(need(&op.get_ref().func, op, "func")?)?;
    e.push(Op::Rcu(RcuOp::CallRcu { func, lazy: false }));
    Ok(())
}

/// `cond_synchronize_rcu(oldstate)` (kernel/rcu/tree.c): waits for a grace
/// period only if none has fully passed since `oldstate` was taken.
pub(super) fn cond_synchronize_rcu(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    _: &OpDef,
) -> DResult<()> {
    let oldstate = e.expr(need(&op.get_ref().value, op, "value")?)?;
    e.push(Op::Rcu(RcuOp::CondSynchronizeRcu(oldstate)));
    Ok(())
}

/// `kfree_rcu(ptr, rhf)` / `kvfree_rcu()` of an object of `value` bytes
/// (mm/slab_common.c `kvfree_call_rcu()`).
pub(super) fn kfree_rcu(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let v = need(&op.get_ref().value, op, "value")?;
    let bytes = e.expr(v)?;
    if let Expr::Const(n) = bytes {
        if n < 0 {
            return Err(Diag::new(
                v.span(),
                format!("`kfree_rcu` frees an object of `value` bytes, 0 or more (got {n})"),
            ));
        }
    }
    e.push(Op::Rcu(RcuOp::KfreeRcu { bytes }));
    Ok(())
}

/// A cross-CPU call's `wait`: synchronous unless told otherwise, as most
/// callers in the kernel are.
fn wait(r: &RawOp) -> bool {
    r.wait.as_ref().map(|w| *w.get_ref()).unwrap_or(true)
}

pub(super) fn sleep(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let dist = e.dist(need(&r.time, op, "time")?)?;
    let overshoot = r
        .overshoot
        .as_ref()
        .map(|h| intern(&mut e.ctx.histograms, h.get_ref()));
    e.push(Op::Sleep { dist, overshoot });
    Ok(())
}

pub(super) fn set(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let slot = e.slot_of(need(&r.var, op, "var")?)?;
    let expr = e.expr(need(&r.value, op, "value")?)?;
    e.push(Op::Set { slot, expr });
    Ok(())
}

/// `if`: a jump over `then` unless the condition holds, and one over
/// `else` at the end of `then`.
pub(super) fn branch(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let cond = e.cond(need(&r.cond, op, "cond")?)?;
    let branch = e.push(Op::JumpUnless(cond, 0));
    e.block(need(&r.then, op, "then")?.get_ref())?;
    match &r.else_ {
        Some(else_) => {
            let skip = e.push(Op::Jump(0));
            e.patch(branch, e.pc());
            e.block(else_.get_ref())?;
            e.patch(skip, e.pc());
        }
        None => e.patch(branch, e.pc()),
    }
    Ok(())
}

/// `loop`: forever, or a counted loop on a hidden variable.
pub(super) fn repeat(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let count = need(&r.count, op, "count")?;
    let body = need(&r.body, op, "body")?;
    if matches!(count.get_ref(), RawExpr::Text(t) if t.trim() == "forever") {
        if body.get_ref().is_empty() {
            return Err(Diag::new(
                body.span(),
                "a `forever` loop needs a body that takes time",
            ));
        }
        let start = e.pc();
        let breaks = e.loop_body(body.get_ref())?;
        e.push(Op::Jump(start));
        e.patch_breaks(breaks, e.pc());
        return Ok(());
    }
    let n = e.count_expr(count, "loop count")?;
    let slot = e.new_slot(format!(" loop{}", e.nslots), count.span())?;
    e.push(Op::LoopCount { slot, expr: n });
    let skip = e.push(Op::JumpUnless(
        Cond::Cmp(CmpOp::Gt, Expr::Var(slot), Expr::Const(0)),
        0,
    ));
    let target = e.pc();
    let breaks = e.loop_body(body.get_ref())?;
    e.push(Op::LoopBack { slot, target });
    e.patch(skip, e.pc());
    e.patch_breaks(breaks, e.pc());
    Ok(())
}

/// `break`: a jump past the end of the innermost loop (`loop`, `for`,
/// `for_each_cpu`, `atomic_try_cmpxchg`'s retries), through `if` and
/// `choose`, never out of a scope that has work on its way out.
pub(super) fn break_loop(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let at = e.ops.len();
    match e.loops.last_mut() {
        Some(Enclosing::Loop(breaks)) => {
            breaks.push(at);
            e.push(Op::Jump(0));
            Ok(())
        }
        Some(Enclosing::Scope(what)) => Err(Diag::new(
            op.span(),
            format!("`break` would jump out of {what}"),
        )
        .help("`break` leaves only the innermost loop around it in the same body: set a variable there and `break` after the body ends, as `if (done) break;`")),
        None => Err(Diag::new(op.span(), "`break` outside a loop")
            .help("`break` leaves the innermost `loop`, `for (;;)`, `for_each_cpu` or `atomic_try_cmpxchg` retry loop it is written in")),
    }
}

/// `choose`: a weighted jump to one of the bodies, each ending with a jump
/// past the others.
pub(super) fn choose(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let options = need(&op.get_ref().options, op, "options")?;
    if options.get_ref().is_empty() {
        return Err(Diag::new(
            options.span(),
            "`choose` needs at least one option",
        ));
    }
    let at = e.push(Op::Choose {
        cumulative: Vec::new(),
    });
    let mut total: u64 = 0;
    let mut cumulative = Vec::new();
    let mut to_end = Vec::new();
    let last = options.get_ref().len() - 1;
    for (i, choice) in options.get_ref().iter().enumerate() {
        let w = &choice.get_ref().weight;
        if *w.get_ref() <= 0 {
            return Err(Diag::new(w.span(), "weights must be positive integers"));
        }
        total = total
            .checked_add(*w.get_ref() as u64)
            .ok_or_else(|| Diag::new(w.span(), "weights add up to too much"))?;
        cumulative.push((total, e.pc()));
        e.block(choice.get_ref().body.get_ref())?;
        if i < last {
            to_end.push(e.push(Op::Jump(0)));
        }
    }
    let end = e.pc();
    for j in to_end {
        e.patch(j, end);
    }
    e.ops[at] = Op::Choose { cumulative };
    Ok(())
}

pub(super) fn count(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let counter = need(&op.get_ref().counter, op, "counter")?;
    let c = intern(&mut e.ctx.counters, counter.get_ref());
    e.push(Op::Count(c));
    Ok(())
}

pub(super) fn down_read_trylock(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    def: &OpDef,
) -> DResult<()> {
    rwsem_trylock(e, op, def, Family::RwsemRead)
}

pub(super) fn down_write_trylock(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    def: &OpDef,
) -> DResult<()> {
    rwsem_trylock(e, op, def, Family::RwsemWrite)
}

/// `down_{read,write}_trylock`: a take (for the release checks), with the
/// result in `var` when given.
fn rwsem_trylock(
    e: &mut Emitter<'_, '_>,
    op: &S<RawOp>,
    def: &OpDef,
    family: Family,
) -> DResult<()> {
    let r = op.get_ref();
    let lock = e.lock(need(&r.lock, op, "lock")?, ObjectType::Rwsem, def)?;
    let slot = r.var.as_ref().map(|v| e.slot_of(v)).transpose()?;
    e.taken.insert((lock.object, family));
    e.taken_forms.insert((lock.object, family, false));
    e.push(Op::Locking(LockingOp::RwsemTrylock {
        lock,
        mode: family.mode(),
        slot,
    }));
    Ok(())
}

/// `downgrade_write`: releases the write side, takes the read side.
pub(super) fn downgrade_write(e: &mut Emitter<'_, '_>, op: &S<RawOp>, def: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let written = need(&r.lock, op, "lock")?;
    let lock = e.lock(written, ObjectType::Rwsem, def)?;
    e.note_release(written, lock.object, Family::RwsemWrite, def.name);
    e.taken.insert((lock.object, Family::RwsemRead));
    e.taken_forms
        .insert((lock.object, Family::RwsemRead, false));
    e.push(Op::Locking(LockingOp::DowngradeWrite(lock)));
    Ok(())
}

/// `read_seqcount`: `do { seq = read_seqcount_begin(s); body } while
/// (read_seqcount_retry(s, seq));`, the sequence in a hidden variable.
pub(super) fn read_seqcount(e: &mut Emitter<'_, '_>, op: &S<RawOp>, def: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let written = need(&r.obj, op, "obj")?;
    let seq = e.lock(written, ObjectType::Seqcount, def)?;
    let slot = e.new_slot(format!(" seq{}", e.nslots), written.span())?;
    let retry = e.pc();
    e.push(Op::Locking(LockingOp::ReadSeqcountBegin {
        seq: seq.clone(),
        slot,
    }));
    let what = "`read_seqcount`'s body (its retry check)".into();
    e.scoped_block(need(&r.body, op, "body")?.get_ref(), what)?;
    e.push(Op::Locking(LockingOp::ReadSeqcountRetry {
        seq,
        slot,
        retry,
    }));
    Ok(())
}

pub(super) fn mark(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let slot = e.slot_of(need(&op.get_ref().var, op, "var")?)?;
    e.push(Op::Mark(slot));
    Ok(())
}

pub(super) fn record(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let r = op.get_ref();
    let slot = e.slot_of(need(&r.since, op, "since")?)?;
    let hist = intern(&mut e.ctx.histograms, need(&r.hist, op, "hist")?.get_ref());
    e.push(Op::RecordSince { hist, slot });
    Ok(())
}

/// `call`: the function's body, inlined.
pub(super) fn call(e: &mut Emitter<'_, '_>, op: &S<RawOp>, _: &OpDef) -> DResult<()> {
    let name = need(&op.get_ref().func_name, op, "fn")?;
    let Some(body) = e.ctx.functions.get(name.get_ref()).copied() else {
        let mut known: Vec<&String> = e.ctx.functions.keys().collect();
        known.sort();
        return Err(Diag::new(
            name.span(),
            format!("unknown function `{}`", name.get_ref()),
        )
        .help(format!("functions: {}", list(known))));
    };
    if e.calls.contains(name.get_ref()) {
        return Err(Diag::new(
            name.span(),
            format!("function `{}` calls itself", name.get_ref()),
        ));
    }
    e.calls.push(name.get_ref().clone());
    let what = format!("function `{}`, into its caller's loop", name.get_ref());
    e.scoped_block(body.get_ref(), what)?;
    e.calls.pop();
    Ok(())
}

impl Emitter<'_, '_> {
    /// `smp_call_function_many`'s `cpus`: `mm_cpumask`, `all_but_self`, or a
    /// comma-separated list of CPU expressions.
    fn cpuset(&self, v: &S<String>) -> DResult<CpuSet> {
        let text = v.get_ref();
        match text.trim() {
            "mm_cpumask" => return Ok(CpuSet::MmCpumask),
            "mm_running" => return Ok(CpuSet::MmRunning),
            "all_but_self" => return Ok(CpuSet::AllButSelf),
            "all" => {
                return Err(Diag::new(
                    v.span(),
                    "`all` would include the calling CPU, which smp_call_function_many never runs the function on",
                )
                .help("write \"all_but_self\" for every other online CPU, or \"mm_cpumask\" for the CPUs that have used this address space"));
            }
            _ => {}
        }
        let mut cpus = Vec::new();
        for part in split_top_level(text) {
            if text[part.clone()].trim().is_empty() {
                return Err(self
                    .ctx
                    .at_str(v, StrErr::new(part, "expected a CPU expression"))
                    .help("a CPU set is \"mm_cpumask\", \"all_but_self\", or CPU expressions separated by commas, e.g. \"0, 3, target\""));
            }
            let cpu = self.sub_expr(v, part.clone())?;
            super::check_cpu(&cpu, self.ctx.nr_cpus).map_err(|m| {
                let written = &text[part.clone()];
                let start = part.start + written.len() - written.trim_start().len();
                let end = part.start + written.trim_end().len();
                self.ctx.at_str(v, StrErr::new(start..end, m))
            })?;
            cpus.push(cpu);
        }
        Ok(CpuSet::List(cpus))
    }

    /// The function a cross-CPU call runs: its cost, times `units` if given.
    fn call_func(&mut self, op: &S<RawOp>) -> DResult<CallFunc> {
        let r = op.get_ref();
        let (cost, handler) = match (&r.func, &r.handler) {
            (Some(f), None) => (self.dist(f)?, None),
            (None, Some(h)) => (Dist::Const(0), Some(self.handler(h)?)),
            (Some(_), Some(h)) => {
                return Err(Diag::new(
                    h.span(),
                    "give `func` (the handler's cost) or `handler` (a function run on the target), not both",
                ))
            }
            (None, None) => {
                return Err(Diag::new(
                    op.span(),
                    format!(
                        "`{}` needs `func = DIST` (the handler's cost) or `handler = \"FUNCTION\"`",
                        r.op.get_ref()
                    ),
                ))
            }
        };
        let units = match &r.units {
            None => None,
            Some(u) => Some(self.count_expr(u, "`units`")?),
        };
        Ok(CallFunc {
            cost,
            units,
            handler,
        })
    }
}

impl Emitter<'_, '_> {
    /// lockdep's `lockdep_sys_exit()` at compile time: refuses a `syscall`
    /// body (its ops from `start` to the end) that can reach its end with
    /// a lock taken in it still held, on some path through its branches
    /// and loops. Trylocks are left out (they take the lock only
    /// sometimes); paths that leave the body (`exit`, a `break` out of
    /// it) are not followed; releases of locks taken before the body only
    /// lower the count.
    pub(super) fn check_syscall_balance(&self, op: &S<RawOp>, start: usize) -> DResult<()> {
        let body = &self.ops[start..];
        let end = body.len();
        // The locks taken in the body, by object and mode.
        let mut keys: Vec<(ObjectId, smpsim_kernel::program::LockMode)> = Vec::new();
        for ir in body {
            if let Op::Locking(LockingOp::Lock { lock, mode, .. }) = ir {
                if !keys.contains(&(lock.object, *mode)) {
                    keys.push((lock.object, *mode));
                }
            }
        }
        // Net takes on a path, clamped to -2..=3: bit (net + 2) of a mask.
        const LO: i32 = -2;
        const HI: i32 = 3;
        for &(object, mode) in &keys {
            let mut seen = vec![0u8; end + 1];
            let mut work = vec![(0usize, 0i32)];
            while let Some((pc, net)) = work.pop() {
                let bit = 1u8 << (net - LO);
                if seen[pc] & bit != 0 {
                    continue;
                }
                seen[pc] |= bit;
                if pc == end {
                    continue;
                }
                let step = match &body[pc] {
                    Op::Locking(LockingOp::Lock { lock, mode: m, .. })
                        if lock.object == object && *m == mode =>
                    {
                        1
                    }
                    Op::Locking(LockingOp::Unlock { lock, mode: m, .. })
                        if lock.object == object && *m == mode =>
                    {
                        -1
                    }
                    _ => 0,
                };
                let next = (net + step).clamp(LO, HI);
                let mut go = |to: usize| {
                    // Absolute targets: inside the body, or left alone.
                    if (start..=start + end).contains(&to) {
                        work.push((to - start, next));
                    }
                };
                match &body[pc] {
                    Op::Exit => {}
                    Op::Jump(t) => go(*t as usize),
                    Op::JumpUnless(_, t) | Op::LoopBack { target: t, .. } => {
                        go(start + pc + 1);
                        go(*t as usize);
                    }
                    Op::Choose { cumulative } => {
                        cumulative.iter().for_each(|(_, t)| go(*t as usize))
                    }
                    _ => go(start + pc + 1),
                }
            }
            let held = seen[end] & !((1u8 << (1 - LO)) - 1);
            if held != 0 {
                let lock = self
                    .ctx
                    .object_names
                    .get(object as usize)
                    .map_or("?", String::as_str);
                let name = op
                    .get_ref()
                    .name
                    .as_ref()
                    .map_or(String::new(), |n| n.get_ref().to_string());
                return Err(Diag::new(
                    op.span(),
                    format!(
                        "`syscall({name})` can return to user space holding `{lock}`: it is taken in the body and not released on every path to its end (lockdep: \"lock held when returning to user space!\")"
                    ),
                )
                .help(format!(
                    "release `{lock}` before the end of the syscall body on every path, or take it with a guard (`mutex_guard`, `spin_guard`, `rwsem_read_guard`, ...)"
                )));
            }
        }
        Ok(())
    }
}
