//! The emitter: walks a body of ops, declares its variables and resolves
//! names (slots, objects, handlers), and appends IR ops with their jump
//! targets patched.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use smpsim_kernel::program::{Cond, Dist, Expr, LockingOp, ObjRef, ObjectId, Op, Pc, Slot};

use crate::duration::parse_dist;
use crate::error::{list, DResult, Diag, StrErr};
use crate::expr::{const_value, is_identifier, parse_cond, parse_expr, SharedObject, RESERVED};
use crate::object_type::ObjectType;
use crate::raw::{RawExpr, RawOp, S};

use super::def::{Family, LockAction, LockOp, Lower, OpDef};
use super::registry::{self, check_fields, wrong_kind};
use super::{check_cpu, compile, need, object_field, split_lockref, walk, Ctx, ObjEntry, MAX_OPS};

pub(super) struct Emitter<'c, 'd> {
    pub(super) ctx: &'c mut Ctx<'d>,
    pub(super) ops: Vec<Op>,
    pub(super) slots: HashMap<String, Slot>,
    pub(super) nslots: usize,
    pub(super) calls: Vec<String>,
    /// Objects the program takes, with the op family taking them (`mutex`,
    /// `spin`, `read`, `write`).
    pub(super) taken: HashSet<(ObjectId, Family)>,
    /// The first release of each object by each family, in program order,
    /// with the error to report if the program never takes it that way.
    pub(super) released: Vec<((ObjectId, Family), Diag)>,
    pub(super) released_keys: HashSet<(ObjectId, Family)>,
    /// The forms objects are taken in: with `_irqsave` or without.
    pub(super) taken_forms: HashSet<(ObjectId, Family, bool)>,
    /// The first release in each form, with the error to report if the
    /// program takes the object only in the other form.
    pub(super) released_forms: Vec<((ObjectId, Family, bool), Diag)>,
    /// Cpumask variables by name (`cpumask.rs`), apart from `slots`.
    pub(super) masks: HashMap<String, smpsim_kernel::program::MaskSlot>,
    /// The program starts in user mode (a task's code; not a handler's or
    /// a hook's, which run in the kernel).
    pub(super) user_code: bool,
    /// `syscall` bodies the op being emitted is inside.
    pub(super) syscall_depth: u32,
    /// The bodies the op being emitted is inside that a `break` stops at,
    /// innermost last: a loop's, or a scope `break` may not leave.
    pub(super) loops: Vec<Enclosing>,
}

/// What a `break` finds around it ([`Emitter::loops`]).
pub(super) enum Enclosing {
    /// A loop's body: the `break`s to patch to its end.
    Loop(Vec<usize>),
    /// A body with work to do on the way out (a `syscall`'s exit, a
    /// guard's release, a seqcount's retry) or a function's: `break`
    /// cannot jump out of it: what it is, for the error.
    Scope(String),
}

pub(super) fn resolver(
    slots: &HashMap<String, Slot>,
) -> impl Fn(&str) -> Result<Slot, Vec<String>> + '_ {
    move |name| {
        slots.get(name).copied().ok_or_else(|| {
            let mut names: Vec<String> = slots
                .keys()
                .filter(|k| !k.starts_with(' '))
                .cloned()
                .collect();
            names.sort();
            names
        })
    }
}

/// The shared variables of `objects`, for `read_once()` and friends.
pub(super) fn shared_resolver(
    objects: &HashMap<String, ObjEntry>,
) -> impl Fn(&str, ObjectType) -> Result<SharedObject, Vec<String>> + '_ {
    move |name, want| match objects.get(name) {
        // A `variable` is one, or one per CPU (no arrays of them).
        Some(&ObjEntry::Lock {
            id,
            per_cpu,
            array,
            kind,
        }) if kind == want && (array.is_none() || kind != ObjectType::Variable) => {
            Ok(SharedObject { id, per_cpu, array })
        }
        _ => {
            let mut names: Vec<String> = objects
                .iter()
                .filter(|(_, e)| matches!(e, ObjEntry::Lock { kind, .. } if *kind == want))
                .map(|(n, _)| n.clone())
                .collect();
            names.sort();
            Err(names)
        }
    }
}

