//! A task group's `code` compiled to the kernel's program IR.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use smpsim_kernel::program::{Cond, Dist, Expr, ObjRef, ObjectId, Op, Pc, Program, Slot};

use crate::duration::{parse_dist, MachineCosts};
use crate::error::{list, DResult, Diag, Sources, StrErr};
use crate::expr::{const_value, is_identifier, parse_cond, parse_expr, RESERVED};
use crate::object_type::ObjectType;
use crate::raw::{Entries, RawExpr, RawOp, S};

mod cpumask;
mod lower;
mod registry;

use registry::{check_fields, wrong_kind, Family, Lower, OpDef};

/// An op's name and fields as its registry entry has them, for the
/// code-path syntax (`crate::codepath`), which maps call arguments onto
/// fields through it so that every registered op is covered.
pub(crate) struct OpSig {
    pub name: &'static str,
    pub required: &'static [&'static str],
    pub optional: &'static [&'static str],
    /// `(alias, field)` pairs.
    pub aliases: &'static [(&'static str, &'static str)],
}

/// Every registered op, in registry order.
pub(crate) fn signatures() -> impl Iterator<Item = OpSig> {
    registry::OPS.iter().map(|d| OpSig {
        name: d.name,
        required: d.required,
        optional: d.optional,
        aliases: d.aliases,
    })
}

/// Upper bound on how deep functions call functions (and handlers): each
/// level is inlined by a recursive compile.
pub(crate) const MAX_CALL_DEPTH: usize = 100;

/// Upper bound on a program's length after functions are inlined.
const MAX_OPS: usize = 1 << 20;

/// A declared object, by name.
#[derive(Debug)]
pub(crate) enum ObjEntry {
    Lock {
        id: ObjectId,
        per_cpu: bool,
        kind: ObjectType,
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
    /// Cross-CPU call handlers compiled so far, by function name.
    pub handlers: Vec<(String, Program)>,
    /// The handler being compiled: a handler cannot name another one.
    pub in_handler: Option<String>,
    /// For `cost.NAME` in distributions.
    pub costs: MachineCosts,
    /// The machine's CPUs: a constant CPU outside them is an error.
    pub nr_cpus: u32,
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

/// Refuses a constant CPU number the machine does not have.
fn check_cpu(e: &Expr, nr_cpus: u32) -> Result<(), String> {
    match const_value(e, Some(nr_cpus)) {
        Some(c) if c < 0 || c >= i64::from(nr_cpus) => Err(format!(
            "CPU {c} does not exist: the machine has {nr_cpus} CPUs (0-{})",
            nr_cpus - 1
        )),
        _ => Ok(()),
    }
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

fn need<'a, T>(v: &'a Option<S<T>>, op: &S<RawOp>, field: &str) -> DResult<&'a S<T>> {
    v.as_ref().ok_or_else(|| needs(op, field))
}

fn needs(op: &S<RawOp>, field: &str) -> Diag {
    Diag::new(
        op.span(),
        format!("op `{}` needs `{field}`", op.get_ref().op.get_ref()),
    )
}

/// The object an object op names: `obj` for the atomics, `lock` (or its
/// alias `obj`) for the semaphore ops. [`check_fields`] lets at most one
/// through, and only the ones the op takes.
fn object_field<'a>(op: &'a S<RawOp>, def: &OpDef) -> DResult<&'a S<String>> {
    let r = op.get_ref();
    let field = def.required.first().copied().unwrap_or("obj");
    r.lock
        .as_ref()
        .or(r.obj.as_ref())
        .ok_or_else(|| needs(op, field))
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

