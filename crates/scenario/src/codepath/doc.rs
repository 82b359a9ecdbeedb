//! The table of every op's code form in docs/scenario-format.md is made
//! from the op registry; this test keeps the two equal, so an op added to
//! the registry shows up as a failing test until the doc lists it.

use super::parser::positional_fields;
use crate::ops::signatures;

const DOC: &str = include_str!("../../../../docs/scenario-format.md");
const BEGIN: &str = "<!-- code-forms: generated from the op registry -->\n";
const END: &str = "<!-- code-forms: end -->";

/// The ops with a statement form of their own: how they are written, and
/// the call form if they have one too.
fn statement_form(op: &str) -> Option<(&'static str, &'static str)> {
    Some(match op {
        "if" => ("`if (cond) { ... } else { ... }`", ""),
        "loop" => (
            "`loop (count) { ... }`",
            "`for (;;) { ... }` for `count = forever`; `loop(count) { ... }`",
        ),
        "choose" => ("`choose { 3: ... 1: ... }`", ""),
        "break" => ("`break;`", "`break();`"),
        "set" => ("`var = value;`", "`set(var, value);`"),
        "call" => ("`fn();`", "`call(fn);`"),
        _ => return None,
    })
}

/// The table: each op with its call form (positional fields in order,
/// `?` marking optional ones, a block for `body`) and other names.
pub(super) fn table() -> String {
    let mut out = String::from("| op | written as | also |\n|----|------------|------|\n");
    for sig in signatures() {
        let args: Vec<String> = positional_fields(&sig)
            .into_iter()
            .map(|f| {
                if sig.required.contains(&f) {
                    f.to_string()
                } else {
                    format!("{f}?")
                }
            })
            .collect();
        let body = sig.required.contains(&"body") || sig.optional.contains(&"body");
        let tail = if body { " { ... }" } else { ";" };
        let mut written = format!("`{}({}){tail}`", sig.name, args.join(", "));
        let mut also: Vec<String> = sig
            .aliases
            .iter()
            .map(|(a, f)| format!("`{a} =` for `{f} =`"))
            .collect();
        if let Some((form, other)) = statement_form(sig.name) {
            written = form.to_string();
            also.extend((!other.is_empty()).then(|| other.to_string()));
        }
        out.push_str(&format!(
            "| `{}` | {written} | {} |\n",
            sig.name,
            also.join("; ")
        ));
    }
    out
}

#[test]
fn the_docs_list_every_op_in_its_code_form() {
    let start = DOC.find(BEGIN).expect("the code-forms marker") + BEGIN.len();
    let len = DOC[start..].find(END).expect("the code-forms end marker");
    let want = table();
    assert!(
        DOC[start..start + len] == want,
        "docs/scenario-format.md's table of code forms is out of date; it should read:\n{want}"
    );
}
