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
    /// stress-ng's bogo ops: how many of the test's operation it did
    /// (`bogo_op` says what one is).
    pub bogo_ops: u64,
    pub bogo_op: String,
    /// The whole test's wall-clock and CPU time (this process and the
    /// children it waited for), the times of `--metrics-brief`.
    pub usage: Option<ThreadTimes>,
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
            bogo_ops: 0,
            bogo_op: String::new(),
            usage: None,
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
    /// `n` of the test's operation, `what` one is, as its bogo ops.
    pub fn bogo(&mut self, n: u64, what: &str) {
        self.bogo_ops = n;
        self.bogo_op = what.into();
    }
    /// stress-ng's `--metrics-brief` table of the test: its header lines
    /// and one line, in stress-ng's `stress_metrics_dump()` format.
    pub fn metrics_brief(&self) -> String {
        let secs = |ns: u64| ns as f64 / 1e9;
        let (real, usr, sys) = self.usage.as_ref().map_or((0.0, 0.0, 0.0), |u| {
            (secs(u.real_ns), secs(u.user_ns), secs(u.sys_ns))
        });
        let per = |t: f64| {
            if t > 0.0 {
                self.bogo_ops as f64 / t
            } else {
                0.0
            }
        };
        let mut out = format!(
            "{:<13} {:>9} {:>9} {:>9} {:>9} {:>12} {:>14}\n",
            "stressor", "bogo ops", "real time", "usr time", "sys time", "bogo ops/s", "bogo ops/s"
        );
        out += &format!(
            "{:<13} {:>9} {:>9} {:>9} {:>9} {:>12} {:>14}\n",
            "", "", "(secs) ", "(secs) ", "(secs) ", "(real time)", "(usr+sys time)"
        );
        out += &format!(
            "{:<13} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>12.2} {:>14.2}\n",
            self.test,
            self.bogo_ops,
            real,
            usr,
            sys,
            per(real),
            per(usr + sys)
        );
        out
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

    #[test]
    fn metrics_brief_is_stress_ngs_table() {
        let mut r = HostResult::new("cpu", 60.0);
        r.bogo(316398, "loop");
        r.usage = Some(ThreadTimes {
            name: "all".into(),
            real_ns: 60_000_000_000,
            user_ns: 119_790_000_000,
            sys_ns: 200_000_000,
        });
        // A line stress-ng 0.17 printed (less its `stress-ng: metrc: [pid] `).
        assert_eq!(
            r.metrics_brief(),
            "stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s\n\
             \x20                         (secs)    (secs)    (secs)   (real time) (usr+sys time)\n\
             cpu              316398     60.00    119.79      0.20      5273.30        2636.87\n"
        );
    }
}
