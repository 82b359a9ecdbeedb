//! What an op registry entry is: its name, its fields and how it is
//! lowered, and the families of lock ops. The registry (`registry.rs`)
//! is a table of these; the lowering functions (`lower.rs`) read them
//! without reaching back into the table.

use smpsim_kernel::program::{Expr, LockMode, ObjRef, Op};

use super::Emitter;
use crate::error::DResult;
use crate::object_type::ObjectType;
use crate::raw::{RawOp, S};

use Family::{Mutex, PercpuRead, PercpuWrite, Read, RwsemRead, RwsemWrite, Spin, Write};
use LockAction::{Guard, Lock, Unlock};

/// One op kind: how it is written and how it is lowered.
#[derive(Clone)]
pub(super) struct OpDef {
    /// What `op = "..."` says.
    pub name: &'static str,
    /// The fields the op must have.
    pub required: &'static [&'static str],
    /// The fields it may have.
    pub optional: &'static [&'static str],
    /// Other names accepted for a field, as `(alias, field)`; an op may not
    /// give both.
    pub aliases: &'static [(&'static str, &'static str)],
    pub lower: Lower,
}

/// A lowering function: emits a checked op's IR.
pub(super) type LowerFn = fn(&mut Emitter<'_, '_>, &S<RawOp>, &OpDef) -> DResult<()>;

/// How an op is lowered. Families of ops share one lowering, told apart by
/// the data here.
#[derive(Clone)]
pub(super) enum Lower {
    /// Takes no fields and emits this op.
    Fixed(Op),
    /// Emits the op for the CPU its `cpu` expression names.
    Cpu(fn(Expr) -> Op),
    /// Emits the op for an object of this kind, named by the op's one
    /// object field (`obj` or `lock`).
    Object(ObjectType, fn(ObjRef) -> Op),
    /// An op on an object of this kind that has fields of its own besides
    /// the object, lowered by its function.
    ObjectWith(ObjectType, LowerFn),
    /// A mutex, spinlock or rwlock op (see `Emitter::emit_lock`).
    Lock(LockOp),
    /// Lowered by a function of its own.
    Custom(LowerFn),
}

impl Lower {
    /// The kind of object the op takes, if it takes one.
    pub(super) fn object_kind(&self) -> Option<ObjectType> {
        match self {
            Lower::Object(kind, _) | Lower::ObjectWith(kind, _) => Some(*kind),
            Lower::Lock(l) => Some(l.family.kind()),
            Lower::Fixed(_) | Lower::Cpu(_) | Lower::Custom(_) => None,
        }
    }
}

/// A mutex, spinlock or rwlock op taken apart: `read_unlock_irqrestore` is
/// the `read` family's unlock with interrupts restored.
#[derive(Clone, Copy, Debug)]
pub(super) struct LockOp {
    pub family: Family,
    pub action: LockAction,
    /// The `_irqsave`/`_irqrestore` form (a guard says so in `irqsave`).
    pub irq: bool,
}

/// What a lock op does, apart from which kind of lock it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LockAction {
    Lock,
    Unlock,
    Guard,
}

/// The lock ops named by their prefix: `mutex_*`, `spin_*`, `read_*` and
/// `write_*`, an rwsem's read and write sides (`down_read`/`up_read`,
/// `down_write`/`up_write`) and a percpu_rw_semaphore's
/// (`percpu_down_read`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    Mutex,
    Spin,
    Read,
    Write,
    RwsemRead,
    RwsemWrite,
    PercpuRead,
    PercpuWrite,
}

