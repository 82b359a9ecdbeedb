//! The kernel crate's modules do not import each other in cycles (the
//! simulated `Kernel`, which every mechanism extends, aside): a module can
//! be read with only the ones beneath it in mind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module -> the top-level modules it names as `crate::NAME`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .to_string();
            let module = rel.split(['/', '.']).next().unwrap().to_string();
            if module == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let deps = graph.entry(module.clone()).or_default();
            for line in text.lines() {
                let code = line.split("//").next().unwrap();
                for (i, _) in code.match_indices("crate::") {
                    let name: String = code[i + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != module {
                        deps.insert(name);
                    }
                }
            }
        }
    }
    graph
}

#[test]
fn no_two_modules_import_each_other() {
    let graph = imports();
    let mut cycles = Vec::new();
    for (a, deps) in &graph {
        for b in deps {
            if a < b && graph.get(b).is_some_and(|d| d.contains(a)) {
                cycles.push(format!("{a} <-> {b}"));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
    assert!(graph.contains_key("locking") && graph.contains_key("ids"));
    assert!(graph["ids"].is_empty(), "ids is a leaf: {:?}", graph["ids"]);
}

/// Every lock implementation in the registry is documented for scenario
/// writers.
#[test]
fn every_lock_kind_is_in_the_scenario_format_doc() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md");
    let doc = std::fs::read_to_string(doc).unwrap();
    for k in smpsim_kernel::locking::LOCK_KINDS {
        let row = format!("| `{}` | `{}`", k.object_type, k.name);
        assert!(
            doc.lines()
                .any(|l| l.replace(' ', "").starts_with(&row.replace(' ', ""))),
            "docs/scenario-format.md has no row for {} kind `{}`",
            k.object_type,
            k.name
        );
    }
}
