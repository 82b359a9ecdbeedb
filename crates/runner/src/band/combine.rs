//! From the figure at every design point to its band: each part's range,
//! the parts combined, the dominant source named.

use smpsim_report::band::{Band, Part, Parts, Swing};

/// A figure's values at the design's points (`None`: not a number there).
#[derive(Clone, Debug, Default)]
pub struct Values {
    /// The figure as reported: the mean over the caller's seeds.
    pub centre: f64,
    /// At each of the caller's seeds (full length).
    pub caller_seeds: Vec<f64>,
    /// What the design's points are measured against: the first seed at
    /// the design's length (the caller's first seed when not shortened).
    pub reference: f64,
    /// The design's own seeds (other than the reference's).
    pub seeds: Vec<Option<f64>>,
    /// Each parameter at its bottom and its top.
    pub ends: Vec<(Option<f64>, Option<f64>)>,
    pub model: Vec<Option<f64>>,
    pub corners: Vec<Option<f64>>,
    /// The design's runs' length as a part of the nominal's: the spread
    /// over its seeds is taken as that of a mean over that much of the
    /// run, so it narrows by `sqrt(scale)` on the whole run.
    pub scale: f64,
}

impl Values {
    /// A value of a design point carried over to the reported figure: as
    /// a factor over the reference where both have the same sign (a
    /// shortened run's figure moves by the same factor as the full
    /// run's), else as a difference. Not shortened and at one seed, the
    /// reference is the centre and the value is itself.
    pub fn carry(&self, x: f64) -> f64 {
        let r = self.reference;
        if x == r {
            return self.centre;
        }
        if r != 0.0 && x / r > 0.0 {
            self.centre * (x / r)
        } else {
            self.centre + (x - r)
        }
    }

    fn span(&self, xs: impl IntoIterator<Item = Option<f64>>) -> Part {
        let mut p = Part {
            lo: self.centre,
            hi: self.centre,
        };
        for x in xs.into_iter().flatten().filter(|x| x.is_finite()) {
            let v = self.carry(x);
            if v.is_finite() {
                p.lo = p.lo.min(v);
                p.hi = p.hi.max(v);
            }
        }
        p
    }
}

/// The parts are independent sources of error, so they add in
/// quadrature on each side. A figure above 0 whose parts all stay above
/// 0 (a rate, a time, a ratio) combines them as factors, so its band
/// cannot cross 0: `lo = centre / exp(sqrt(sum ln(centre / part.lo)^2))`,
/// and so `hi`; any other as differences: `lo = centre - sqrt(sum
/// (centre - part.lo)^2)`.
pub fn quadrature(centre: f64, parts: &[Part]) -> (f64, f64) {
    if centre > 0.0 && parts.iter().all(|p| p.lo > 0.0) {
        let below: f64 = parts.iter().map(|p| (centre / p.lo).ln().powi(2)).sum();
        let above: f64 = parts.iter().map(|p| (p.hi / centre).ln().powi(2)).sum();
        (centre / below.sqrt().exp(), centre * above.sqrt().exp())
    } else {
        let below: f64 = parts.iter().map(|p| (centre - p.lo).powi(2)).sum();
        let above: f64 = parts.iter().map(|p| (p.hi - centre).powi(2)).sum();
        (centre - below.sqrt(), centre + above.sqrt())
    }
}

/// The band of one figure. `names` and `set_values` (the ends' values
/// as set) are the parameters', in order; the parts combine by
/// [`quadrature`].
pub fn band(v: &Values, names: &[String], set_values: &[(String, String)]) -> Option<Band> {
    if !v.centre.is_finite() || !v.reference.is_finite() {
        return None;
    }
    let seeds = if v.caller_seeds.len() >= 2 {
        let mut p = Part {
            lo: v.centre,
            hi: v.centre,
        };
        for &x in v.caller_seeds.iter().filter(|x| x.is_finite()) {
            p.lo = p.lo.min(x);
            p.hi = p.hi.max(x);
        }
        p
    } else {
        let p = v.span(v.seeds.iter().copied());
        let shrink = if v.scale > 0.0 && v.scale < 1.0 {
            v.scale.sqrt()
        } else {
            1.0
        };
        Part {
            lo: v.centre - (v.centre - p.lo) * shrink,
            hi: v.centre + (p.hi - v.centre) * shrink,
        }
    };
    let ends = v.ends.iter().flat_map(|&(a, b)| [a, b]);
    let assumed = v.span(ends.chain(v.corners.iter().copied()));
    let model = v.span(v.model.iter().copied());
    let parts = [seeds, assumed, model];
    let (lo, hi) = quadrature(v.centre, &parts);
    let mut params: Vec<Swing> = v
        .ends
        .iter()
        .zip(names)
        .zip(set_values)
        .map(|((&(lo, hi), name), (lo_value, hi_value))| Swing {
            name: name.clone(),
            lo_value: lo_value.clone(),
            hi_value: hi_value.clone(),
            at_lo: lo.filter(|x| x.is_finite()).map(|x| v.carry(x)),
            at_hi: hi.filter(|x| x.is_finite()).map(|x| v.carry(x)),
        })
        .collect();
    // The largest move first; equal moves keep the parameters' order.
    params.sort_by(|a, b| b.reach(v.centre).total_cmp(&a.reach(v.centre)));
    let half = |p: &Part| (v.centre - p.lo).max(p.hi - v.centre);
    let mut dominant = ("none".to_string(), 0.0);
    let candidates = std::iter::once(("seeds".to_string(), half(&seeds)))
        .chain(params.iter().map(|s| (s.name.clone(), s.reach(v.centre))))
        .chain(std::iter::once(("model".to_string(), half(&model))));
    for (name, reach) in candidates {
        if reach > dominant.1 {
            dominant = (name, reach);
        }
    }
    Some(Band {
        lo,
        hi,
        parts: Parts {
            seeds,
            assumed,
            model,
        },
        dominant: dominant.0,
        params,
    })
}

