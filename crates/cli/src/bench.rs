//! `smpsim bench`: model events per second on the plain global-mutex model
//! and two bare event loops (the benchmark is the runner's
//! `bench` module); prints its points as text or JSON.

use crate::cli::{BenchArgs, Format};

pub fn main(args: BenchArgs) -> i32 {
    if args.cpus.contains(&0) {
        return crate::output::fail("error: --cpus: a benchmark needs at least one CPU");
    }
    let points = smpsim_runner::bench::run(&args.cpus, args.millis, args.quiet);
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&points).expect("serializable")
        ),
        Format::Text => print!("{}", smpsim_runner::bench::text(&points)),
    }
    0
}
