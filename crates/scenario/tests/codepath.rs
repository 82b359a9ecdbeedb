//! The C-like code-path form and the TOML array form are one language:
//! every shipped scenario, converted either way, compiles to the same
//! program IR, base and every variant.

use std::path::{Path, PathBuf};

use smpsim_kernel::Spec;
use smpsim_scenario::{code_form, parse, toml_form};

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Every shipped scenario file.
fn shipped() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["scenarios", "scenarios/examples", "scenarios/checks"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 13, "{out:?}");
    out
}

/// The base and every variant, compiled.
fn compile_all(path: &Path, text: &str) -> Vec<(Option<String>, Spec)> {
    let scn = parse(path, text.to_string()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut out = vec![(None, scn.compile(None, &[]).unwrap())];
    for v in scn.variant_names() {
        out.push((Some(v.to_string()), scn.compile(Some(v), &[]).unwrap()));
    }
    out
}

#[test]
fn every_shipped_scenario_compiles_to_the_same_ir_in_both_forms() {
    for path in shipped() {
        let text = std::fs::read_to_string(&path).unwrap();
        let as_toml = toml_form(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let as_code = code_form(&path, &as_toml).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !as_toml.contains("'''"),
            "{}: code left as text",
            path.display()
        );
        assert!(
            !as_code.contains("{ op = "),
            "{}: code left as TOML:\n{as_code}",
            path.display()
        );
        let want = compile_all(&path, &text);
        assert!(
            want == compile_all(&path, &as_toml),
            "{}: the TOML form compiles differently",
            path.display()
        );
        assert!(
            want == compile_all(&path, &as_code),
            "{}: the code form compiles differently:\n{as_code}",
            path.display()
        );
        // Converting the file as shipped keeps its comments (code_form
        // refuses to drop one) and its meaning.
        let direct = code_form(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        assert!(want == compile_all(&path, &direct), "{}", path.display());
    }
}

#[test]
fn converting_twice_changes_nothing() {
    for path in shipped() {
        let text = std::fs::read_to_string(&path).unwrap();
        let first = code_form(&path, &text).unwrap();
        let once = code_form(&path, &toml_form(&path, &first).unwrap()).unwrap();
        let twice = code_form(&path, &toml_form(&path, &once).unwrap()).unwrap();
        assert_eq!(once, twice, "{}", path.display());
    }
}
