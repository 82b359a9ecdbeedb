//! The shipped `percpu_ref` example, compiled and run: its ops reach the
//! kernel's `percpu_ref` and a scenario sees what the object type is for
//! (no line moves while it lives; the shared count's line moves once it
//! is killed).

use std::path::Path;

use smpsim_kernel::program::{Op, PercpuRefOp};

fn example() -> smpsim_scenario::Scenario {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/percpu-ref.toml");
    smpsim_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Line transfers of the `ctx_refs` and `ctx_refs_atomic` objects over the
/// measured part of a 12 ms run of `variant` (the kill is at 10 ms).
fn bounces(variant: &str) -> (u64, u64) {
    let sets = [
        ("scenario.duration".to_string(), "12ms".to_string()),
        ("scenario.warmup".to_string(), "1ms".to_string()),
    ];
    let spec = example().compile(Some(variant), &sets).unwrap();
    let r = smpsim_kernel::simulate(&spec);
    let of = |name: &str| r.lock(name).map(|l| l.bounces).unwrap();
    (of("ctx_refs"), of("ctx_refs_atomic"))
}

#[test]
fn the_example_compiles_to_percpu_ref_ops() {
    let spec = example().compile(Some("killed"), &[]).unwrap();
    let ops: Vec<&Op> = spec
        .task_groups
        .iter()
        .flat_map(|g| &g.program.ops)
        .collect();
    for want in ["Get", "Put", "Kill"] {
        assert!(
            ops.iter().any(|op| match op {
                Op::PercpuRef(PercpuRefOp::Get(_)) => want == "Get",
                Op::PercpuRef(PercpuRefOp::Put(_)) => want == "Put",
                Op::PercpuRef(PercpuRefOp::Kill(_)) => want == "Kill",
                _ => false,
            }),
            "no percpu_ref {want} op"
        );
    }
}

#[test]
fn a_live_percpu_ref_moves_no_line_and_a_killed_one_does() {
    let (alive, _) = bounces("alive");
    assert_eq!(alive, 0, "percpu mode: each CPU writes its own counter");
    let (killed, _) = bounces("killed");
    assert!(killed > 1_000, "atomic mode after the kill: {killed}");
    let (unused, atomic) = bounces("atomic");
    assert_eq!(unused, 0);
    assert!(
        atomic > killed,
        "an atomic_t all along: {atomic} vs {killed}"
    );
}

/// The fields the type's registry entry refuses are refused at the field,
/// with the entry's reason; the type's ops are found through the entry.
#[test]
fn the_registry_entry_refuses_its_fields_and_names_its_ops() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/percpu-ref.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let decl = r#"ctx_refs = { type = "percpu_ref" }"#;
    assert!(text.contains(decl));
    let err = |with: &str| {
        let text = text.replace(
            decl,
            &format!(r#"ctx_refs = {{ type = "percpu_ref", {with} }}"#),
        );
        match smpsim_scenario::parse(Path::new("t.toml"), text) {
            Ok(_) => panic!("`{with}` on a percpu_ref was accepted"),
            Err(e) => e.message,
        }
    };
    assert_eq!(
        err("count = 4"),
        "a `percpu_ref` cannot be an array: it is per-CPU inside already"
    );
    assert_eq!(
        err("per_cpu = true"),
        "`per_cpu` is not a field of a `percpu_ref` object: it is per-CPU inside already"
    );
    assert_eq!(
        err("spin = true"),
        "`spin` is not a field of a `percpu_ref` object: nothing spins on it"
    );
    // An op of another type on it names the entry's ops.
    let get = "percpu_ref_get(ctx_refs";
    assert!(text.contains(get));
    let text = text.replacen(get, "atomic_inc(ctx_refs", 1);
    let e = match smpsim_scenario::parse(Path::new("t.toml"), text) {
        Ok(s) => s.compile(Some("alive"), &[]).err(),
        Err(e) => Some(e),
    }
    .expect("atomic_inc on a percpu_ref");
    let help = e.help.unwrap_or_default();
    assert!(
        help.contains("percpu_ref_get, percpu_ref_put, percpu_ref_kill"),
        "{}: {help}",
        e.message
    );
}

/// docs/extending.md's worked example lists, file by file, what the
/// `percpu_ref` object type took: each file it lists exists and names the
/// type, and every source file of the kernel and scenario crates that
/// names it outside a comment is listed (so the count the doc gives is
/// the count it took).
#[test]
fn extending_md_lists_the_percpu_ref_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/extending.md")).unwrap();
    let section = doc
        .split("## An object type with ops of its own: `percpu_ref`")
        .nth(1)
        .expect("the percpu_ref section")
        .split("\n## ")
        .next()
        .unwrap();
    // The numbered items, `N. `path``, from the repository's root (its
    // RCU callback is in its own file: no item of its own).
    let mut listed = Vec::new();
    for line in section.lines() {
        let Some((n, rest)) = line.split_once(". `") else {
            continue;
        };
        if n.parse::<u32>().is_err() {
            continue;
        }
        listed.push(rest.split('`').next().unwrap().to_string());
    }
    assert_eq!(listed.len(), 5, "{listed:?}");
    for path in &listed {
        let text = std::fs::read_to_string(root.join(path))
            .unwrap_or_else(|e| panic!("{path} is listed but cannot be read: {e}"));
        assert!(
            text.contains("percpu_ref") || text.contains("PercpuRef"),
            "{path} is listed but does not name percpu_ref"
        );
    }
    // Every source file that names the type in code is listed (comments
    // and tests aside).
    for dir in ["crates/kernel/src", "crates/scenario/src"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                if p.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                let names_it = text.lines().any(|l| {
                    !l.trim_start().starts_with("//")
                        && (l.contains("percpu_ref") || l.contains("PercpuRef"))
                });
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                assert!(
                    !names_it || listed.contains(&rel),
                    "{rel} names percpu_ref but docs/extending.md does not list it"
                );
            }
        }
    }
}
