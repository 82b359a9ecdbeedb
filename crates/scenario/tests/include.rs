//! `include = [...]`: function and object libraries, their errors, and
//! the mm library's page-fault scenario.

mod common;
use common::*;

use std::path::Path;

use smpsim_scenario::{load, parse};

/// A scratch folder with `lib.toml` holding `lib` and a scenario
/// including it.
fn setup(name: &str, lib: &str, scenario_tail: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("smpsim-include-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.toml"), lib).unwrap();
    let text = format!(
        r#"include = ["lib.toml"]

[scenario]
name = "inc"
duration = "1ms"

[machine]
preset = "generic-x86"
{scenario_tail}
"#
    );
    (dir, text)
}

const LIB: &str = r#"[objects]
big = { type = "mutex" }

[functions]
take_big = [ { op = "mutex_lock", lock = "big" }, { op = "work", time = "1us" }, { op = "mutex_unlock", lock = "big" } ]
"#;

const TASK: &str = r#"
[[tasks]]
name = "t"
per_cpu = 1
code = [ { op = "loop", count = "forever", body = [ { op = "call", fn = "take_big" }, { op = "work", time = "1us" } ] } ]
"#;

#[test]
fn an_included_library_provides_functions_and_objects() {
    let (dir, text) = setup("ok", LIB, TASK);
    let scn = parse(&dir.join("s.toml"), text).unwrap();
    let spec = scn.compile(None, &[]).unwrap();
    assert_eq!(spec.objects[0].name, "big");
    let r = smpsim_kernel::simulate(&spec);
    assert!(r.locks[0].acquisitions > 100, "{:?}", r.locks[0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn include_errors_point_at_the_right_file() {
    // Unreadable: at the include string in the scenario.
    let dir = std::env::temp_dir().join(format!("smpsim-include-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = "include = [\"nope.toml\"]\n".to_string();
    let e = parse(&dir.join("s.toml"), text).unwrap_err();
    assert!(e.message.contains("cannot read included file"), "{e}");
    assert_eq!(at(&e), (1, 12, "\"nope.toml\"".to_string()));

    // A mistake inside the library: located in the library.
    let bad_lib = LIB.replace("\"1us\"", "\"1 parsec\"");
    let (dir2, text) = setup("bad", &bad_lib, TASK);
    let e = parse(&dir2.join("s.toml"), text).unwrap_err();
    assert!(e.to_string().contains("lib.toml:5:"), "{e}");

    // Defined in both: at the scenario's definition.
    let tail = format!("{TASK}\n[objects]\nbig = {{ type = \"spinlock\" }}\n");
    let (dir3, text) = setup("dup", LIB, &tail);
    let e = parse(&dir3.join("s.toml"), text).unwrap_err();
    assert!(
        e.message.contains("is defined here and in the included"),
        "{e}"
    );
    assert_eq!(at(&e).2, "big");

    // A library may define only functions and objects.
    let (dir4, text) = setup("sect", "[kernel]\nhz = 100\n", TASK);
    let e = parse(&dir4.join("s.toml"), text).unwrap_err();
    assert!(e.message.contains("only [functions] and [objects]"), "{e}");
    for d in [dir, dir2, dir3, dir4] {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// scenarios/examples/mprotect-faults.toml through the shipped scenarios/lib/mm.toml:
/// fault throughput falls as mprotect() comes more often under mmap_lock,
/// and the per-VMA lock path keeps most of it (docs/locks.md).
#[test]
fn faults_fall_with_the_writers_rate_and_per_vma_locks_keep_them() {
    let scn = load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/examples/mprotect-faults.toml"
    )))
    .unwrap();
    let faults = |variant: &str, gap: &str| {
        let sets = [
            ("tasks.mprotect.vars.gap".to_string(), gap.to_string()),
            ("scenario.duration".to_string(), "30ms".to_string()),
            ("scenario.warmup".to_string(), "5ms".to_string()),
        ];
        let r = smpsim_kernel::simulate(&scn.compile(Some(variant), &sets).unwrap());
        r.counter("faults").unwrap().rate
    };
    let (rare, often) = (faults("mmap_lock", "1000"), faults("mmap_lock", "0"));
    let (vma_rare, vma_often) = (faults("per_vma", "1000"), faults("per_vma", "0"));
    assert!(often < 0.7 * rare, "mmap_lock: {often} vs {rare}");
    assert!(
        vma_often > 0.8 * vma_rare,
        "per-VMA: {vma_often} vs {vma_rare}"
    );
    assert!(vma_often > 1.3 * often, "{vma_often} vs {often}");
}
