//! Object types with ops of their own that are not locks (`percpu_ref`),
//! each described whole by one [`ObjectTypeInfo`] in its own file and
//! registered by one line in [`super::OBJECT_TYPES`].
//!
//! Everything that used to take an enum variant and a match arm per type
//! reads the entry instead: the scenario compiler (the type's name, the
//! fields it refuses, its ops and their IR), [`super::build`] (its
//! instances, its lines' transfers for `lock_stat`) and RCU (its
//! callback, [`ObjectTypeOps`]). All of it is read when the scenario is compiled or the
//! objects are built, or once per callback: no op of the hot path goes
//! through the table (a type's ops are `Op` variants, run by its
//! [`crate::mechanism::MechanismOp`] impl).

use crate::locking::objects::Objects;
use crate::locking::LockingEnv;
use crate::program::{ObjRef, Op};
use crate::spec::{ObjType, ObjectKind};

/// One registered object type.
pub struct ObjectTypeInfo {
    /// `type = "..."` in a scenario's `[objects]`.
    pub name: &'static str,
    /// Fields of an `[objects]` entry it refuses beyond those only other
    /// types take (`kind`, `initial`, ...: refused for it already), each
    /// with why, e.g. `("count", "it is per-CPU inside already")`.
    pub refuses: &'static [(&'static str, &'static str)],
    /// Its ops: each takes the object in its one field, `obj`.
    pub ops: &'static [ObjectOpInfo],
    /// Makes `n` instances of declared object `object` in its own table
    /// ([`Objects::kind_table`]) on a machine of `nr_cpus`; returns the
    /// first's index.
    pub(crate) build: fn(o: &mut Objects, object: u32, n: u32, nr_cpus: u32) -> usize,
    /// Line transfers so far on the lines of instances `base..base + n`
    /// (`lock_stat`'s bounces).
    pub(crate) line_transfers: fn(o: &Objects, base: usize, n: usize) -> u64,
    /// Its RCU callback, if one of its ops queues one
    /// ([`crate::event::RcuCallback::Object`]): run a grace period later
    /// on the instance it was queued for.
    pub(crate) rcu_callback: Option<fn(o: &mut Objects, instance: u32)>,
}

/// One op of a registered type: how a scenario names it and the IR it
/// lowers to.
pub struct ObjectOpInfo {
    /// `op = "..."` in a scenario.
    pub name: &'static str,
    /// The op on object `r`.
    pub ir: fn(r: ObjRef) -> Op,
}

impl ObjectTypeInfo {
    /// The handle a compiled scenario keeps for it.
    pub fn handle(&self) -> ObjType {
        ObjType::named(self.name).expect("a type is registered in OBJECT_TYPES")
    }
}

impl ObjType {
    /// The type a scenario names `name`.
    pub fn named(name: &str) -> Option<ObjType> {
        super::OBJECT_TYPES
            .iter()
            .position(|t| t.name == name)
            .map(|at| ObjType(at as u8))
    }

    /// Every registered type, in registry order.
    pub fn all() -> impl Iterator<Item = ObjType> {
        (0..super::OBJECT_TYPES.len()).map(|at| ObjType(at as u8))
    }

    /// Its registry entry.
    #[inline]
    pub fn info(self) -> &'static ObjectTypeInfo {
        super::OBJECT_TYPES[self.0 as usize]
    }
}

impl std::fmt::Debug for ObjType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.info().name)
    }
}

/// What the rest of the kernel asks of the registered types.
pub(crate) trait ObjectTypeOps: LockingEnv {
    /// The RCU callback an op of `object`'s type queued for `instance`
    /// ([`ObjectTypeInfo::rcu_callback`]).
    fn object_rcu_callback(&mut self, object: u32, instance: u32) {
        let ObjectKind::Registered(t) = self.spec().objects[object as usize].kind else {
            debug_assert!(
                false,
                "an RCU callback of object {object}, not of a registered type"
            );
            return;
        };
        if let Some(callback) = t.info().rcu_callback {
            callback(&mut self.locking_mut().objects, instance);
        }
    }
}

impl<K: LockingEnv> ObjectTypeOps for K {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are unique and each resolves to its own entry.
    #[test]
    fn every_type_is_found_by_its_name() {
        for t in ObjType::all() {
            assert_eq!(ObjType::named(t.info().name), Some(t));
            assert_eq!(t.info().handle(), t);
        }
        assert_eq!(ObjType::named("no_such_type"), None);
    }
}
