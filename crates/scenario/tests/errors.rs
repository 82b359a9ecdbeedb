//! Error messages: every error says where it is and what was expected.

mod common;
use common::*;

use std::path::Path;

use smpsim_scenario::{parse, Location};

const BASE: &str = scenario_text!(
    r#"[objects]
m = { type = "mutex" }
pm = { type = "mutex", per_cpu = true }

[[tasks]]
name = "w"
count = 2
code = [ { op = "work", time = "1us" } ]
"#
);

/// The base with `from` replaced by `to` (which must occur once).
fn edit(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from}");
    BASE.replace(from, to)
}

#[test]
fn base_is_valid() {
    parse(Path::new("t.toml"), BASE.to_string()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn toml_syntax_error_is_located() {
    let e = err(&edit("name = \"t\"", "name = \"t"));
    let (line, col, _) = at(&e);
    assert_eq!(line, 2);
    assert!(col >= 8, "{col}");
    assert!(e.to_string().starts_with("t.toml:2:"));
}

#[test]
fn unknown_field_names_the_field() {
    let e = err(&edit(
        "duration = \"1s\"",
        "duration = \"1s\"\ndurration = \"2s\"",
    ));
    assert!(e.message.contains("durration"), "{}", e.message);
    assert_eq!(at(&e).0, 4);
}

#[test]
fn field_not_allowed_for_op() {
    let e = err(&edit(
        "{ op = \"work\", time = \"1us\" }",
        "{ op = \"work\", time = \"1us\", lock = \"m\" }",
    ));
    assert_eq!(
        e.message,
        "`lock` is not a field of op `work`; expected one of: time, units"
    );
    assert_eq!(at(&e).2, "\"m\"");
}

#[test]
fn unknown_lock_name() {
    let e = err(&edit(
        "{ op = \"work\", time = \"1us\" }",
        "{ op = \"mutex_lock\", lock = \"nope\" }",
    ));
    assert!(e.message.contains("unknown object `nope`"), "{}", e.message);
    assert_eq!(at(&e), (16, 39, "nope".to_string()));
    assert!(e.help.as_deref().unwrap().contains("`m`, `pm`"));
}

#[test]
fn per_cpu_objects_need_an_index_and_others_refuse_one() {
    let e = err(&edit(
        "{ op = \"work\", time = \"1us\" }",
        "{ op = \"mutex_lock\", lock = \"pm\" }",
    ));
    assert!(e.message.contains("per-CPU"), "{}", e.message);
    let e = err(&edit(
        "{ op = \"work\", time = \"1us\" }",
        "{ op = \"mutex_lock\", lock = \"m[0]\" }",
    ));
    assert_eq!(at(&e).2, "0");
}

#[test]
fn negative_duration() {
    let e = err(&edit("duration = \"1s\"", "duration = \"-1s\""));
    assert!(e.message.contains("negative"), "{}", e.message);
    assert_eq!(at(&e), (3, 13, "-1s".to_string()));
}

#[test]
fn duration_without_unit() {
    let e = err(&edit("time = \"1us\"", "time = \"15\""));
    assert!(e.message.contains("no unit"), "{}", e.message);
}

#[test]
fn unknown_variant_lists_the_available_ones() {
    let text = format!("{BASE}\n[variant.fast]\ndescription = \"x\"\nscenario.duration = \"2s\"\n");
    let scn = parse(Path::new("t.toml"), text).unwrap();
    let e = scn.compile(Some("slow"), &[]).unwrap_err();
    println!("{e}");
    assert!(e.message.contains("unknown variant `slow`"));
    assert!(e.help.unwrap().contains("`fast`"));
}

#[test]
fn variant_error_is_located_in_the_variant_table() {
    let text = format!("{BASE}\n[variant.fast]\ndescription = \"x\"\n[[variant.fast.tasks]]\nname = \"w\"\ncount = -3\n");
    let e = err(&text);
    assert!(e.message.contains("cannot be negative"), "{}", e.message);
    let (line, col, under) = at(&e);
    assert_eq!((line, col, under.as_str()), (22, 9, "-3"));
}

#[test]
fn variant_override_of_unknown_task_group() {
    let text = format!("{BASE}\n[[variant.v.tasks]]\nname = \"nope\"\ncount = 1\n");
    let e = err(&text);
    assert!(
        e.message.contains("no `tasks` entry named `nope`"),
        "{}",
        e.message
    );
    assert_eq!(at(&e).0, 19);
}

#[test]
fn set_errors_name_the_option() {
    let scn = parse(Path::new("t.toml"), BASE.to_string()).unwrap();
    let sets = vec![("scenario.duration".to_string(), "-5ms".to_string())];
    let e = scn.compile(None, &sets).unwrap_err();
    assert_eq!(
        e.location,
        Location::Set {
            key: "scenario.duration".into(),
            value: "-5ms".into()
        }
    );
    assert!(
        e.to_string().starts_with("--set scenario.duration=-5ms: "),
        "{e}"
    );
    let sets = vec![("tasks.nope.count".to_string(), "1".to_string())];
    let e = scn.compile(None, &sets).unwrap_err();
    assert!(
        e.to_string().starts_with("--set tasks.nope.count=1: "),
        "{e}"
    );
    // A valid set applies.
    let sets = vec![
        ("tasks.w.count".to_string(), "3".to_string()),
        ("kernel.hz".to_string(), "250".to_string()),
    ];
    let spec = scn.compile(None, &sets).unwrap();
    assert_eq!(spec.task_groups[0].placement, vec![0, 1, 2]);
    assert_eq!(spec.knobs.hz, 250);
}

#[test]
fn per_cpu_and_count_contradict() {
    let e = err(&edit("count = 2", "count = 2\nper_cpu = 1"));
    assert!(e.message.contains("`per_cpu` and `count`"), "{}", e.message);
    assert_eq!(at(&e).0, 15);
}

#[test]
fn function_cycle() {
    let text = format!(
        "{BASE}\n[functions]\na = [ {{ op = \"call\", fn = \"b\" }} ]\nb = [ {{ op = \"work\", time = \"1us\" }}, {{ op = \"call\", fn = \"a\" }} ]\n"
    );
    let e = err(&text);
    assert!(e.message.contains("a -> b -> a"), "{}", e.message);
    assert_eq!(at(&e), (20, 58, "\"a\"".to_string()));
}

#[test]
fn contradictions() {
    let e = err(&edit("count = 2", "count = 2\npolicy = \"fifo\""));
    assert!(e.message.contains("needs `priority"), "{}", e.message);
    let e = err(&edit(
        "count = 2",
        "count = 2\npolicy = \"fifo\"\npriority = 100",
    ));
    assert!(e.message.contains("between 1 and 99"), "{}", e.message);
    let e = err(&edit("count = 2", "count = 2\npriority = 10"));
    assert!(e.message.contains("only for"), "{}", e.message);
    let e = err(&edit(
        "duration = \"1s\"",
        "duration = \"1s\"\nwarmup = \"1s\"",
    ));
    assert!(e.message.contains("shorter than"), "{}", e.message);
    let e = err(&edit(
        "preset = \"generic-x86\"",
        "preset = \"generic-x86\"\nprofile = \"x.toml\"",
    ));
    assert!(e.message.contains("both"), "{}", e.message);
    let e = err(&edit("preset = \"generic-x86\"", "preset = \"nope\""));
    assert!(e.help.unwrap().contains("generic-x86"));
    let e = err(&edit("cores_per_llc = 4", "cores_per_llc = 0"));
    assert!(e.message.contains("cores_per_llc"), "{}", e.message);
    assert_eq!(at(&e).2, "0");
    let e = err(&edit("count = 2", "count = 2\ncpus = \"0-4\""));
    assert!(e.message.contains("CPU 4 does not exist"), "{}", e.message);
    let e = err(&format!(
        "{BASE}\n[[cgroup]]\nname = \"g\"\ncpu_max = {{ quota = \"0ms\", period = \"5ms\" }}\n"
    ));
    assert!(e.message.contains("quota"), "{}", e.message);
    let e = err(&edit("name = \"w\"", "name = \"w\"\nmm = 3"));
    assert_eq!(e.message, "`mm` expects a string, not integer `3`");
}

#[test]
fn expression_errors_point_into_the_string() {
    let e = err(&edit(
        "{ op = \"work\", time = \"1us\" }",
        "{ op = \"set\", var = \"x\", value = \"1 + y\" }",
    ));
    assert!(e.message.contains("unknown variable `y`"), "{}", e.message);
    assert_eq!(at(&e).2, "y");
}

#[test]
fn display_format() {
    let e = err(&edit("duration = \"1s\"", "duration = \"-1s\""));
    assert_eq!(
        e.to_string(),
        "t.toml:3:13: error: a duration cannot be negative\n  |\n3 | duration = \"-1s\"\n  |             ^^^"
    );
}

#[test]
fn load_reports_unreadable_files() {
    let e = smpsim_scenario::load(Path::new("/nonexistent/x.toml")).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("/nonexistent/x.toml: error: cannot read scenario"));
}

#[test]
fn variant_scoped_sets_apply_to_that_variant_only() {
    let text = format!("{BASE}\n[variant.a]\n[variant.b]\n");
    let scn = parse(Path::new("t.toml"), text).unwrap();
    let sets = vec![("variant.a.tasks.w.count".to_string(), "3".to_string())];
    let a = scn.compile(Some("a"), &sets).unwrap();
    let b = scn.compile(Some("b"), &sets).unwrap();
    let base = scn.compile(None, &sets).unwrap();
    assert_eq!(a.task_groups[0].placement.len(), 3);
    assert_eq!(b.task_groups[0].placement.len(), 2);
    assert_eq!(base.task_groups[0].placement.len(), 2);
    // A misspelt variant is refused, whichever variant is compiled.
    let sets = vec![("variant.c.scenario.duration".to_string(), "1ms".to_string())];
    for v in [None, Some("a")] {
        let e = scn.compile(v, &sets).unwrap_err();
        assert_eq!(e.message, "unknown variant `c`");
        assert!(e.help.as_deref().unwrap().contains("`a`, `b`"), "{e}");
    }
    let sets = vec![("variant.a".to_string(), "1ms".to_string())];
    let e = scn.compile(Some("a"), &sets).unwrap_err();
    assert!(e.message.contains("whole variant"), "{e}");
    // A scenario without variants says so.
    let scn = parse(Path::new("t.toml"), BASE.to_string()).unwrap();
    let sets = vec![("variant.a.scenario.duration".to_string(), "1ms".to_string())];
    let e = scn.compile(None, &sets).unwrap_err();
    assert!(e.help.as_deref().unwrap().contains("no variants"), "{e}");
}

#[test]
fn a_shorter_duration_set_names_the_warmup_to_set_too() {
    let text = BASE.replace("duration = \"1s\"", "duration = \"1s\"\nwarmup = \"100ms\"");
    let scn = parse(Path::new("t.toml"), text).unwrap();
    let sets = vec![("scenario.duration".to_string(), "20ms".to_string())];
    let e = scn.compile(None, &sets).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--set scenario.duration=20ms: `warmup` (100ms) must be shorter"),
        "{e}"
    );
    assert!(
        e.help
            .as_deref()
            .unwrap()
            .contains("--set scenario.warmup=0s"),
        "{e}"
    );
    let mut sets = sets;
    sets.push(("scenario.warmup".to_string(), "0s".to_string()));
    assert_eq!(scn.compile(None, &sets).unwrap().duration, 20_000_000);
}