impl Family {
    /// The prefix of the family's op names; for a spinning lock, its
    /// [`LockMode::op_prefix`].
    pub(super) fn prefix(self) -> &'static str {
        match self {
            Mutex => "mutex",
            Spin => "spin",
            Read | RwsemRead | PercpuRead => "read",
            Write | RwsemWrite | PercpuWrite => "write",
        }
    }

    /// The plain op that takes a lock this way: `mutex_lock`, `down_read`.
    pub(super) fn lock_op(self) -> String {
        match self {
            RwsemRead => "down_read".into(),
            RwsemWrite => "down_write".into(),
            PercpuRead => "percpu_down_read".into(),
            PercpuWrite => "percpu_down_write".into(),
            _ => format!("{}_lock", self.prefix()),
        }
    }

    /// The kind of lock the family takes.
    pub(super) fn kind(self) -> ObjectType {
        match self {
            Mutex => ObjectType::Mutex,
            Spin => ObjectType::Spinlock,
            Read | Write => ObjectType::Rwlock,
            RwsemRead | RwsemWrite => ObjectType::Rwsem,
            PercpuRead | PercpuWrite => ObjectType::PercpuRwsem,
        }
    }

    /// How a spinning lock is held by the family's ops.
    pub(super) fn mode(self) -> LockMode {
        match self {
            Mutex | Spin => LockMode::Exclusive,
            Read | RwsemRead | PercpuRead => LockMode::Read,
            Write | RwsemWrite | PercpuWrite => LockMode::Write,
        }
    }
}

pub(super) const fn op(
    name: &'static str,
    required: &'static [&'static str],
    optional: &'static [&'static str],
    lower: Lower,
) -> OpDef {
    OpDef {
        name,
        required,
        optional,
        aliases: &[],
        lower,
    }
}

pub(super) const fn custom(
    name: &'static str,
    required: &'static [&'static str],
    optional: &'static [&'static str],
    f: LowerFn,
) -> OpDef {
    op(name, required, optional, Lower::Custom(f))
}

pub(super) const fn fixed(name: &'static str, ir: Op) -> OpDef {
    op(name, &[], &[], Lower::Fixed(ir))
}

pub(super) const fn on_cpu(name: &'static str, ir: fn(Expr) -> Op) -> OpDef {
    op(name, &["cpu"], &[], Lower::Cpu(ir))
}

pub(super) const fn object(
    name: &'static str,
    field: &'static [&'static str],
    kind: ObjectType,
    ir: fn(ObjRef) -> Op,
) -> OpDef {
    op(name, field, &[], Lower::Object(kind, ir))
}

/// An op on an object of kind `kind` (its `obj` field) with fields of its
/// own, lowered by `f`.
pub(super) const fn object_with(
    name: &'static str,
    required: &'static [&'static str],
    optional: &'static [&'static str],
    kind: ObjectType,
    f: LowerFn,
) -> OpDef {
    op(name, required, optional, Lower::ObjectWith(kind, f))
}

/// A lock op: `lock`, and for a guard `body` (and `irqsave` on a
/// spinning lock).
pub(super) const fn lock(
    name: &'static str,
    family: Family,
    action: LockAction,
    irq: bool,
) -> OpDef {
    let (required, optional): (&[&str], &[&str]) = match (action, family) {
        (Guard, Mutex | RwsemRead | RwsemWrite) => (&["lock", "body"], &[]),
        (Guard, _) => (&["lock", "body"], &["irqsave"]),
        (Lock | Unlock, _) => (&["lock"], &[]),
    };
    let l = LockOp {
        family,
        action,
        irq,
    };
    op(name, required, optional, Lower::Lock(l))
}

impl OpDef {
    /// The same op, also taking these field aliases.
    pub(super) const fn alias(mut self, aliases: &'static [(&'static str, &'static str)]) -> OpDef {
        self.aliases = aliases;
        self
    }

    /// The op's lock action, for the lock ops.
    pub(super) fn lock_op(&self) -> Option<LockOp> {
        match self.lower {
            Lower::Lock(l) => Some(l),
            _ => None,
        }
    }

    /// Whether `field`, or an alias of it, is among the fields `present`.
    pub(super) fn has(&self, field: &str, present: &[(&str, std::ops::Range<usize>)]) -> bool {
        present
            .iter()
            .any(|(f, _)| *f == field || self.aliases.iter().any(|(a, to)| a == f && *to == field))
    }
}
