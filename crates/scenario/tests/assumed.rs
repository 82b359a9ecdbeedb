//! Assumed values written with their ranges: `{ value, range, source }`
//! means what the plain value means; the ranges are listed for bands; a
//! bad range is an error at its place in the file.

mod common;
use common::*;

use std::path::Path;

use smpsim_scenario::parse;

const PLAIN: &str = scenario_with_workers!("[kernel]\nhz = 1000\ntg_walk_cost = \"150ns\"\n");

fn with_kernel(hz: &str, walk: &str) -> String {
    PLAIN.replace("hz = 1000", &format!("hz = {hz}")).replace(
        "tg_walk_cost = \"150ns\"",
        &format!("tg_walk_cost = {walk}"),
    )
}

const WALK: &str =
    r#"{ value = "150ns", range = ["75ns", "300ns"], source = "assumed: 2-3 cache misses" }"#;

#[test]
fn a_value_with_a_range_compiles_as_the_plain_value() {
    let text = with_kernel("{ value = 1000, source = \"assumed: CONFIG_HZ\" }", WALK);
    let plain = spec(PLAIN);
    let ranged = spec(&text);
    assert_eq!(plain.knobs, ranged.knobs);
    // A `--set` replaces the table as it replaces a plain value.
    let s = parse(Path::new("t.toml"), text).unwrap();
    let set = s
        .compile(None, &[("kernel.tg_walk_cost".into(), "300ns".into())])
        .unwrap();
    assert_eq!(set.knobs.tg_walk_cost, 300);
}

#[test]
fn ranges_are_listed_stated_or_default() {
    let text = with_kernel("{ value = 1000, source = \"assumed: CONFIG_HZ\" }", WALK);
    let s = parse(Path::new("t.toml"), text).unwrap();
    let values = s.assumed_values(None, &[]).unwrap();
    assert_eq!(values.len(), 2, "{values:?}");
    let hz = values.iter().find(|v| v.key == "kernel.hz").unwrap();
    assert_eq!(
        (hz.lo.as_str(), hz.hi.as_str(), hz.stated),
        ("500", "2000", false)
    );
    let walk = values
        .iter()
        .find(|v| v.key == "kernel.tg_walk_cost")
        .unwrap();
    assert_eq!(walk.value, "\"150ns\"");
    assert_eq!(
        (walk.lo.as_str(), walk.hi.as_str()),
        ("\"75ns\"", "\"300ns\"")
    );
    assert!(walk.stated);
    assert_eq!(walk.source, "assumed: 2-3 cache misses");
}

#[test]
fn a_task_groups_value_is_reached_by_its_name() {
    let text = PLAIN.replace(
        "count = 2",
        "count = { value = 2, range = [1, 4], source = \"assumed: two workers\" }",
    );
    let s = parse(Path::new("t.toml"), text).unwrap();
    let values = s.assumed_values(None, &[]).unwrap();
    assert_eq!(values[0].key, "tasks.w.count");
    assert_eq!(
        s.compile(None, &[]).unwrap().task_groups[0].placement.len(),
        2
    );
}

#[test]
fn a_range_that_does_not_hold_the_value_is_located() {
    let bad = r#"{ value = "150ns", range = ["200ns", "300ns"], source = "assumed: x" }"#;
    let text = with_kernel("1000", bad);
    let e = err(&text);
    let (line, col, under) = at(&e);
    let want = text
        .lines()
        .position(|l| l.starts_with("tg_walk_cost"))
        .unwrap()
        + 1;
    assert_eq!(line, want);
    assert_eq!(under, r#"["200ns", "300ns"]"#, "col {col}");
    assert!(
        e.to_string().contains("the range must hold the value"),
        "{e}"
    );
}

#[test]
fn malformed_ranges_are_located() {
    for (bad, says, under) in [
        (
            r#"{ value = "150ns", range = ["75ns"], source = "assumed: x" }"#,
            "two values",
            r#"["75ns"]"#,
        ),
        (
            r#"{ value = "150ns", range = [75, "300ns"], source = "assumed: x" }"#,
            "of the kind of `value`",
            "75",
        ),
        (
            r#"{ value = "150ns", range = ["75ns", "300ns"] }"#,
            "needs its `source`",
            r#"["75ns", "300ns"]"#,
        ),
        (
            r#"{ value = "150ns", rnage = ["75ns", "300ns"], source = "assumed: x" }"#,
            "unknown key `rnage`",
            "rnage",
        ),
    ] {
        let e = err(&with_kernel("1000", bad));
        assert!(e.to_string().contains(says), "{e}");
        assert_eq!(at(&e).2, under, "{e}");
    }
}

#[test]
fn a_machine_costs_bad_range_is_located_where_the_scenario_gives_it() {
    let text = PLAIN.replace(
        "preset = \"generic-x86\"\n",
        "preset = \"generic-x86\"\ncosts.ipi_latency = { ns = 1000, range = [2000, 4000], source = \"assumed: x\" }\n",
    );
    let e = err(&text);
    let (line, _, under) = at(&e);
    assert_eq!(line, 7, "{e}");
    assert_eq!(under, "[2000, 4000]", "{e}");
    assert!(
        e.to_string().contains("the range must hold the cost"),
        "{e}"
    );
}

#[test]
fn a_new_value_for_a_cost_drops_the_range_written_for_the_old_one() {
    // x86-16 states ipi_latency = 1000 ns, range [500, 1500].
    let text = PLAIN.replace("preset = \"generic-x86\"", "preset = \"x86-16\"");
    let text = text.replace(
        "topology = { sockets = 1, numa_nodes_per_socket = 1, llcs_per_node = 1, cores_per_llc = 4, threads_per_core = 1 }\n",
        "",
    );
    let s = parse(Path::new("t.toml"), text).unwrap();
    let spec = s
        .compile(
            None,
            &[("machine.costs.ipi_latency.ns".into(), "5000".into())],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.machine.costs.ipi_latency.range, None);
    assert_eq!(
        spec.machine.costs.ipi_latency.band_range(),
        Some((2500.0, 10000.0))
    );
    let kept = s.compile(None, &[]).unwrap();
    assert_eq!(kept.machine.costs.ipi_latency.range, Some([500.0, 1500.0]));
}