impl Emitter<'_, '_> {
    pub(super) fn pc(&self) -> Pc {
        self.ops.len() as Pc
    }

    pub(super) fn push(&mut self, op: Op) -> usize {
        self.ops.push(op);
        self.ops.len() - 1
    }

    pub(super) fn new_slot(&mut self, name: String, span: Range<usize>) -> DResult<Slot> {
        if self.nslots >= u16::MAX as usize {
            return Err(Diag::new(
                span,
                "too many variables (at most 65535 per task, loops included)",
            ));
        }
        let slot = self.nslots as Slot;
        self.nslots += 1;
        self.slots.insert(name, slot);
        Ok(slot)
    }

    /// Declares every variable before any code is emitted: `vars`, then
    /// the targets of `set` and `mark` ops, in program order.
    pub(super) fn declare_all(
        &mut self,
        vars: &[(S<String>, S<RawExpr>)],
        code: &S<Vec<S<RawOp>>>,
    ) -> DResult<()> {
        for (name, _) in vars {
            self.declare(name)?;
        }
        let mut declared = Vec::new();
        walk(self.ctx, code.get_ref(), &mut Vec::new(), &mut |op| {
            let r = op.get_ref();
            let kind = r.op.get_ref().as_str();
            if matches!(
                kind,
                "set"
                    | "mark"
                    | "down_read_trylock"
                    | "down_write_trylock"
                    | "atomic_read"
                    | "for_each_cpu"
                    | "cpumask"
            ) {
                if let Some(v) = &r.var {
                    declared.push((v, kind == "cpumask"));
                }
            }
            Ok(())
        })?;
        for (v, mask) in declared {
            if mask {
                self.declare_mask(v)?;
            } else {
                self.declare(v)?;
            }
        }
        Ok(())
    }

    pub(super) fn declare(&mut self, var: &S<String>) -> DResult<()> {
        let name = var.get_ref();
        if !is_identifier(name) || RESERVED.contains(&name.as_str()) {
            return Err(Diag::new(var.span(), format!("`{name}` cannot be a variable name"))
                .help("variables are identifiers (letters, digits, `_`) other than the built-in names"));
        }
        if self.masks.contains_key(name) {
            return Err(Diag::new(
                var.span(),
                format!("`{name}` holds a cpumask in this task's code; it cannot also be a number"),
            )
            .help("give the number a name of its own"));
        }
        if !self.slots.contains_key(name) {
            self.new_slot(name.clone(), var.span())?;
        }
        Ok(())
    }

    pub(super) fn expr(&self, v: &S<RawExpr>) -> DResult<Expr> {
        match v.get_ref() {
            RawExpr::Int(i) => Ok(Expr::Const(*i)),
            RawExpr::Text(t) => {
                let r = resolver(&self.slots);
                let sh = shared_resolver(&self.ctx.objects);
                parse_expr(t, &r, &sh, self.ctx.hook_view).map_err(|e| {
                    let e = self.mask_as_number(t, e);
                    self.ctx.at_str(&S::new(v.span(), t.clone()), e)
                })
            }
        }
    }

    /// A task variable's initial value (`vars`): an expression, or a
    /// duration (`"15ns"`, `"cost.NAME"`), which the variable holds in
    /// nanoseconds (for `work(VAR)`).
    pub(super) fn var_init(&self, v: &S<RawExpr>) -> DResult<Expr> {
        if let RawExpr::Text(t) = v.get_ref() {
            if let Ok(ns) = crate::duration::parse_duration(t, &self.ctx.costs) {
                return Ok(Expr::Const(ns.min(i64::MAX as u64) as i64));
            }
        }
        self.expr(v)
    }

