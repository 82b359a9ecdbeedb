//! What a host test reports, in the shape of a simulation's report.

use hdrhistogram::Histogram;
use serde::Serialize;
use smpsim_kernel::HistResult;

#[derive(Clone, Debug, Serialize)]
pub struct Rate {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

/// Like time(1) for one thread or process of a test.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadTimes {
    pub name: String,
    pub real_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostResult {
    pub test: String,
    /// How long the test was asked to run; None for a test bounded by a
    /// count of repetitions instead (`hotplug`).
    pub seconds: Option<f64>,
    /// The repetitions asked, for a test bounded by them.
    pub reps: Option<u32>,
    pub params: Vec<(String, String)>,
    pub rates: Vec<Rate>,
    pub histograms: Vec<HistResult>,
    pub threads: Vec<ThreadTimes>,
    pub notes: Vec<String>,
    /// A signal (Ctrl-C) stopped the test before its time was up: the
    /// figures cover only the part that ran, and phases after it are missing.
    pub stopped_early: bool,
}

impl HostResult {
    pub fn new(test: &str, seconds: f64) -> Self {
        HostResult {
            test: test.into(),
            seconds: Some(seconds),
            reps: None,
            params: Vec::new(),
            rates: Vec::new(),
            histograms: Vec::new(),
            threads: Vec::new(),
            notes: Vec::new(),
            stopped_early: false,
        }
    }
    /// A test bounded by repetitions rather than by time.
    pub fn by_reps(test: &str, reps: u32) -> Self {
        HostResult {
            seconds: None,
            reps: Some(reps),
            ..HostResult::new(test, 0.0)
        }
    }
    /// What the test was asked to do, for a report's first line.
    pub fn asked(&self) -> String {
        match (self.seconds, self.reps) {
            (_, Some(n)) => format!("{n} reps"),
            (Some(s), None) => format!("{s:.1} s"),
            (None, None) => "one pass".into(),
        }
    }
    pub fn param(&mut self, k: &str, v: impl ToString) {
        self.params.push((k.into(), v.to_string()));
    }
    pub fn rate(&mut self, name: &str, value: f64, unit: &str) {
        self.rates.push(Rate {
            name: name.into(),
            value,
            unit: unit.into(),
        });
    }
    pub fn rate_of(&self, name: &str) -> Option<f64> {
        self.rates.iter().find(|r| r.name == name).map(|r| r.value)
    }
    pub fn hist(&mut self, name: &str, h: &Histogram<u64>) {
        self.histograms.push(smpsim_kernel::summarize(name, h));
    }
}

pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("bounds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_bounded_by_reps_says_reps_not_seconds() {
        assert_eq!(HostResult::by_reps("hotplug", 5).asked(), "5 reps");
        assert_eq!(HostResult::by_reps("hotplug", 5).seconds, None);
        assert_eq!(HostResult::new("ctxswitch", 2.0).asked(), "2.0 s");
    }
}
