//! Spinning-lock objects (`kind`, `backoff`, `rwlock`), the rwlock ops, and
//! the check that a task releases only locks its own code takes.

mod common;
use common::*;

use std::path::Path;

use smpsim_kernel::locking::{kind_names, LOCK_KINDS};
use smpsim_kernel::program::{Dist, Expr, LockMode, LockingOp, ObjRef, Op};
use smpsim_kernel::{LockOptions, ObjectKind};
use smpsim_scenario::{parse, ScenarioError};

const BASE: &str = scenario_with_workers!(
    r#"[objects]
m = { type = "mutex" }
sl = { type = "spinlock" }
tk = { type = "spinlock", kind = "ticket" }
tas = { type = "spinlock", kind = "tas" }
tasb = { type = "spinlock", kind = "tas", backoff = true }
pcp = { type = "spinlock", kind = "ticket", per_cpu = true }
rw = { type = "rwlock" }
rwq = { type = "rwlock", kind = "qrwlock", per_cpu = true }
TREE = { type = "alias", to = "rw" }

[functions]
read_tree = [ { op = "read_lock", lock = "TREE" } ]
"#
);

/// The line the task's code is on.
const CODE_LINE: usize = 26;

/// The base with the task's code replaced by `code`.
fn with_code(code: &str) -> String {
    with_code_in(BASE, code)
}

/// [`with_code`] with `code` inside a `syscall` (the `_irqsave` forms are
/// refused in user code).
fn in_syscall(code: &str) -> String {
    with_code(&format!(
        "{{ op = \"syscall\", name = \"x\", body = [ {code} ] }}"
    ))
}

/// The ops of [`in_syscall`]'s code, without the syscall's entry and exit.
fn syscall_ops(code: &str) -> Vec<Op> {
    let mut ops = ops_of(&in_syscall(code));
    assert_eq!(ops.remove(0), Op::SyscallEnter);
    assert_eq!(ops.pop(), Some(Op::SyscallExit));
    ops
}

/// The base with the object line starting with `name = ` replaced by `line`.
fn with_object(name: &str, line: &str) -> String {
    let old = BASE
        .lines()
        .find(|l| l.starts_with(&format!("{name} = ")))
        .unwrap();
    BASE.replace(old, line)
}

/// The 1-based column of `needle` in line `line` of `text`.
fn col(text: &str, line: usize, needle: &str) -> usize {
    let l = text.lines().nth(line - 1).unwrap();
    l[..l.find(needle).unwrap()].chars().count() + 1
}

/// `` `a`, `b` ``: names as error messages list them.
fn listed<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn spinning(kind: &str, backoff: bool) -> ObjectKind {
    ObjectKind::Spinlock {
        kind: smpsim_kernel::spec::SpinKind::named(kind).expect("a spinning lock kind"),
        options: LockOptions {
            backoff,
            ..LockOptions::default()
        },
    }
}

fn obj(object: u32) -> ObjRef {
    ObjRef {
        object,
        index: None,
    }
}

#[test]
fn each_object_form_compiles_to_its_kind() {
    let spec = spec(BASE);
    let kinds: Vec<(&str, &ObjectKind, bool)> = spec
        .objects
        .iter()
        .map(|o| (o.name.as_str(), &o.kind, o.per_cpu))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("m", &ObjectKind::Mutex { spin: true }, false),
            ("sl", &spinning("qspinlock", false), false),
            ("tk", &spinning("ticket", false), false),
            ("tas", &spinning("tas", false), false),
            ("tasb", &spinning("tas", true), false),
            ("pcp", &spinning("ticket", false), true),
            ("rw", &spinning("qrwlock", false), false),
            ("rwq", &spinning("qrwlock", false), true),
        ]
    );
    // `backoff = false` is allowed where the kind takes it.
    let spec = spec_of_object(
        "tasb",
        r#"tasb = { type = "spinlock", kind = "tas", backoff = false }"#,
    );
    assert_eq!(spec.objects[4].kind, spinning("tas", false));
}