    /// A `cpu` field: an expression that, when constant, is one of the
    /// machine's CPUs.
    pub(super) fn cpu_expr(&self, v: &S<RawExpr>) -> DResult<Expr> {
        let e = self.expr(v)?;
        check_cpu(&e, self.ctx.nr_cpus).map_err(|m| Diag::new(v.span(), m))?;
        Ok(e)
    }

    /// A count (`loop`'s, `units`): an expression that, when constant, is
    /// not negative.
    pub(super) fn count_expr(&self, v: &S<RawExpr>, what: &str) -> DResult<Expr> {
        let e = self.expr(v)?;
        match const_value(&e, Some(self.ctx.nr_cpus)) {
            Some(c) if c < 0 => Err(Diag::new(
                v.span(),
                format!("{what} cannot be negative (got {c})"),
            )),
            _ => Ok(e),
        }
    }

    pub(super) fn cond(&self, v: &S<String>) -> DResult<Cond> {
        let r = resolver(&self.slots);
        let sh = shared_resolver(&self.ctx.objects);
        parse_cond(v.get_ref(), &r, &sh, self.ctx.hook_view).map_err(|e| self.ctx.at_str(v, e))
    }

    pub(super) fn slot_of(&self, v: &S<String>) -> DResult<Slot> {
        self.slots.get(v.get_ref()).copied().ok_or_else(|| {
            Diag::new(v.span(), format!("unknown variable `{}`", v.get_ref()))
                .help("a `record` op's `since` names a variable set by a `mark` op")
        })
    }

    /// An expression written at bytes `r` of the string value `v`.
    pub(super) fn sub_expr(&self, v: &S<String>, r: Range<usize>) -> DResult<Expr> {
        let res = resolver(&self.slots);
        let sh = shared_resolver(&self.ctx.objects);
        parse_expr(&v.get_ref()[r.clone()], &res, &sh, self.ctx.hook_view).map_err(|e| {
            let mut e = self.mask_as_number(&v.get_ref()[r.clone()], e);
            e.range = e.range.start + r.start..e.range.end + r.start;
            self.ctx.at_str(v, e)
        })
    }

    /// Resolves a `lock` field through aliases to an object of kind `want`;
    /// `def` is the op's, to suggest the right one on a kind mismatch.
    pub(super) fn lock(&self, lock: &S<String>, want: ObjectType, def: &OpDef) -> DResult<ObjRef> {
        let ctx = &*self.ctx;
        let (mut name_r, idx) = split_lockref(lock.get_ref()).map_err(|e| ctx.at_str(lock, e))?;
        let written = name_r.clone();
        let mut owner = lock;
        let mut index: Option<(&S<String>, Range<usize>)> = idx.map(|r| (lock, r));
        for _ in 0..=ctx.objects.len() {
            let name = &owner.get_ref()[name_r.clone()];
            match ctx.objects.get(name) {
                None => {
                    return Err(ctx
                        .at_str(
                            owner,
                            StrErr::new(name_r, format!("unknown object `{name}`")),
                        )
                        .help(format!("declared objects: {}", list(&ctx.object_names))));
                }
                Some(ObjEntry::Alias { to }) => {
                    let (n, i) = split_lockref(to.get_ref()).map_err(|e| ctx.at_str(to, e))?;
                    if let (Some(i), Some((o, _))) = (&i, &index) {
                        return Err(ctx.at_str(to, StrErr::new(i.clone(), format!(
                            "alias `{name}` already selects an element, so `{}` cannot index it again",
                            o.get_ref().trim()
                        ))));
                    }
                    if let Some(i) = i {
                        index = Some((to, i));
                    }
                    owner = to;
                    name_r = n;
                }
                Some(&ObjEntry::Lock {
                    id,
                    per_cpu,
                    array,
                    kind,
                }) => {
                    if kind != want {
                        let msg = wrong_kind(&lock.get_ref()[written.clone()], name, kind, def);
                        return Err(ctx.at_str(lock, StrErr::new(written, msg)).help(format!(
                            "{} ops: {}",
                            kind.name(),
                            kind.ops()
                        )));
                    }
                    if let Some(len) = array {
                        return self.element(name, id, len, lock, index);
                    }
                    let index = match (index, per_cpu) {
                        (None, false) => None,
                        (Some((o, r)), true) => Some(self.sub_expr(o, r)?),
                        (None, true) => {
                            return Err(Diag::new(lock.span(), format!("`{name}` is a per-CPU object: say which CPU's, e.g. `{name}[this_cpu()]`")));
                        }
                        (Some((o, r)), false) => {
                            return Err(ctx.at_str(
                                o,
                                StrErr::new(
                                    r,
                                    format!(
                                        "`{name}` is not a per-CPU object, so it cannot be indexed"
                                    ),
                                ),
                            ));
                        }
                    };
                    return Ok(ObjRef { object: id, index });
                }
            }
        }
        Err(Diag::new(lock.span(), "alias cycle"))
    }

