//! The points of a sweep's results file a plot reads, each with its x
//! value and series.

use super::*;
use crate::sweep_point::SweepPoint;

/// The x value and the series of one point.
pub(super) fn x_and_series(point: &SweepPoint, x: &str, by: &str) -> Result<(f64, String), String> {
    let x_value = match x {
        "cpus" => point.cpus.map(f64::from),
        "seed" => Some(point.seed as f64),
        key => point.setting(key).and_then(|v| v.parse().ok()),
    }
    .ok_or_else(|| format!("error: --x {x}: the points have no numeric `{x}` (sweep with --cpus, or --set {x}=...)"))?;
    let series = match by {
        "variant" => point.variant.clone(),
        key => format!("{key}={}", point.setting(key).unwrap_or("?")),
    };
    Ok((x_value, series))
}

/// The points of a sweep's results file that have a result (a point that
/// failed to compile has none).
pub(super) fn points(req: &Request) -> Result<Vec<SweepPoint>, String> {
    let mut out = Vec::new();
    for (_, p) in crate::results_file::result_lines(&req.results)? {
        if p.result.is_some() {
            out.push(p);
        }
    }
    Ok(out)
}

/// Where the results come from, for a caption: the scenario and the
/// smpsim (version and commit) that swept them.
pub(super) fn swept(req: &Request, scenario: &str) -> String {
    let by = points(req)
        .ok()
        .and_then(|ps| ps.iter().find_map(|p| p.smpsim.clone()));
    format!(
        "sweep of {scenario} by smpsim {}",
        by.as_deref().unwrap_or("(commit not recorded)")
    )
}

/// The x value a per-point plot (percentiles, cputime, heatmap) is
/// drawn at: `--at`, or without it the largest swept, where the machine is
/// the busiest (averaging every swept value mixes a saturated machine with
/// a mostly idle one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct At {
    pub x: f64,
    /// Not asked for: the largest swept value.
    pub defaulted: bool,
}

impl At {
    /// ` at cpus = 16`, for a title.
    pub fn title(&self, req: &Request) -> String {
        format!(" at {} = {}", req.x, label(self.x))
    }

    /// What the caption says of the point: why this x, if not asked for.
    pub fn caption(&self, req: &Request) -> String {
        if self.defaulted {
            format!(
                "{} = {}, the largest swept (--at to choose another)",
                req.x,
                label(self.x)
            )
        } else {
            format!("{} = {}", req.x, label(self.x))
        }
    }
}

/// The swept x values, lowest first.
pub(super) fn swept_xs(req: &Request) -> Result<Vec<f64>, String> {
    let mut xs = Vec::new();
    for p in points(req)? {
        xs.push(x_and_series(&p, &req.x, &req.by)?.0);
    }
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    Ok(xs)
}

/// `--at`, or the largest swept x value.
pub(super) fn at(req: &Request) -> Result<At, String> {
    if let Some(x) = req.at {
        return Ok(At {
            x,
            defaulted: false,
        });
    }
    let xs = swept_xs(req)?;
    let x = xs
        .last()
        .copied()
        .ok_or_else(|| format!("error: {}: no results to plot", req.results.display()))?;
    Ok(At { x, defaulted: true })
}

/// The points at x value `at`, each with its series, and the scenario's
/// name.
pub(super) fn points_at(
    req: &Request,
    at: f64,
) -> Result<(Vec<(SweepPoint, String)>, String), String> {
    let mut out = Vec::new();
    let mut scenario = String::new();
    for p in points(req)? {
        let (x, series) = x_and_series(&p, &req.x, &req.by)?;
        if x == at {
            scenario = p.scenario.clone();
            out.push((p, series));
        }
    }
    Ok((out, scenario))
}