/// The code of the workers in `BASE` replaced by `code`.
fn code(code: &str) -> String {
    edit("{ op = \"work\", time = \"1us\" }", code)
}

#[test]
fn constant_division_by_zero_is_located_at_the_divisor() {
    for (value, under) in [("5 / 0", "0"), ("task_index % (2 - 2)", "(2 - 2)")] {
        let e = err(&code(&format!(
            "{{ op = \"set\", var = \"x\", value = \"{value}\" }}"
        )));
        assert_eq!(e.message, "division by zero");
        assert_eq!(at(&e).2, under);
    }
    // A divisor that is only known at run time is left to the run.
    spec(&code(
        "{ op = \"set\", var = \"x\", value = \"5 / task_index\" }",
    ));
}

#[test]
fn constant_negative_counts_are_refused() {
    let e = err(&code(
        "{ op = \"loop\", count = \"1 - nr_cpus\", body = [ { op = \"work\", time = \"1us\" } ] }",
    ));
    assert_eq!(e.message, "loop count cannot be negative (got -3)");
    assert_eq!(at(&e).2, "\"1 - nr_cpus\"");
    let e = err(&code(
        "{ op = \"smp_call_function_single\", cpu = 1, func = \"1us\", units = \"0 - 2\" }",
    ));
    assert_eq!(e.message, "`units` cannot be negative (got -2)");
}