    /// Element `index` of the object array `name` (first element `first`,
    /// `len` of them): a constant index is that element's object, any
    /// other is looked up when the op runs.
    fn element(
        &self,
        name: &str,
        first: ObjectId,
        len: u32,
        lock: &S<String>,
        index: Option<(&S<String>, Range<usize>)>,
    ) -> DResult<ObjRef> {
        let Some((o, r)) = index else {
            return Err(Diag::new(
                lock.span(),
                format!("`{name}` is an array of {len} objects: say which one, e.g. `{name}[hash(key) % {len}]`"),
            ));
        };
        let e = self.sub_expr(o, r.clone())?;
        match const_value(&e, Some(self.ctx.nr_cpus)) {
            Some(i) if (0..len as i64).contains(&i) => Ok(ObjRef {
                object: first + i as u32,
                index: None,
            }),
            Some(i) => Err(self.ctx.at_str(
                o,
                StrErr::new(
                    r,
                    format!(
                        "`{name}` has {len} elements, 0 to {}; there is no element {i}",
                        len - 1
                    ),
                ),
            )),
            None => Ok(ObjRef {
                object: first,
                index: Some(e),
            }),
        }
    }

    /// The shared variable an op writes: `VAR` or `VAR[CPU]` through
    /// `lock()`'s resolution, or (`this_cpu`) a per-CPU `VAR` at this CPU.
    pub(super) fn variable(&self, obj: &S<String>, this_cpu: bool) -> DResult<ObjRef> {
        let name = if this_cpu {
            "this_cpu_write"
        } else {
            "write_once"
        };
        let def = registry::ops()
            .iter()
            .find(|d| d.name == name)
            .expect("registered");
        if !this_cpu {
            return self.lock(obj, ObjectType::Variable, def);
        }
        match self.ctx.objects.get(obj.get_ref().trim()) {
            Some(&ObjEntry::Lock {
                id,
                per_cpu: true,
                kind: ObjectType::Variable,
                ..
            }) => Ok(ObjRef {
                object: id,
                index: Some(Expr::ThisCpu),
            }),
            _ => Err(Diag::new(
                obj.span(),
                format!("`this_cpu_write` takes a per-CPU shared variable; `{}` is not one", obj.get_ref()),
            )
            .help("declare it as `{ type = \"variable\", per_cpu = true }`; write a global one with `write_once`")),
        }
    }

