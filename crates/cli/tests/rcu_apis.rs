//! Bad input to RCU's other APIs (issue 41: polled grace periods,
//! `kfree_rcu()`): a located error naming the file, line and column,
//! exit 2, and no result file.

mod common;

use common::refused_snippets;

fn task(code: &str) -> String {
    format!("[[tasks]]\nname = \"t\"\ncount = 1\nvars = {{ s = 0 }}\ncode = '''for (;;) {{ syscall(u) {{ {code} }} }}'''\n")
}

#[test]
fn polled_grace_period_mistakes_are_located_errors_without_a_result() {
    refused_snippets(
        "rcu-poll",
        &[
            (
                "poll as a number",
                task("s = poll_state_synchronize_rcu(s) + 1; work(1us);"),
                "poll_state_synchronize_rcu(s) +",
                "`poll_state_synchronize_rcu(...)` is a condition, not a number",
            ),
            (
                "get_state without ()",
                task("s = get_state_synchronize_rcu; work(1us);"),
                "get_state_synchronize_rcu;",
                "`get_state_synchronize_rcu` is a function: write `get_state_synchronize_rcu(...)`",
            ),
            (
                "unknown variable in the state",
                task("if (poll_state_synchronize_rcu(old)) { work(1us); } work(1us);"),
                "old)",
                "unknown variable `old`",
            ),
            (
                "cond_synchronize_rcu without a state",
                task("cond_synchronize_rcu(); work(1us);"),
                "cond_synchronize_rcu()",
                "`value`",
            ),
        ],
    );
}

#[test]
fn kfree_rcu_mistakes_are_located_errors_without_a_result() {
    let kernel = |knob: &str| format!("[kernel]\n{knob}\n{}", task("kfree_rcu(64); work(1us);"));
    refused_snippets(
        "kfree-rcu",
        &[
            (
                "a negative size",
                task("kfree_rcu(-8); work(1us);"),
                "-8)",
                "`kfree_rcu` frees an object of `value` bytes, 0 or more (got -8)",
            ),
            (
                "kvfree_rcu without a size",
                task("kvfree_rcu(); work(1us);"),
                "kvfree_rcu()",
                "`value`",
            ),
            (
                "an unknown variable as the size",
                task("kfree_rcu(size); work(1us);"),
                "size)",
                "unknown variable `size`",
            ),
            (
                "a drain of 0 jiffies",
                kernel("kfree_drain_jiffies = 0"),
                "0",
                "`kfree_drain_jiffies` must be a number of jiffies, 1 or more",
            ),
            (
                "a cost that is no duration",
                kernel("kfree_rcu_free_cost = \"fast\""),
                "fast",
                "expected a duration",
            ),
        ],
    );
}
