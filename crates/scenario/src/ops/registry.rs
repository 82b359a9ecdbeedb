//! The op registry: every op a scenario's code can use, with the fields it
//! takes and how it is lowered to the kernel's IR.
//!
//! Adding an op is one entry in [`OPS`] (or, for an op of an object type
//! the kernel registers, in the type's entry: [`ops`] adds them), plus a lowering function in
//! `lower.rs` if none of the shared ones ([`Lower`]) fits. What an entry
//! is (`def.rs`) sits beneath both: the lowering functions never reach
//! back into the table. The entry is also
//! what the field checks, the list of ops in errors, and the suggestions
//! for a lock of the wrong kind are made from.

use std::sync::OnceLock;

use smpsim_kernel::program::{CheckOp, HotplugOp, LockingOp, Op, PreemptOp, RcuOp};
use smpsim_kernel::ObjType;

use super::def::{custom, fixed, lock, object, object_with, on_cpu, LockAction, Lower, OpDef};
use super::lower;
use crate::error::{list, DResult, Diag};
use crate::object_type::ObjectType;
use crate::raw::{RawOp, S};

pub(super) use super::def::Family;

use Family::{Mutex, PercpuRead, PercpuWrite, Read, RwsemRead, RwsemWrite, Spin, Write};
use LockAction::{Guard, Lock, Unlock};

