//! `smpsim reproduce`: the arguments handed to
//! [`smpsim_runner::reproduce`]; exit 1 with `--check` when a metric fails.

use crate::cli::ReproduceArgs;
use crate::output::fail;
use smpsim_runner::reproduce::Reproduce;

pub fn main(args: ReproduceArgs) -> i32 {
    let reproduce = Reproduce {
        cases: args.cases,
        quick: args.quick,
        seeds: args.seeds,
        format: args.format,
        per_cpu: args.per_cpu,
        sets: args.sets,
        quiet: args.quiet,
        html: args.html,
        scenarios: args.scenarios,
        output: args.output,
        allow_paths: args.allow_paths,
        band: !args.no_band,
        band_size: args.band_size.options(),
    };
    match smpsim_runner::reproduce::run(&reproduce) {
        Ok(false) if args.check => 1,
        Ok(_) => 0,
        Err(e) => fail(e),
    }
}
