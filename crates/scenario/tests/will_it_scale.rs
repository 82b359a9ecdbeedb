//! scenarios/will-it-scale/: every test runs at 1 and 4 CPUs in both
//! will-it-scale modes. In processes mode nothing is shared, so 4 CPUs do
//! 4 times the work of one; in threads mode the tests whose path takes a
//! lock of the process (sighand->siglock, mmap_lock, the flush IPIs to
//! the other threads' CPUs) fall short of it.

use std::path::Path;

use smpsim_scenario::load;

/// Tests whose threads share a lock or an IPI per iteration.
const SHARED_IN_THREADS: &[&str] = &[
    "signal1",
    "mmap1",
    "mmap2",
    "tlb_flush1",
    "tlb_flush2",
    "tlb_flush3",
];

fn rate(name: &str, variant: &str, cpus: &str) -> f64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/will-it-scale");
    let scn = load(&dir.join(format!("{name}.toml"))).unwrap_or_else(|e| panic!("{e}"));
    let mut sets = vec![
        ("scenario.duration".to_string(), "2ms".to_string()),
        ("scenario.warmup".to_string(), "200us".to_string()),
        ("machine.preset".to_string(), "generic-x86".to_string()),
        ("tasks.testcase.cpus".to_string(), cpus.to_string()),
    ];
    if name == "context_switch1" {
        sets.push(("tasks.child.cpus".to_string(), cpus.to_string()));
    }
    let spec = scn
        .compile(Some(variant), &sets)
        .unwrap_or_else(|e| panic!("{name} {variant}: {e}"));
    let r = smpsim_kernel::simulate(&spec);
    assert!(r.findings.is_empty(), "{name} {variant}: {:?}", r.findings);
    r.counter("ops").map_or(0.0, |c| c.rate)
}

#[test]
fn every_test_runs_at_one_to_four_cpus_in_both_modes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/will-it-scale");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".toml").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    for name in &names {
        for variant in ["processes", "threads"] {
            let one = rate(name, variant, "\"0\"");
            let four = rate(name, variant, "\"0-3\"");
            assert!(one > 0.0, "{name} {variant}: no iteration at 1 CPU");
            match variant {
                "processes" => assert!(
                    four > 3.6 * one,
                    "{name} processes: {four} at 4 CPUs vs {one} at 1"
                ),
                _ if SHARED_IN_THREADS.contains(&name.as_str()) => assert!(
                    four < 3.0 * one,
                    "{name} threads: {four} at 4 CPUs vs {one} at 1"
                ),
                _ => assert!(four > 3.6 * one, "{name} threads: {four} vs {one}"),
            }
        }
    }
}