fn spec_of_object(name: &str, line: &str) -> smpsim_kernel::Spec {
    spec(&with_object(name, line))
}

#[test]
fn rwlock_ops_and_guards_emit_modes_and_irqsave() {
    let ops = syscall_ops(
        r#"{ op = "read_lock", lock = "rw" },
  { op = "read_unlock", lock = "rw" },
  { op = "read_lock_irqsave", lock = "TREE" },
  { op = "read_unlock_irqrestore", lock = "TREE" },
  { op = "write_lock", lock = "rw" },
  { op = "write_unlock", lock = "TREE" },
  { op = "write_lock_irqsave", lock = "rw" },
  { op = "write_unlock_irqrestore", lock = "rw" },
  { op = "read_guard", lock = "rwq[this_cpu()]", body = [ { op = "work", time = "1us" } ] },
  { op = "write_guard", lock = "TREE", irqsave = true, body = [] },
  { op = "read_guard", lock = "rw", irqsave = false, body = [] },
  { op = "spin_guard", lock = "tasb", body = [] },
  { op = "spin_lock_irqsave", lock = "pcp[1]" },
  { op = "spin_unlock_irqrestore", lock = "pcp[2]" }"#,
    );
    let rw = obj(6);
    let rwq = ObjRef {
        object: 7,
        index: Some(Expr::ThisCpu),
    };
    let lock = |lock: &ObjRef, mode, irqsave| {
        Op::Locking(LockingOp::Lock {
            lock: lock.clone(),
            mode,
            irqsave,
        })
    };
    let unlock = |lock: &ObjRef, mode, irqrestore| {
        Op::Locking(LockingOp::Unlock {
            lock: lock.clone(),
            mode,
            irqrestore,
        })
    };
    let pcp = |i| ObjRef {
        object: 5,
        index: Some(Expr::Const(i)),
    };
    use LockMode::{Exclusive, Read, Write};
    assert_eq!(
        ops,
        vec![
            lock(&rw, Read, false),
            unlock(&rw, Read, false),
            lock(&rw, Read, true),
            unlock(&rw, Read, true),
            lock(&rw, Write, false),
            unlock(&rw, Write, false),
            lock(&rw, Write, true),
            unlock(&rw, Write, true),
            lock(&rwq, Read, false),
            Op::Work(Dist::Const(1000)),
            unlock(&rwq, Read, false),
            lock(&rw, Write, true),
            unlock(&rw, Write, true),
            lock(&rw, Read, false),
            unlock(&rw, Read, false),
            lock(&obj(4), Exclusive, false),
            unlock(&obj(4), Exclusive, false),
            lock(&pcp(1), Exclusive, true),
            unlock(&pcp(2), Exclusive, true),
        ]
    );
}

/// The error for object `name` written as `line`, whose kind must be one
/// of `ty`'s.
fn unknown_kind(name: &str, line: &str, ty: &str, kind: &str) -> ScenarioError {
    let e = err(&with_object(name, line));
    let expected = listed(kind_names(ty));
    let message = format!("unknown {ty} kind `{kind}`; expected one of: {expected}");
    assert_eq!(e.message, message);
    e
}

#[test]
fn unknown_kind_lists_the_kinds_of_that_type() {
    let line = r#"tk = { type = "spinlock", kind = "bogus" }"#;
    let e = unknown_kind("tk", line, "spinlock", "bogus");
    assert!(e.message.contains("`qspinlock`, `ticket`, `tas`"));
    let column = line.find("\"bogus\"").unwrap() + 1;
    assert_eq!(at(&e), (12, column, "\"bogus\"".to_string()));
    let help = e.help.unwrap();
    assert!(help.contains("`ticket`"), "{help}");
    assert!(!help.contains("qrwlock"), "{help}");

    // The kinds of another type are not kinds of this one.
    let line = r#"rw = { type = "rwlock", kind = "ticket" }"#;
    let e = unknown_kind("rw", line, "rwlock", "ticket");
    assert_eq!(at(&e), (16, 32, "\"ticket\"".to_string()));
}

