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

fn with_variables(code: &str) -> String {
    format!(
        "{}[objects]\nflag = {{ type = \"variable\", initial = 3 }}\npcv = {{ type = \"variable\", per_cpu = true }}\nm = {{ type = \"mutex\" }}\n\n[[tasks]]\nname = \"w\"\ncount = 1\ncode = [ {code} ]\n",
        scenario_text!("")
    )
}

#[test]
fn shared_variables_are_read_and_written_by_name() {
    use smpsim_kernel::program::{CheckOp, Cond, Expr, ObjRef, Op};
    let ops = ops_of(&with_variables(
        r#"{ op = "write_once", obj = "flag", value = "read_once(flag) + 1" }, { op = "this_cpu_write", obj = "pcv", value = "per_cpu(pcv, 0)" }, { op = "assert", cond = "this_cpu_read(pcv) == 0", message = "m" }"#,
    ));
    let flag = ObjRef {
        object: 0,
        index: None,
    };
    assert!(
        matches!(&ops[0], Op::Check(CheckOp::WriteOnce { var, value: Expr::Bin(..) }) if *var == flag)
    );
    let this = ObjRef {
        object: 1,
        index: Some(Expr::ThisCpu),
    };
    assert!(matches!(&ops[1], Op::Check(CheckOp::WriteOnce { var, .. }) if *var == this));
    assert!(
        matches!(&ops[2], Op::Check(CheckOp::Assert { cond: Cond::Cmp(..), message }) if message == "m")
    );
}

#[test]
fn shared_variable_mistakes_are_located() {
    let e = err(&with_variables(
        r#"{ op = "assert", cond = "read_once(m) == 0", message = "x" }"#,
    ));
    assert!(
        e.message.contains("`m` is not a shared variable") && e.message.contains("`flag`"),
        "{}",
        e.message
    );
    assert_eq!(at(&e).2, "m");
    let e = err(&with_variables(
        r#"{ op = "set", var = "x", value = "read_once(pcv)" }"#,
    ));
    assert!(e.message.contains("per-CPU"), "{}", e.message);
    let e = err(&with_variables(
        r#"{ op = "this_cpu_write", obj = "flag", value = "1" }"#,
    ));
    assert!(
        e.message.contains("per-CPU shared variable"),
        "{}",
        e.message
    );
    let e = err(&with_variables(
        r#"{ op = "write_once", obj = "m", value = "1" }"#,
    ));
    assert!(e.message.contains("`m`"), "{}", e.message);
    let e = err(&with_variables(r#"{ op = "assert", cond = "1 == 1" }"#));
    assert!(e.message.contains("message"), "{}", e.message);
}

#[test]
fn a_call_has_a_cost_or_a_handler_and_a_handler_only_what_hardirq_allows() {
    let with = |code: &str, functions: &str| {
        format!(
            "{}[objects]\nl = {{ type = \"spinlock\" }}\nm = {{ type = \"mutex\" }}\n\n[functions]\n{functions}\n\n[[tasks]]\nname = \"w\"\ncount = 1\ncode = [ {code} ]\n",
            scenario_text!("")
        )
    };
    let ok = r#"h = [ { op = "spin_lock", lock = "l" }, { op = "work", time = "1us" }, { op = "spin_unlock", lock = "l" } ]"#;
    let s = spec(&with(
        r#"{ op = "smp_call_function_single", cpu = "1", handler = "h" }"#,
        ok,
    ));
    assert_eq!(s.handlers.len(), 1);
    let e = err(&with(
        r#"{ op = "smp_call_function_single", cpu = "1", func = "1us", handler = "h" }"#,
        ok,
    ));
    assert!(e.message.contains("not both"), "{}", e.message);
    let e = err(&with(
        r#"{ op = "smp_call_function_single", cpu = "1" }"#,
        ok,
    ));
    assert!(e.message.contains("needs `func = DIST`"), "{}", e.message);
    let bad = r#"h = [ { op = "mutex_lock", lock = "m" }, { op = "mutex_unlock", lock = "m" } ]"#;
    let e = err(&with(
        r#"{ op = "smp_call_function_many", cpus = "all_but_self", handler = "h" }"#,
        bad,
    ));
    assert!(e.message.contains("hardirq context"), "{}", e.message);
    let e = err(&with(
        r#"{ op = "smp_call_function_single", cpu = "1", handler = "nope" }"#,
        ok,
    ));
    assert!(
        e.message.contains("unknown function `nope`"),
        "{}",
        e.message
    );
}
