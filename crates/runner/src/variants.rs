//! What every command that runs a scenario shares: which variants run, the
//! largest seed, the scenario's warnings.

use smpsim_scenario::Scenario;

/// The largest seed: `scenario.seed` is a TOML integer (i64).
pub const MAX_SEED: u64 = i64::MAX as u64;

/// The variants asked for, or every variant of the scenario (or its base
/// if it has none).
pub fn variants_to_run(scenario: &Scenario, asked: &[String]) -> Vec<Option<String>> {
    if !asked.is_empty() {
        asked.iter().cloned().map(Some).collect()
    } else if scenario.variants.is_empty() {
        vec![None]
    } else {
        scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect()
    }
}

/// The scenario's warnings (legal, likely not meant), on stderr.
pub fn warn(scenario: &Scenario, quiet: bool) {
    if !quiet {
        for w in &scenario.warnings {
            eprintln!("warning: {}: {w}", scenario.path.display());
        }
    }
}
