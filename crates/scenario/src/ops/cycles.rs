//! Cycles among `[functions]`: a function reaching itself through `call`
//! or a cross-CPU call's `handler` is a located error, found before
//! anything is inlined.

use std::collections::HashMap;

use super::MAX_CALL_DEPTH;
use crate::error::{DResult, Diag};
use crate::raw::{RawOp, S};

/// Reports a cycle among `[functions]` (even unused ones) at a call in it.
pub(crate) fn check_function_cycles(
    functions: &HashMap<String, &S<Vec<S<RawOp>>>>,
    order: &[String],
) -> DResult<()> {
    /// A function named in a body: by `call` (inlined) or as a cross-CPU
    /// call's `handler` (compiled on its own), with where it is named.
    type Refs = Vec<(S<String>, bool)>;
    fn refs(ops: &[S<RawOp>], out: &mut Refs) {
        for op in ops {
            let r = op.get_ref();
            if r.op.get_ref() == "call" {
                if let Some(f) = &r.func_name {
                    out.push((f.clone(), false));
                }
            }
            if let Some(h) = &r.handler {
                let name = h.get_ref().trim().to_string();
                out.push((S::new(h.span(), name), true));
            }
            for body in [&r.body, &r.then, &r.else_].into_iter().flatten() {
                refs(body.get_ref(), out);
            }
            for c in r.options.iter().flat_map(|o| o.get_ref()) {
                refs(c.get_ref().body.get_ref(), out);
            }
        }
    }
    // An iterative depth-first search (0 = unvisited, 1 = on the path,
    // 2 = done): a long chain of functions must not overflow the stack,
    // here or where they are inlined, so chains are bounded too.
    let mut state: HashMap<&str, u8> = HashMap::new();
    // The longest chain of references from a done function, itself counted.
    let mut height: HashMap<&str, usize> = HashMap::new();
    struct Frame<'f> {
        name: &'f str,
        as_handler: bool,
        todo: Refs,
        /// The highest callee seen so far.
        below: usize,
    }
    let frame = |name: &'_ str, as_handler: bool| {
        let mut todo = Vec::new();
        refs(functions[name].get_ref(), &mut todo);
        todo.reverse();
        (todo, as_handler)
    };
    for root in order {
        if state.get(root.as_str()).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut path: Vec<Frame<'_>> = Vec::new();
        let (todo, _) = frame(root, false);
        state.insert(root, 1);
        path.push(Frame {
            name: root,
            as_handler: false,
            todo,
            below: 0,
        });
        while let Some(top) = path.last_mut() {
            let Some((callee, as_handler)) = top.todo.pop() else {
                let done = path.pop().expect("non-empty");
                let h = done.below + 1;
                state.insert(done.name, 2);
                height.insert(done.name, h);
                if let Some(parent) = path.last_mut() {
                    parent.below = parent.below.max(h);
                }
                continue;
            };
            let Some((name, _)) = functions.get_key_value(callee.get_ref()) else {
                continue; // reported where it is compiled
            };
            let depth = path.len() + height.get(name.as_str()).copied().unwrap_or(1);
            if depth > MAX_CALL_DEPTH {
                let chain: Vec<&str> = path.iter().map(|f| f.name).chain([name.as_str()]).collect();
                let shown = match chain.len() {
                    n if n > 6 => format!(
                        "{} -> ... -> {}",
                        chain[..3].join(" -> "),
                        chain[n - 3..].join(" -> ")
                    ),
                    _ => chain.join(" -> "),
                };
                return Err(Diag::new(
                    callee.span(),
                    format!("functions nest more than {MAX_CALL_DEPTH} deep: {shown}"),
                )
                .help("functions are inlined where they are called; flatten the chain"));
            }
            match state.get(name.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|f| f.name == name).unwrap_or(0);
                    let mut cycle: Vec<String> = Vec::new();
                    let mut via_handler = as_handler;
                    for (i, f) in path[from..].iter().enumerate() {
                        // How each function after the first was reached.
                        if i > 0 && f.as_handler {
                            via_handler = true;
                            cycle.push(format!("(handler) {}", f.name));
                        } else {
                            cycle.push(f.name.to_string());
                        }
                    }
                    cycle.push(if as_handler {
                        format!("(handler) {name}")
                    } else {
                        name.clone()
                    });
                    let what = if via_handler {
                        "a cross-CPU call's handler sends a cross-CPU call that reaches it again"
                    } else {
                        "functions call each other in a cycle"
                    };
                    let help = if via_handler {
                        "a handler runs in hardirq context, where the kernel WARNs on a synchronous cross-CPU call (smp_call_function*() with IRQs disabled); a handler may only `work`, `count` and take a spinlock"
                    } else {
                        "functions are inlined where they are called, so they cannot recurse"
                    };
                    return Err(Diag::new(
                        callee.span(),
                        format!("{what}: {}", cycle.join(" -> ")),
                    )
                    .help(help));
                }
                0 => {
                    let (todo, as_handler) = frame(name, as_handler);
                    state.insert(name, 1);
                    path.push(Frame {
                        name,
                        as_handler,
                        todo,
                        below: 0,
                    });
                }
                _ => {
                    let h = height[name.as_str()];
                    let top = path.last_mut().expect("non-empty");
                    top.below = top.below.max(h);
                }
            }
        }
    }
    Ok(())
}