    /// The handler program of a cross-CPU call: the function `name`,
    /// compiled once, with only what hardirq context allows.
    pub(super) fn handler(&mut self, name: &S<String>) -> DResult<u32> {
        let n = name.get_ref().trim();
        if let Some(i) = self.ctx.handlers.iter().position(|(h, _)| h == n) {
            return Ok(i as u32);
        }
        let Some(&body) = self.ctx.functions.get(n) else {
            let mut names: Vec<&String> = self.ctx.functions.keys().collect();
            names.sort();
            return Err(Diag::new(name.span(), format!("unknown function `{n}`"))
                .help(format!("declared functions: {}", list(&names))));
        };
        // A handler that sends a cross-CPU call is refused below; refusing
        // it here, before compiling the handler it names, keeps a chain
        // of handlers from recursing.
        if let Some(outer) = &self.ctx.in_handler {
            return Err(Diag::new(
                name.span(),
                format!("handler `{outer}` sends a cross-CPU call (to handler `{n}`): a handler runs in hardirq context, where the kernel WARNs on a synchronous cross-CPU call"),
            )
            .help("a handler may only `work`, `count` and take a (not per-CPU) spinlock"));
        }
        self.ctx.in_handler = Some(n.to_string());
        let program = compile(&mut *self.ctx, None, body, false);
        self.ctx.in_handler = None;
        let program = program?;
        let objects = &self.ctx.objects;
        let spinlock = |id: ObjectId| {
            objects.values().any(|e| {
                matches!(e, ObjEntry::Lock { id: i, per_cpu: false, array: None, kind: ObjectType::Spinlock } if *i == id)
            })
        };
        let allowed = program.ops.iter().all(|op| match op {
            Op::Work(_) | Op::Count(_) | Op::Exit => true,
            Op::Locking(LockingOp::Lock { lock, irqsave, .. })
            | Op::Locking(LockingOp::Unlock {
                lock,
                irqrestore: irqsave,
                ..
            }) => !irqsave && lock.index.is_none() && spinlock(lock.object),
            _ => false,
        });
        if !allowed {
            return Err(Diag::new(
                name.span(),
                format!("`{n}` cannot be a handler: a cross-CPU call's handler runs in hardirq context, where smpsim runs only `work`, `count`, and `spin_lock`/`spin_unlock` of a (not per-CPU) spinlock"),
            ));
        }
        self.ctx.handlers.push((n.to_string(), program));
        Ok((self.ctx.handlers.len() - 1) as u32)
    }

    pub(super) fn dist(&self, v: &S<String>) -> DResult<Dist> {
        parse_dist(v.get_ref(), &self.ctx.costs).map_err(|e| self.ctx.at_str(v, e))
    }

    pub(super) fn block(&mut self, ops: &[S<RawOp>]) -> DResult<()> {
        ops.iter().try_for_each(|op| self.op(op))
    }

    /// A loop's body; returns the `break`s in it, to patch to the loop's
    /// end once that is known.
    pub(super) fn loop_body(&mut self, ops: &[S<RawOp>]) -> DResult<Vec<usize>> {
        self.loops.push(Enclosing::Loop(Vec::new()));
        let r = self.block(ops);
        let Some(Enclosing::Loop(breaks)) = self.loops.pop() else {
            unreachable!("loop frames are pushed and popped in pairs")
        };
        r.map(|()| breaks)
    }

    /// The body of `what` (`syscall`'s body, function `f`), which a
    /// `break` cannot leave.
    pub(super) fn scoped_block(&mut self, ops: &[S<RawOp>], what: String) -> DResult<()> {
        self.loops.push(Enclosing::Scope(what));
        let r = self.block(ops);
        self.loops.pop();
        r
    }

    /// Points the jumps `breaks` at `end`.
    pub(super) fn patch_breaks(&mut self, breaks: Vec<usize>, end: Pc) {
        for b in breaks {
            self.patch(b, end);
        }
    }

