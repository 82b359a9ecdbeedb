//! A variant removes a key the base sets with `KEY = { unset = true }`
//! (a merge cannot leave a key out), and a variant table that is the
//! base's but for keys it leaves out is warned about (issue 37: a base
//! object's `line` survived a variant that left it out, silently).

use std::path::Path;

use smpsim_scenario::parse;

const SHARED: &str = r#"[scenario]
name = "v"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
lock = { type = "spinlock", line = "hot" }
hits = { type = "atomic", line = "hot" }
[[tasks]]
name = "t"
per_cpu = 1
code = '''for (;;) { spin_lock(lock); work(200ns); spin_unlock(lock); atomic_inc(hits); work(exp(1us)); }'''
[variant.shared]
description = "as the base"
[variant.left-out]
description = "leaves `line` out, which keeps it"
objects.lock = { type = "spinlock" }
objects.hits = { type = "atomic" }
[variant.unset]
description = "removes `line`"
objects.lock.line = { unset = true }
objects.hits.line = { unset = true }
"#;

#[test]
fn unset_removes_a_base_key_and_leaving_it_out_warns() {
    let scn = parse(Path::new("v.toml"), SHARED.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let apart = parse(
        Path::new("v.toml"),
        SHARED
            .replace(", line = \"hot\"", "")
            .split("[variant.shared]")
            .next()
            .unwrap()
            .to_string(),
    )
    .unwrap()
    .compile(None, &[])
    .unwrap();
    let shared = scn.compile(Some("shared"), &[]).unwrap();
    assert_ne!(shared, apart, "the line matters to the compiled run");
    assert_eq!(scn.compile(Some("unset"), &[]).unwrap(), apart);
    // Leaving `line` out keeps it (a merge), and says so.
    assert_eq!(scn.compile(Some("left-out"), &[]).unwrap(), shared);
    assert_eq!(scn.warnings.len(), 2, "{:?}", scn.warnings);
    assert!(
        scn.warnings[0]
            .starts_with("variant `left-out`: `objects.lock` is the base's but for `line`")
            && scn.warnings[0].contains("`objects.lock.line = { unset = true }`"),
        "{:?}",
        scn.warnings
    );
    // The same through `--set`, and a key that is not there is an error.
    let set = |k: &str| vec![(k.to_string(), "{ unset = true }".to_string())];
    let both = [set("objects.lock.line"), set("objects.hits.line")].concat();
    assert_eq!(scn.compile(None, &both).unwrap(), apart);
    let e = scn.compile(None, &set("objects.lock.nope")).unwrap_err();
    assert!(
        e.message
            .contains("there is no `objects.lock.nope` to remove"),
        "{e}"
    );
}

#[test]
fn a_variant_that_changes_a_value_is_not_warned_about() {
    let text = SHARED
        .replace(
            "objects.lock = { type = \"spinlock\" }",
            "objects.lock = { type = \"spinlock\", line = \"cold\" }",
        )
        .replace(
            "objects.hits = { type = \"atomic\" }",
            "objects.hits = { type = \"atomic\", line = \"cold\" }",
        );
    let scn = parse(Path::new("v.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    assert!(scn.warnings.is_empty(), "{:?}", scn.warnings);
}
