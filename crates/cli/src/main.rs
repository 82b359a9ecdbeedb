//! `smpsim`: a thin dispatcher over the simulator's crates.
//!
//! Exit codes: 0 success; 1 a `reproduce --check` metric failed; 2 bad
//! input (scenario, arguments, files).

mod band;
mod bench;
mod cli;
mod explore;
mod fmt;
mod host;
mod plot;
mod report;
mod reproduce;
mod run;
mod sweep;

use clap::Parser;
use smpsim_runner::output;

/// The version and commit this binary is built from, as results record it.
pub const BUILT_FROM: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("SMPSIM_COMMIT"), ")");

fn main() {
    // Die quietly when the reader of our output goes away (`| head`), as
    // command-line tools do, instead of panicking in `println!`.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any
    // thread starts; no handler is installed.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Run(args) => run::main(args),
        cli::Command::Reproduce(args) => reproduce::main(args),
        cli::Command::Sweep(args) => sweep::main(args),
        cli::Command::Plot(args) => plot::main(args),
        cli::Command::Report(args) => report::main(args),
        cli::Command::Bench(args) => bench::main(args),
        cli::Command::Machine(args) => run::machine(args),
        cli::Command::Host(args) => host::main(args),
        cli::Command::Calibrate(args) => host::calibrate(args),
        cli::Command::Fmt(args) => fmt::main(args),
    };
    std::process::exit(code);
}
