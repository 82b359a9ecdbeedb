//! An index out of range in a hook faults as the same index in a task's
//! code does: the `bad_percpu_index` finding with the same text (the
//! object, the index, the length; the hook named where the task is), at
//! the CPU that ran it, and the run stops there. Before, a hook took the
//! nearest end and went on.

mod common;

/// Two CPUs, 2 ms, a per-CPU spinlock, a per-CPU atomic and a 64-element
/// array of spinlocks, then `rest`.
fn scenario(rest: &str) -> String {
    format!(
        "[scenario]\nname = \"c\"\nduration = \"2ms\"\n\
         [machine]\npreset = \"generic-x86\"\ntopology = {{ cores_per_llc = 2 }}\n\
         [objects]\nrq_lock = {{ type = \"spinlock\", per_cpu = true }}\n\
         hits = {{ type = \"atomic\", per_cpu = true }}\n\
         b = {{ type = \"spinlock\", count = 64 }}\n{rest}"
    )
}

/// The one `bad_percpu_index` finding of a run: (message, CPU, time),
/// and how far the run got.
fn fault(name: &str, text: &str) -> (String, u64, u64, u64) {
    common::the_finding(&format!("hook-bad-index-{name}"), "bad_percpu_index", text)
}

/// A task that indexes `obj` with `index` on its first pass, pinned to
/// CPU 1 (the task `t/0`).
fn task(op: &str) -> String {
    format!(
        "[[tasks]]\nname = \"t\"\ncpus = \"1\"\ncount = 1\ncode = '''\n\
         work(100us);\nsyscall(x) {{ {op} }}\nfor (;;) {{ work(10us); }}'''\n"
    )
}

/// A task busy on CPU 1, whose tick runs the hook `op` after 100 us.
fn tick_hook(op: &str) -> String {
    format!(
        "[[tasks]]\nname = \"t\"\ncpus = \"1\"\ncount = 1\ncode = '''for (;;) {{ work(10us); }}'''\n\
         [hooks]\nsched_tick = '''{op}'''\n"
    )
}

#[test]
fn a_hooks_index_out_of_range_faults_as_a_tasks_does() {
    for (what, op, says) in [
        (
            "per-CPU spinlock",
            "spin_guard(rq_lock[this_cpu() + 2]) { work(10ns); }",
            "indexed per-CPU `rq_lock` with 3, outside [0, 2) (nr_cpu_ids); the run stops here",
        ),
        (
            "per-CPU atomic",
            "atomic_inc(hits[this_cpu() - 2]);",
            "indexed per-CPU `hits` with -1, outside [0, 2) (nr_cpu_ids); the run stops here",
        ),
        (
            "array element",
            "spin_guard(b[this_cpu() + 63]) { work(10ns); }",
            "indexed array `b[64]` with 64, outside [0, 64); the run stops here",
        ),
    ] {
        let (in_task, task_cpu, task_at, task_reached) =
            fault(&format!("task-{}", &what[..5]), &scenario(&task(op)));
        let (in_hook, hook_cpu, hook_at, hook_reached) =
            fault(&format!("hook-{}", &what[..5]), &scenario(&tick_hook(op)));
        // The same text, the hook named where the task is.
        assert_eq!(in_task, format!("BUG: t/0 {says}"), "{what}");
        assert_eq!(
            in_hook,
            format!("BUG: the `sched_tick` hook {says}"),
            "{what}"
        );
        // On the CPU that ran it, and the run stops there (2 ms asked).
        assert_eq!((task_cpu, hook_cpu), (1, 1), "{what}");
        for (at, reached) in [(task_at, task_reached), (hook_at, hook_reached)] {
            assert!((100_000..1_100_000).contains(&at), "{what}: at {at}");
            assert!(reached < 2_000_000, "{what}: the run went on to {reached}");
        }
    }
}