#[test]
fn constant_cpus_the_machine_lacks_are_refused() {
    for (op, under) in [
        (
            "{ op = \"smp_call_function_single\", cpu = 4, func = \"1us\" }",
            "4",
        ),
        (
            "{ op = \"smp_call_function_single\", cpu = \"nr_cpus\", func = \"1us\" }",
            "\"nr_cpus\"",
        ),
        ("{ op = \"set_cpu_offline\", cpu = -1 }", "-1"),
        ("{ op = \"set_cpu_online\", cpu = 100 }", "100"),
        (
            "{ op = \"smp_call_function_many\", cpus = \"1, 9\", func = \"1us\" }",
            "9",
        ),
    ] {
        let e = err(&code(op));
        assert!(
            e.message
                .contains("does not exist: the machine has 4 CPUs (0-3)"),
            "{e}"
        );
        assert_eq!(at(&e).2, under, "{op}");
    }
    spec(&code(
        "{ op = \"smp_call_function_single\", cpu = \"nr_cpus - 1\", func = \"1us\" }",
    ));
}

/// Issue 37: all tasks together are bounded (`[scenario] max_tasks`), and
/// the error is at the group that crosses the bound, before its tasks
/// are made (20 groups of 1,048,576 tasks used 7.5 GB; 2,000 aborted).
#[test]
fn too_many_tasks_in_all_is_located_at_the_group_that_crosses() {
    let mut text = String::from(scenario_text!(""));
    for i in 0..2000 {
        text.push_str(&format!(
            "[[tasks]]\nname = \"g{i}\"\ncount = 1048576\ncode = '''work(1us);'''\n"
        ));
    }
    let e = err(&text);
    assert!(
        e.message
            .contains("more than `max_tasks` = 2097152 tasks: group `g2` brings them to 3145728"),
        "{}",
        e.message
    );
    let (line, _, under) = at(&e);
    assert_eq!(under, "1048576");
    assert_eq!(line, 8 + 4 * 2 + 3, "g2's count");
    assert!(e
        .help
        .as_deref()
        .unwrap()
        .contains("[scenario] max_tasks = N"));
    // Raised, three such groups compile.
    let three: String = text.lines().take(8 + 4 * 3).collect::<Vec<_>>().join("\n");
    let raised = three.replacen(
        "duration = \"1s\"",
        "duration = \"1s\"\nmax_tasks = 3145728",
        1,
    );
    let s = spec(&raised);
    assert_eq!(s.task_groups.len(), 3);
    let e = err(&three.replacen("duration = \"1s\"", "duration = \"1s\"\nmax_tasks = 0", 1));
    assert!(
        e.message.contains("`max_tasks` must be a positive number"),
        "{}",
        e.message
    );
}

