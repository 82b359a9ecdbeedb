//! Issue 28 item 2 (layout): objects on shared cache lines. Bad input is
//! located, exits 2 and writes no result file; the false-sharing example
//! shows the shared line in lock_stat; `smpsim fmt` round-trips it.

mod common;

use common::{lock_row, repo, smpsim};

const GOOD: &str = r#"[scenario]
name = "t"
duration = "1ms"
[machine]
preset = "generic-x86"
[objects]
l = { type = "spinlock", line = "hot" }
c = { type = "atomic", line = "hot" }
p = { type = "atomic", per_cpu = true, stride = "packed" }
[[tasks]]
name = "a"
per_cpu = 1
code = [ { op = "spin_guard", lock = "l", body = [ { op = "atomic_inc", obj = "c" } ] }, { op = "atomic_inc", obj = "p[this_cpu()]" } ]
"#;

#[test]
fn bad_layout_is_located_and_exits_2_without_output() {
    let cases = [
        // A field on two lines: `line` takes one name.
        (
            "two-lines",
            GOOD.replace(
                "c = { type = \"atomic\", line = \"hot\" }",
                "c = { type = \"atomic\", line = [\"hot\", \"cold\"] }",
            ),
            8,
        ),
        // A line named once is a typo or a neighbour left out (`l` is now
        // alone on `hot`, reported first).
        (
            "line-used-once",
            GOOD.replace(
                "c = { type = \"atomic\", line = \"hot\" }",
                "c = { type = \"atomic\", line = \"hto\" }",
            ),
            7,
        ),
        // Packing locks does not fit the model (one Line per lock word).
        (
            "packed-locks",
            GOOD.replace("p = { type = \"atomic\"", "p = { type = \"spinlock\""),
            9,
        ),
        (
            "stride-not-per-cpu",
            GOOD.replace("per_cpu = true, stride", "stride"),
            9,
        ),
        ("unknown-stride", GOOD.replace("\"packed\"", "\"dense\""), 9),
        (
            "two-locks-on-a-line",
            GOOD.replace("c = { type = \"atomic\"", "c = { type = \"spinlock\""),
            8,
        ),
        (
            "per-cpu-beside-global",
            GOOD.replace(
                "c = { type = \"atomic\", line",
                "c = { type = \"atomic\", per_cpu = true, line",
            ),
            8,
        ),
        (
            "variable-on-a-line",
            GOOD.replace("c = { type = \"atomic\"", "c = { type = \"variable\""),
            8,
        ),
    ];
    let dir = common::dir("layout");
    // Any message: the location is the point.
    common::refused_variants(
        &dir,
        GOOD,
        cases.map(|(name, text, line)| (name, text, line, "")),
    );
    common::runs(&dir, "good", GOOD);
}

/// On one line, the counter's increments move the lock's line: the lock
/// row has the line's bounces (the counter's row none of its own), many
/// more than with the counter aligned on a line of its own.
#[test]
fn the_false_sharing_example_bounces_the_lock_line() {
    let v = common::run_example("scenarios/examples/false-sharing.toml", "5ms", "1ms");
    let (shared, aligned) = (&v["variants"][0], &v["variants"][1]);
    assert_eq!(shared["variant"], "shared");
    let bounces = |var, name| lock_row(var, name)["bounces"].as_u64().unwrap();
    assert_eq!(bounces(shared, "hits"), 0, "counted under the line's host");
    assert!(bounces(aligned, "hits") > 0);
    assert!(
        bounces(shared, "lock") > bounces(aligned, "lock") + bounces(aligned, "hits") / 2,
        "{} vs {} + {}",
        bounces(shared, "lock"),
        bounces(aligned, "lock"),
        bounces(aligned, "hits")
    );
    let spin = |var: &serde_json::Value| lock_row(var, "lock")["spin_total_ns"].as_u64().unwrap();
    assert!(spin(shared) > spin(aligned));
}

/// `smpsim fmt` (which refuses a rewrite that compiles differently)
/// rewrites the example to the TOML form and back, and the TOML form is
/// a fixed point.
#[test]
fn fmt_round_trips_the_example() {
    let dir = common::dir("layout-fmt");
    let fmt = |to: &str, path: &std::path::Path| {
        let out = smpsim()
            .args(["fmt", "--to", to])
            .arg(path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let toml = fmt("toml", &repo("scenarios/examples/false-sharing.toml"));
    assert!(toml.contains("objects.hits.line = \"hot\""));
    let a = dir.join("a.toml");
    std::fs::write(&a, &toml).unwrap();
    let code = fmt("code", &a);
    let b = dir.join("b.toml");
    std::fs::write(&b, &code).unwrap();
    assert_eq!(fmt("toml", &b), toml);
}
