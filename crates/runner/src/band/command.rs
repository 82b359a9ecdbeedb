//! `--band` on `run` and `sweep`: the bands added to a run's report or a
//! sweep point's line.

use smpsim_report::format::RunFormat;

use crate::progress::Progress;

/// The run's output `out` with its figures' bands, the design of size
/// `opts`, shown in `format`, its progress unless `quiet`.
pub fn run(
    scenario: &smpsim_scenario::Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
    runs: &[smpsim_report::VariantRun],
    (opts, format, quiet): (&super::Options, RunFormat, bool),
    out: String,
) -> Result<String, String> {
    use super::runs as band;
    let progress = Progress::new("band", "runs", quiet);
    let found = band::run_bands(scenario, variants, sets, runs, opts, &progress);
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
    opts: &super::Options,
) -> serde_json::Value {
    let runs = vec![crate::pool::variant_run(scenario, variant, result.clone())];
    let variants = [variant.clone()];
    // The sweep shows its own progress; the design's runs are its points'.
    let progress = Progress::new("band", "runs", true);
    let found = super::runs::run_bands(scenario, &variants, sets, &runs, opts, &progress);
    progress.done();
    match found {
        Ok((bands, _)) => serde_json::to_value(bands).expect("serializable"),
        Err(e) => serde_json::json!({ "error": e }),
    }
}
