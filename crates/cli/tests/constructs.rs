//! Bad input to the constructs of issue 41 item 2 (durations computed
//! from variables, object arrays, a variant removing a key): a located
//! error naming the file, line and column, exit 2, and no result file.

mod common;

use common::{dir, refused, scenario, smpsim, stderr};

#[test]
fn construct_mistakes_are_located_errors_without_a_result() {
    let d = dir("constructs");
    let task = |code: &str| {
        format!("[[tasks]]\nname = \"t\"\ncount = 1\nvars = {{ n = 4 }}\ncode = '''for (;;) {{ {code} }}'''\n")
    };
    for (what, rest, bad, says) in [
        (
            "negative units",
            task("work(10ns, units = 1 - 2);"),
            "1 - 2",
            "`units` cannot be negative (got -1)",
        ),
        (
            "unknown variable in units",
            task("work(10ns, units = m);"),
            "m);",
            "unknown variable `m`",
        ),
        (
            "a time that is no variable",
            task("work(per_entry, units = n);"),
            "per_entry",
            "expected a duration",
        ),
        (
            "array count 0",
            format!("[objects]\nb = {{ type = \"spinlock\", count = 0 }}\n{}", task("spin_guard(b[0]) { work(1us); }")),
            "0 }",
            "`count` of an object array must be from 1 to 1048576, not 0",
        ),
        (
            "array index out of range",
            format!("[objects]\nb = {{ type = \"spinlock\", count = 8 }}\n{}", task("spin_guard(b[8]) { work(1us); }")),
            "8]",
            "`b` has 8 elements, 0 to 7; there is no element 8",
        ),
        (
            "array without an index",
            format!("[objects]\nb = {{ type = \"spinlock\", count = 8 }}\n{}", task("spin_guard(b) { work(1us); }")),
            "b)",
            "`b` is an array of 8 objects: say which one",
        ),
        (
            "unset of a key that is not there",
            format!(
                "[objects]\nl = {{ type = \"spinlock\" }}\n{}[variant.v]\ndescription = \"v\"\nobjects.l.line = {{ unset = true }}\n",
                task("spin_guard(l) { work(1us); }")
            ),
            "{ unset",
            "there is no `objects.l.line` to remove",
        ),
    ] {
        let p = scenario(&d, "s.toml", &rest);
        let text = std::fs::read_to_string(&p).unwrap();
        let (line, col) = text
            .lines()
            .enumerate()
            .find_map(|(i, l)| l.find(bad).map(|c| (i + 1, l[..c].chars().count() + 1)))
            .unwrap();
        let out = d.join("out.json");
        let o = smpsim()
            .arg("run")
            .arg(&p)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        refused(&o, says);
        assert!(
            stderr(&o).contains(&format!("s.toml:{line}:{col}: error")),
            "{what}: expected s.toml:{line}:{col} in\n{}",
            stderr(&o)
        );
        assert!(!out.exists(), "{what}: a refused run wrote its result");
    }
}
