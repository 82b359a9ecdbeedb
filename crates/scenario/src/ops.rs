//! A task group's `code` compiled to the kernel's program IR.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use smpsim_kernel::program::{
    CallFunc, CmpOp, Cond, CpuSet, Dist, Expr, LockMode, ObjRef, ObjectId, Op, Pc, Program, Slot,
};

use crate::duration::{parse_dist, MachineCosts};
use crate::error::{list, DResult, Diag, Sources, StrErr};
use crate::expr::{is_identifier, parse_cond, parse_expr, RESERVED};
use crate::raw::{Entries, RawExpr, RawOp, S};

/// Upper bound on a program's length after functions are inlined.
const MAX_OPS: usize = 1 << 20;

/// Every op kind: its required fields, then its optional ones.
pub(crate) const KINDS: &[(&str, &[&str], &[&str])] = &[
    ("work", &["time"], &[]),
    ("syscall", &["name", "body"], &[]),
    ("preempt_disable", &[], &[]),
    ("preempt_enable", &[], &[]),
    ("local_irq_disable", &[], &[]),
    ("local_irq_enable", &[], &[]),
    ("cpus_read_lock", &[], &[]),
    ("cpus_read_unlock", &[], &[]),
    ("cpus_write_lock", &[], &[]),
    ("cpus_write_unlock", &[], &[]),
    ("rcu_read_lock", &[], &[]),
    ("rcu_read_unlock", &[], &[]),
    ("synchronize_rcu", &[], &[]),
    ("synchronize_rcu_expedited", &[], &[]),
    ("rcu_expedite_gp", &[], &[]),
    ("rcu_unexpedite_gp", &[], &[]),
    ("set_cpu_offline", &["cpu"], &[]),
    ("set_cpu_online", &["cpu"], &[]),
    ("mutex_lock", &["lock"], &[]),
    ("mutex_unlock", &["lock"], &[]),
    ("mutex_guard", &["lock", "body"], &[]),
    ("spin_lock", &["lock"], &[]),
    ("spin_unlock", &["lock"], &[]),
    ("spin_lock_irqsave", &["lock"], &[]),
    ("spin_unlock_irqrestore", &["lock"], &[]),
    ("spin_guard", &["lock", "body"], &["irqsave"]),
    ("read_lock", &["lock"], &[]),
    ("read_unlock", &["lock"], &[]),
    ("read_lock_irqsave", &["lock"], &[]),
    ("read_unlock_irqrestore", &["lock"], &[]),
    ("read_guard", &["lock", "body"], &["irqsave"]),
    ("write_lock", &["lock"], &[]),
    ("write_unlock", &["lock"], &[]),
    ("write_lock_irqsave", &["lock"], &[]),
    ("write_unlock_irqrestore", &["lock"], &[]),
    ("write_guard", &["lock", "body"], &["irqsave"]),
    (
        "smp_call_function_single",
        &["cpu", "func"],
        &["units", "wait"],
    ),
    (
        "smp_call_function_many",
        &["cpus", "func"],
        &["units", "wait"],
    ),
    ("sleep", &["time"], &["overshoot"]),
    ("set", &["var", "value"], &[]),
    ("if", &["cond", "then"], &["else"]),
    ("loop", &["count", "body"], &[]),
    ("choose", &["options"], &[]),
    ("count", &["counter"], &[]),
    ("mark", &["var"], &[]),
    ("record", &["hist", "since"], &[]),
    ("call", &["fn"], &[]),
    ("exit", &[], &[]),
    ("atomic_inc", &["obj"], &[]),
    ("atomic_dec", &["obj"], &[]),
    ("atomic_read", &["obj"], &[]),
    ("down", &["obj"], &[]),
    ("up", &["obj"], &[]),
];

/// What kind of lock an object is, which decides the ops that may take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockKind {
    Mutex,
    Spinlock,
    Rwlock,
    Atomic,
    Semaphore,
}

