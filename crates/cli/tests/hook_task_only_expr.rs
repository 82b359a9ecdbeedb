//! An expression a hook cannot evaluate (a task's own state, its random
//! stream) is refused at scenario loading, in the scenario's own words and
//! at the expression's line and column. Before, the error named the
//! compiled op (`JumpUnless`) and pointed at the hook's whole body.

mod common;

use common::{dir, refused_at, At, HEADER, TASK};

#[test]
fn an_expression_a_hook_cannot_evaluate_is_refused_where_it_is_written() {
    let d = dir("hook-task-only-expr");
    for (name, hook, bad, says) in [
        (
            "uniform-in-if",
            "work(10ns);\nif (uniform(0, 10) < 5) { work(10ns); }",
            "uniform(0, 10)",
            "`uniform()` cannot be evaluated in a hook (hook `sched_tick`)",
        ),
        (
            "task-index-in-index",
            "atomic_inc(hits[task_index]);",
            "task_index]",
            "`task_index` cannot be evaluated in a hook (hook `sched_tick`)",
        ),
    ] {
        let path = d.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "{HEADER}[objects]\nhits = {{ type = \"atomic\", per_cpu = true }}\n{TASK}\
                 [hooks]\nsched_tick = '''\n{hook}'''\n"
            ),
        )
        .unwrap();
        refused_at(name, &path, At::Text(bad), says);
        // What a hook may use instead is listed.
        refused_at(name, &path, At::Located, "this_cpu()");
    }
}
