//! `smpsim report RESULTS`: a sweep's results file as one HTML page (or
//! CSV, or LKML text). The scenario is read back from where the sweep
//! read it, for the machine and the assumed values, if its text is still
//! the one the points were run on.

use smpsim_report::results_file::{read_points, sweep_command};

use crate::cli::ReportArgs;
use crate::output::{emit, fail};

pub fn main(args: ReportArgs) -> i32 {
    let points = match read_points(&args.results) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    // A partial merge or an unfinished sweep: the figures miss points
    // (seeds), which the page cannot show; say so.
    let whole = points.iter().filter_map(|p| p.sweep_points).max();
    if let Some(n) = whole.filter(|&n| n > points.len() as u64) {
        eprintln!(
            "warning: {} holds {} of the sweep's {n} points (a `sweep merge --partial` or an unfinished sweep): the figures leave the missing points' seeds out",
            args.results.display(),
            points.len()
        );
    }
    let command = format!(
        "{}\n{}",
        sweep_command(&points, &args.results),
        smpsim_report::html::command_line()
    );
    let out = smpsim_report::format::sweep(args.format, &points, &command);
    if let Some(o) = &args.output {
        if let Err(e) =
            crate::output::check_outputs(&[("the results", &args.results)], &[("-o", o)])
        {
            return fail(e);
        }
    }
    match emit(&out, args.output.as_deref()) {
        Ok(()) => 0,
        Err(e) => fail(format!("error: {e}")),
    }
}