/// Every op, in the order errors list them.
pub(super) static OPS: &[OpDef] = &[
    custom("work", &["time"], &["units"], lower::work),
    custom("syscall", &["name", "body"], &[], lower::syscall),
    fixed("preempt_disable", Op::Preempt(PreemptOp::PreemptDisable)),
    fixed("preempt_enable", Op::Preempt(PreemptOp::PreemptEnable)),
    fixed("local_irq_disable", Op::Preempt(PreemptOp::LocalIrqDisable)),
    fixed("local_irq_enable", Op::Preempt(PreemptOp::LocalIrqEnable)),
    fixed("cpus_read_lock", Op::Locking(LockingOp::CpusReadLock)),
    fixed("cpus_read_unlock", Op::Locking(LockingOp::CpusReadUnlock)),
    fixed("cpus_write_lock", Op::Locking(LockingOp::CpusWriteLock)),
    fixed("cpus_write_unlock", Op::Locking(LockingOp::CpusWriteUnlock)),
    lock("percpu_down_read", PercpuRead, Lock, false),
    lock("percpu_up_read", PercpuRead, Unlock, false),
    lock("percpu_down_write", PercpuWrite, Lock, false),
    lock("percpu_up_write", PercpuWrite, Unlock, false),
    fixed("rcu_read_lock", Op::Rcu(RcuOp::RcuReadLock)),
    fixed("rcu_read_unlock", Op::Rcu(RcuOp::RcuReadUnlock)),
    fixed("synchronize_rcu", Op::Rcu(RcuOp::SynchronizeRcu)),
    fixed(
        "synchronize_rcu_expedited",
        Op::Rcu(RcuOp::SynchronizeRcuExpedited),
    ),
    fixed("rcu_expedite_gp", Op::Rcu(RcuOp::RcuExpediteGp)),
    fixed("rcu_unexpedite_gp", Op::Rcu(RcuOp::RcuUnexpediteGp)),
    on_cpu("set_cpu_offline", |x| Op::Hotplug(HotplugOp::CpuOffline(x))),
    on_cpu("set_cpu_online", |x| Op::Hotplug(HotplugOp::CpuOnline(x))),
    lock("mutex_lock", Mutex, Lock, false),
    lock("mutex_unlock", Mutex, Unlock, false),
    lock("mutex_guard", Mutex, Guard, false),
    lock("spin_lock", Spin, Lock, false),
    lock("spin_unlock", Spin, Unlock, false),
    lock("spin_lock_irqsave", Spin, Lock, true),
    lock("spin_unlock_irqrestore", Spin, Unlock, true),
    lock("spin_guard", Spin, Guard, false),
    lock("read_lock", Read, Lock, false),
    lock("read_unlock", Read, Unlock, false),
    lock("read_lock_irqsave", Read, Lock, true),
    lock("read_unlock_irqrestore", Read, Unlock, true),
    lock("read_guard", Read, Guard, false),
    lock("write_lock", Write, Lock, false),
    lock("write_unlock", Write, Unlock, false),
    lock("write_lock_irqsave", Write, Lock, true),
    lock("write_unlock_irqrestore", Write, Unlock, true),
    lock("write_guard", Write, Guard, false),
    custom(
        "smp_call_function_single",
        &["cpu"],
        &["func", "handler", "units", "wait"],
        lower::call_single,
    ),
    custom(
        "smp_call_function_many",
        &["cpus"],
        &["func", "handler", "units", "wait"],
        lower::call_many,
    ),
    custom(
        "stop_machine_cpuslocked",
        &["func"],
        &["cpu"],
        lower::stop_machine,
    ),
    custom(
        "flush_tlb_mm_range",
        &["func"],
        &["units", "freed_tables", "cpus"],
        lower::flush_tlb,
    ),
    custom("call_rcu", &["func"], &[], lower::call_rcu),
    custom("call_rcu_hurry", &["func"], &[], lower::call_rcu_hurry),
    custom(
        "cond_synchronize_rcu",
        &["value"],
        &[],
        lower::cond_synchronize_rcu,
    ),
    custom("kfree_rcu", &["value"], &[], lower::kfree_rcu),
    custom("kvfree_rcu", &["value"], &[], lower::kfree_rcu),
    custom("cpumask", &["var", "mask"], &[], super::cpumask::cpumask),
    custom(
        "for_each_cpu",
        &["var", "mask", "body"],
        &[],
        super::cpumask::for_each_cpu,
    ),
    custom("sleep", &["time"], &["overshoot"], lower::sleep),
    custom("write_once", &["obj", "value"], &[], lower::write_once),
    custom(
        "this_cpu_write",
        &["obj", "value"],
        &[],
        lower::this_cpu_write,
    ),
    custom("assert", &["cond", "message"], &[], lower::assert),
    custom("membarrier_begin", &[], &["cpu"], lower::membarrier_begin),
    fixed("membarrier_end", Op::Check(CheckOp::MembarrierEnd)),
    custom("set", &["var", "value"], &[], lower::set),
    custom("if", &["cond", "then"], &["else"], lower::branch),
    custom("loop", &["count", "body"], &[], lower::repeat),
    custom("break", &[], &[], lower::break_loop),
    custom("choose", &["options"], &[], lower::choose),
    custom("count", &["counter"], &[], lower::count),
    custom("mark", &["var"], &[], lower::mark),
    custom("record", &["hist", "since"], &[], lower::record),
    custom("call", &["fn"], &[], lower::call),
    fixed("exit", Op::Exit),
    object("atomic_inc", &["obj"], ObjectType::Atomic, |x| {
        Op::Locking(LockingOp::AtomicRmw(x))
    }),
    object("atomic_dec", &["obj"], ObjectType::Atomic, |x| {
        Op::Locking(LockingOp::AtomicRmw(x))
    }),
    object_with(
        "atomic_read",
        &["obj"],
        &["var"],
        ObjectType::Atomic,
        super::atomic::atomic_read,
    ),
    object_with(
        "atomic_try_cmpxchg",
        &["obj", "var"],
        &["body"],
        ObjectType::Atomic,
        super::atomic::atomic_try_cmpxchg,
    ),
    custom("cpu_relax", &[], &[], super::atomic::cpu_relax),
    object("down", &["lock"], ObjectType::Semaphore, |x| {
        Op::Locking(LockingOp::Down(x))
    })
    .alias(&[("obj", "lock")]),
    object("up", &["lock"], ObjectType::Semaphore, |x| {
        Op::Locking(LockingOp::Up(x))
    })
    .alias(&[("obj", "lock")]),
    lock("down_read", RwsemRead, Lock, false),
    lock("up_read", RwsemRead, Unlock, false),
    lock("rwsem_read_guard", RwsemRead, Guard, false),
    lock("down_write", RwsemWrite, Lock, false),
    lock("up_write", RwsemWrite, Unlock, false),
    lock("rwsem_write_guard", RwsemWrite, Guard, false),
    custom(
        "down_read_trylock",
        &["lock"],
        &["var"],
        lower::down_read_trylock,
    ),
    custom(
        "down_write_trylock",
        &["lock"],
        &["var"],
        lower::down_write_trylock,
    ),
    custom("downgrade_write", &["lock"], &[], lower::downgrade_write),
    object(
        "write_seqcount_begin",
        &["obj"],
        ObjectType::Seqcount,
        |seq| Op::Locking(LockingOp::WriteSeqcount { seq, begin: true }),
    ),
    object(
        "write_seqcount_end",
        &["obj"],
        ObjectType::Seqcount,
        |seq| Op::Locking(LockingOp::WriteSeqcount { seq, begin: false }),
    ),
    custom("read_seqcount", &["obj", "body"], &[], lower::read_seqcount),
];

