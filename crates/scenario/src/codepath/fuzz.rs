//! The parser never panics, and what it accepts prints back to the same
//! tree. Inputs are the shipped scenarios' code mutated (fragments
//! deleted, repeated, swapped in) and soups of code tokens.
//!
//! `SMPSIM_CODEPATH_FUZZ_CASES=N cargo test -p smpsim-scenario --lib
//! codepath::fuzz` runs N cases per property (default 2,000);
//! docs/fuzzing.md records a long run.

use proptest::prelude::*;

use super::print;
use super::{parse_text, Block, SpanMap, Val};

/// The shipped scenarios, whose `'''` strings seed the mutations.
const SCENARIOS: &[&str] = &[
    include_str!("../../../../scenarios/hotplug-smt.toml"),
    include_str!("../../../../scenarios/ipi-preempt.toml"),
    include_str!("../../../../scenarios/lazy-tlb.toml"),
    include_str!("../../../../scenarios/lock-scaling.toml"),
    include_str!("../../../../scenarios/membarrier-percpu.toml"),
    include_str!("../../../../scenarios/mm-lifetime.toml"),
    include_str!("../../../../scenarios/slow-mutex.toml"),
    include_str!("../../../../scenarios/checks/abba.toml"),
    include_str!("../../../../scenarios/checks/irq-lock.toml"),
    include_str!("../../../../scenarios/checks/membarrier.toml"),
    include_str!("../../../../scenarios/checks/race.toml"),
    include_str!("../../../../scenarios/examples/mmap-lock.toml"),
    include_str!("../../../../scenarios/examples/mutex-contention.toml"),
];

/// Pieces of code, valid and not, that mutations insert.
const FRAGMENTS: &[&str] = &[
    "work(60ns);",
    "(",
    ")",
    "{",
    "}",
    ";",
    ",",
    "=",
    "==",
    "<=",
    "if",
    "else",
    "for (;;)",
    "for",
    "loop (3)",
    "loop",
    "choose",
    "break;",
    "choose {",
    "3:",
    ":",
    "-1",
    "0",
    "60ns",
    "\"s\"",
    "\"",
    "\"\\u{",
    "\"\\q\"",
    "// c\n",
    "/*",
    "*/",
    "/* c */",
    "mutex_guard(m)",
    "m",
    "x",
    "cpu_online(target)",
    "#",
    "[",
    "]",
    "99999999999999999999",
    "é",
    "\\",
    "\n",
    " ",
    "body = {",
    "then",
    "options = {",
    "set",
    "call(f);",
    "fn",
    "exit();",
    "f();",
    "smp_call_function_single(",
    "wait = true",
    "true",
    "'''",
    "x = 1;",
    "\t",
    "{}",
    "}}}",
    "{{{",
    "if (x) {",
    "} else {",
    "1: {}",
    "uniform(0, 4)",
    "mutex_lock(m[this_cpu()]);",
];

