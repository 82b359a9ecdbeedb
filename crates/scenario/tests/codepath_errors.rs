//! Errors in code written as text point into the text: file, line and
//! column inside the TOML string, with what was expected.

mod common;
use common::*;

/// A scenario whose one task group runs `code`, a literal multi-line
/// string whose text starts on line 16.
fn with(code: &str) -> String {
    let text = format!(
        "{}[objects]\nm = {{ type = \"mutex\" }}\n\n[[tasks]]\nname = \"w\"\ncount = 2\ncode = '''\n{code}'''\n",
        scenario_text!("")
    );
    assert_eq!(text.lines().nth(14), Some("code = '''"), "{text}");
    text
}

/// (line, column, text under the caret, message, help) of the error.
fn located(text: &str) -> (usize, usize, String, String, String) {
    let e = err(text);
    assert!(e.to_string().starts_with("t.toml:"), "{e}");
    let (l, c, under) = at(&e);
    (
        l,
        c,
        under,
        e.message.clone(),
        e.help.clone().unwrap_or_default(),
    )
}

#[test]
fn valid_code_compiles() {
    let ops = ops_of(&with(
        "    mutex_guard(m) {\n        work(1us);  // a comment\n    }\n    /* another */ x = 3;\n",
    ));
    assert_eq!(ops.len(), 4, "{ops:?}");
}

#[test]
fn a_missing_closing_brace_points_at_the_block_left_open() {
    // The `if`'s block is left open; the guard's `}` closes it, so the
    // guard's block runs to the end. The `}` indented like the guard
    // gives the `if` away.
    let (line, col, under, msg, help) = located(&with(
        "    mutex_guard(m) {\n        if (cpu_online(0)) {\n            work(1us);\n    }\n    work(2us);\n",
    ));
    assert_eq!((line, col, under.as_str()), (17, 28, "{"));
    assert_eq!(
        msg,
        "expected `}` to close this block of `if`, found end of code"
    );
    assert!(help.contains("indented like an outer block"), "{help}");
    // Without an indentation hint, the innermost open block is named.
    let (line, col, _, msg, _) = located(&with("    mutex_guard(m) {\n        work(1us);\n"));
    assert_eq!((line, col), (16, 20));
    assert!(msg.contains("`mutex_guard`"), "{msg}");
}

#[test]
fn an_unknown_op_suggests_the_nearest() {
    let (line, col, under, msg, help) = located(&with("    work(1us);\n    mutx_lock(m);\n"));
    assert_eq!((line, col, under.as_str()), (17, 5, "mutx_lock"));
    assert_eq!(msg, "unknown op `mutx_lock`");
    assert_eq!(help, "did you mean `mutex_lock`?");
    let (_, _, _, _, help) = located(&with("    spin_lock_irqsav(m);\n"));
    assert_eq!(help, "did you mean `spin_lock_irqsave`?");
}

#[test]
fn a_wrong_argument_type_points_at_the_value() {
    let (line, col, under, msg, _) = located(&with(
        "    smp_call_function_single(1, func = 50ns,\n                             wait = 1);\n",
    ));
    assert_eq!((line, col, under.as_str()), (17, 37, "1"));
    assert_eq!(msg, "`wait` expects `true` or `false`, not integer `1`");
    // An unknown argument name is refused by the parser, with a guess.
    let (line, col, under, msg, help) = located(&with("    work(tme = 1us);\n"));
    assert_eq!((line, col, under.as_str()), (16, 10, "tme"));
    assert_eq!(msg, "`tme` is not an argument of `work`");
    assert!(help.starts_with("did you mean `time`?"), "{help}");
}

#[test]
fn an_unterminated_comment_points_at_its_start() {
    let (line, col, under, msg, _) =
        located(&with("    work(1us);\n    /* work(2us);\n    work(3us);\n"));
    assert_eq!((line, col, under.as_str()), (17, 5, "/*"));
    assert_eq!(msg, "unterminated block comment");
}