/// Every op: [`OPS`], then the ops of each object type the kernel
/// registers (`locking::OBJECT_TYPES`), as its entry names them. Made
/// once, when the first scenario is compiled.
pub(super) fn ops() -> &'static [OpDef] {
    static ALL: OnceLock<Vec<OpDef>> = OnceLock::new();
    ALL.get_or_init(|| {
        let registered = ObjType::all().flat_map(|t| {
            t.info()
                .ops
                .iter()
                .map(move |op| object(op.name, &["obj"], ObjectType::Registered(t), op.ir))
        });
        OPS.iter().map(OpDef::clone).chain(registered).collect()
    })
}

impl Family {
    /// The ops that take a lock in this family's way, as a message lists
    /// them: "spin_lock, spin_lock_irqsave or spin_guard".
    pub(super) fn takers(self) -> String {
        or_list(ops().iter().filter_map(|d| match d.lower {
            Lower::Lock(l) if l.family == self && l.action != Unlock => Some(d.name),
            _ => None,
        }))
    }
}

impl ObjectType {
    /// The ops that take an object of this kind, comma-separated.
    pub(super) fn ops(self) -> String {
        let ops: Vec<&str> = ops()
            .iter()
            .filter(|d| d.lower.object_kind() == Some(self))
            .map(|d| d.name)
            .collect();
        ops.join(", ")
    }
}