fn cases() -> u32 {
    std::env::var("SMPSIM_CODEPATH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// The code of every `'''` string of the shipped scenarios.
fn seeds() -> Vec<&'static str> {
    let mut out = Vec::new();
    for s in SCENARIOS {
        let mut rest = *s;
        while let Some(open) = rest.find("'''\n") {
            let body = &rest[open + 4..];
            let Some(close) = body.find("'''") else { break };
            out.push(&body[..close]);
            rest = &body[close + 3..];
        }
    }
    out
}

const FUNCTIONS: &[&str] = &["f", "membarrier_targeted", "cpu_down", "use_slot"];

fn functions() -> Vec<String> {
    FUNCTIONS.iter().map(|s| s.to_string()).collect()
}

/// The tree without spans, fields in key order, integer text as integers:
/// what the TOML table it stands for means.
fn canon(b: &Block) -> Block {
    Block {
        span: 0..0,
        items: b
            .items
            .iter()
            .map(|n| {
                let mut n = n.clone();
                n.span = 0..0;
                n.name_span = 0..0;
                for f in &mut n.fields {
                    f.span = 0..0;
                    f.key_span = 0..0;
                    f.val = match &f.val {
                        Val::Str(s) if s.parse::<i64>().is_ok_and(|i| i.to_string() == *s) => {
                            Val::Int(s.clone())
                        }
                        Val::Ops(b) => Val::Ops(canon(b)),
                        Val::Choices(cs) => Val::Choices(
                            cs.iter()
                                .map(|c| super::Choice {
                                    span: 0..0,
                                    weight: c.weight.clone(),
                                    weight_span: 0..0,
                                    body: canon(&c.body),
                                })
                                .collect(),
                        ),
                        v => v.clone(),
                    };
                }
                n.fields.sort_by(|a, b| a.key.cmp(&b.key));
                n
            })
            .collect(),
    }
}

/// Parses `code`; if it parses, it must print and read back the same,
/// and become a TOML value.
fn check(code: &str) -> Result<(), TestCaseError> {
    let fns = functions();
    let Ok(tree) = parse_text(code, &fns) else {
        return Ok(());
    };
    let _ = tree.to_value();
    let printed = print::code(&tree, None, &fns, 4)
        .map_err(|e| TestCaseError::fail(format!("cannot print {code:?}: {e}")))?;
    let back = parse_text(&printed.text, &fns).map_err(|e| {
        TestCaseError::fail(format!(
            "{code:?} printed as\n{}\ndoes not parse: {}",
            printed.text, e.message
        ))
    })?;
    prop_assert_eq!(
        canon(&tree),
        canon(&back),
        "{:?} printed as\n{}",
        code,
        printed.text
    );
    Ok(())
}

/// Applies edits (kind, position, length, fragment) to `code`.
fn mutate(code: &str, edits: &[(u8, usize, usize, usize)]) -> String {
    let mut s = code.to_string();
    for &(kind, pos, len, frag) in edits {
        let at = |p: usize, s: &str| {
            let mut p = p % (s.len() + 1);
            while !s.is_char_boundary(p) {
                p -= 1;
            }
            p
        };
        let a = at(pos, &s);
        let b = at(a + len % 24, &s).max(a);
        match kind % 4 {
            0 => s.replace_range(a..b, ""),
            1 => s.insert_str(a, FRAGMENTS[frag % FRAGMENTS.len()]),
            2 => s.replace_range(a..b, FRAGMENTS[frag % FRAGMENTS.len()]),
            _ => {
                let piece = s[a..b].to_string();
                s.insert_str(b, &piece);
            }
        }
    }
    s
}

/// Inputs the fuzzers found a problem with.
#[test]
fn found_by_fuzzing() {
    for code in [
        "   choose();\n",
        "choose = 1;",
        "choose(options = { work(1us); });",
    ] {
        check(code).unwrap();
    }
}

#[test]
fn every_seed_prints_back_the_same() {
    let seeds = seeds();
    assert!(seeds.len() > 30, "{}", seeds.len());
    for s in seeds {
        check(s).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn mutated_code_never_panics(
        seed in any::<usize>(),
        edits in proptest::collection::vec(
            (any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>()), 1..6),
    ) {
        let seeds = seeds();
        let code = mutate(seeds[seed % seeds.len()], &edits);
        check(&code)?;
    }

    #[test]
    fn token_soup_never_panics(
        picks in proptest::collection::vec(0..FRAGMENTS.len(), 0..40),
        bytes in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let mut code: String = picks.iter().map(|&i| FRAGMENTS[i]).collect();
        code.push_str(&String::from_utf8_lossy(&bytes));
        check(&code)?;
    }

    #[test]
    fn span_maps_never_panic(raw in "[\"'\\\\a-z\\n ]{0,12}", value in "[a-z\\n ]{0,6}", r in 0..20usize) {
        let m = SpanMap::new(Some(&raw), &value, 5..5 + raw.len());
        let _ = m.range(&(r / 2..r));
    }
}
