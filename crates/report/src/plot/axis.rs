//! The axes of the x-y charts: where a value lands and which ticks it
//! gets. The x axis ticks the swept values themselves (on a log2 scale
//! when the sweep doubles, as `--cpus 1,2,4,8,16` does); the y axis ticks
//! round values in the unit its label names.

use super::{label, short_number, ticks, time_label, time_unit, Quantity, TimeUnit};

/// An x axis over swept values.
pub(crate) struct XAxis {
    lo: f64,
    hi: f64,
    /// Powers of two: positions by log2, so 1, 2, 4, 8, 16 are evenly
    /// spaced.
    pub log2: bool,
    /// The values ticked: the swept ones (a round set for a long sweep).
    pub ticks: Vec<f64>,
}

/// Swept values ticked one by one up to this many; past it, round ticks.
const MAX_SWEPT_TICKS: usize = 12;

impl XAxis {
    /// The axis for the swept values `xs` (any order, repeats allowed).
    pub fn over(xs: impl IntoIterator<Item = f64>) -> XAxis {
        let mut xs: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let (lo, hi) = match (xs.first(), xs.last()) {
            (Some(&lo), Some(&hi)) if hi > lo => (lo, hi),
            (Some(&lo), _) => (lo - 0.5, lo + 0.5),
            _ => (0.0, 1.0),
        };
        let power_of_two = |x: &f64| *x >= 1.0 && x.log2().fract() == 0.0;
        let log2 = xs.len() >= 3 && xs.iter().all(power_of_two);
        let ticks = if xs.len() <= MAX_SWEPT_TICKS || log2 {
            xs
        } else {
            ticks(lo, hi)
        };
        XAxis {
            lo,
            hi,
            log2,
            ticks,
        }
    }

    /// Where `x` lands, from 0 (the lowest swept value) to 1 (the highest).
    pub fn at(&self, x: f64) -> f64 {
        if self.log2 {
            (x.log2() - self.lo.log2()) / (self.hi.log2() - self.lo.log2())
        } else {
            (x - self.lo) / (self.hi - self.lo)
        }
    }

    /// The ticks to label, each at least `min_gap` of the axis from the
    /// one before (swept values close together would print over each
    /// other), the last one always.
    pub fn labelled(&self, width: f64, min_gap: f64) -> Vec<f64> {
        let mut out: Vec<f64> = Vec::new();
        for (i, &t) in self.ticks.iter().enumerate() {
            let last = i + 1 == self.ticks.len();
            match out.last() {
                Some(&p) if (self.at(t) - self.at(p)) * width < min_gap => {
                    if last {
                        out.pop();
                        out.push(t);
                    }
                }
                _ => out.push(t),
            }
        }
        out
    }

    /// The words for an x axis: `CPUs (log2 scale)`.
    pub fn label(&self, words: &str) -> String {
        if self.log2 {
            format!("{words} (log2 scale)")
        } else {
            words.to_string()
        }
    }
}

/// A y axis from 0 to the largest value, in the unit its label names.
pub(crate) struct YAxis {
    pub max: f64,
    /// The unit the ticks of a time are in.
    pub unit: Option<TimeUnit>,
}

impl YAxis {
    /// From 0 to a little above `max` (values of `quantity`).
    pub fn upto(max: f64, quantity: Quantity) -> YAxis {
        let max = if max <= 0.0 { 1.0 } else { max * 1.05 };
        let unit = (quantity == Quantity::Time).then(|| time_unit(max));
        YAxis { max, unit }
    }

    /// Round ticks (round in the axis' unit) and their labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        let scale = self.unit.map_or(1.0, |u| u.ns);
        ticks(0.0, self.max / scale)
            .into_iter()
            .map(|t| {
                let v = t * scale;
                let text = match self.unit {
                    Some(u) => time_label(v, u),
                    None if v.abs() < 1e3 => short_number(v),
                    None => label(v),
                };
                (v, text)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubling_sweep_is_ticked_at_its_values_on_a_log2_axis() {
        let x = XAxis::over([16.0, 1.0, 2.0, 4.0, 8.0, 1.0]);
        assert!(x.log2);
        assert_eq!(x.ticks, vec![1.0, 2.0, 4.0, 8.0, 16.0]);
        // Evenly spaced.
        assert_eq!(x.at(1.0), 0.0);
        assert_eq!(x.at(4.0), 0.5);
        assert_eq!(x.at(16.0), 1.0);
        assert_eq!(x.label("CPUs"), "CPUs (log2 scale)");
    }

    #[test]
    fn other_sweeps_are_linear_and_ticked_at_their_values_while_few() {
        let x = XAxis::over([2.0, 4.0, 6.0, 8.0]);
        assert!(!x.log2);
        assert_eq!(x.ticks, vec![2.0, 4.0, 6.0, 8.0]);
        let long = XAxis::over((1..=40).map(f64::from));
        assert!(!long.log2 && long.ticks.len() < 10, "{:?}", long.ticks);
        // Crowded values keep the first and the last.
        let crowded = XAxis::over([1.0, 2.0, 3.0, 100.0]);
        assert_eq!(crowded.labelled(470.0, 30.0), vec![1.0, 100.0]);
    }

    #[test]
    fn a_time_axis_ticks_in_the_unit_of_its_range() {
        let y = YAxis::upto(125_000.0, Quantity::Time);
        assert_eq!(y.unit.map(|u| u.name), Some("us"));
        let labels: Vec<String> = y.ticks().into_iter().map(|t| t.1).collect();
        assert!(labels.contains(&"120us".to_string()), "{labels:?}");
        assert!(labels.iter().all(|l| l.ends_with("us")), "{labels:?}");
        let rate = YAxis::upto(690_000.0, Quantity::Rate);
        let labels: Vec<String> = rate.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0", "200k", "400k", "600k"]);
    }
}
