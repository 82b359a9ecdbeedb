//! `smpsim sweep SCENARIO` and `smpsim sweep merge`: the arguments handed
//! to [`smpsim_runner::sweep`] and [`smpsim_runner::sweep_merge`].

use crate::cli::{SweepArgs, SweepCommand};
use crate::output::fail;
use smpsim_runner::sweep::Sweep;

pub fn main(args: SweepArgs) -> i32 {
    if let Some(SweepCommand::Merge(m)) = args.command {
        return match smpsim_runner::sweep_merge::merge(&m.files, &m.output, m.partial) {
            Ok(said) => {
                eprintln!("{said}");
                0
            }
            Err(e) => fail(e),
        };
    }
    let (Some(scenario), Some(output)) = (args.scenario, args.output) else {
        return fail("error: sweep needs a SCENARIO and -o FILE");
    };
    let sweep = Sweep {
        scenario,
        output,
        shard: args.shard,
        cpus: args.cpus,
        variants: args.variants,
        sets: args.sets,
        preset: args.preset,
        seeds: args.seeds,
        format: args.format,
        quiet: args.quiet,
        allow_paths: args.allow_paths,
        built_from: crate::BUILT_FROM.to_string(),
        band: args.band,
        band_size: args.band_size.options(),
    };
    match smpsim_runner::sweep::run(&sweep) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}
