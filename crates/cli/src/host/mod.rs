//! `smpsim host` and `smpsim calibrate`: the real side.

pub use smpsim_report::host::format_result;

use crate::cli::{CalibrateArgs, Format, HostArgs, HostCommand, HostRunArgs};
use crate::output::{emit, fail};

mod compare;

pub fn main(args: HostArgs) -> i32 {
    match args.command {
        HostCommand::List { format } => list(format),
        HostCommand::Run(a) => run(a),
        HostCommand::Compare(a) => compare::compare(a),
    }
}

fn list(format: Format) -> i32 {
    let statuses = smpsim_host::list();
    let out = match format {
        Format::Json => serde_json::to_string_pretty(&statuses).expect("json") + "\n",
        Format::Text => smpsim_report::host::list_text(&statuses),
    };
    match emit(&out, None) {
        Ok(()) => 0,
        Err(e) => fail(format!("error: {e}")),
    }
}

fn options(a: &HostRunArgs) -> Result<smpsim_host::Options, String> {
    let cgroup = match &a.cgroup {
        None => (0, 0),
        Some(s) => {
            let (c, d) = s.split_once('x').ok_or_else(|| {
                format!("error: --cgroup {s}: expected CHILDRENxDEPTH, e.g. 20x3")
            })?;
            (
                c.parse()
                    .map_err(|_| format!("error: --cgroup {s}: bad CHILDREN"))?,
                d.parse()
                    .map_err(|_| format!("error: --cgroup {s}: bad DEPTH"))?,
            )
        }
    };
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(format!(
            "error: --seconds {}: expected 0 < seconds <= 3600",
            a.seconds
        ));
    }
    Ok(smpsim_host::Options {
        seconds: a.seconds,
        allow_hotplug: a.allow_hotplug,
        readers: a.readers.max(1),
        cgroup,
        window_s: a.window,
        reps: a.reps.max(1),
    })
}

fn run(a: HostRunArgs) -> i32 {
    let opts = match options(&a) {
        Ok(o) => o,
        Err(e) => return fail(e),
    };
    if let Some(out) = &a.output {
        if let Err(e) = crate::output::check_outputs(&[], &[("-o", out)]) {
            return fail(e);
        }
    }
    match smpsim_host::run(&a.test, &opts) {
        Ok(r) => {
            let out = match a.format {
                Format::Json => serde_json::to_string_pretty(&r).expect("json") + "\n",
                Format::Text => format_result(&r),
            };
            match emit(&out, a.output.as_deref()) {
                Ok(()) if r.stopped_early => stopped_status(),
                Ok(()) => 0,
                Err(e) => fail(format!("error: {e}")),
            }
        }
        Err(e) => fail(format!("error: {e}")),
    }
}

/// The exit status after a signal stopped a host test or a calibration:
/// 128 + the signal's number, as a shell reports a process it killed (130
/// for a Ctrl-C, 129 for SIGHUP, 143 for SIGTERM).
fn stopped_status() -> i32 {
    smpsim_host::cleanup::stopped_status()
}

pub fn calibrate(a: CalibrateArgs) -> i32 {
    // Refused before measuring, not after.
    if let Err(e) = crate::output::check_outputs(&[], &[("-o", &a.output)]) {
        return fail(e);
    }
    smpsim_host::cleanup::install_signal_handlers();
    if a.contention {
        return match smpsim_host::calibrate::contention::measure_to(&a.name, &a.output) {
            Ok(c) => {
                c.notes.iter().for_each(|n| eprintln!("calibrate: {n}"));
                eprintln!("calibrate: wrote {}", a.output.display());
                0
            }
            Err(_) if smpsim_host::cleanup::should_stop() => stopped_status(),
            Err(e) => fail(format!("error: {e}")),
        };
    }
    let calibrated = smpsim_host::calibrate::calibrate(&a.name);
    if smpsim_host::cleanup::should_stop() {
        eprintln!("calibrate: stopped early by a signal; no profile written");
        return stopped_status();
    }
    match calibrated {
        Ok(c) => {
            eprint!("{}", smpsim_report::host::calibration_text("calibrate", &c));
            match emit(&c.profile, Some(&a.output)) {
                Ok(()) => {
                    eprintln!("calibrate: wrote {}", a.output.display());
                    0
                }
                Err(e) => fail(format!("error: {e}")),
            }
        }
        Err(e) => fail(format!("error: {e}")),
    }
}
