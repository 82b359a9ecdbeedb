//! `smpsim`: a thin dispatcher over the simulator's crates.
//!
//! Exit codes: 0 success; 1 a `reproduce --check` metric failed; 2 bad
//! input (scenario, arguments, files).

mod bench;
mod cli;
mod host;
mod output;
mod reproduce;
mod run;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Run(args) => run::main(args),
        cli::Command::Reproduce(args) => reproduce::main(args),
        cli::Command::Bench(args) => bench::main(args),
        cli::Command::Machine(args) => run::machine(args),
        cli::Command::Host(args) => host::main(args),
        cli::Command::Calibrate(args) => host::calibrate(args),
    };
    std::process::exit(code);
}