impl LockKind {
    fn name(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::Spinlock => "spinlock",
            LockKind::Rwlock => "rwlock",
            LockKind::Atomic => "atomic",
            LockKind::Semaphore => "semaphore",
        }
    }

    fn ops(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex_lock, mutex_unlock, mutex_guard",
            LockKind::Spinlock => {
                "spin_lock, spin_unlock, spin_lock_irqsave, spin_unlock_irqrestore, spin_guard"
            }
            LockKind::Rwlock => {
                "read_lock, read_unlock, read_lock_irqsave, read_unlock_irqrestore, read_guard, \
                 write_lock, write_unlock, write_lock_irqsave, write_unlock_irqrestore, write_guard"
            }
            LockKind::Atomic => "atomic_inc, atomic_dec, atomic_read",
            LockKind::Semaphore => "down, up",
        }
    }
}

/// What a lock op does, apart from which kind of lock it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockAction {
    Lock,
    Unlock,
    Guard,
}

/// A lock op taken apart: `read_unlock_irqrestore` is the `read` family's
/// unlock with interrupts restored. `None` for ops that take no lock.
/// The family is `mutex`, or the [`LockMode::op_prefix`] of a spinning lock.
fn lock_op(op: &str) -> Option<(&'static str, LockAction, bool)> {
    let (family, rest) = ["mutex", "spin", "read", "write"]
        .into_iter()
        .find_map(|f| Some((f, op.strip_prefix(f)?.strip_prefix('_')?)))?;
    let (action, irq) = match rest {
        "lock" => (LockAction::Lock, false),
        "unlock" => (LockAction::Unlock, false),
        "guard" => (LockAction::Guard, false),
        "lock_irqsave" if family != "mutex" => (LockAction::Lock, true),
        "unlock_irqrestore" if family != "mutex" => (LockAction::Unlock, true),
        _ => return None,
    };
    Some((family, action, irq))
}

/// The spinning-lock mode of a `spin`/`read`/`write` op family.
fn family_mode(family: &str) -> LockMode {
    match family {
        "read" => LockMode::Read,
        "write" => LockMode::Write,
        _ => LockMode::Exclusive,
    }
}

/// The op(s) for a `kind` object that do what the lock op `op` meant to do:
/// `spin_lock` for `mutex_lock` on a spinlock, `read_lock or write_lock`
/// for `spin_lock` on an rwlock.
fn counterpart(op: &str, kind: LockKind) -> Option<String> {
    let (_, action, irq) = lock_op(op)?;
    let suffix = match action {
        LockAction::Lock => "lock",
        LockAction::Unlock => "unlock",
        LockAction::Guard => "guard",
    };
    let irq = match (irq, action, kind) {
        (false, _, _) | (_, _, LockKind::Mutex) => "",
        (true, LockAction::Lock, _) => "_irqsave",
        (true, _, _) => "_irqrestore",
    };
    match kind {
        LockKind::Mutex => Some(format!("mutex_{suffix}")),
        LockKind::Spinlock => Some(format!("spin_{suffix}{irq}")),
        LockKind::Rwlock => Some(format!("read_{suffix}{irq} or write_{suffix}{irq}")),
        LockKind::Atomic | LockKind::Semaphore => None,
    }
}

/// A declared object, by name.
#[derive(Debug)]
pub(crate) enum ObjEntry {
    Lock {
        id: ObjectId,
        per_cpu: bool,
        kind: LockKind,
    },
    Alias {
        to: S<String>,
    },
}

/// What programs are compiled against: objects, functions, and the
/// counters and histograms found so far.
pub(crate) struct Ctx<'d> {
    pub srcs: &'d Sources,
    pub objects: HashMap<String, ObjEntry>,
    pub object_names: Vec<String>,
    pub functions: HashMap<String, &'d S<Vec<S<RawOp>>>>,
    pub counters: Vec<String>,
    pub histograms: Vec<String>,
    /// For `cost.NAME` in distributions.
    pub costs: MachineCosts,
}

impl Ctx<'_> {
    /// An error at bytes `e.range` of the string value `v`.
    pub fn at_str(&self, v: &S<String>, e: StrErr) -> Diag {
        let span = self.srcs.sub_span(&v.span(), v.get_ref(), e.range.clone());
        e.at(span)
    }
}

/// Byte ranges of the comma-separated parts of `s`, ignoring commas inside
/// parentheses (so `"uniform(0, 4), 2"` has two parts).
fn split_top_level(s: &str) -> Vec<Range<usize>> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(start..i);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(start..s.len());
    parts
}

