//! `run --explore N`'s report: per variant, how many schedules ran and
//! the first that made a detector fire, shrunk, with its replay command.

use serde::Serialize;

/// The first failing schedule of a variant, shrunk.
#[derive(Serialize)]
pub struct Found {
    pub schedule: u64,
    pub detector: String,
    pub message: String,
    pub delays_first: usize,
    pub delays_shrunk: Vec<u32>,
    pub replay: String,
}

/// One variant's exploration.
#[derive(Serialize)]
pub struct VariantExploration {
    pub variant: String,
    /// `--explore N`: how many schedules were asked for.
    pub schedules_asked: u64,
    /// How many ran: fewer when a failing one stopped the search.
    pub schedules_run: u64,
    pub found: Option<Found>,
    /// With `--keep-going`: every failing schedule.
    pub failing: Vec<u64>,
}

/// The report as JSON.
pub fn json(report: &[VariantExploration]) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("serializable");
    s.push('\n');
    s
}

/// The report as text.
pub fn text(report: &[VariantExploration]) -> String {
    let mut s = String::new();
    for e in report {
        match &e.found {
            None => s.push_str(&format!(
                "{}: {} schedules explored, no detector fired\n",
                e.variant, e.schedules_run
            )),
            Some(f) => {
                s.push_str(&format!(
                    "{}: schedule {} made `{}` fire ({} of the {} asked run):\n",
                    e.variant, f.schedule, f.detector, e.schedules_run, e.schedules_asked
                ));
                for line in f.message.lines() {
                    s.push_str(&format!("  {line}\n"));
                }
                s.push_str(&format!(
                    "  shrunk from {} delays to {}: {:?}\n  replay: {}\n",
                    f.delays_first,
                    f.delays_shrunk.len(),
                    f.delays_shrunk,
                    f.replay
                ));
                if e.failing.len() > 1 {
                    s.push_str(&format!(
                        "  {} of the {} schedules run failed\n",
                        e.failing.len(),
                        e.schedules_run
                    ));
                }
            }
        }
    }
    s
}
