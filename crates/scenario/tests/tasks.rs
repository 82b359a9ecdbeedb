//! Task groups: where tasks start and where they may run.

mod common;
use common::*;

use smpsim_kernel::Affinity;

fn tasks(keys: &str) -> String {
    format!(
        "{}[[tasks]]\nname = \"w\"\n{keys}\ncode = [ {{ op = \"work\", time = \"1us\" }} ]\n",
        scenario_text!("")
    )
}

#[test]
fn per_cpu_tasks_are_pinned_and_counted_ones_may_use_their_cpus() {
    let s = spec(&tasks("per_cpu = 1"));
    assert_eq!(s.task_groups[0].affinity, Affinity::Pinned);
    let s = spec(&tasks("count = 2\ncpus = \"1-2\""));
    assert_eq!(s.task_groups[0].affinity, Affinity::Cpus(vec![1, 2]));
    let s = spec(&tasks("count = 2\ncpus = \"1\"\naffinity = \"all\""));
    assert_eq!(s.task_groups[0].placement, vec![1, 1]);
    assert_eq!(s.task_groups[0].affinity, Affinity::Cpus(vec![0, 1, 2, 3]));
    let s = spec(&tasks("count = 2\naffinity = \"pinned\""));
    assert_eq!(s.task_groups[0].affinity, Affinity::Pinned);
}

#[test]
fn affinity_must_allow_where_the_tasks_start() {
    let text = tasks("count = 2\ncpus = \"0-1\"\naffinity = \"1-3\"");
    let e = err(&text);
    assert!(
        e.message.contains("start on CPU 0") && e.message.contains("`affinity`"),
        "{}",
        e.message
    );
    assert_eq!(at(&e).2, "\"1-3\"");
    let e = err(&tasks("count = 1\naffinity = \"7\""));
    assert!(e.message.contains("CPU 7 does not exist"), "{}", e.message);
}