fn intern(names: &mut Vec<String>, name: &str) -> u32 {
    match names.iter().position(|n| n == name) {
        Some(i) => i as u32,
        None => {
            names.push(name.to_string());
            (names.len() - 1) as u32
        }
    }
}

/// Splits `name` or `name[index]` into the byte ranges of the name and index.
pub(crate) fn split_lockref(s: &str) -> Result<(Range<usize>, Option<Range<usize>>), StrErr> {
    let start = s.len() - s.trim_start().len();
    let end = s.trim_end().len();
    if start >= end {
        return Err(StrErr::new(0..s.len(), "expected an object name"));
    }
    match s[..end].find('[') {
        None => Ok((start..end, None)),
        Some(open) => {
            if !s[..end].ends_with(']') || end - 1 <= open {
                return Err(StrErr::new(
                    open..end,
                    "expected `NAME[INDEX]` with a closing `]`",
                ));
            }
            let name_end = s[..open].trim_end().len();
            if name_end <= start {
                return Err(StrErr::new(
                    start..open,
                    "expected an object name before `[`",
                ));
            }
            Ok((start..name_end, Some(open + 1..end - 1)))
        }
    }
}

fn check_fields(op: &S<RawOp>) -> DResult<(&'static str, &'static [&'static str])> {
    let kind = op.get_ref().op.get_ref().as_str();
    let Some(&(name, req, opt)) = KINDS.iter().find(|(k, _, _)| *k == kind) else {
        return Err(
            Diag::new(op.get_ref().op.span(), format!("unknown op `{kind}`"))
                .help(format!("ops: {}", list(KINDS.iter().map(|k| k.0)))),
        );
    };
    let present = op.get_ref().present();
    for (field, span) in &present {
        if !req.contains(field) && !opt.contains(field) {
            let allowed: Vec<&str> = req.iter().chain(opt.iter()).copied().collect();
            let msg = if allowed.is_empty() {
                format!("`{field}` is not a field of op `{name}`; op `{name}` takes no fields")
            } else {
                format!(
                    "`{field}` is not a field of op `{name}`; expected one of: {}",
                    allowed.join(", ")
                )
            };
            return Err(Diag::new(span.clone(), msg));
        }
    }
    for field in req {
        if !present.iter().any(|(f, _)| f == field) {
            return Err(Diag::new(op.span(), format!("op `{name}` needs `{field}`")));
        }
    }
    Ok((name, req))
}

fn need<'a, T>(v: &'a Option<S<T>>, op: &S<RawOp>, field: &str) -> DResult<&'a S<T>> {
    v.as_ref().ok_or_else(|| {
        Diag::new(
            op.span(),
            format!("op `{}` needs `{field}`", op.get_ref().op.get_ref()),
        )
    })
}

/// Calls `f` on every op, descending into bodies and called functions
/// (each function once).
fn walk<'d>(
    ctx: &Ctx<'d>,
    ops: &'d [S<RawOp>],
    seen: &mut Vec<String>,
    f: &mut dyn FnMut(&'d S<RawOp>) -> DResult<()>,
) -> DResult<()> {
    for op in ops {
        f(op)?;
        let r = op.get_ref();
        for body in [&r.body, &r.then, &r.else_].into_iter().flatten() {
            walk(ctx, body.get_ref(), seen, f)?;
        }
        for choice in r.options.iter().flat_map(|o| o.get_ref()) {
            walk(ctx, choice.get_ref().body.get_ref(), seen, f)?;
        }
        if let (Some(name), "call") = (&r.func_name, r.op.get_ref().as_str()) {
            if let Some(body) = ctx.functions.get(name.get_ref()) {
                if !seen.contains(name.get_ref()) {
                    seen.push(name.get_ref().clone());
                    walk(ctx, body.get_ref(), seen, f)?;
                }
            }
        }
    }
    Ok(())
}

/// A cross-CPU call's `wait`: synchronous unless told otherwise, as most
/// callers in the kernel are.
fn wait(r: &RawOp) -> bool {
    r.wait.as_ref().map(|w| *w.get_ref()).unwrap_or(true)
}

