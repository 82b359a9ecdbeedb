//! A division (or remainder) by zero in a hook faults as the same
//! expression in a task's code does: the `divide_error` finding with the
//! same text (the hook named where the task is), at the CPU that ran it
//! and the time the hook reached the op, and the run stops there. Before,
//! a hook got 0 and went on.

mod common;

/// Two CPUs, 2 ms, a per-CPU spinlock and a per-CPU atomic, then `rest`.
fn scenario(rest: &str) -> String {
    format!(
        "[scenario]\nname = \"c\"\nduration = \"2ms\"\n\
         [machine]\npreset = \"generic-x86\"\ntopology = {{ cores_per_llc = 2 }}\n\
         [objects]\nrq_lock = {{ type = \"spinlock\", per_cpu = true }}\n\
         hits = {{ type = \"atomic\", per_cpu = true }}\n{rest}"
    )
}

/// The one `divide_error` finding of a run: (message, CPU, time), and
/// how far the run got.
fn fault(name: &str, text: &str) -> (String, u64, u64, u64) {
    common::the_finding(&format!("hook-divide-error-{name}"), "divide_error", text)
}

/// A task pinned to CPU 1 (the task `t/0`) that runs `op` once, after
/// 100 us, at its op 2 (op 0 the work, op 1 the syscall's entry).
fn task(op: &str) -> String {
    format!(
        "[[tasks]]\nname = \"t\"\ncpus = \"1\"\ncount = 1\ncode = '''\n\
         work(100us);\nsyscall(x) {{ {op} }}\nfor (;;) {{ work(10us); }}'''\n"
    )
}

/// A task busy on CPU 1, whose tick runs the hook: twice 500 ns of work
/// (its ops 0 and 1), then `op` at its op 2, as the task's.
fn tick_hook(op: &str) -> String {
    format!(
        "[[tasks]]\nname = \"t\"\ncpus = \"1\"\ncount = 1\ncode = '''for (;;) {{ work(10us); }}'''\n\
         [hooks]\nsched_tick = '''work(500ns); work(500ns); {op}'''\n"
    )
}

#[test]
fn a_hooks_division_by_zero_faults_as_a_tasks_does() {
    // On CPU 1, `this_cpu() - 1` is 0.
    for (n, (what, op, says)) in [
        (
            "per-CPU atomic's index",
            "atomic_inc(hits[this_cpu() / (this_cpu() - 1)]);",
            "1 / 0",
        ),
        (
            "per-CPU spinlock's index, remainder",
            "spin_guard(rq_lock[this_cpu() % (this_cpu() - 1)]) { work(10ns); }",
            "1 / 0",
        ),
        (
            "if's condition",
            "if (7 / (this_cpu() - 1) == 0) { work(10ns); }",
            "7 / 0",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let (in_task, task_cpu, task_at, task_reached) =
            fault(&format!("task-{n}"), &scenario(&task(op)));
        let (in_hook, hook_cpu, hook_at, hook_reached) =
            fault(&format!("hook-{n}"), &scenario(&tick_hook(op)));
        // The same text, the hook named where the task is.
        let text =
            |who: &str| format!("divide error: {who} computed {says} at op 2; the run stops");
        assert_eq!(in_task, text("t/0"), "{what}");
        assert_eq!(in_hook, text("the `sched_tick` hook"), "{what}");
        // On the CPU that ran it, and the run stops there (2 ms asked).
        assert_eq!((task_cpu, hook_cpu), (1, 1), "{what}");
        for (at, reached) in [(task_at, task_reached), (hook_at, hook_reached)] {
            assert!((100_000..1_100_000).contains(&at), "{what}: at {at}");
            assert!(reached < 2_000_000, "{what}: the run went on to {reached}");
        }
        // The hook's fault is at its own time: after its 1 us of work.
        assert!(
            hook_at % 1_000_000 != 0,
            "{what}: at {hook_at}, the tick's start"
        );
    }
}