struct Emitter<'c, 'd> {
    ctx: &'c mut Ctx<'d>,
    ops: Vec<Op>,
    slots: HashMap<String, Slot>,
    nslots: usize,
    calls: Vec<String>,
    /// Objects the program takes, with the op family taking them (`mutex`,
    /// `spin`, `read`, `write`).
    taken: HashSet<(ObjectId, Family)>,
    /// The first release of each object by each family, in program order,
    /// with the error to report if the program never takes it that way.
    released: Vec<((ObjectId, Family), Diag)>,
    released_keys: HashSet<(ObjectId, Family)>,
    /// The forms objects are taken in: with `_irqsave` or without.
    taken_forms: HashSet<(ObjectId, Family, bool)>,
    /// The first release in each form, with the error to report if the
    /// program takes the object only in the other form.
    released_forms: Vec<((ObjectId, Family, bool), Diag)>,
    /// Cpumask variables by name (`cpumask.rs`), apart from `slots`.
    masks: HashMap<String, smpsim_kernel::program::MaskSlot>,
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

/// The shared variables of `objects`, for `read_once()` and friends.
fn shared_resolver(
    objects: &HashMap<String, ObjEntry>,
) -> impl Fn(&str) -> Result<(ObjectId, bool), Vec<String>> + '_ {
    move |name| match objects.get(name) {
        Some(&ObjEntry::Lock {
            id,
            per_cpu,
            kind: ObjectType::Variable,
        }) => Ok((id, per_cpu)),
        _ => {
            let mut names: Vec<String> = objects
                .iter()
                .filter(|(_, e)| {
                    matches!(
                        e,
                        ObjEntry::Lock {
                            kind: ObjectType::Variable,
                            ..
                        }
                    )
                })
                .map(|(n, _)| n.clone())
                .collect();
            names.sort();
            Err(names)
        }
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

    /// Declares every variable before any code is emitted: `vars`, then
    /// the targets of `set` and `mark` ops, in program order.
    fn declare_all(
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

    fn declare(&mut self, var: &S<String>) -> DResult<()> {
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

    fn expr(&self, v: &S<RawExpr>) -> DResult<Expr> {
        match v.get_ref() {
            RawExpr::Int(i) => Ok(Expr::Const(*i)),
            RawExpr::Text(t) => {
                let r = resolver(&self.slots);
                let sh = shared_resolver(&self.ctx.objects);
                parse_expr(t, &r, &sh).map_err(|e| {
                    let e = self.mask_as_number(t, e);
                    self.ctx.at_str(&S::new(v.span(), t.clone()), e)
                })
            }
        }
    }

    /// A `cpu` field: an expression that, when constant, is one of the
    /// machine's CPUs.
    fn cpu_expr(&self, v: &S<RawExpr>) -> DResult<Expr> {
        let e = self.expr(v)?;
        check_cpu(&e, self.ctx.nr_cpus).map_err(|m| Diag::new(v.span(), m))?;
        Ok(e)
    }

    /// A count (`loop`'s, `units`): an expression that, when constant, is
    /// not negative.
    fn count_expr(&self, v: &S<RawExpr>, what: &str) -> DResult<Expr> {
        let e = self.expr(v)?;
        match const_value(&e, Some(self.ctx.nr_cpus)) {
            Some(c) if c < 0 => Err(Diag::new(
                v.span(),
                format!("{what} cannot be negative (got {c})"),
            )),
            _ => Ok(e),
        }
    }

    fn cond(&self, v: &S<String>) -> DResult<Cond> {
        let r = resolver(&self.slots);
        let sh = shared_resolver(&self.ctx.objects);
        parse_cond(v.get_ref(), &r, &sh).map_err(|e| self.ctx.at_str(v, e))
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
        let sh = shared_resolver(&self.ctx.objects);
        parse_expr(&v.get_ref()[r.clone()], &res, &sh).map_err(|e| {
            let mut e = self.mask_as_number(&v.get_ref()[r.clone()], e);
            e.range = e.range.start + r.start..e.range.end + r.start;
            self.ctx.at_str(v, e)
        })
    }

    /// Resolves a `lock` field through aliases to an object of kind `want`;
    /// `def` is the op's, to suggest the right one on a kind mismatch.
    fn lock(&self, lock: &S<String>, want: ObjectType, def: &OpDef) -> DResult<ObjRef> {
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
                        let msg = wrong_kind(&lock.get_ref()[written.clone()], name, kind, def);
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

    /// The shared variable an op writes: `VAR` or `VAR[CPU]` through
    /// `lock()`'s resolution, or (`this_cpu`) a per-CPU `VAR` at this CPU.
    fn variable(&self, obj: &S<String>, this_cpu: bool) -> DResult<ObjRef> {
        let name = if this_cpu {
            "this_cpu_write"
        } else {
            "write_once"
        };
        let def = registry::OPS
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
    fn handler(&mut self, name: &S<String>) -> DResult<u32> {
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
        let program = compile(&mut *self.ctx, None, body);
        self.ctx.in_handler = None;
        let program = program?;
        let objects = &self.ctx.objects;
        let spinlock = |id: ObjectId| {
            objects.values().any(|e| {
                matches!(e, ObjEntry::Lock { id: i, per_cpu: false, kind: ObjectType::Spinlock } if *i == id)
            })
        };
        let allowed = program.ops.iter().all(|op| match op {
            Op::Work(_) | Op::Count(_) | Op::Exit => true,
            Op::Lock { lock, irqsave, .. }
            | Op::Unlock {
                lock,
                irqrestore: irqsave,
                ..
            } => !irqsave && lock.index.is_none() && spinlock(lock.object),
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

    fn dist(&self, v: &S<String>) -> DResult<Dist> {
        parse_dist(v.get_ref(), &self.ctx.costs).map_err(|e| self.ctx.at_str(v, e))
    }

    fn block(&mut self, ops: &[S<RawOp>]) -> DResult<()> {
        ops.iter().try_for_each(|op| self.op(op))
    }

    /// Emits one op, as its registry entry says.
    fn op(&mut self, op: &S<RawOp>) -> DResult<()> {
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
            Lower::Custom(lower) => lower(self, op)?,
        }
        Ok(())
    }

    fn patch(&mut self, at: usize, target: Pc) {
        match &mut self.ops[at] {
            Op::Jump(t) | Op::JumpUnless(_, t) => *t = target,
            _ => unreachable!("patching a non-jump"),
        }
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
        taken_forms: HashSet::new(),
        released_forms: Vec::new(),
        masks: HashMap::new(),
    };
    let vars: &[(S<String>, S<RawExpr>)] = vars.map_or(&[], |v| &v.0);
    e.declare_all(vars, code)?;
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
    // A `_irqrestore` release of a lock only ever taken without `_irqsave`
    // (or the reverse) leaves interrupts off, or turns them on, wrongly.
    let mismatched = e.released_forms.iter().find(|((o, f, irq), _)| {
        e.taken.contains(&(*o, *f)) && !e.taken_forms.contains(&(*o, *f, *irq))
    });
    if let Some((_, d)) = mismatched {
        return Err(d.clone());
    }
    if falls_off(&e.ops) {
        e.ops.push(Op::Exit);
    }
    Ok(Program {
        ops: e.ops,
        slots: e.nslots as u16,
        init,
    })
}

/// Whether a program can run past its last op: it is empty, ends with
/// neither `exit` nor a jump, or jumps to its end.
fn falls_off(ops: &[Op]) -> bool {
    let end = ops.len() as Pc;
    ops.is_empty()
        || !matches!(ops.last(), Some(Op::Exit | Op::Jump(_)))
        || ops.iter().any(|op| match op {
            Op::Jump(t) | Op::JumpUnless(_, t) | Op::LoopBack { target: t, .. } => *t == end,
            Op::Choose { cumulative } => cumulative.iter().any(|(_, t)| *t == end),
            _ => false,
        })
}

/// Reports a cycle among `[functions]` (even unused ones) at a call in it.
pub(crate) fn check_function_cycles(
    functions: &HashMap<String, &S<Vec<S<RawOp>>>>,
    order: &[String],
) -> DResult<()> {
    /// A function named in a body: by `call` (inlined) or as a cross-CPU
    /// call's `handler` (compiled on its own), with where it is named.
    type Refs = Vec<(S<String>, bool)>;
    fn refs(ops: &[S<RawOp>], out: &mut Refs) {
        for op in ops {
            let r = op.get_ref();
            if r.op.get_ref() == "call" {
                if let Some(f) = &r.func_name {
                    out.push((f.clone(), false));
                }
            }
            if let Some(h) = &r.handler {
                let name = h.get_ref().trim().to_string();
                out.push((S::new(h.span(), name), true));
            }
            for body in [&r.body, &r.then, &r.else_].into_iter().flatten() {
                refs(body.get_ref(), out);
            }
            for c in r.options.iter().flat_map(|o| o.get_ref()) {
                refs(c.get_ref().body.get_ref(), out);
            }
        }
    }
    // An iterative depth-first search (0 = unvisited, 1 = on the path,
    // 2 = done): a long chain of functions must not overflow the stack,
    // here or where they are inlined, so chains are bounded too.
    let mut state: HashMap<&str, u8> = HashMap::new();
    // The longest chain of references from a done function, itself counted.
    let mut height: HashMap<&str, usize> = HashMap::new();
    struct Frame<'f> {
        name: &'f str,
        as_handler: bool,
        todo: Refs,
        /// The highest callee seen so far.
        below: usize,
    }
    let frame = |name: &'_ str, as_handler: bool| {
        let mut todo = Vec::new();
        refs(functions[name].get_ref(), &mut todo);
        todo.reverse();
        (todo, as_handler)
    };
    for root in order {
        if state.get(root.as_str()).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut path: Vec<Frame<'_>> = Vec::new();
        let (todo, _) = frame(root, false);
        state.insert(root, 1);
        path.push(Frame {
            name: root,
            as_handler: false,
            todo,
            below: 0,
        });
        while let Some(top) = path.last_mut() {
            let Some((callee, as_handler)) = top.todo.pop() else {
                let done = path.pop().expect("non-empty");
                let h = done.below + 1;
                state.insert(done.name, 2);
                height.insert(done.name, h);
                if let Some(parent) = path.last_mut() {
                    parent.below = parent.below.max(h);
                }
                continue;
            };
            let Some((name, _)) = functions.get_key_value(callee.get_ref()) else {
                continue; // reported where it is compiled
            };
            let depth = path.len() + height.get(name.as_str()).copied().unwrap_or(1);
            if depth > MAX_CALL_DEPTH {
                let chain: Vec<&str> = path.iter().map(|f| f.name).chain([name.as_str()]).collect();
                let shown = match chain.len() {
                    n if n > 6 => format!(
                        "{} -> ... -> {}",
                        chain[..3].join(" -> "),
                        chain[n - 3..].join(" -> ")
                    ),
                    _ => chain.join(" -> "),
                };
                return Err(Diag::new(
                    callee.span(),
                    format!("functions nest more than {MAX_CALL_DEPTH} deep: {shown}"),
                )
                .help("functions are inlined where they are called; flatten the chain"));
            }
            match state.get(name.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|f| f.name == name).unwrap_or(0);
                    let mut cycle: Vec<String> = Vec::new();
                    let mut via_handler = as_handler;
                    for (i, f) in path[from..].iter().enumerate() {
                        // How each function after the first was reached.
                        if i > 0 && f.as_handler {
                            via_handler = true;
                            cycle.push(format!("(handler) {}", f.name));
                        } else {
                            cycle.push(f.name.to_string());
                        }
                    }
                    cycle.push(if as_handler {
                        format!("(handler) {name}")
                    } else {
                        name.clone()
                    });
                    let what = if via_handler {
                        "a cross-CPU call's handler sends a cross-CPU call that reaches it again"
                    } else {
                        "functions call each other in a cycle"
                    };
                    let help = if via_handler {
                        "a handler runs in hardirq context, where the kernel WARNs on a synchronous cross-CPU call (smp_call_function*() with IRQs disabled); a handler may only `work`, `count` and take a spinlock"
                    } else {
                        "functions are inlined where they are called, so they cannot recurse"
                    };
                    return Err(Diag::new(
                        callee.span(),
                        format!("{what}: {}", cycle.join(" -> ")),
                    )
                    .help(help));
                }
                0 => {
                    let (todo, as_handler) = frame(name, as_handler);
                    state.insert(name, 1);
                    path.push(Frame {
                        name,
                        as_handler,
                        todo,
                        below: 0,
                    });
                }
                _ => {
                    let h = height[name.as_str()];
                    let top = path.last_mut().expect("non-empty");
                    top.below = top.below.max(h);
                }
            }
        }
    }
    Ok(())
}