/// The default bound lets the largest machine, 1,048,576 CPUs, run one
/// task per CPU with per-CPU objects.
#[test]
fn the_largest_machine_with_a_task_per_cpu_is_within_the_default_bounds() {
    let text = "[scenario]\nname = \"t\"\nduration = \"1ms\"\n[machine]\npreset = \"generic-x86\"\n\
        topology = { sockets = 16, numa_nodes_per_socket = 8, llcs_per_node = 32, cores_per_llc = 128, threads_per_core = 2 }\n\
        [objects]\nm = { type = \"mutex\", per_cpu = true }\nn = { type = \"mutex\", per_cpu = true }\n\
        [[tasks]]\nname = \"t\"\nper_cpu = 1\ncode = '''work(1us);'''\n";
    let s = spec(text);
    assert_eq!(s.machine.nr_cpus(), 1 << 20);
    assert_eq!(s.task_groups[0].placement.len(), 1 << 20);
}

/// Object instances (a `per_cpu` object is one per CPU) are bounded by
/// `[scenario] max_objects`, located at the object that crosses it.
#[test]
fn too_many_object_instances_is_located_at_the_object() {
    let mut text = String::from(scenario_text!("[objects]\n"));
    text = text.replacen(
        "duration = \"1s\"",
        "duration = \"1s\"\nmax_objects = 10",
        1,
    );
    for i in 0..3 {
        text.push_str(&format!("o{i} = {{ type = \"mutex\", per_cpu = true }}\n"));
    }
    text.push_str("[[tasks]]\nname = \"t\"\ncount = 1\ncode = '''work(1us);'''\n");
    let e = err(&text);
    assert!(
        e.message
            .contains("more than `max_objects` = 10 object instances")
            && e.message.contains("`o2` brings them to 12"),
        "{}",
        e.message
    );
    assert_eq!(at(&e).2, "o2");
}

