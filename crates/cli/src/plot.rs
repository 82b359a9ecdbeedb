//! `smpsim plot RESULTS`: a sweep's results as a plot (SVG, PNG, or its
//! data as CSV), drawn by [`smpsim_report::plot`].

use smpsim_report::plot::{png, render, Request};

use crate::cli::{PlotArgs, PlotFormat};
use crate::output::{emit, emit_bytes, fail};

pub fn main(args: PlotArgs) -> i32 {
    if args.output.is_none() && args.format != PlotFormat::Csv {
        // An SVG or PNG on a terminal helps no one; CSV is text to read or pipe.
        return fail("error: plot: give -o FILE for an SVG or PNG (`-o -` writes it to stdout); only --format csv goes to stdout without -o");
    }
    let req = Request {
        results: args.results.clone(),
        x: args.x.clone(),
        y: args.y.clone(),
        by: args.by.clone(),
        kind: args.kind,
        at: args.at,
        format: args.format,
        ideal: !args.no_ideal,
        per_task: args.per_task,
    };
    match render(&req).and_then(|out| write(&out, &args)) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

/// Writes a plot's SVG (or CSV) as asked: a PNG for `--format png` or a
/// `.png` output; without `-o` (CSV only) to stdout.
fn write(out: &str, args: &PlotArgs) -> Result<(), String> {
    let output = args.output.as_deref();
    if let Some(o) = output {
        crate::output::check_outputs(&[("the results", &args.results)], &[("-o", o)])?;
    }
    let as_png = args.format == PlotFormat::Png
        || (args.format == PlotFormat::Svg
            && output
                .and_then(|o| o.extension())
                .is_some_and(|e| e.eq_ignore_ascii_case("png")));
    let written = if as_png {
        emit_bytes(&png(out)?, output)
    } else {
        emit(out, output)
    };
    written.map_err(|e| format!("error: {e}"))
}