    /// Emits one op, as its registry entry says.
    pub(super) fn op(&mut self, op: &S<RawOp>) -> DResult<()> {
        if self.ops.len() > MAX_OPS {
            return Err(Diag::new(
                op.span(),
                "program is too long (over 1,048,576 ops after inlining functions)",
            ));
        }
        let def = check_fields(op)?;
        match &def.lower {
            Lower::Fixed(ir) => {
                self.push(ir.clone());
            }
            Lower::Cpu(ir) => {
                let cpu = self.cpu_expr(need(&op.get_ref().cpu, op, "cpu")?)?;
                self.push(ir(cpu));
            }
            Lower::Object(kind, ir) => {
                let l = self.lock(object_field(op, def)?, *kind, def)?;
                self.push(ir(l));
            }
            Lower::Lock(l) => self.emit_lock(op, def, *l)?,
            Lower::Custom(lower) | Lower::ObjectWith(_, lower) => lower(self, op, def)?,
        }
        // After lowering, so that an op's own errors (a wrong object, a
        // missing field) come first.
        if self.user_code && self.syscall_depth == 0 {
            refuse_in_user_mode(op, def)?;
        }
        Ok(())
    }

    pub(super) fn patch(&mut self, at: usize, target: Pc) {
        match &mut self.ops[at] {
            Op::Jump(t) | Op::JumpUnless(_, t) => *t = target,
            _ => unreachable!("patching a non-jump"),
        }
    }
}

/// User code (a task's code outside `syscall(...) { }`) cannot disable
/// interrupts or preemption: refuses `local_irq_*`, `preempt_*` and the
/// `_irqsave`/`_irqrestore` lock forms there. (Plain spinlocks in user
/// code stay allowed: they model user-space locks.)
fn refuse_in_user_mode(op: &S<RawOp>, def: &OpDef) -> DResult<()> {
    let irq_lock = match &def.lower {
        Lower::Lock(l) => {
            l.irq
                || (l.action == LockAction::Guard
                    && op.get_ref().irqsave.as_ref().is_some_and(|v| *v.get_ref()))
        }
        _ => false,
    };
    let what = match def.name {
        "local_irq_disable" | "local_irq_enable" => "interrupts",
        "preempt_disable" | "preempt_enable" => "preemption",
        _ if irq_lock => "interrupts",
        _ => return Ok(()),
    };
    let name = if irq_lock && def.name.ends_with("guard") {
        format!("{}(..., irqsave = true)", def.name)
    } else {
        def.name.to_string()
    };
    Err(Diag::new(
        op.span(),
        format!(
            "`{name}` in user code: a task's code outside `syscall(...) {{ }}` runs in user mode, which cannot disable {what}"
        ),
    )
    .help("put it inside `syscall(NAME) { ... }`, where the task runs in the kernel"))
}

impl Emitter<'_, '_> {
    /// The mutex, spinlock and rwlock ops: take, release, or a guard (take,
    /// body, release). The `_irqsave`/`_irqrestore` forms (and guards with
    /// `irqsave`) also disable and restore local interrupts.
    pub(super) fn emit_lock(&mut self, op: &S<RawOp>, def: &OpDef, l: LockOp) -> DResult<()> {
        let r = op.get_ref();
        let family = l.family;
        let written = need(&r.lock, op, "lock")?;
        if let Some(ir) = hotplug_lock_op(self, written, l) {
            self.push(ir);
            return Ok(());
        }
        let lock = self.lock(written, family.kind(), def)?;
        let take = |lock: ObjRef, irqsave: bool| {
            Op::Locking(LockingOp::Lock {
                lock,
                mode: family.mode(),
                irqsave,
            })
        };
        let release = |lock: ObjRef, irqrestore: bool| {
            Op::Locking(LockingOp::Unlock {
                lock,
                mode: family.mode(),
                irqrestore,
            })
        };
        match l.action {
            LockAction::Lock => {
                self.taken.insert((lock.object, family));
                self.taken_forms.insert((lock.object, family, l.irq));
                self.push(take(lock, l.irq));
            }
            LockAction::Unlock => {
                self.note_release(written, lock.object, family, def.name);
                self.note_release_form(written, lock.object, family, l.irq, def.name);
                self.push(release(lock, l.irq));
            }
            LockAction::Guard => {
                let irqsave = r.irqsave.as_ref().is_some_and(|v| *v.get_ref());
                self.taken.insert((lock.object, family));
                self.taken_forms.insert((lock.object, family, irqsave));
                self.push(take(lock.clone(), irqsave));
                let what = format!("`{}`'s body", def.name);
                self.scoped_block(need(&r.body, op, "body")?.get_ref(), what)?;
                self.push(release(lock, irqsave));
            }
        }
        Ok(())
    }

