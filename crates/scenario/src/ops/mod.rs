//! A task group's `code` compiled to the kernel's program IR.
//!
//! [`compile`] declares the group's variables, then the [`Emitter`]
//! (`emit.rs`) walks the ops: each is looked up in the registry
//! (`registry.rs`: its fields and how it lowers; what an entry is, in
//! `def.rs`, sits beneath it and the lowering functions), lowered
//! (`lower.rs`, and `cpumask.rs` for mask values; the lock ops in
//! `emit.rs`) and appended; at the end the lock/unlock
//! balance is checked and a program that can run off its end gets an
//! `exit`. Function cycles are found beforehand (`cycles.rs`).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use smpsim_kernel::program::{Expr, ObjectId, Op, Pc, Program};

use crate::duration::MachineCosts;
use crate::error::{DResult, Diag, Sources, StrErr};
use crate::expr::const_value;
use crate::object_type::ObjectType;
use crate::raw::{Entries, RawExpr, RawOp, S};

mod atomic;
mod cpumask;
mod cycles;
mod def;
mod emit;
mod lower;
mod registry;

pub(crate) use cycles::check_function_cycles;
use def::OpDef;
use emit::{Emitter, Enclosing};

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
    registry::ops().iter().map(|d| OpSig {
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
        /// An object array's length (`count = N`); `id` is its first
        /// element.
        array: Option<u32>,
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
    /// The hook being compiled: what its code sees of its event.
    pub hook_view: Option<crate::expr::HookView>,
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

/// Compiles one task group's program (`user_code`: it starts in user
/// mode, as a task's code; a handler's or a hook's runs in the kernel).
pub(crate) fn compile(
    ctx: &mut Ctx<'_>,
    vars: Option<&Entries<S<RawExpr>>>,
    code: &S<Vec<S<RawOp>>>,
    user_code: bool,
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
        user_code,
        syscall_depth: 0,
        loops: Vec::new(),
    };
    let vars: &[(S<String>, S<RawExpr>)] = vars.map_or(&[], |v| &v.0);
    e.declare_all(vars, code)?;
    let mut init = Vec::new();
    for (name, value) in vars {
        init.push((e.slots[name.get_ref()], e.var_init(value)?));
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
