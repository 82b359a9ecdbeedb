//! `smpsim host compare`: a host test run for real and as its simulated
//! twin on the calibrated profile, the ratio, and which cost (each doubled
//! alone) moves the simulated figure most.

use std::fmt::Write;
use std::path::PathBuf;

use smpsim_report::{fmt_rate, host::format_result, text::Table};

use crate::output::emit;
use crate::twin::{sensitivity, simulated, twin, verdict_text};

/// What `host compare` was asked to do (its arguments).
pub struct Compare {
    pub test: String,
    /// A calibrated profile to use (else one is calibrated now).
    pub profile: Option<PathBuf>,
    /// Where to keep the profile calibrated now.
    pub profile_out: Option<PathBuf>,
    pub seconds: f64,
    /// JSON rather than text.
    pub json: bool,
}

/// How a comparison ended.
pub enum Compared {
    /// The report, and whether a signal stopped the real test early.
    Done { out: String, stopped_early: bool },
    /// A signal stopped it before there was anything to compare.
    Interrupted,
}

/// Runs the real test and its twin and compares them.
pub fn compare(req: &Compare) -> Result<Compared, String> {
    let test = req.test.as_str();
    if !["membarrier", "ctxswitch", "ipi-latency"].contains(&test) {
        return Err(format!(
            "error: host compare supports membarrier, ctxswitch and ipi-latency, not `{test}`"
        ));
    }
    if let Some(out) = &req.profile_out {
        // Refused before calibrating, not after.
        crate::output::check_outputs(&[], &[("--profile-out", out)])?;
    }
    // Ctrl-C or SIGTERM stops the real test early (its guard undoes what
    // it changed) and then this command, which removes its temporary
    // profile on the way out.
    smpsim_host::cleanup::install_signal_handlers();
    // A profile calibrated here lives only as long as this command, in a
    // directory of its own (mode 0700, a random name: nothing another user
    // planted in TMPDIR is written through), unless --profile-out says
    // where to keep it.
    let mut calibrated_dir = None;
    let profile = match &req.profile {
        Some(p) => p.clone(),
        None => calibrate_now(req, &mut calibrated_dir)?,
    };
    if smpsim_host::cleanup::should_stop() {
        return Ok(Compared::Interrupted);
    }
    let profile = std::fs::canonicalize(&profile).unwrap_or(profile);
    let opts = smpsim_host::Options {
        seconds: req.seconds,
        ..Default::default()
    };
    let real = smpsim_host::run(test, &opts).map_err(|e| format!("error: {e}"))?;
    if smpsim_host::cleanup::should_stop() {
        return Ok(Compared::Interrupted);
    }
    let shown_profile = if calibrated_dir.is_some() {
        "a profile calibrated now (not kept; --profile-out FILE keeps it)".to_string()
    } else {
        profile.display().to_string()
    };
    let out = simulate_and_compare(req, &profile, &shown_profile, &real)?;
    Ok(Compared::Done {
        out,
        stopped_early: real.stopped_early,
    })
}

/// Calibrates this host and writes the profile (to `--profile-out`, else
/// into a private directory kept in `dir` until the command ends).
/// (The directory is held as `Any`: only its drop, which removes it,
/// matters.)
fn calibrate_now(
    req: &Compare,
    dir: &mut Option<Box<dyn std::any::Any>>,
) -> Result<PathBuf, String> {
    eprintln!("compare: calibrating this host first");
    let c = smpsim_host::calibrate::calibrate("host").map_err(|e| format!("error: {e}"))?;
    eprint!("{}", smpsim_report::host::calibration_text("compare", &c));
    let path = match &req.profile_out {
        Some(p) => p.clone(),
        None => {
            let private =
                smpsim_files::private_dir("smpsim-compare-").map_err(|e| format!("error: {e}"))?;
            let path = private.path().join("profile.toml");
            *dir = Some(Box::new(private));
            path
        }
    };
    emit(&c.profile, Some(&path)).map_err(|e| format!("error: {e}"))?;
    if req.profile_out.is_some() {
        eprintln!("compare: profile kept in {}", path.display());
    }
    Ok(path)
}

/// The twin of `real` simulated on `profile`, the ratio, each cost's
/// sensitivity: the report.
fn simulate_and_compare(
    req: &Compare,
    profile: &std::path::Path,
    shown_profile: &str,
    real: &smpsim_host::HostResult,
) -> Result<String, String> {
    let test = req.test.as_str();
    let cpus = smpsim_host::sys::online_cpus().len();
    let (text, metric, real_value) = twin(test, profile, real, cpus)?;
    // The twin's name in messages (it is never on disk); it reads the
    // profile, wherever that is.
    let path = std::env::temp_dir().join(format!("host-{test}.toml"));
    let allowed = [profile.to_path_buf()];
    let scenario = smpsim_scenario::parse_allowing(&path, text, &allowed).map_err(|e| {
        format!("error: the simulated twin of {test} does not compile (a bug):\n{e}")
    })?;
    let (sim_value, spec) = simulated(&scenario, test, &[])?;
    let ratio = sim_value / real_value.max(1e-9);
    let within = (0.5..=2.0).contains(&ratio);
    let sens = sensitivity(&scenario, test, &spec.machine.costs, sim_value)?;
    let dominant = sens.first().filter(|s| s.change != 0.0);
    // The membarrier twin sends an IPI whenever the target runs the mm (its
    // burner always does); a busy host often runs someone else there, and
    // then the real call sends none: say so, it outweighs any cost.
    let warning = real
        .rate_of("ipi_fraction")
        .filter(|&f| test == "membarrier" && f < 0.5)
        .map(|f| format!("the real run sent {f:.3} IPIs per call: its burners were mostly not running on the targets (a busy host?), while the twin's always are; the comparison is of unlike runs"));
    if req.json {
        return Ok(serde_json::to_string_pretty(&serde_json::json!({
            "test": test, "metric": metric, "real": real_value, "simulated": sim_value,
            "ratio": ratio, "within_x2": within, "warning": warning,
            "dominant_cost": dominant.map(|d| d.cost),
            "sensitivity": sens,
            "profile": shown_profile, "real_result": real,
        }))
        .expect("json")
            + "\n");
    }
    let mut s = format_result(real);
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
    Ok(s)
}
