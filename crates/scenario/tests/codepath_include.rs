//! `fmt` of a scenario whose code calls a function an included library
//! defines: both ways, the call stays a call (issue 37: `fmt --to toml`
//! failed with "unknown op `helper`").

use std::path::Path;

use smpsim_scenario::{code_form, parse, toml_form};

#[test]
fn a_call_to_an_included_function_converts_both_ways() {
    let d = std::env::temp_dir().join(format!("smpsim-codepath-include-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("lib.toml"),
        "[functions]\nhelper = '''work(1us); count(h);'''\n",
    )
    .unwrap();
    let text = "include = [\"lib.toml\"]\n[scenario]\nname = \"p\"\nduration = \"1ms\"\n\
        [machine]\npreset = \"generic-x86\"\n[[tasks]]\nname = \"a\"\ncount = 1\n\
        code = '''helper(); work(2us);'''\n";
    let path = d.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let toml = toml_form(&path, text).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        toml.contains("{ op = \"call\", fn = \"helper\" }"),
        "{toml}"
    );
    let back = code_form(&path, &toml).unwrap_or_else(|e| panic!("{e}"));
    assert!(back.contains("helper();"), "{back}");
    // What runs is the same.
    let spec = |t: &str| {
        parse(Path::new(&path), t.to_string())
            .unwrap()
            .compile(None, &[])
            .unwrap()
    };
    assert_eq!(spec(text), spec(&toml));
    assert_eq!(spec(text), spec(&back));
    let _ = std::fs::remove_dir_all(&d);
}
