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
    for dir in [
        "scenarios",
        "scenarios/examples",
        "scenarios/checks",
        "scenarios/will-it-scale",
    ] {
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

/// The comment texts of a scenario, in order (`#` or `//`, words only).
fn comment_words(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let at = [l.find("//"), l.find('#')].into_iter().flatten().min()?;
            let c = l[at..].trim_start_matches(['/', '#']);
            Some(c.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// `fmt --to toml` keeps the comments of code (the `assumed:` notes the
/// report lists among them) as `#` comments, and back again.
#[test]
fn the_toml_form_keeps_every_comment_of_the_code() {
    for path in shipped() {
        let text = std::fs::read_to_string(&path).unwrap();
        let as_code = code_form(&path, &text).unwrap();
        let as_toml = toml_form(&path, &as_code).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            comment_words(&as_toml),
            comment_words(&as_code),
            "{}",
            path.display()
        );
        let back = code_form(&path, &as_toml).unwrap();
        assert_eq!(
            comment_words(&back),
            comment_words(&as_code),
            "{}",
            path.display()
        );
    }
    let p = Path::new("t.toml");
    let t = "[[tasks]]\nname = \"t\"\ncode = '''\n    work(1us);  // assumed: one\n    // assumed: two\n    for (;;) {  // opener\n        work(2us);\n    }\n'''\n";
    let toml = toml_form(p, t).unwrap();
    assert!(
        toml.contains("{ op = \"work\", time = \"1us\" },  # assumed: one\n  # assumed: two\n  { op = \"loop\", count = \"forever\", body = [  # opener\n"),
        "{toml}"
    );
    // A comment inside an op's arguments has no place between ops: an
    // error, not a silent drop.
    let inside = "[[tasks]]\nname = \"t\"\ncode = '''\n    work(/* here */ 1us);\n'''\n";
    let e = toml_form(p, inside).unwrap_err().to_string();
    assert!(e.contains("1 comments, of which 0 would be kept"), "{e}");
}