#[test]
fn backoff_only_on_kinds_that_take_it() {
    let takers = listed(
        LOCK_KINDS
            .iter()
            .filter(|k| k.options.contains(&"backoff"))
            .map(|k| k.name),
    );
    let text = with_object(
        "tk",
        r#"tk = { type = "spinlock", kind = "ticket", backoff = true }"#,
    );
    let e = err(&text);
    assert_eq!(
        e.message,
        format!("kind `ticket` has no `backoff` option; only {takers} take it")
    );
    assert!(takers.contains("`tas`"));
    assert_eq!(at(&e), (12, col(&text, 12, "true"), "true".to_string()));

    // Without `kind`, the default is meant, and said so.
    let e = err(&with_object(
        "sl",
        r#"sl = { type = "spinlock", backoff = false }"#,
    ));
    assert!(
        e.message
            .starts_with("kind `qspinlock` (the default spinlock) has no `backoff` option"),
        "{}",
        e.message
    );
    assert_eq!(at(&e).0, 11);

    let e = err(&with_object(
        "rw",
        r#"rw = { type = "rwlock", backoff = true }"#,
    ));
    assert!(
        e.message.contains("has no `backoff` option"),
        "{}",
        e.message
    );
}

#[test]
fn kind_and_backoff_are_not_fields_of_other_objects() {
    // A mutex's `kind` is a sleeping-lock kind, not a spinning one.
    let text = with_object("m", r#"m = { type = "mutex", kind = "ticket" }"#);
    let e = err(&text);
    assert!(
        e.message
            .starts_with("unknown mutex kind `ticket`; expected one of: `mutex`"),
        "{}",
        e.message
    );
    assert_eq!(at(&e), (10, 30, "\"ticket\"".to_string()));
    let text = with_object("m", r#"m = { type = "mutex", kind = "mutex" }"#);
    let scn = parse(Path::new("t.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let spec = scn.compile(None, &[]).unwrap();
    assert_eq!(spec.objects[0].kind, ObjectKind::Mutex { spin: true });

    let e = err(&with_object(
        "m",
        r#"m = { type = "atomic", backoff = true }"#,
    ));
    assert_eq!(e.message, "`backoff` is not a field of a `atomic` object");
    assert_eq!(at(&e).2, "true");

    let e = err(&with_object(
        "m",
        r#"m = { type = "semaphore", kind = "tas" }"#,
    ));
    assert_eq!(e.message, "`kind` is not a field of a `semaphore` object");

    let e = err(&with_object(
        "TREE",
        r#"TREE = { type = "alias", to = "rw", kind = "qrwlock" }"#,
    ));
    assert_eq!(e.message, "`kind` is not a field of a `alias` object");
    assert_eq!(at(&e).0, 18);

    let e = err(&with_object(
        "rw",
        r#"rw = { type = "rwlock", spin = true }"#,
    ));
    assert_eq!(e.message, "`spin` is not a field of a `rwlock` object");
}

#[test]
fn a_variant_can_switch_the_kind() {
    let text = format!(
        "{BASE}\n[variant.tas]\ndescription = \"x\"\nobjects.sl = {{ type = \"spinlock\", kind = \"tas\", backoff = true }}\n\n[variant.bad]\ndescription = \"y\"\n"
    );
    let scn = parse(Path::new("t.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let spec = scn.compile(Some("tas"), &[]).unwrap();
    assert_eq!(spec.objects[1].kind, spinning("tas", true));
    let set = [("objects.sl.kind".to_string(), "nope".to_string())];
    let e = scn.compile(Some("bad"), &set).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--set objects.sl.kind=nope: unknown spinlock kind `nope`"),
        "{e}"
    );
}

#[test]
fn spinlock_and_rwlock_ops_do_not_mix() {
    let e = err(&with_code(r#"{ op = "spin_lock", lock = "rw" }"#));
    assert_eq!(e.message, "`rw` is a rwlock; use read_lock or write_lock");
    assert_eq!(at(&e), (CODE_LINE, 38, "rw".to_string()));
    assert!(e.help.as_deref().unwrap().contains("write_guard"));

    let e = err(&with_code(
        r#"{ op = "spin_unlock_irqrestore", lock = "TREE" }"#,
    ));
    assert_eq!(
        e.message,
        "`TREE` stands for `rw`, a rwlock; use read_unlock_irqrestore or write_unlock_irqrestore"
    );
    assert_eq!(at(&e).2, "TREE");

    let e = err(&with_code(
        r#"{ op = "spin_guard", lock = "rw", body = [] }"#,
    ));
    assert_eq!(e.message, "`rw` is a rwlock; use read_guard or write_guard");

    let e = err(&with_code(r#"{ op = "mutex_lock", lock = "rw" }"#));
    assert_eq!(e.message, "`rw` is a rwlock; use read_lock or write_lock");

    let e = err(&with_code(r#"{ op = "read_lock", lock = "sl" }"#));
    assert_eq!(e.message, "`sl` is a spinlock; use spin_lock");
    assert_eq!(at(&e).2, "sl");

    let e = err(&with_code(r#"{ op = "write_lock_irqsave", lock = "tk" }"#));
    assert_eq!(e.message, "`tk` is a spinlock; use spin_lock_irqsave");

    let e = err(&with_code(
        r#"{ op = "write_guard", lock = "m", body = [] }"#,
    ));
    assert_eq!(e.message, "`m` is a mutex; use mutex_guard");

    let e = err(&with_code(
        r#"{ op = "read_unlock_irqrestore", lock = "m" }"#,
    ));
    assert_eq!(e.message, "`m` is a mutex; use mutex_unlock");

    let e = err(&with_code(r#"{ op = "atomic_inc", obj = "rw" }"#));
    assert!(e
        .message
        .starts_with("`rw` is a rwlock; use one of read_lock"));

    let e = err(&with_code(r#"{ op = "read_lock", lock = "rwq" }"#));
    assert!(e.message.contains("per-CPU"), "{}", e.message);

    let e = err(&with_code(
        r#"{ op = "read_lock", lock = "rw", irqsave = true }"#,
    ));
    assert!(e
        .message
        .contains("`irqsave` is not a field of op `read_lock`"));
}

#[test]
fn unlock_without_lock_in_the_same_program() {
    let e = err(&with_code(r#"{ op = "read_unlock", lock = "rw" }"#));
    assert_eq!(
        e.message,
        "`read_unlock` of `rw`, but this task's code never takes it with read_lock; \
         a lock must be released by the task that holds it"
    );
    assert_eq!(at(&e), (CODE_LINE, 40, "rw".to_string()));
    assert!(e.help.unwrap().contains("read_guard"));

    // Taken in another mode does not count.
    let e = err(&with_code(
        r#"{ op = "write_lock", lock = "rw" }, { op = "read_unlock", lock = "TREE" }"#,
    ));
    assert_eq!(
        e.message,
        "`read_unlock` of `TREE`, but this task's code never takes it with read_lock; \
         a lock must be released by the task that holds it"
    );
    assert_eq!(at(&e), (CODE_LINE, 76, "TREE".to_string()));

    // Nor does another object, or the same one taken by another task group.
    let e = err(&with_code(
        r#"{ op = "spin_lock", lock = "tk" }, { op = "spin_unlock", lock = "sl" }"#,
    ));
    assert!(
        e.message.starts_with("`spin_unlock` of `sl`"),
        "{}",
        e.message
    );
    let two = with_code(r#"{ op = "mutex_unlock", lock = "m" }"#).replace(
        "[[tasks]]",
        "[[tasks]]\nname = \"taker\"\ncount = 1\ncode = [ { op = \"mutex_lock\", lock = \"m\" } ]\n\n[[tasks]]",
    );
    let e = err(&two);
    assert_eq!(
        e.message,
        "`mutex_unlock` of `m`, but this task's code never takes it with mutex_lock; \
         a lock must be released by the task that holds it"
    );
    assert_eq!(at(&e).0, CODE_LINE + 5);

    // A function that is declared but not called takes nothing.
    let e = err(&with_code(r#"{ op = "read_unlock", lock = "TREE" }"#));
    assert!(e.message.starts_with("`read_unlock` of `TREE`"));
}

#[test]
fn unlock_check_sees_through_aliases_functions_and_control_flow() {
    // Taken in a function through an alias, released by name, in a branch.
    let ops = ops_of(&with_code(
        r#"{ op = "call", fn = "read_tree" },
  { op = "if", cond = "task_index == 0", then = [ { op = "read_unlock", lock = "rw" } ] }"#,
    ));
    assert_eq!(ops.len(), 3);
    // Released before it is taken, in a loop, per-CPU with other indices,
    // and a guard's take counts for a separate unlock.
    ops_of(&with_code(
        r#"{ op = "loop", count = 3, body = [
    { op = "spin_unlock", lock = "pcp[0]" },
    { op = "spin_lock", lock = "pcp[this_cpu()]" } ] },
  { op = "write_guard", lock = "TREE", body = [] },
  { op = "write_unlock", lock = "rw" },
  { op = "mutex_guard", lock = "m", body = [ { op = "mutex_unlock", lock = "m" } ] }"#,
    ));
}

#[test]
fn an_irqsave_take_needs_an_irqrestore_release() {
    let e = err(&in_syscall(
        r#"{ op = "spin_lock_irqsave", lock = "sl" }, { op = "spin_unlock", lock = "sl" }"#,
    ));
    assert!(
        e.message.contains("takes only with spin_lock_irqsave")
            && e.message.contains("interrupts off"),
        "{}",
        e.message
    );
    assert_eq!(
        e.help.as_deref(),
        Some("release it with spin_unlock_irqrestore")
    );
    let e = err(&in_syscall(
        r#"{ op = "read_lock", lock = "rw" }, { op = "read_unlock_irqrestore", lock = "rw" }"#,
    ));
    assert!(
        e.message.contains("takes only with read_lock"),
        "{}",
        e.message
    );
    // Both forms taken somewhere: either release is fine.
    ops_of(&in_syscall(
        r#"{ op = "spin_lock_irqsave", lock = "sl" }, { op = "spin_unlock_irqrestore", lock = "sl" }, { op = "spin_lock", lock = "sl" }, { op = "spin_unlock", lock = "sl" }"#,
    ));
}

/// The base with an rwsem `sem` (in place of `rwq`) and `code`.
fn with_rwsem(code: &str) -> String {
    with_code_in(&with_object("rwq", r#"sem = { type = "rwsem" }"#), code)
}

/// rwsem releases are checked like the other locks': `up_read` without a
/// `down_read`, and `downgrade_write` without a `down_write`, are located
/// errors; trylock and downgrade count as takes.
#[test]
fn rwsem_releases_need_the_matching_take() {
    let e = err(&with_rwsem(r#"{ op = "up_read", lock = "sem" }"#));
    assert!(
        e.message
            .starts_with("`up_read` of `sem`, but this task's code never takes it with down_read;"),
        "{}",
        e.message
    );
    assert_eq!(at(&e).2, "sem");
    let e = err(&with_rwsem(
        r#"{ op = "down_read", lock = "sem" }, { op = "downgrade_write", lock = "sem" }"#,
    ));
    assert!(
        e.message.contains(
            "`downgrade_write` of `sem`, but this task's code never takes it with down_write"
        ),
        "{}",
        e.message
    );
    let e = err(&with_rwsem(
        r#"{ op = "down_read", lock = "sem" }, { op = "up_write", lock = "sem" }"#,
    ));
    assert!(
        e.message.contains("never takes it with down_write"),
        "{}",
        e.message
    );
    // Legal pairings.
    let ops = ops_of(&with_rwsem(
        r#"{ op = "down_write", lock = "sem" }, { op = "downgrade_write", lock = "sem" }, { op = "up_read", lock = "sem" },
  { op = "down_read_trylock", lock = "sem", var = "ok" }, { op = "if", cond = "ok == 1", then = [ { op = "up_read", lock = "sem" } ] },
  { op = "rwsem_write_guard", lock = "sem", body = [] }"#,
    ));
    assert!(ops
        .iter()
        .any(|o| matches!(o, Op::Locking(LockingOp::DowngradeWrite(_)))));
    assert!(ops.iter().any(|o| matches!(
        o,
        Op::Locking(LockingOp::RwsemTrylock {
            mode: LockMode::Read,
            slot: Some(_),
            ..
        })
    )));
    // `reader_spin` belongs to rwsems only.
    let text = with_object("rwq", r#"sem = { type = "mutex", reader_spin = true }"#);
    let e = err(&text);
    assert!(e.message.contains("reader_spin"), "{}", e.message);
}

/// `read_seqcount` lowers to begin, the body, and a retry that jumps back
/// to the begin; the writer ops take a `seqcount`.
#[test]
fn read_seqcount_is_a_retry_loop() {
    let text = with_code_in(
        &with_object("rwq", r#"sq = { type = "seqcount" }"#),
        r#"{ op = "write_seqcount_begin", obj = "sq" }, { op = "write_seqcount_end", obj = "sq" },
  { op = "read_seqcount", obj = "sq", body = [ { op = "work", time = "1us" } ] }"#,
    );
    let ops = ops_of(&text);
    let begin = ops
        .iter()
        .position(|o| matches!(o, Op::Locking(LockingOp::ReadSeqcountBegin { .. })))
        .unwrap();
    assert!(matches!(ops[begin + 1], Op::Work(_)));
    assert!(
        matches!(&ops[begin + 2], Op::Locking(LockingOp::ReadSeqcountRetry { retry, .. }) if *retry as usize == begin),
        "{ops:?}"
    );
    let e = err(&with_code_in(
        &with_object("rwq", r#"sq = { type = "seqcount" }"#),
        r#"{ op = "read_seqcount", obj = "m", body = [] }"#,
    ));
    assert!(e.message.contains("`m` is a mutex"), "{}", e.message);
}

/// The percpu_rw_semaphore API reads like the rwsem's: on
/// `cpu_hotplug_lock` it is `cpus_read_lock()` and friends, on a declared
/// `percpu_rwsem` it takes that object, on anything else it is refused.
#[test]
fn percpu_rwsem_ops_take_cpu_hotplug_lock_or_a_declared_one() {
    let ops = ops_of(&with_code(
        r#"{ op = "percpu_down_read", lock = "cpu_hotplug_lock" }, { op = "percpu_up_read", lock = "cpu_hotplug_lock" }"#,
    ));
    assert!(
        ops.contains(&Op::Locking(LockingOp::CpusReadLock))
            && ops.contains(&Op::Locking(LockingOp::CpusReadUnlock))
    );
    let ops = ops_of(&with_code_in(
        &with_object("rwq", r#"tg_rwsem = { type = "percpu_rwsem" }"#),
        r#"{ op = "percpu_down_write", lock = "tg_rwsem" }, { op = "percpu_up_write", lock = "tg_rwsem" }"#,
    ));
    assert!(
        ops.iter().any(|op| matches!(
            op,
            Op::Locking(LockingOp::Lock {
                mode: LockMode::Write,
                ..
            })
        )),
        "{ops:?}"
    );
    let e = err(&with_code(r#"{ op = "percpu_down_write", lock = "m" }"#));
    assert!(e.message.contains("`m` is a mutex"), "{}", e.message);
    assert_eq!(at(&e).2, "m");
    // An rwsem's own ops refuse it: there is no percpu_down_write_trylock.
    let e = err(&with_code_in(
        &with_object("rwq", r#"tg_rwsem = { type = "percpu_rwsem" }"#),
        r#"{ op = "down_write_trylock", lock = "tg_rwsem" }"#,
    ));
    assert!(e.message.contains("is a percpu_rwsem"), "{}", e.message);
}
