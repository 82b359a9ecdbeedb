//! `--band` on `run`: the call into the runner's band module and the
//! combinations it refuses.

use crate::cli::{RunArgs, RunFormat};
use smpsim_runner::progress::Progress;

/// `--band` shows the bands of one run's figures, in text, JSON or LKML.
pub fn refused(args: &RunArgs) -> Result<(), String> {
    if args.seeds.is_some() || args.explore.is_some() || args.schedule.is_some() {
        return Err("error: --band runs its own seeds and design; it cannot be combined with --seeds, --explore or --schedule".into());
    }
    if matches!(args.format, RunFormat::Csv | RunFormat::PerfLock) {
        return Err("error: --band is shown with --format text, json or lkml".into());
    }
    Ok(())
}

/// The run's output `out` with its figures' bands.
pub fn run(
    scenario: &smpsim_scenario::Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
    runs: &[smpsim_report::VariantRun],
    format: RunFormat,
    out: String,
    quiet: bool,
) -> Result<String, String> {
    use smpsim_runner::band::runs as band;
    let progress = Progress::new("band", "runs", quiet);
    let opts = smpsim_runner::band::Options::default();
    let found = band::run_bands(scenario, variants, sets, runs, &opts, &progress);
    progress.done();
    let (bands, summary) = found.map_err(|e| format!("error: band: {e}"))?;
    Ok(match format {
        RunFormat::Json => band::json(&out, &bands),
        RunFormat::Lkml => out + &band::lkml(&bands),
        _ => out + &band::text(&bands, &summary),
    })
}

/// A sweep point's bands as its line's `band`: `[{figure, value, band}]`,
/// or `{ "error": ... }` if the design could not run (the point itself
/// stands).
pub fn sweep_point(
    scenario: &smpsim_scenario::Scenario,
    variant: &Option<String>,
    sets: &[(String, String)],
    result: &smpsim_kernel::RunResult,
) -> serde_json::Value {
    let runs = vec![smpsim_runner::pool::variant_run(
        scenario,
        variant,
        result.clone(),
    )];
    let variants = [variant.clone()];
    // The sweep shows its own progress; the design's runs are its points'.
    let progress = Progress::new("band", "runs", true);
    let opts = smpsim_runner::band::Options::default();
    let found =
        smpsim_runner::band::runs::run_bands(scenario, &variants, sets, &runs, &opts, &progress);
    progress.done();
    match found {
        Ok((bands, _)) => serde_json::to_value(bands).expect("serializable"),
        Err(e) => serde_json::json!({ "error": e }),
    }
}
