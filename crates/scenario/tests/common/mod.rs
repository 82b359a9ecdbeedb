//! Helpers shared by the scenario crate's tests.
#![allow(dead_code)]

use std::path::Path;

/// A test scenario: the shared `[scenario]` and 4-CPU `[machine]` header,
/// then the rest (objects, functions, tasks) as written.
#[macro_export]
macro_rules! scenario_text {
    ($rest:expr) => {
        concat!(
            "[scenario]\nname = \"t\"\nduration = \"1s\"\n\n[machine]\npreset = \"generic-x86\"\n",
            "topology = { sockets = 1, numa_nodes_per_socket = 1, llcs_per_node = 1, cores_per_llc = 4, threads_per_core = 1 }\n\n",
            $rest
        )
    };
}

/// [`scenario_text!`] ending with two tasks `w` whose code,
/// [`WORKER_CODE`], a test replaces with [`with_code`].
#[macro_export]
macro_rules! scenario_with_workers {
    ($rest:literal) => {
        $crate::scenario_text!(concat!(
            $rest,
            "\n[[tasks]]\nname = \"w\"\ncount = 2\ncode = [ { op = \"work\", time = \"1us\" } ]\n"
        ))
    };
}

/// The workers' code in [`scenario_with_workers!`].
pub const WORKER_CODE: &str = "{ op = \"work\", time = \"1us\" }";

/// `base` (from [`scenario_with_workers!`]) with the workers' code
/// replaced by `code`.
pub fn with_code_in(base: &str, code: &str) -> String {
    base.replace(WORKER_CODE, code)
}

use smpsim_kernel::program::Op;
use smpsim_kernel::Spec;
use smpsim_scenario::{parse, Location, ScenarioError};

/// Compiles `text` (named `t.toml`) with no variant and no `--set`.
pub fn spec(text: &str) -> Spec {
    parse(Path::new("t.toml"), text.to_string())
        .unwrap_or_else(|e| panic!("{e}"))
        .compile(None, &[])
        .unwrap()
}

/// The ops of the only task group, without the trailing `Exit`.
pub fn ops_of(text: &str) -> Vec<Op> {
    let mut ops = spec(text).task_groups[0].program.ops.clone();
    assert_eq!(ops.pop(), Some(Op::Exit));
    ops
}

/// The error `text` must give when parsed.
pub fn err(text: &str) -> ScenarioError {
    match parse(Path::new("t.toml"), text.to_string()) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => {
            println!("{e}\n");
            e
        }
    }
}

/// Line, column, and the text under the caret.
pub fn at(e: &ScenarioError) -> (usize, usize, String) {
    match &e.location {
        Location::Text {
            line,
            column,
            line_text,
            width,
            ..
        } => {
            let under: String = line_text.chars().skip(column - 1).take(*width).collect();
            (*line, *column, under)
        }
        other => panic!("not located in text: {other:?}"),
    }
}
