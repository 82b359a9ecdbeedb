//! The op registry as scenario writers see it: field names and aliases,
//! and the list of ops in errors.

mod common;
use common::*;

use smpsim_kernel::program::{LockingOp, ObjRef, Op};

const BASE: &str = scenario_with_workers!(
    r#"[objects]
sem = { type = "semaphore", initial = 1 }
ctr = { type = "atomic" }
m = { type = "mutex" }
"#
);

/// The line the task's code is on.
const CODE_LINE: usize = 17;

fn with_code(code: &str) -> String {
    with_code_in(BASE, code)
}

fn obj(object: u32) -> ObjRef {
    ObjRef {
        object,
        index: None,
    }
}

#[test]
fn down_and_up_take_lock_or_its_alias_obj() {
    let want = vec![
        Op::Locking(LockingOp::Down(obj(0))),
        Op::Locking(LockingOp::Up(obj(0))),
    ];
    let by_lock = ops_of(&with_code(
        r#"{ op = "down", lock = "sem" }, { op = "up", lock = "sem" }"#,
    ));
    assert_eq!(by_lock, want);
    let by_obj = ops_of(&with_code(
        r#"{ op = "down", obj = "sem" }, { op = "up", obj = "sem" }"#,
    ));
    assert_eq!(by_obj, want);
    let mixed = ops_of(&with_code(
        r#"{ op = "down", obj = "sem" }, { op = "up", lock = "sem" }"#,
    ));
    assert_eq!(mixed, want);
}

#[test]
fn down_and_up_refuse_lock_and_obj_together() {
    let text = with_code(r#"{ op = "down", lock = "sem", obj = "sem" }"#);
    let e = err(&text);
    assert_eq!(
        e.message,
        "op `down` takes `lock` or its alias `obj`, not both"
    );
    assert_eq!(at(&e), (CODE_LINE, 45, "\"sem\"".to_string()));

    // In either order, at the alias.
    let e = err(&with_code(r#"{ op = "up", obj = "sem", lock = "sem" }"#));
    assert_eq!(
        e.message,
        "op `up` takes `lock` or its alias `obj`, not both"
    );
    assert_eq!(at(&e), (CODE_LINE, 29, "\"sem\"".to_string()));
}

#[test]
fn down_and_up_need_one_of_them() {
    let e = err(&with_code(r#"{ op = "down" }"#));
    assert_eq!(e.message, "op `down` needs `lock`");
    assert_eq!(at(&e).0, CODE_LINE);

    let e = err(&with_code(r#"{ op = "up", lock = "sem", cpu = 1 }"#));
    assert_eq!(
        e.message,
        "`cpu` is not a field of op `up`; expected one of: lock, obj"
    );
    assert_eq!(at(&e).2, "1");
}

#[test]
fn atomics_take_obj_only() {
    assert_eq!(
        ops_of(&with_code(
            r#"{ op = "atomic_inc", obj = "ctr" }, { op = "atomic_read", obj = "ctr" }"#
        )),
        vec![
            Op::Locking(LockingOp::AtomicRmw(obj(1))),
            Op::Locking(LockingOp::AtomicRead(obj(1)))
        ]
    );
    let e = err(&with_code(r#"{ op = "atomic_dec", lock = "ctr" }"#));
    assert_eq!(
        e.message,
        "`lock` is not a field of op `atomic_dec`; expected one of: obj"
    );
}

#[test]
fn object_ops_name_the_ops_of_the_right_kind() {
    let e = err(&with_code(r#"{ op = "down", lock = "m" }"#));
    assert_eq!(
        e.message,
        "`m` is a mutex; use one of mutex_lock, mutex_unlock, mutex_guard"
    );
    assert_eq!(at(&e).2, "m");
    let e = err(&with_code(r#"{ op = "mutex_lock", lock = "sem" }"#));
    assert_eq!(e.message, "`sem` is a semaphore; use one of down, up");
    assert_eq!(e.help.as_deref(), Some("semaphore ops: down, up"));
}

#[test]
fn unknown_op_lists_every_op() {
    let e = err(&with_code(r#"{ op = "mutex_trylock", lock = "m" }"#));
    assert_eq!(e.message, "unknown op `mutex_trylock`");
    // The registry's own list: a new op is listed without touching this
    // test; a few spot checks keep it honest about what the list is.
    let ops: Vec<&str> = smpsim_scenario::op_names().collect();
    assert_eq!(ops.first(), Some(&"work"));
    for op in ["spin_lock_irqsave", "down_read_trylock", "read_seqcount"] {
        assert!(ops.contains(&op), "{op}");
    }
    let listed: Vec<String> = ops.iter().map(|o| format!("`{o}`")).collect();
    assert_eq!(
        e.help.as_deref(),
        Some(format!("ops: {}", listed.join(", ")).as_str())
    );
}

#[test]
fn an_op_without_fields_says_so() {
    let e = err(&with_code(r#"{ op = "exit", lock = "m" }"#));
    assert_eq!(
        e.message,
        "`lock` is not a field of op `exit`; op `exit` takes no fields"
    );
}
