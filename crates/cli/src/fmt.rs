//! `smpsim fmt`: the arguments handed to [`smpsim_runner::fmt`].

use crate::cli::{CodeForm, FmtArgs};
use crate::output::fail;

pub fn main(args: FmtArgs) -> i32 {
    let to_code = matches!(args.to, CodeForm::Code);
    let new = match smpsim_runner::fmt::rewritten(&args.scenario, to_code, &args.allow_paths) {
        Ok(new) => new,
        Err(e) => return fail(e),
    };
    if !args.write {
        print!("{new}");
        return 0;
    }
    match smpsim_runner::fmt::write_back(&args.scenario, &new) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}
