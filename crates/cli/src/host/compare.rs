//! `smpsim host compare`: a host test run for real and as its simulated
//! twin on the calibrated profile, the ratio, and which cost (each doubled
//! alone) moves the simulated figure most.

use std::fmt::Write;

use smpsim_report::{fmt_rate, text::Table};

use super::{format_result, report_calibration, stopped_status};
use crate::cli::{Format, HostCompareArgs};
use crate::output::{emit, fail};

use smpsim_runner::twin::{sensitivity, simulated, twin, verdict_text};

pub(super) fn compare(a: HostCompareArgs) -> i32 {
    let test = a.test.as_str();
    if !["membarrier", "ctxswitch", "ipi-latency"].contains(&test) {
        return fail(format!(
            "error: host compare supports membarrier, ctxswitch and ipi-latency, not `{test}`"
        ));
    }
    // Ctrl-C or SIGTERM stops the real test early (its guard undoes what
    // it changed) and then this command, which removes its temporary
    // profile on the way out.
    if let Some(out) = &a.profile_out {
        // Refused before calibrating, not after.
        if let Err(e) = crate::output::check_outputs(&[], &[("--profile-out", out)]) {
            return fail(e);
        }
    }
    smpsim_host::cleanup::install_signal_handlers();
    let interrupted = || {
        eprintln!("compare: interrupted");
        stopped_status()
    };
    // A profile calibrated here lives only as long as this command, in a
    // directory of its own (mode 0700, a random name: nothing another user
    // planted in TMPDIR is written through), unless --profile-out says
    // where to keep it.
    let mut calibrated_dir = None;
    let profile = match &a.profile {
        Some(p) => p.clone(),
        None => {
            eprintln!("compare: calibrating this host first");
            let c = match smpsim_host::calibrate::calibrate("host") {
                Ok(c) => c,
                Err(e) => return fail(format!("error: {e}")),
            };
            report_calibration("compare", &c);
            let path = match &a.profile_out {
                Some(p) => p.clone(),
                None => match smpsim_files::private_dir("smpsim-compare-") {
                    Ok(dir) => calibrated_dir.insert(dir).path().join("profile.toml"),
                    Err(e) => return fail(format!("error: {e}")),
                },
            };
            if let Err(e) = emit(&c.profile, Some(&path)) {
                return fail(format!("error: {e}"));
            }
            if a.profile_out.is_some() {
                eprintln!("compare: profile kept in {}", path.display());
            }
            path
        }
    };
    if smpsim_host::cleanup::should_stop() {
        return interrupted();
    }
    let profile = std::fs::canonicalize(&profile).unwrap_or(profile);
    let opts = smpsim_host::Options {
        seconds: a.seconds,
        ..Default::default()
    };
    let real = match smpsim_host::run(test, &opts) {
        Ok(r) => r,
        Err(e) => return fail(format!("error: {e}")),
    };
    if smpsim_host::cleanup::should_stop() {
        return interrupted();
    }
    let shown_profile = if calibrated_dir.is_some() {
        "a profile calibrated now (not kept; --profile-out FILE keeps it)".to_string()
    } else {
        profile.display().to_string()
    };
    let cpus = smpsim_host::sys::online_cpus().len();
    let (text, metric, real_value) = match twin(test, &profile, &real, cpus) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    // The twin's name in messages (it is never on disk); it reads the
    // profile, wherever that is.
    let path = std::env::temp_dir().join(format!("host-{test}.toml"));
    let scenario =
        match smpsim_scenario::parse_allowing(&path, text, std::slice::from_ref(&profile)) {
            Ok(s) => s,
            Err(e) => {
                return fail(format!(
                    "error: the simulated twin of {test} does not compile (a bug):\n{e}"
                ))
            }
        };
    let (sim_value, spec) = match simulated(&scenario, test, &[]) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let ratio = sim_value / real_value.max(1e-9);
    let within = (0.5..=2.0).contains(&ratio);
    let sens = match sensitivity(&scenario, test, &spec.machine.costs, sim_value) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let dominant = sens.first().filter(|s| s.change != 0.0);
    // The membarrier twin sends an IPI whenever the target runs the mm (its
    // burner always does); a busy host often runs someone else there, and
    // then the real call sends none: say so, it outweighs any cost.
    let warning = real
        .rate_of("ipi_fraction")
        .filter(|&f| test == "membarrier" && f < 0.5)
        .map(|f| format!("the real run sent {f:.3} IPIs per call: its burners were mostly not running on the targets (a busy host?), while the twin's always are; the comparison is of unlike runs"));
    let out = match a.format {
        Format::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "test": test, "metric": metric, "real": real_value, "simulated": sim_value,
                "ratio": ratio, "within_x2": within, "warning": warning,
                "dominant_cost": dominant.map(|d| d.cost),
                "sensitivity": sens,
                "profile": shown_profile, "real_result": real,
            }))
            .expect("json")
                + "\n"
        }
        Format::Text => {
            let mut s = format_result(&real);
            let _ = writeln!(
                s,
                "\nsimulated on {shown_profile} ({} CPUs):",
                spec.machine.nr_cpus()
            );
            let mut t = Table::new(
                ["metric", "real", "simulated", "sim/real"]
                    .map(String::from)
                    .to_vec(),
            );
            t.row(vec![
                metric.clone(),
                fmt_rate(real_value),
                fmt_rate(sim_value),
                format!("{ratio:.2}"),
            ]);
            t.render(&mut s);
            s.push_str(&verdict_text(ratio, dominant, &sens));
            if let Some(w) = &warning {
                let _ = writeln!(s, "warning: {w}");
            }
            s
        }
    };
    match emit(&out, None) {
        Ok(()) if real.stopped_early => stopped_status(),
        Ok(()) => 0,
        Err(e) => fail(format!("error: {e}")),
    }
}
