//! `&&`, `||` and `!` in conditions, in a task's code and in a hook:
//! C's precedence (`!`, comparisons, `&&`, `||`) and short-circuit
//! evaluation; bad input as a located error, exit 2 and no result file.

mod common;

use common::{dir, refused_snippets, smpsim, stderr, HEADER};
use serde_json::Value;

/// Runs `text` (a whole scenario) as `name` in `d`, to JSON.
fn run(d: &std::path::Path, name: &str, text: &str) -> Value {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    let out = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn counter(r: &Value, name: &str) -> u64 {
    common::find_counter(r, name).unwrap_or(0)
}

/// Each compound condition takes the branch C would: the task counts
/// `yes` or `no` once per condition, with x = 1 and y = 2.
#[test]
fn compound_conditions_select_the_branch_c_would() {
    let d = dir("logical-ops-task");
    let cases = [
        ("x == 1 && y == 2", true),
        ("x == 1 && y == 3", false),
        ("x == 0 || y == 2", true),
        ("x == 0 || y == 3", false),
        // && binds tighter than ||: true || (false && false).
        ("x == 1 || y == 3 && x == 0", true),
        // (true || false) && false.
        ("(x == 1 || y == 3) && x == 0", false),
        ("!(x == 1 && y == 2)", false),
        ("!(x == 0) && !(y == 3)", true),
        ("not x == 0 && y == 2", true),
        ("cpu_online(0) && x + 1 == y", true),
    ];
    let mut code = String::from("x = 1; y = 2;\n");
    for (i, (cond, _)) in cases.iter().enumerate() {
        code += &format!("if ({cond}) {{ count(yes{i}); }} else {{ count(no{i}); }}\n");
    }
    code += "exit();";
    let v = run(
        &d,
        "s.toml",
        &format!("{HEADER}[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''{code}'''\n"),
    );
    let r = &v["variants"][0];
    for (i, (cond, want)) in cases.iter().enumerate() {
        let (yes, no) = (
            counter(r, &format!("yes{i}")),
            counter(r, &format!("no{i}")),
        );
        assert_eq!((yes, no), (*want as u64, !*want as u64), "{cond}");
    }
}

/// In a hook too: on the tick of CPU 1 of 2, `this_cpu() == 1 &&
/// nr_cpus == 2` holds, `this_cpu() == 0 || nr_cpus == 3` does not.
#[test]
fn compound_conditions_in_a_hook() {
    let d = dir("logical-ops-hook");
    let v = run(
        &d,
        "s.toml",
        "[scenario]\nname = \"c\"\nduration = \"10ms\"\n\
         [machine]\npreset = \"generic-x86\"\ntopology = { cores_per_llc = 2 }\n\
         [[tasks]]\nname = \"t\"\nper_cpu = 1\ncode = '''for (;;) { work(10us); }'''\n\
         [hooks]\nsched_tick = '''\n\
             if (this_cpu() == 1 && nr_cpus == 2) { count(both); }\n\
             if (this_cpu() == 0 || nr_cpus == 3) { count(either); }\n\
             if (!(this_cpu() == 1 || nr_cpus == 3)) { count(neither); }\n\
             count(ticks);\n'''\n",
    );
    let r = &v["variants"][0];
    let ticks = counter(r, "ticks");
    assert!(ticks >= 2, "ticks {ticks}");
    // Each CPU's ticks: CPU 1's count `both`, CPU 0's `either` and
    // `neither`.
    assert!(counter(r, "both") > 0);
    assert_eq!(counter(r, "both") + counter(r, "either"), ticks);
    assert_eq!(counter(r, "either"), counter(r, "neither"));
}

/// Short-circuit: the right side of `||` is not evaluated once the left
/// holds (nor of `&&` once it fails), so its `uniform()` draws nothing
/// from the task's random stream: the run is the one without it, to the
/// byte. Evaluated, the draw moves every later `exp()`.
#[test]
fn the_right_side_is_not_evaluated_when_the_left_decides() {
    let d = dir("logical-ops-short-circuit");
    let with = |cond: &str| {
        format!(
            "{HEADER}[[tasks]]\nname = \"t\"\ncount = 1\nvars = {{ x = 0 }}\ncode = '''for (;;) {{\n\
             if ({cond}) {{ count(taken); }}\n\
             work(exp(300ns)); count(ops); }}'''\n"
        )
    };
    let base = run(&d, "base.toml", &with("x == 0"));
    let or = run(&d, "or.toml", &with("x == 0 || uniform(0, 10) == 3"));
    let and = run(&d, "and.toml", &with("!(x != 0 && uniform(0, 10) == 3)"));
    let drawn = run(&d, "drawn.toml", &with("x == 1 || uniform(0, 10) < 10"));
    let ops = |v: &Value| counter(&v["variants"][0], "ops");
    let taken = |v: &Value| counter(&v["variants"][0], "taken");
    assert!(ops(&base) > 1000, "{}", ops(&base));
    assert_eq!((ops(&or), taken(&or)), (ops(&base), taken(&base)));
    assert_eq!((ops(&and), taken(&and)), (ops(&base), taken(&base)));
    // The branch taken every pass (the last one may end with the run
    // before its `count(ops)`), with a draw per pass.
    assert!(taken(&drawn).abs_diff(ops(&drawn)) <= 1);
    assert_ne!(ops(&drawn), ops(&base));
}

/// Bad input: a located error at the mistake, exit 2, no result file.
#[test]
fn logical_operator_mistakes_are_refused_where_they_stand() {
    let task = |cond: &str| {
        format!(
            "[[tasks]]\nname = \"t\"\ncount = 1\nvars = {{ a = 0, b = 1 }}\ncode = '''if ({cond}) {{ work(1us); }}'''\n"
        )
    };
    let hook = |cond: &str| {
        format!(
            "{}[hooks]\nsched_tick = '''if ({cond}) {{ work(10ns); }}'''\n",
            common::TASK
        )
    };
    refused_snippets(
        "logical-ops-refused",
        &[
            (
                "&& with no right side",
                task("a == 0 &&"),
                ") {",
                "found the end",
            ),
            (
                "and as a word",
                task("a == 0 and b == 1"),
                "and b",
                "`and` is not an operator",
            ),
            (
                "or as a word",
                task("a == 0 or b == 1"),
                "or b",
                "write `||`",
            ),
            (
                "a lone &",
                task("a == 0 & b == 1"),
                "& b",
                "join conditions with `&&`",
            ),
            (
                "! before a bare comparison",
                task("!a == 1"),
                "!a",
                "(!x) == 1",
            ),
            (
                "|| in a hook with no left side",
                hook("|| this_cpu() == 0"),
                "||",
                "expected a number",
            ),
            (
                "or in a hook",
                hook("this_cpu() == 0 or nr_cpus == 2"),
                "or nr",
                "write `||`",
            ),
        ],
    );
}