const TLB: &str = "[scenario]\nname = \"t\"\nduration = \"1ms\"\n[machine]\npreset = \"amd-milan-96\"\n\
[machine.tlb]\nbroadcast = true\nsource = \"assumed: test\"\n\
invlpgb = { ns = 100, source = \"assumed\" }\ntlbsync = { ns = 200, source = \"assumed\" }\ncount_max = 8\n\
[[tasks]]\nname = \"a\"\ncount = 1\ncode = '''work(1us);'''\n";

/// Issue 37: a machine value the scenario gives is reported at its key,
/// not at the preset's `[topology]` (`<preset amd-milan-96>:16:1`).
#[test]
fn machine_override_errors_are_at_the_users_key() {
    for (from, to, under, want) in [
        ("count_max = 8", "count_max = 0", "0", "tlb.count_max = 0"),
        ("ns = 100", "ns = nan", "nan", "invlpgb.ns = NaN"),
        ("ns = 200", "ns = inf", "inf", "tlbsync.ns = inf"),
        ("ns = 200", "ns = -inf", "-inf", "tlbsync.ns = -inf"),
    ] {
        let e = err(&TLB.replace(from, to));
        assert!(e.message.contains(want), "{}", e.message);
        let Location::Text { name, .. } = &e.location else {
            panic!("{e}")
        };
        assert_eq!(name, "t.toml", "{e}");
        assert_eq!(at(&e).2, under, "{e}");
    }
    // The same through `--set`: at the option.
    let s = parse(Path::new("t.toml"), TLB.to_string()).unwrap();
    for (key, value, want) in [
        ("machine.tlb.count_max", "0", "tlb.count_max = 0"),
        ("machine.tlb.invlpgb.ns", "nan", "invlpgb.ns = NaN"),
        ("machine.tlb.tlbsync.ns", "inf", "tlbsync.ns = inf"),
        ("machine.costs.ipi_send.ns", "nan", "ipi_send.ns = NaN"),
    ] {
        let e = s
            .compile(None, &[(key.to_string(), value.to_string())])
            .unwrap_err();
        assert!(e.message.contains(want), "{}", e.message);
        assert_eq!(
            e.location,
            Location::Set {
                key: key.into(),
                value: value.into()
            },
            "{e}"
        );
    }
}

/// A dotted key 100 parts deep: located at the key, not "recursion
/// limit" at 1:1; in a variant too.
#[test]
fn a_dotted_key_too_deep_is_located() {
    let deep = vec!["x"; 100].join(".");
    let e = err(&BASE.replace("[objects]", &format!("{deep} = 1\n[objects]")));
    assert!(
        e.message.contains("this key has 100 dotted parts"),
        "{}",
        e.message
    );
    let (line, col, _) = at(&e);
    assert_eq!((line, col), (9, 1), "{e}");
    let e = err(&format!("{BASE}[variant.v]\nscenario.{deep} = 1\n"));
    assert!(e.message.contains("101 dotted parts"), "{}", e.message);
    assert_eq!(at(&e).0, BASE.lines().count() + 2);
}

/// An error on a megabyte line shows the part around it, not the line.
#[test]
fn an_error_on_a_huge_line_does_not_echo_it() {
    let code = "work(1us); ".repeat(110_000);
    let e = err(&edit(
        "code = [ { op = \"work\", time = \"1us\" } ]",
        &format!("code = '''{code}'''"),
    ));
    assert!(e.message.contains("this code string is"), "{}", e.message);
    let shown = e.to_string();
    assert!(shown.len() < 1000, "{} bytes shown", shown.len());
    assert!(shown.contains("characters in all)"), "{shown}");
    // The caret still sits under the string.
    let lines: Vec<&str> = shown.lines().collect();
    let caret = lines[3].find('^').unwrap();
    assert_eq!(&lines[2][caret..caret + 3], "'''", "{shown}");
}

/// `work(300)` says that a time needs a unit.
#[test]
fn a_time_without_a_unit_says_it_needs_one() {
    let e = err(&edit(
        "code = [ { op = \"work\", time = \"1us\" } ]",
        "code = '''work(300);'''",
    ));
    assert_eq!(
        e.message,
        "`work(300)`: a time needs a unit: write `work(300ns)` (or us, ms, s)"
    );
    assert_eq!(at(&e).2, "300");
    let e = err(&edit("time = \"1us\"", "time = 300"));
    assert_eq!(
        e.message,
        "`time = 300`: a time needs a unit: write `time = \"300ns\"` (or us, ms, s)"
    );
}