/// "`zone_lock` is a spinlock; use spin_lock", naming the alias too when
/// the lock was reached through one.
fn wrong_kind(written: &str, name: &str, kind: LockKind, op: &str) -> String {
    let what = if written == name {
        format!("`{name}` is a {}", kind.name())
    } else {
        format!("`{written}` stands for `{name}`, a {}", kind.name())
    };
    match counterpart(op, kind) {
        Some(ops) => format!("{what}; use {ops}"),
        None => format!("{what}; use one of {}", kind.ops()),
    }
}

struct Emitter<'c, 'd> {
    ctx: &'c mut Ctx<'d>,
    ops: Vec<Op>,
    slots: HashMap<String, Slot>,
    nslots: usize,
    calls: Vec<String>,
    /// Objects the program takes, with the op family taking them (`mutex`,
    /// `spin`, `read`, `write`).
    taken: HashSet<(ObjectId, &'static str)>,
    /// The first release of each object by each family, in program order,
    /// with the error to report if the program never takes it that way.
    released: Vec<((ObjectId, &'static str), Diag)>,
    released_keys: HashSet<(ObjectId, &'static str)>,
}

fn resolver(slots: &HashMap<String, Slot>) -> impl Fn(&str) -> Result<Slot, Vec<String>> + '_ {
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

impl Emitter<'_, '_> {
    fn pc(&self) -> Pc {
        self.ops.len() as Pc
    }

    fn push(&mut self, op: Op) -> usize {
        self.ops.push(op);
        self.ops.len() - 1
    }

    fn new_slot(&mut self, name: String, span: Range<usize>) -> DResult<Slot> {
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

    fn declare(&mut self, var: &S<String>) -> DResult<()> {
        let name = var.get_ref();
        if !is_identifier(name) || RESERVED.contains(&name.as_str()) {
            return Err(Diag::new(var.span(), format!("`{name}` cannot be a variable name"))
                .help("variables are identifiers (letters, digits, `_`) other than the built-in names"));
        }
        if !self.slots.contains_key(name) {
            self.new_slot(name.clone(), var.span())?;
        }
        Ok(())
    }

    fn expr(&self, v: &S<RawExpr>) -> DResult<Expr> {
        match v.get_ref() {
            RawExpr::Int(i) => Ok(Expr::Const(*i)),
            RawExpr::Text(t) => {
                let r = resolver(&self.slots);
                parse_expr(t, &r).map_err(|e| self.ctx.at_str(&S::new(v.span(), t.clone()), e))
            }
        }
    }

    fn cond(&self, v: &S<String>) -> DResult<Cond> {
        let r = resolver(&self.slots);
        parse_cond(v.get_ref(), &r).map_err(|e| self.ctx.at_str(v, e))
    }

    fn slot_of(&self, v: &S<String>) -> DResult<Slot> {
        self.slots.get(v.get_ref()).copied().ok_or_else(|| {
            Diag::new(v.span(), format!("unknown variable `{}`", v.get_ref()))
                .help("a `record` op's `since` names a variable set by a `mark` op")
        })
    }

    /// An expression written at bytes `r` of the string value `v`.
    fn sub_expr(&self, v: &S<String>, r: Range<usize>) -> DResult<Expr> {
        let res = resolver(&self.slots);
        parse_expr(&v.get_ref()[r.clone()], &res).map_err(|mut e| {
            e.range = e.range.start + r.start..e.range.end + r.start;
            self.ctx.at_str(v, e)
        })
    }

    /// Resolves a `lock` field through aliases to an object of kind `want`;
    /// `op` names the op, to suggest the right one on a kind mismatch.
    fn lock(&self, lock: &S<String>, want: LockKind, op: &str) -> DResult<ObjRef> {
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
                Some(&ObjEntry::Lock { id, per_cpu, kind }) => {
                    if kind != want {
                        let msg = wrong_kind(&lock.get_ref()[written.clone()], name, kind, op);
                        return Err(ctx.at_str(lock, StrErr::new(written, msg)).help(format!(
                            "{} ops: {}",
                            kind.name(),
                            kind.ops()
                        )));
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

    /// `smp_call_function_many`'s `cpus`: `mm_cpumask`, `all_but_self`, or a
    /// comma-separated list of CPU expressions.
    fn cpuset(&self, v: &S<String>) -> DResult<CpuSet> {
        let text = v.get_ref();
        match text.trim() {
            "mm_cpumask" => return Ok(CpuSet::MmCpumask),
            "all_but_self" => return Ok(CpuSet::AllButSelf),
            "all" => {
                return Err(Diag::new(
                    v.span(),
                    "`all` would include the calling CPU, which smp_call_function_many never runs the function on",
                )
                .help("write \"all_but_self\" for every other online CPU, or \"mm_cpumask\" for the CPUs running this address space"));
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
            cpus.push(self.sub_expr(v, part)?);
        }
        Ok(CpuSet::List(cpus))
    }

    /// The function a cross-CPU call runs: its cost, times `units` if given.
    fn call_func(&self, op: &S<RawOp>) -> DResult<CallFunc> {
        let r = op.get_ref();
        let cost = self.dist(need(&r.func, op, "func")?)?;
        let units = match &r.units {
            None => None,
            Some(u) => match self.expr(u)? {
                Expr::Const(c) if c < 0 => {
                    return Err(Diag::new(
                        u.span(),
                        format!("`units` cannot be negative (got {c})"),
                    ));
                }
                e => Some(e),
            },
        };
        Ok(CallFunc { cost, units })
    }

    fn dist(&self, v: &S<String>) -> DResult<Dist> {
        parse_dist(v.get_ref(), &self.ctx.costs).map_err(|e| self.ctx.at_str(v, e))
    }

    fn block(&mut self, ops: &[S<RawOp>]) -> DResult<()> {
        ops.iter().try_for_each(|op| self.op(op))
    }

    fn op(&mut self, op: &S<RawOp>) -> DResult<()> {
        if self.ops.len() > MAX_OPS {
            return Err(Diag::new(
                op.span(),
                "program is too long (over 1,048,576 ops after inlining functions)",
            ));
        }
        let (kind, _) = check_fields(op)?;
        let r = op.get_ref();
        match kind {
            "work" => {
                let d = self.dist(need(&r.time, op, "time")?)?;
                self.push(Op::Work(d));
            }
            "syscall" => {
                need(&r.name, op, "name")?;
                self.push(Op::SyscallEnter);
                self.block(need(&r.body, op, "body")?.get_ref())?;
                self.push(Op::SyscallExit);
            }
            "preempt_disable" => {
                self.push(Op::PreemptDisable);
            }
            "preempt_enable" => {
                self.push(Op::PreemptEnable);
            }
            "local_irq_disable" => {
                self.push(Op::LocalIrqDisable);
            }
            "local_irq_enable" => {
                self.push(Op::LocalIrqEnable);
            }
            "cpus_read_lock" => {
                self.push(Op::CpusReadLock);
            }
            "cpus_read_unlock" => {
                self.push(Op::CpusReadUnlock);
            }
            "cpus_write_lock" => {
                self.push(Op::CpusWriteLock);
            }
            "cpus_write_unlock" => {
                self.push(Op::CpusWriteUnlock);
            }
            "rcu_read_lock" => {
                self.push(Op::RcuReadLock);
            }
            "rcu_read_unlock" => {
                self.push(Op::RcuReadUnlock);
            }
            "synchronize_rcu" => {
                self.push(Op::SynchronizeRcu);
            }
            "synchronize_rcu_expedited" => {
                self.push(Op::SynchronizeRcuExpedited);
            }
            "rcu_expedite_gp" => {
                self.push(Op::RcuExpediteGp);
            }
            "rcu_unexpedite_gp" => {
                self.push(Op::RcuUnexpediteGp);
            }
            "atomic_inc" | "atomic_dec" | "atomic_read" => {
                let l = self.lock(need(&r.obj, op, "obj")?, LockKind::Atomic, kind)?;
                self.push(if kind == "atomic_read" {
                    Op::AtomicRead(l)
                } else {
                    Op::AtomicRmw(l)
                });
            }
            "down" | "up" => {
                let l = self.lock(need(&r.obj, op, "obj")?, LockKind::Semaphore, kind)?;
                self.push(if kind == "down" {
                    Op::Down(l)
                } else {
                    Op::Up(l)
                });
            }
            "set_cpu_offline" | "set_cpu_online" => {
                let cpu = self.expr(need(&r.cpu, op, "cpu")?)?;
                self.push(if kind == "set_cpu_offline" {
                    Op::CpuOffline(cpu)
                } else {
                    Op::CpuOnline(cpu)
                });
            }
            "exit" => {
                self.push(Op::Exit);
            }
            "smp_call_function_single" => {
                let cpu = self.expr(need(&r.cpu, op, "cpu")?)?;
                let func = self.call_func(op)?;
                self.push(Op::SmpCallFunctionSingle {
                    cpu,
                    func,
                    wait: wait(r),
                });
            }
            "smp_call_function_many" => {
                let cpus = self.cpuset(need(&r.cpus, op, "cpus")?)?;
                let func = self.call_func(op)?;
                self.push(Op::SmpCallFunctionMany {
                    cpus,
                    func,
                    wait: wait(r),
                });
            }
            "sleep" => {
                let dist = self.dist(need(&r.time, op, "time")?)?;
                let overshoot = r
                    .overshoot
                    .as_ref()
                    .map(|h| intern(&mut self.ctx.histograms, h.get_ref()));
                self.push(Op::Sleep { dist, overshoot });
            }
            "set" => {
                let slot = self.slot_of(need(&r.var, op, "var")?)?;
                let expr = self.expr(need(&r.value, op, "value")?)?;
                self.push(Op::Set { slot, expr });
            }
            "if" => {
                let cond = self.cond(need(&r.cond, op, "cond")?)?;
                let branch = self.push(Op::JumpUnless(cond, 0));
                self.block(need(&r.then, op, "then")?.get_ref())?;
                match &r.else_ {
                    Some(else_) => {
                        let skip = self.push(Op::Jump(0));
                        self.patch(branch, self.pc());
                        self.block(else_.get_ref())?;
                        self.patch(skip, self.pc());
                    }
                    None => self.patch(branch, self.pc()),
                }
            }
            "loop" => self.emit_loop(op)?,
            "choose" => self.emit_choose(op)?,
            "count" => {
                let c = intern(
                    &mut self.ctx.counters,
                    need(&r.counter, op, "counter")?.get_ref(),
                );
                self.push(Op::Count(c));
            }
            "mark" => {
                let slot = self.slot_of(need(&r.var, op, "var")?)?;
                self.push(Op::Mark(slot));
            }
            "record" => {
                let slot = self.slot_of(need(&r.since, op, "since")?)?;
                let hist = intern(
                    &mut self.ctx.histograms,
                    need(&r.hist, op, "hist")?.get_ref(),
                );
                self.push(Op::RecordSince { hist, slot });
            }
            "call" => {
                let name = need(&r.func_name, op, "fn")?;
                let Some(body) = self.ctx.functions.get(name.get_ref()).copied() else {
                    let mut known: Vec<&String> = self.ctx.functions.keys().collect();
                    known.sort();
                    return Err(Diag::new(
                        name.span(),
                        format!("unknown function `{}`", name.get_ref()),
                    )
                    .help(format!("functions: {}", list(known))));
                };
                if self.calls.contains(name.get_ref()) {
                    return Err(Diag::new(
                        name.span(),
                        format!("function `{}` calls itself", name.get_ref()),
                    ));
                }
                self.calls.push(name.get_ref().clone());
                self.block(body.get_ref())?;
                self.calls.pop();
            }
            k if lock_op(k).is_some() => self.emit_lock(op, k)?,
            _ => unreachable!("check_fields accepts only known ops"),
        }
        Ok(())
    }

    /// The mutex, spinlock and rwlock ops: take, release, or a guard (take,
    /// body, release). The `_irqsave`/`_irqrestore` forms (and guards with
    /// `irqsave`) also disable and restore local interrupts.
    fn emit_lock(&mut self, op: &S<RawOp>, kind: &str) -> DResult<()> {
        let r = op.get_ref();
        let (family, action, irq) = lock_op(kind).expect("emit_lock is called for lock ops");
        let want = match family {
            "mutex" => LockKind::Mutex,
            "spin" => LockKind::Spinlock,
            _ => LockKind::Rwlock,
        };
        let written = need(&r.lock, op, "lock")?;
        let lock = self.lock(written, want, kind)?;
        let mode = family_mode(family);
        let take = |lock: ObjRef, irqsave: bool| match want {
            LockKind::Mutex => Op::MutexLock(lock),
            _ => Op::SpinLock {
                lock,
                mode,
                irqsave,
            },
        };
        let release = |lock: ObjRef, irqrestore: bool| match want {
            LockKind::Mutex => Op::MutexUnlock(lock),
            _ => Op::SpinUnlock {
                lock,
                mode,
                irqrestore,
            },
        };
        match action {
            LockAction::Lock => {
                self.taken.insert((lock.object, family));
                self.push(take(lock, irq));
            }
            LockAction::Unlock => {
                self.note_release(written, lock.object, family, kind);
                self.push(release(lock, irq));
            }
            LockAction::Guard => {
                let irqsave = r.irqsave.as_ref().is_some_and(|v| *v.get_ref());
                self.taken.insert((lock.object, family));
                self.push(take(lock.clone(), irqsave));
                self.block(need(&r.body, op, "body")?.get_ref())?;
                self.push(release(lock, irqsave));
            }
        }
        Ok(())
    }

    /// Remembers the first release of `object` by the op family `family`,
    /// for the check that the program also takes it (see [`compile`]).
    fn note_release(
        &mut self,
        written: &S<String>,
        object: ObjectId,
        family: &'static str,
        op: &str,
    ) {
        if !self.released_keys.insert((object, family)) {
            return;
        }
        let text = written.get_ref();
        let name_r = split_lockref(text).map_or(0..text.len(), |(r, _)| r);
        let name = &text[name_r.clone()];
        let takers = if family == "mutex" {
            "mutex_lock or mutex_guard".to_string()
        } else {
            format!("{family}_lock, {family}_lock_irqsave or {family}_guard")
        };
        let msg = format!(
            "`{op}` of `{name}`, but this task's code never takes it with {family}_lock; \
             a lock must be released by the task that holds it"
        );
        let d = self
            .ctx
            .at_str(written, StrErr::new(name_r, msg))
            .help(format!(
                "take it in this task group's code (or a function it calls) with {takers}"
            ));
        self.released.push(((object, family), d));
    }

    fn patch(&mut self, at: usize, target: Pc) {
        match &mut self.ops[at] {
            Op::Jump(t) | Op::JumpUnless(_, t) => *t = target,
            _ => unreachable!("patching a non-jump"),
        }
    }

    fn emit_loop(&mut self, op: &S<RawOp>) -> DResult<()> {
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
            let start = self.pc();
            self.block(body.get_ref())?;
            self.push(Op::Jump(start));
            return Ok(());
        }
        let n = self.expr(count)?;
        if let Expr::Const(c) = n {
            if c < 0 {
                return Err(Diag::new(
                    count.span(),
                    format!("loop count cannot be negative (got {c})"),
                ));
            }
        }
        let slot = self.new_slot(format!(" loop{}", self.nslots), count.span())?;
        self.push(Op::Set { slot, expr: n });
        let skip = self.push(Op::JumpUnless(
            Cond::Cmp(CmpOp::Gt, Expr::Var(slot), Expr::Const(0)),
            0,
        ));
        let target = self.pc();
        self.block(body.get_ref())?;
        self.push(Op::LoopBack { slot, target });
        self.patch(skip, self.pc());
        Ok(())
    }

    fn emit_choose(&mut self, op: &S<RawOp>) -> DResult<()> {
        let options = need(&op.get_ref().options, op, "options")?;
        if options.get_ref().is_empty() {
            return Err(Diag::new(
                options.span(),
                "`choose` needs at least one option",
            ));
        }
        let at = self.push(Op::Choose {
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
            cumulative.push((total, self.pc()));
            self.block(choice.get_ref().body.get_ref())?;
            if i < last {
                to_end.push(self.push(Op::Jump(0)));
            }
        }
        let end = self.pc();
        for j in to_end {
            self.patch(j, end);
        }
        self.ops[at] = Op::Choose { cumulative };
        Ok(())
    }
}

/// Compiles one task group's program.
pub(crate) fn compile(
    ctx: &mut Ctx<'_>,
    vars: Option<&Entries<S<RawExpr>>>,
    code: &S<Vec<S<RawOp>>>,
) -> DResult<Program> {
    let mut e = Emitter {
        ctx,
        ops: Vec::new(),
        slots: HashMap::new(),
        nslots: 0,
        calls: Vec::new(),
        taken: HashSet::new(),
        released: Vec::new(),
        released_keys: HashSet::new(),
    };
    // Declare every variable first: `vars`, then `set` and `mark` targets.
    let vars: &[(S<String>, S<RawExpr>)] = vars.map_or(&[], |v| &v.0);
    for (name, _) in vars {
        e.declare(name)?;
    }
    let mut declared = Vec::new();
    walk(e.ctx, code.get_ref(), &mut Vec::new(), &mut |op| {
        let r = op.get_ref();
        if matches!(r.op.get_ref().as_str(), "set" | "mark") {
            if let Some(v) = &r.var {
                declared.push(v);
            }
        }
        Ok(())
    })?;
    for v in declared {
        e.declare(v)?;
    }
    let mut init = Vec::new();
    for (name, value) in vars {
        init.push((e.slots[name.get_ref()], e.expr(value)?));
    }
    e.block(code.get_ref())?;
    // A lock released by a task that cannot hold it: no take of the object
    // in the same mode anywhere in the program. Loops and branches are not
    // followed; this only catches code that releases what others take.
    if let Some((_, d)) = e.released.iter().find(|(k, _)| !e.taken.contains(k)) {
        return Err(d.clone());
    }
    let end = e.pc();
    let falls_off = e.ops.is_empty()
        || !matches!(e.ops.last(), Some(Op::Exit | Op::Jump(_)))
        || e.ops.iter().any(|op| match op {
            Op::Jump(t) | Op::JumpUnless(_, t) | Op::LoopBack { target: t, .. } => *t == end,
            Op::Choose { cumulative } => cumulative.iter().any(|(_, t)| *t == end),
            _ => false,
        });
    if falls_off {
        e.ops.push(Op::Exit);
    }
    Ok(Program {
        ops: e.ops,
        slots: e.nslots as u16,
        init,
    })
}

/// Reports a cycle among `[functions]` (even unused ones) at a call in it.
pub(crate) fn check_function_cycles(
    functions: &HashMap<String, &S<Vec<S<RawOp>>>>,
    order: &[String],
) -> DResult<()> {
    fn calls(ops: &[S<RawOp>], out: &mut Vec<S<String>>) {
        for op in ops {
            let r = op.get_ref();
            if r.op.get_ref() == "call" {
                if let Some(f) = &r.func_name {
                    out.push(f.clone());
                }
            }
            for body in [&r.body, &r.then, &r.else_].into_iter().flatten() {
                calls(body.get_ref(), out);
            }
            for c in r.options.iter().flat_map(|o| o.get_ref()) {
                calls(c.get_ref().body.get_ref(), out);
            }
        }
    }
    // 0 = unvisited, 1 = on the stack, 2 = done.
    fn visit(
        name: &str,
        functions: &HashMap<String, &S<Vec<S<RawOp>>>>,
        state: &mut HashMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> DResult<()> {
        state.insert(name.to_string(), 1);
        stack.push(name.to_string());
        let mut out = Vec::new();
        calls(functions[name].get_ref(), &mut out);
        for callee in out {
            let c = callee.get_ref();
            if !functions.contains_key(c) {
                continue; // reported where it is compiled
            }
            match state.get(c).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == c).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(c.clone());
                    return Err(Diag::new(
                        callee.span(),
                        format!(
                            "functions call each other in a cycle: {}",
                            cycle.join(" -> ")
                        ),
                    )
                    .help("functions are inlined where they are called, so they cannot recurse"));
                }
                0 => visit(c, functions, state, stack)?,
                _ => {}
            }
        }
        stack.pop();
        state.insert(name.to_string(), 2);
        Ok(())
    }
    let mut state = HashMap::new();
    for name in order {
        if state.get(name).copied().unwrap_or(0) == 0 {
            visit(name, functions, &mut state, &mut Vec::new())?;
        }
    }
    Ok(())
}
