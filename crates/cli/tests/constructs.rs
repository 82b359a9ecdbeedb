//! Bad input to the constructs of issue 41 item 2 (durations computed
//! from variables, object arrays, a variant removing a key): a located
//! error naming the file, line and column, exit 2, and no result file.

mod common;

#[test]
fn construct_mistakes_are_located_errors_without_a_result() {
    let task = |code: &str| {
        format!("[[tasks]]\nname = \"t\"\ncount = 1\nvars = {{ n = 4 }}\ncode = '''for (;;) {{ {code} }}'''\n")
    };
    common::refused_snippets(
        "constructs",
        &[
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
        ],
    );
}
