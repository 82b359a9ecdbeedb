//! `smpsim plot RESULTS`: a sweep's results as a plot (SVG, PNG, or its
//! data as CSV), drawn by [`smpsim_report::plot`].

use smpsim_report::plot::{png, render, Request};

use crate::cli::{PlotArgs, PlotFormat};
use crate::output::{emit, emit_bytes, fail};

pub fn main(args: PlotArgs) -> i32 {
    let req = Request {
        results: args.results.clone(),
        x: args.x.clone(),
        y: args.y.clone(),
        by: args.by.clone(),
        kind: args.kind,
        at: args.at,
        format: args.format,
        ideal: !args.no_ideal,
    };
    match render(&req).and_then(|out| write(&out, &args)) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

/// Writes a plot's SVG (or CSV) as asked: a PNG for `--format png` or a
/// `.png` output.
fn write(out: &str, args: &PlotArgs) -> Result<(), String> {
    crate::output::check_outputs(&[("the results", &args.results)], &[("-o", &args.output)])?;
    let as_png = args.format == PlotFormat::Png
        || (args.format == PlotFormat::Svg
            && args
                .output
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("png")));
    let written = if as_png {
        emit_bytes(&png(out)?, Some(&args.output))
    } else {
        emit(out, Some(&args.output))
    };
    written.map_err(|e| format!("error: {e}"))
}
