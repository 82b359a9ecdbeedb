//! The object types a scenario declares (`type = "..."` in `[objects]`),
//! named once: the declarations (`objects.rs`) build each from this table,
//! and the op registry (`ops/registry.rs`) says which ops take which type.
//!
//! A lock type is one row here, its build arm in `objects.rs` and its ops
//! in the registry; the kernel side is the type's implementation (for a
//! sleeping lock, one file and one line in `SLEEPING_KINDS`, see
//! docs/extending.md). An object type with ops of its own that is not a
//! lock (`percpu_ref`) is none of these: the kernel's
//! `locking::OBJECT_TYPES` describes it whole (name, refused fields, ops),
//! and it is [`ObjectType::Registered`] here, after the rows.

use smpsim_kernel::ObjType;

/// What an object is, which decides the ops that may take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjectType {
    Mutex,
    Spinlock,
    Rwlock,
    Atomic,
    Semaphore,
    Rwsem,
    PercpuRwsem,
    Seqcount,
    Variable,
    /// A type of the kernel's `locking::OBJECT_TYPES`.
    Registered(ObjType),
}

/// Every type, by the name a scenario writes.
const OBJECT_TYPES: &[(&str, ObjectType)] = &[
    ("mutex", ObjectType::Mutex),
    ("spinlock", ObjectType::Spinlock),
    ("rwlock", ObjectType::Rwlock),
    ("atomic", ObjectType::Atomic),
    ("semaphore", ObjectType::Semaphore),
    ("rwsem", ObjectType::Rwsem),
    ("percpu_rwsem", ObjectType::PercpuRwsem),
    ("seqcount", ObjectType::Seqcount),
    ("variable", ObjectType::Variable),
];

impl ObjectType {
    /// The type a scenario names `name`.
    pub(crate) fn from_name(name: &str) -> Option<ObjectType> {
        OBJECT_TYPES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, ty)| ty)
            .or_else(|| ObjType::named(name).map(ObjectType::Registered))
    }

    /// The name a scenario writes.
    pub(crate) fn name(self) -> &'static str {
        if let ObjectType::Registered(t) = self {
            return t.info().name;
        }
        OBJECT_TYPES
            .iter()
            .find(|&&(_, ty)| ty == self)
            .map(|&(n, _)| n)
            .expect("every object type has a row in OBJECT_TYPES")
    }

    /// Every type's name, in table order, the registered ones last.
    pub(crate) fn names() -> impl Iterator<Item = &'static str> {
        OBJECT_TYPES
            .iter()
            .map(|&(n, _)| n)
            .chain(ObjType::all().map(|t| t.info().name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in ObjectType::names() {
            let ty = ObjectType::from_name(name).unwrap();
            assert_eq!(ty.name(), name);
        }
        assert_eq!(ObjectType::from_name("alias"), None);
    }
}