#[test]
fn errors_inside_values_point_into_them() {
    // The duration parser's error, located inside the argument.
    let e = err(&with("    work(1us);\n    work(uniform(1us, 2xs));\n"));
    let (line, col, under) = at(&e);
    assert_eq!((line, col, under.as_str()), (17, 24, "xs"), "{e}");
    // The expression parser's.
    let e = err(&with("    if (cpu_online(nope)) { work(1us); }\n"));
    assert_eq!(at(&e), (16, 20, "nope".to_string()), "{e}");
    // A lock that is not declared.
    let e = err(&with("    mutex_lock(q);\n    mutex_unlock(q);\n"));
    assert_eq!(at(&e), (16, 16, "q".to_string()), "{e}");
}

#[test]
fn expected_tokens_are_named() {
    let (line, col, under, msg, _) = located(&with("    work(1us)\n    work(2us);\n"));
    assert_eq!((line, col, under.as_str()), (17, 5, "work"));
    assert_eq!(msg, "expected `;` after `work(...)`, found `work`");
    let (_, _, under, msg, _) = located(&with("    work(1us;\n"));
    assert_eq!(under, ";");
    assert_eq!(msg, "expected `,` or `)`, found `;`");
    let (_, _, _, msg, help) = located(&with("    work(1us) { }\n"));
    assert_eq!(msg, "expected `;` after `work(...)`, found `{`");
    assert!(help.contains("mutex_guard"), "{help}");
    let (_, _, _, msg, help) = located(&with("    # a comment\n"));
    assert_eq!(msg, "expected a statement, found `#`");
    assert!(help.contains("//"), "{help}");
    let (_, _, _, msg, _) = located(&with("    }\n"));
    assert_eq!(msg, "unexpected `}`: no block is open here");
    // `work`'s second argument is its `units`, an expression, where a
    // duration is no value.
    let (_, _, under, msg, _) = located(&with("    work(1us, 2us);\n"));
    assert_eq!(under, "2us");
    assert_eq!(msg, "`2us` is a duration where a number is expected");
    // A field the op needs, missing: the op registry's own check, at the op.
    let (line, col, under, msg, _) = located(&with("    mutex_lock();\n"));
    assert_eq!((line, col), (16, 5));
    assert!(under.starts_with("mutex_lock"), "{under}");
    assert_eq!(msg, "op `mutex_lock` needs `lock`");
}

#[test]
fn basic_strings_with_escapes_map_back_to_the_file() {
    // `\t` and `\"` before the error shift the text against the value.
    let text = format!(
        "{}[[tasks]]\nname = \"w\"\ncount = 1\ncode = \"\\twork(\\\"1us\\\");\\n\\tmutx_lock(m);\"\n",
        scenario_text!("")
    );
    let e = err(&text);
    let line = text.lines().position(|l| l.starts_with("code =")).unwrap() + 1;
    let col = text.lines().nth(line - 1).unwrap().find("mutx").unwrap() + 1;
    assert_eq!(at(&e), (line, col, "mutx_lock".to_string()), "{e}");
}

#[test]
fn functions_and_calls_in_the_text_form() {
    let text = scenario_text!(
        r#"[objects]
m = { type = "mutex" }

[functions]
inner = '''
    mutex_guard(m) { work(1us); }
'''
outer = [ { op = "call", fn = "inner" } ]

[[tasks]]
name = "w"
count = 1
vars = { n = 3 }
code = '''
    loop (n) {
        outer();
        choose {
            3: work(1us);
            1: { work(2us); count(rare); }
        }
    }
    n = n + 1;
    if (n > 2) exit(); else if (n == 1) work(1us); else { }
'''
"#
    );
    let ops = spec(text).task_groups[0].program.ops.clone();
    assert!(ops.len() > 10, "{ops:?}");
    let e = err(&text.replace("outer();", "outr();"));
    assert_eq!(e.help.as_deref(), Some("did you mean `outer`?"));
}
