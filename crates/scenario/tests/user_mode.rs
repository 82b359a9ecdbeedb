//! What user code cannot do (issue 37, items 7 and 8): disable interrupts
//! or preemption outside `syscall(...) { }`, and return from a syscall
//! with a lock taken in it still held. Both are refused when the scenario
//! is loaded, with the place in the file and what to do.

mod common;
use common::*;

use std::path::Path;

use smpsim_scenario::{parse, ScenarioError};

const BASE: &str = scenario_text!(
    r#"[objects]
sem = { type = "rwsem" }
lock = { type = "spinlock" }

[[tasks]]
name = "a"
count = 1
code = '''
CODE
'''
"#
);

fn text(code: &str) -> String {
    BASE.replace("CODE", code)
}

/// The error loading (parsing, then compiling) `code` gives.
fn refused(code: &str) -> ScenarioError {
    let t = text(code);
    let e = match parse(Path::new("t.toml"), t.clone()) {
        Err(e) => e,
        Ok(s) => match s.compile(None, &[]) {
            Err(e) => e,
            Ok(_) => panic!("expected an error for:\n{code}"),
        },
    };
    println!("{e}\n");
    e
}

fn accepted(code: &str) {
    let t = text(code);
    parse(Path::new("t.toml"), t)
        .unwrap_or_else(|e| panic!("{e}"))
        .compile(None, &[])
        .unwrap_or_else(|e| panic!("{e}"));
}

/// The code's first line is line 17 of the file.
const FIRST: usize = 17;

#[test]
fn user_code_cannot_disable_interrupts_or_preemption() {
    // The issue's reproducer, and the same with preempt_disable().
    for (code, op, what) in [
        (
            "local_irq_disable(); work(50ms); local_irq_enable();",
            "local_irq_disable",
            "interrupts",
        ),
        (
            "preempt_disable(); work(50ms); preempt_enable();",
            "preempt_disable",
            "preemption",
        ),
        (
            "work(1us);\nspin_lock_irqsave(lock); work(1us); spin_unlock_irqrestore(lock);",
            "spin_lock_irqsave",
            "interrupts",
        ),
        (
            "for (;;) {\n  spin_guard(lock, irqsave = true) { work(1us); }\n}",
            "spin_guard(..., irqsave = true)",
            "interrupts",
        ),
    ] {
        let e = refused(code);
        let (line, col, _) = at(&e);
        let line_in_code = code
            .lines()
            .position(|l| l.contains(op.split('(').next().unwrap()))
            .unwrap();
        assert_eq!(line, FIRST + line_in_code, "{e}");
        assert!(col >= 1, "{e}");
        assert!(
            e.message.contains(&format!("`{op}` in user code"))
                && e.message.contains(&format!("cannot disable {what}")),
            "{e}"
        );
        assert!(e.to_string().contains("inside `syscall(NAME)"), "{e}");
        assert!(e.to_string().starts_with(&format!("t.toml:{line}:")), "{e}");
    }
}

#[test]
fn kernel_code_may_disable_them_and_user_code_may_take_plain_spinlocks() {
    accepted("syscall(x) { local_irq_disable(); work(50ms); local_irq_enable(); }");
    accepted("syscall(x) { preempt_disable(); work(1us); preempt_enable(); }");
    accepted("syscall(x) { spin_guard(lock, irqsave = true) { work(1us); } }");
    // A user-space spinlock model (lock-scaling, folly's locks).
    accepted("for (;;) { spin_guard(lock) { work(1us); } work(1us); }");
}

/// Issue 37, item 8: `syscall(stat) { down_read(sem); work(200ns); }`.
#[test]
fn a_syscall_that_can_return_holding_a_lock_is_refused() {
    for code in [
        "for (;;) {\n  syscall(stat) { down_read(sem); work(200ns); }\n}",
        "for (;;) {\n  syscall(stat) { down_read(sem); if (uniform(0, 2) == 0) { up_read(sem); } }\n}",
        "x = 0;\nsyscall(stat) { spin_lock(lock); loop (3) { work(1us); } }",
    ] {
        let e = refused(code);
        let (line, _, _) = at(&e);
        let line_in_code = code.lines().position(|l| l.contains("syscall")).unwrap();
        assert_eq!(line, FIRST + line_in_code, "{e}");
        assert!(
            e.message.contains("can return to user space holding")
                && e.message.contains("lock held when returning to user space!"),
            "{e}"
        );
    }
    // Balanced on every path: accepted.
    accepted("for (;;) { syscall(stat) { down_read(sem); work(200ns); up_read(sem); } }");
    accepted(
        "for (;;) { syscall(stat) { down_read(sem); if (uniform(0, 2) == 0) { up_read(sem); } else { work(1us); up_read(sem); } } }",
    );
    accepted("for (;;) { syscall(stat) { rwsem_read_guard(sem) { work(1us); } } }");
    // A lock taken in user code around the syscall is not the syscall's.
    accepted("for (;;) { spin_lock(lock); syscall(stat) { work(1us); } spin_unlock(lock); }");
}