    /// Remembers the first release of `object` by the op family `family`,
    /// for the check that the program also takes it (see [`super::compile`]).
    pub(super) fn note_release(
        &mut self,
        written: &S<String>,
        object: ObjectId,
        family: Family,
        op: &str,
    ) {
        if !self.released_keys.insert((object, family)) {
            return;
        }
        let text = written.get_ref();
        let name_r = split_lockref(text).map_or(0..text.len(), |(r, _)| r);
        let name = &text[name_r.clone()];
        let msg = format!(
            "`{op}` of `{name}`, but this task's code never takes it with {}; \
             a lock must be released by the task that holds it",
            family.lock_op()
        );
        let d = self
            .ctx
            .at_str(written, StrErr::new(name_r, msg))
            .help(format!(
                "take it in this task group's code (or a function it calls) with {}",
                family.takers()
            ));
        self.released.push(((object, family), d));
    }

    /// Remembers the first release of `object` by `family` in each form
    /// (`_irqrestore` or not), for the check that it is taken that way.
    fn note_release_form(
        &mut self,
        written: &S<String>,
        object: ObjectId,
        family: Family,
        irq: bool,
        op: &str,
    ) {
        let key = (object, family, irq);
        if self.released_forms.iter().any(|(k, _)| *k == key) {
            return;
        }
        let text = written.get_ref();
        let name_r = split_lockref(text).map_or(0..text.len(), |(r, _)| r);
        let name = &text[name_r.clone()];
        let prefix = family.prefix();
        let (taken, right, why) = if irq {
            (format!("{prefix}_lock"), format!("{prefix}_unlock"), "would turn interrupts on inside code that had them on anyway, restoring a state never saved")
        } else {
            (
                format!("{prefix}_lock_irqsave"),
                format!("{prefix}_unlock_irqrestore"),
                "would leave interrupts off after the lock is released",
            )
        };
        let msg = format!("`{op}` of `{name}`, which this task takes only with {taken}: it {why}");
        let d = self
            .ctx
            .at_str(written, StrErr::new(name_r, msg))
            .help(format!("release it with {right}"));
        self.released_forms.push((key, d));
    }
}

/// `percpu_down_read(&cpu_hotplug_lock)` and friends: `cpu_hotplug_lock` is
/// the one percpu_rw_semaphore every scenario has (unless it declares an
/// object of that name), the same as `cpus_read_lock()` and friends.
fn hotplug_lock_op(e: &Emitter<'_, '_>, written: &S<String>, l: LockOp) -> Option<Op> {
    let name = written.get_ref().trim();
    if name != "cpu_hotplug_lock" || e.ctx.objects.contains_key(name) {
        return None;
    }
    match (l.family, l.action) {
        (Family::PercpuRead, LockAction::Lock) => Some(Op::Locking(LockingOp::CpusReadLock)),
        (Family::PercpuRead, LockAction::Unlock) => Some(Op::Locking(LockingOp::CpusReadUnlock)),
        (Family::PercpuWrite, LockAction::Lock) => Some(Op::Locking(LockingOp::CpusWriteLock)),
        (Family::PercpuWrite, LockAction::Unlock) => Some(Op::Locking(LockingOp::CpusWriteUnlock)),
        _ => None,
    }
}
