//! docs/extending.md's "A patch as a variant of a library path": step 4's
//! command, run as written, prints step 4's output, and step 3's
//! variants are the ones scenarios/will-it-scale/futex3.toml has.

mod common;

use common::{dir, repo, smpsim, stderr};

/// The section's text.
fn section() -> String {
    let doc = std::fs::read_to_string(repo("docs/extending.md")).unwrap();
    doc.split("## A patch as a variant of a library path")
        .nth(1)
        .expect("the section")
        .split("\n## ")
        .next()
        .unwrap()
        .to_string()
}

/// The body of the section's first fenced block of `lang`, unindented.
fn block(section: &str, lang: &str) -> Vec<String> {
    let mut lines = section.lines().map(str::trim);
    lines
        .by_ref()
        .find(|l| *l == format!("```{lang}"))
        .unwrap_or_else(|| panic!("no ```{lang} block"));
    lines
        .take_while(|l| *l != "```")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_docs_command_prints_the_docs_output() {
    let section = section();
    let command = block(&section, "sh").join(" ");
    let mut words = command.split_whitespace();
    assert_eq!(words.next(), Some("smpsim"), "{command}");
    let d = dir("extending-patch");
    let args: Vec<String> = words
        .map(|w| match w {
            // The scenario relative to the repository's root, the output in
            // the test's own directory.
            w if w.starts_with("scenarios/") => repo(w).to_str().unwrap().to_string(),
            "f3.jsonl" => d.join(w).to_str().unwrap().to_string(),
            w => w.to_string(),
        })
        .collect();
    let o = smpsim().args(&args).output().unwrap();
    assert!(o.status.success(), "{command}: {}", stderr(&o));
    let printed: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        printed,
        block(&section, "text"),
        "docs/extending.md's output is not what `{command}` prints: re-run it and update the doc"
    );
}

#[test]
fn the_docs_variants_are_futex3s() {
    let section = section();
    let futex3 = std::fs::read_to_string(repo("scenarios/will-it-scale/futex3.toml")).unwrap();
    let toml = block(&section, "toml");
    assert!(toml.len() >= 10, "{toml:?}");
    for line in toml.iter().filter(|l| !l.is_empty()) {
        assert!(
            futex3.lines().any(|f| f.trim() == line),
            "docs/extending.md shows `{line}`, which futex3.toml does not have"
        );
    }
}