/// Ranks parameters for the joint stage: each parameter's largest move
/// of any figure, relative to that figure (`per_figure`: each figure's
/// moves as parts of its value, so a figure in millions does not
/// outweigh a ratio). The `k` highest that move anything, in the
/// parameters' order.
pub fn choose(per_figure: &[Vec<f64>], nr_params: usize, k: usize) -> Vec<usize> {
    let mut score = vec![0.0f64; nr_params];
    for reach in per_figure {
        for (s, r) in score.iter_mut().zip(reach) {
            if r.is_finite() {
                *s = s.max(*r);
            }
        }
    }
    let mut order: Vec<usize> = (0..nr_params).filter(|&i| score[i] > 0.0).collect();
    order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
    order.truncate(k);
    order.sort_unstable();
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(ends: Vec<(Option<f64>, Option<f64>)>) -> Values {
        Values {
            centre: 100.0,
            caller_seeds: vec![100.0],
            reference: 100.0,
            seeds: vec![Some(98.0), Some(103.0)],
            ends,
            model: vec![Some(90.0), Some(100.0)],
            corners: Vec::new(),
            scale: 1.0,
        }
    }

    fn names(n: usize) -> (Vec<String>, Vec<(String, String)>) {
        let names = (0..n).map(|i| format!("p{i}")).collect();
        let vals = (0..n).map(|_| ("1".into(), "2".into())).collect();
        (names, vals)
    }

    #[test]
    fn parts_add_in_quadrature_and_the_largest_dominates() {
        let (n, s) = names(2);
        let b = band(
            &values(vec![(Some(60.0), Some(130.0)), (Some(100.0), Some(100.0))]),
            &n,
            &s,
        )
        .unwrap();
        assert_eq!(
            b.parts.assumed,
            Part {
                lo: 60.0,
                hi: 130.0
            }
        );
        assert_eq!(
            b.parts.seeds,
            Part {
                lo: 98.0,
                hi: 103.0
            }
        );
        assert_eq!(
            b.parts.model,
            Part {
                lo: 90.0,
                hi: 100.0
            }
        );
        let ln = |x: f64| x.ln().powi(2);
        let lo = 100.0
            / (ln(100.0 / 98.0) + ln(100.0 / 60.0) + ln(100.0 / 90.0))
                .sqrt()
                .exp();
        assert!((b.lo - lo).abs() < 1e-9, "{}", b.lo);
        let hi = 100.0 * (ln(1.03) + ln(1.3)).sqrt().exp();
        assert!((b.hi - hi).abs() < 1e-9, "{}", b.hi);
        assert_eq!(b.dominant, "p0");
        assert_eq!(b.params[0].name, "p0");
        assert!(b.holds(100.0));
    }

    #[test]
    fn a_figure_that_can_cross_zero_adds_differences() {
        let p = |lo, hi| Part { lo, hi };
        let (lo, hi) = quadrature(80.0, &[p(50.0, 90.0), p(-40.0, 80.0)]);
        assert!((lo - (80.0 - (900.0f64 + 14400.0).sqrt())).abs() < 1e-9);
        assert!((hi - 90.0).abs() < 1e-9);
        // Above 0 throughout: as factors, never below 0.
        let (lo, _) = quadrature(0.0036, &[p(1e-5, 0.0036), p(1.5e-5, 0.0036)]);
        assert!(lo > 0.0 && lo < 1e-5, "{lo}");
    }

    #[test]
    fn a_parameter_that_moves_nothing_adds_nothing() {
        let (n, s) = names(2);
        let one = band(&values(vec![(Some(80.0), Some(120.0))]), &n[..1], &s[..1]).unwrap();
        let two = band(
            &values(vec![(Some(80.0), Some(120.0)), (Some(100.0), Some(100.0))]),
            &n,
            &s,
        )
        .unwrap();
        assert_eq!((one.lo, one.hi), (two.lo, two.hi));
    }

    #[test]
    fn the_seeds_of_shortened_runs_spread_less_on_the_whole_run() {
        let mut v = values(Vec::new());
        v.scale = 0.25;
        let b = band(&v, &[], &[]).unwrap();
        assert_eq!(
            b.parts.seeds,
            Part {
                lo: 99.0,
                hi: 101.5
            }
        );
    }

    #[test]
    fn shortened_points_carry_over_as_factors() {
        let v = Values {
            centre: 200.0,
            reference: 50.0,
            ..Default::default()
        };
        assert_eq!(v.carry(100.0), 400.0);
        assert_eq!(v.carry(50.0), 200.0);
        // Of another sign than the reference: as a difference.
        assert_eq!(v.carry(-10.0), 140.0);
    }

    #[test]
    fn the_joint_stage_takes_the_parameters_that_move_figures_most() {
        let per_figure = vec![vec![0.0, 0.5, 0.01, 0.0], vec![0.2, 0.0, 0.0, 0.0]];
        assert_eq!(choose(&per_figure, 4, 2), vec![0, 1]);
        assert_eq!(choose(&per_figure, 4, 8), vec![0, 1, 2]);
    }
}