/// "a, b or c".
fn or_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The op's registry entry, once its fields are checked against it.
pub(super) fn check_fields(op: &S<RawOp>) -> DResult<&'static OpDef> {
    let kind = op.get_ref().op.get_ref().as_str();
    let Some(def) = ops().iter().find(|d| d.name == kind) else {
        return Err(
            Diag::new(op.get_ref().op.span(), format!("unknown op `{kind}`"))
                .help(format!("ops: {}", list(ops().iter().map(|d| d.name)))),
        );
    };
    let name = def.name;
    let present = op.get_ref().present();
    let allowed: Vec<&str> = (def.required.iter().chain(def.optional))
        .copied()
        .chain(def.aliases.iter().map(|(a, _)| *a))
        .collect();
    for (field, span) in &present {
        if !allowed.contains(field) {
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
    for (alias, field) in def.aliases {
        let given = |f: &str| present.iter().find(|(p, _)| *p == f);
        if let (Some(_), Some((_, span))) = (given(field), given(alias)) {
            return Err(Diag::new(
                span.clone(),
                format!("op `{name}` takes `{field}` or its alias `{alias}`, not both"),
            ));
        }
    }
    for field in def.required {
        if !def.has(field, &present) {
            return Err(Diag::new(op.span(), format!("op `{name}` needs `{field}`")));
        }
    }
    Ok(def)
}

/// The op(s) for a `kind` object that do what the lock op `def` meant to
/// do: `spin_lock` for `mutex_lock` on a spinlock, `read_lock or
/// write_lock` for `spin_lock` on an rwlock. `None` if `def` is not a lock
/// op or no lock op takes a `kind` object.
fn counterpart(def: &OpDef, kind: ObjectType) -> Option<String> {
    let want = def.lock_op()?;
    let ops: Vec<&str> = ops()
        .iter()
        .filter(|d| {
            d.lock_op().is_some_and(|l| {
                l.family.kind() == kind
                    && l.action == want.action
                    && (l.irq == want.irq || kind == ObjectType::Mutex)
            })
        })
        .map(|d| d.name)
        .collect();
    (!ops.is_empty()).then(|| ops.join(" or "))
}

/// "`zone_lock` is a spinlock; use spin_lock", naming the alias too when
/// the lock was reached through one.
pub(super) fn wrong_kind(written: &str, name: &str, kind: ObjectType, def: &OpDef) -> String {
    let what = if written == name {
        format!("`{name}` is a {}", kind.name())
    } else {
        format!("`{written}` stands for `{name}`, a {}", kind.name())
    };
    match counterpart(def, kind) {
        Some(ops) => format!("{what}; use {ops}"),
        None => format!("{what}; use one of {}", kind.ops()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = include_str!("../../../../docs/scenario-format.md");

    /// The rows of the op table in docs/scenario-format.md: the op names of
    /// the first column, and the fields column.
    fn doc_rows() -> Vec<(Vec<String>, String)> {
        let section = DOC.split("\n## Ops\n").nth(1).expect("an `## Ops` section");
        let section = section.split("\n## ").next().unwrap();
        section
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split(" | ").collect();
                let names = cells[0]
                    .trim_start_matches('|')
                    .split(',')
                    .map(|n| n.trim().trim_matches('`').to_string())
                    .collect();
                (names, cells[1].to_string())
            })
            .collect()
    }

    #[test]
    fn every_op_is_in_the_docs_op_table_with_its_fields() {
        let rows = doc_rows();
        for def in ops() {
            let Some((_, fields)) = rows
                .iter()
                .find(|(names, _)| names.contains(&def.name.into()))
            else {
                panic!(
                    "docs/scenario-format.md's op table has no row for `{}`",
                    def.name
                );
            };
            let aliases = def.aliases.iter().map(|(a, _)| a);
            for f in def.required.iter().chain(def.optional).chain(aliases) {
                assert!(
                    fields.contains(&format!("`{f}`")) || fields.contains(&format!("`{f} =")),
                    "docs/scenario-format.md's row for `{}` does not mention `{f}`",
                    def.name
                );
            }
        }
    }

    #[test]
    fn every_op_in_the_docs_op_table_is_registered() {
        for (names, _) in doc_rows() {
            for n in names {
                assert!(
                    ops().iter().any(|d| d.name == n),
                    "docs/scenario-format.md documents op `{n}`, which the registry lacks"
                );
            }
        }
    }

    #[test]
    fn names_are_unique() {
        for (i, def) in ops().iter().enumerate() {
            assert!(
                ops()[..i].iter().all(|d| d.name != def.name),
                "op `{}` is registered twice",
                def.name
            );
        }
    }

    #[test]
    fn kinds_list_their_ops_and_counterparts() {
        assert_eq!(
            ObjectType::Spinlock.ops(),
            "spin_lock, spin_unlock, spin_lock_irqsave, spin_unlock_irqrestore, spin_guard"
        );
        assert_eq!(ObjectType::Semaphore.ops(), "down, up");
        assert_eq!(Mutex.takers(), "mutex_lock or mutex_guard");
        assert_eq!(Read.takers(), "read_lock, read_lock_irqsave or read_guard");
        let def = |n: &str| ops().iter().find(|d| d.name == n).unwrap();
        assert_eq!(
            counterpart(def("spin_unlock_irqrestore"), ObjectType::Rwlock).as_deref(),
            Some("read_unlock_irqrestore or write_unlock_irqrestore")
        );
        assert_eq!(
            counterpart(def("read_lock_irqsave"), ObjectType::Mutex).as_deref(),
            Some("mutex_lock")
        );
        assert_eq!(counterpart(def("spin_lock"), ObjectType::Atomic), None);
        assert_eq!(counterpart(def("down"), ObjectType::Mutex), None);
    }
}
