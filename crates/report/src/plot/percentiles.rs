//! `--kind percentiles`: a latency histogram's tail.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::data::{at, points_at, swept, At};
use super::*;
use crate::path::y_value;

/// The tail points of a `--kind percentiles` plot: the field of a
/// histogram row and its label.
const TAIL: [(&str, &str); 5] = [
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
];

/// Series name -> for each point of [`TAIL`], the values over the points
/// read.
pub type Tails = BTreeMap<String, Vec<Vec<f64>>>;

/// The NAME of `--y histogram.NAME` (or `hist.NAME`, `histograms.NAME`).
fn histogram_name(y: &str) -> Option<&str> {
    let (table, name) = y.split_once('.')?;
    (crate::path::key(table) == "histograms" && !name.is_empty()).then_some(name)
}

/// `--kind percentiles`: the tails of every series over the points at
/// `at` (its seeds), and the scenario's name.
fn read_tails(req: &Request, at: At) -> Result<(Tails, String), String> {
    let name = histogram_name(&req.y).ok_or_else(|| {
        format!(
            "error: --y {}: --kind percentiles plots a histogram: --y histogram.NAME",
            req.y
        )
    })?;
    let mut data: Tails = BTreeMap::new();
    let (points, scenario) = points_at(req, at.x)?;
    for (p, series) in points {
        let tails = data.entry(series).or_insert_with(|| vec![Vec::new(); 5]);
        for (k, (field, _)) in TAIL.iter().enumerate() {
            tails[k].push(y_value(
                p.result_json(),
                &format!("histogram.{name}.{field}"),
            )?);
        }
    }
    if data.is_empty() {
        return Err(format!(
            "error: {}: no results to plot at {} = {}",
            req.results.display(),
            req.x,
            at.x
        ));
    }
    Ok((data, scenario))
}

/// A latency tail: p50 .. max evenly spaced across, latency on a log
/// scale up (labelled `NAME (UNIT, log scale)` in the unit its ticks are
/// in, chosen from the range), per series the mean over the points read
/// with a bar from the lowest to the highest.
pub fn percentiles_svg(data: &Tails, title: &str, name: &str, caption: &str) -> String {
    let all = || {
        data.values()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| *v > 0.0)
    };
    let lo = all().fold(f64::MAX, f64::min).min(1e12);
    let hi = all().fold(1.0f64, f64::max);
    let (d0, d1) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    let (pw, ph) = (PLOT_W, PLOT_H);
    let sx = |k: usize| LEFT + pw * (k as f64 + 0.5) / TAIL.len() as f64;
    let floor = 10f64.powf(d0);
    let sy = |v: f64| TOP + ph - (v.max(floor).log10() - d0) / (d1 - d0) * ph;
    let unit = time_unit(10f64.powf(d1));
    let mut s = frame(title);
    for (k, (_, name)) in TAIL.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{name}</text>"#,
            sx(k),
            TOP + ph + 20.0
        );
    }
    let mut d = d0;
    while d <= d1 + 1e-9 {
        let y = sy(10f64.powf(d));
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            time_label(10f64.powf(d), unit)
        );
        d += 1.0;
    }
    axis_labels(
        &mut s,
        "percentile",
        &format!("{name} ({}, log scale)", unit.name),
    );
    for (i, (name, tails)) in data.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mean = |ys: &[f64]| ys.iter().sum::<f64>() / ys.len().max(1) as f64;
        let path: Vec<String> = tails
            .iter()
            .enumerate()
            .map(|(k, ys)| format!("{:.1},{:.1}", sx(k), sy(mean(ys))))
            .collect();
        let _ = writeln!(
            s,
            r#"<g class="series" data-name="{}"><polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            escape(name),
            path.join(" ")
        );
        for (k, ys) in tails.iter().enumerate() {
            let lo = ys.iter().cloned().fold(f64::MAX, f64::min);
            let hi = ys.iter().cloned().fold(f64::MIN, f64::max);
            let _ = writeln!(
                s,
                r#"<line class="errorbar" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{color}"/><circle cx="{x:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                sy(lo),
                sy(hi),
                sy(mean(ys)),
                x = sx(k)
            );
        }
        legend_entry(&mut s, i, name, color);
    }
    close(s, caption)
}

pub fn plot(req: &Request) -> Result<String, String> {
    let at = at(req)?;
    let (data, scenario) = read_tails(req, at)?;
    let name = histogram_name(&req.y).unwrap_or_default();
    Ok(match req.format {
        Format::Svg | Format::Png => percentiles_svg(
            &data,
            &format!("{scenario}: {name} tail{}", at.title(req)),
            name,
            &format!(
                "{}; at {}; per {}: mean over its seeds, bars from the lowest to the highest",
                swept(req, &scenario),
                at.caption(req),
                req.by
            ),
        ),
        Format::Csv => {
            let mut out = String::from("series,percentile,mean,min,max\n");
            for (series, tails) in &data {
                for ((_, p), ys) in TAIL.iter().zip(tails) {
                    let mean = ys.iter().sum::<f64>() / ys.len() as f64;
                    let lo = ys.iter().cloned().fold(f64::MAX, f64::min);
                    let hi = ys.iter().cloned().fold(f64::MIN, f64::max);
                    let _ = writeln!(out, "{},{p},{mean},{lo},{hi}", crate::csv::field(series));
                }
            }
            out
        }
    })
}
