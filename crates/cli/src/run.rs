//! `smpsim run` and `smpsim machine`: the arguments handed to
//! [`smpsim_runner::run`], a preset handed to [`smpsim_report::machine`].

use crate::cli::{MachineArgs, RunArgs};
use crate::output::fail;
use smpsim_runner::run::Run;

pub fn main(args: RunArgs) -> i32 {
    let run = Run {
        scenario: args.scenario,
        variants: args.variants,
        sets: args.sets,
        seed: args.seed,
        trace: args.trace,
        trace_limit: args.trace_limit,
        trace_window: args.trace_window,
        seeds: args.seeds,
        explore: args.explore,
        explore_delay: args.explore_delay,
        keep_going: args.keep_going,
        schedule: args.schedule,
        quiet: args.quiet,
        per_cpu: args.per_cpu,
        format: args.format,
        output: args.output,
        allow_paths: args.allow_paths,
        band: args.band,
        band_size: args.band_size.options(),
    };
    match smpsim_runner::run::run(&run) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

pub fn machine(args: MachineArgs) -> i32 {
    let Some(name) = args.name else {
        for n in smpsim_machine::preset_names() {
            println!("{n}");
        }
        return 0;
    };
    match smpsim_machine::preset(&name) {
        Some(Ok(m)) => {
            print!("{}", smpsim_report::machine::describe(&m));
            0
        }
        Some(Err(e)) => fail(format!("error: preset {}: {}", e.name, e.message)),
        None => {
            let known: Vec<_> = smpsim_machine::preset_names().collect();
            fail(format!(
                "error: unknown machine preset `{name}`; known: {}",
                known.join(", ")
            ))
        }
    }
}
