//! `--kind scaling`: the y value against x, a curve per series, the mean
//! over seeds with bars from the lowest seed to the highest (also the
//! curves of the HTML report).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::data::{points, swept, x_and_series};
use super::*;
use crate::path::y_value;

/// Series name -> x -> the values over seeds.
pub type Data = BTreeMap<String, BTreeMap<u64, (f64, Vec<f64>)>>;

/// Series name -> x -> `(x, lo, hi)`: the widest band (`sweep --band`)
/// of the points at that x, over seeds; empty for a sweep without bands.
pub type Bands = BTreeMap<String, BTreeMap<u64, (f64, f64, f64)>>;

/// Widens the band of `series` at `x` to hold `[lo, hi]`.
pub fn add_band(bands: &mut Bands, series: &str, x: f64, (lo, hi): (f64, f64)) {
    let e = bands
        .entry(series.to_string())
        .or_default()
        .entry(x.to_bits())
        .or_insert((x, lo, hi));
    e.1 = e.1.min(lo);
    e.2 = e.2.max(hi);
}

fn read(req: &Request) -> Result<(Data, Bands, String), String> {
    let mut data: Data = BTreeMap::new();
    let mut bands: Bands = BTreeMap::new();
    let mut scenario = String::new();
    for p in points(req)? {
        scenario = p.scenario.clone();
        let (x, series) = x_and_series(&p, &req.x, &req.by)?;
        // Per task: will-it-scale's tasks are one per CPU, so x is their count.
        let per = if req.per_task { x.max(1.0) } else { 1.0 };
        let y = y_value(p.result_json(), &req.y)? / per;
        if let Some((lo, hi)) = p.band_of(&req.y) {
            add_band(&mut bands, &series, x, (lo / per, hi / per));
        }
        data.entry(series)
            .or_default()
            .entry(x.to_bits())
            .or_insert((x, Vec::new()))
            .1
            .push(y);
    }
    if data.is_empty() {
        return Err(format!(
            "error: {}: no results to plot",
            req.results.display()
        ));
    }
    Ok((data, bands, scenario))
}

/// The SVG for the data of `plot`.
fn svg(data: &Data, bands: &Bands, req: &Request, scenario: &str) -> String {
    let mut named = title(scenario, &req.y, &req.x);
    if req.per_task {
        named = named.replacen(" vs ", " per task vs ", 1);
    }
    line_svg(
        data,
        &LinePlot {
            title: &named,
            x: &req.x,
            y: &req.y,
            caption: &format!(
                "{}; mean over seeds, bars from the lowest to the highest seed",
                swept(req, scenario)
            ),
            ideal: req.ideal,
            per_task: req.per_task,
            bands,
        },
    )
}

/// What a [`line_svg`] chart shows besides its data.
pub struct LinePlot<'a> {
    pub title: &'a str,
    /// The x key (`cpus`, or a swept setting's key).
    pub x: &'a str,
    /// The y result path (`counter.ops.rate`): its label, unit and
    /// whether it scales.
    pub y: &'a str,
    pub caption: &'a str,
    /// Draw the ideal-scaling line of a rate (`--no-ideal`: not).
    pub ideal: bool,
    /// The y values are per task (`--per-task`): the ideal is flat.
    pub per_task: bool,
    /// Each series' band across x, shaded; none drawn when empty.
    pub bands: &'a Bands,
}

/// The ideal-scaling line of one series, as will-it-scale's plots draw
/// it: linear from its first (lowest x) point, `y0 * x / x0` at each of
/// its x values; per task, flat at `y0`. None for a series of one point
/// or one starting at 0.
fn ideal_line(xs: &BTreeMap<u64, (f64, Vec<f64>)>, per_task: bool) -> Option<Vec<(f64, f64)>> {
    let mut points: Vec<(f64, f64)> = xs.values().map(|(x, ys)| (*x, mean(ys))).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let &(x0, y0) = points.first()?;
    let at = |x: f64| if per_task { y0 } else { y0 * x / x0 };
    (points.len() >= 2 && x0 > 0.0).then(|| points.iter().map(|(x, _)| (*x, at(*x))).collect())
}

fn mean(ys: &[f64]) -> f64 {
    ys.iter().sum::<f64>() / ys.len().max(1) as f64
}

/// Curves with error bars: per series, the mean over seeds at each x and
/// a bar from the lowest value to the highest; x ticked at the swept
/// values, y in the unit its label names; for a rate, each series' ideal
/// (linear) scaling dashed. Shared with the HTML report.
pub fn line_svg(data: &Data, plot: &LinePlot) -> String {
    let quantity = quantity(plot.y);
    let ideal: BTreeMap<&String, Vec<(f64, f64)>> = if plot.ideal && quantity == Quantity::Rate {
        data.iter()
            .filter_map(|(name, xs)| Some((name, ideal_line(xs, plot.per_task)?)))
            .collect()
    } else {
        BTreeMap::new()
    };
    let points = || data.values().flat_map(|s| s.values());
    let xaxis = axis::XAxis::over(points().map(|(x, _)| *x));
    let y_max = points()
        .flat_map(|(_, ys)| ys.iter().copied())
        .chain(ideal.values().flatten().map(|p| p.1))
        .chain(plot.bands.values().flat_map(|b| b.values().map(|v| v.2)))
        .fold(0f64, f64::max);
    let yaxis = axis::YAxis::upto(y_max, quantity);
    let (pw, ph) = (PLOT_W, PLOT_H);
    let sx = |x: f64| LEFT + xaxis.at(x) * pw;
    let sy = |y: f64| TOP + ph - y / yaxis.max * ph;
    let mut s = frame(plot.title);
    for t in xaxis.labelled(pw, 28.0) {
        let x = sx(t);
        let _ = writeln!(
            s,
            r#"<line class="xtick" x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="black"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            TOP + ph,
            TOP + ph + 5.0,
            TOP + ph + 20.0,
            label(t)
        );
    }
    for (t, text) in yaxis.ticks() {
        let y = sy(t);
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text class="ytick" x="{}" y="{:.1}" text-anchor="end">{text}</text>"##,
            LEFT,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
        );
    }
    axis_labels(
        &mut s,
        &xaxis.label(x_words(plot.x)),
        &y_axis_label(plot.y, yaxis.unit),
    );
    // One curve per series: the mean, and a bar from the lowest seed's
    // value to the highest.
    for (i, (name, xs)) in data.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        if let Some(band) = plot.bands.get(name) {
            band_shape(&mut s, band, color, (&sx, &sy));
        }
        let path: Vec<String> = xs
            .values()
            .map(|(x, ys)| format!("{:.1},{:.1}", sx(*x), sy(mean(ys))))
            .collect();
        let _ = writeln!(
            s,
            r#"<g class="series" data-name="{}"><polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            escape(name),
            path.join(" ")
        );
        if let Some(line) = ideal.get(name) {
            let path: Vec<String> = line
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline class="ideal" fill="none" stroke="{color}" stroke-width="1.5" stroke-dasharray="6 4" stroke-opacity="0.6" points="{}"/>"#,
                path.join(" ")
            );
        }
        for (x, ys) in xs.values() {
            let lo = ys.iter().cloned().fold(f64::MAX, f64::min);
            let hi = ys.iter().cloned().fold(f64::MIN, f64::max);
            let (px, pm) = (sx(*x), sy(mean(ys)));
            let _ = writeln!(
                s,
                r#"<line class="errorbar" x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{color}"/><circle cx="{px:.1}" cy="{pm:.1}" r="3" fill="{color}"/>"#,
                sy(lo),
                sy(hi)
            );
        }
        legend_entry(&mut s, i, name, color);
    }
    let caption = if plot.bands.is_empty() {
        plot.caption.to_string()
    } else {
        format!(
            "{}; shaded: each point's band (seeds, assumed values over their ranges, model error)",
            plot.caption
        )
    };
    if ideal.is_empty() {
        return close(s, &caption);
    }
    // The ideal lines' legend entry, under the series'.
    let ly = TOP + 10.0 + 20.0 * data.len() as f64;
    let _ = writeln!(
        s,
        r##"<g class="legend-ideal"><line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="#555" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{}" y="{}">ideal (linear)</text></g>"##,
        LEFT + PLOT_W + 12.0,
        LEFT + PLOT_W + 32.0,
        LEFT + PLOT_W + 38.0,
        ly + 4.0,
    );
    let ideal_is = if plot.per_task {
        "flat: every task at the first point's per-task rate, y(x0)".to_string()
    } else {
        format!("from each curve's first point, y(x0) * {} / x0", plot.x)
    };
    close(
        s,
        &format!("{caption}; dashed: ideal (linear) scaling, {ideal_is}"),
    )
}

/// One series' band, shaded across x: the upper ends left to right, the
/// lower ends back; a band at a single x is a bar, drawn as a thin shape.
fn band_shape(
    s: &mut String,
    band: &BTreeMap<u64, (f64, f64, f64)>,
    color: &str,
    (sx, sy): (&dyn Fn(f64) -> f64, &dyn Fn(f64) -> f64),
) {
    let mut ends: Vec<(f64, f64, f64)> = band.values().copied().collect();
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut outline: Vec<String> = Vec::new();
    let single = ends.len() == 1;
    for &(x, _, hi) in &ends {
        let px = sx(x);
        if single {
            outline.push(format!("{:.1},{:.1}", px - 4.0, sy(hi)));
            outline.push(format!("{:.1},{:.1}", px + 4.0, sy(hi)));
        } else {
            outline.push(format!("{px:.1},{:.1}", sy(hi)));
        }
    }
    for &(x, lo, _) in ends.iter().rev() {
        let px = sx(x);
        if single {
            outline.push(format!("{:.1},{:.1}", px + 4.0, sy(lo)));
            outline.push(format!("{:.1},{:.1}", px - 4.0, sy(lo)));
        } else {
            outline.push(format!("{px:.1},{:.1}", sy(lo)));
        }
    }
    let _ = writeln!(
        s,
        r#"<polygon class="band" fill="{color}" fill-opacity="0.18" stroke="{color}" stroke-opacity="0.4" stroke-width="0.5" points="{}"/>"#,
        outline.join(" ")
    );
}

/// The plot's data as CSV: series, x, seeds, mean, min, max.
fn csv(data: &Data, req: &Request) -> String {
    let mut s = format!("{},{},seeds,mean,min,max\n", req.by, req.x);
    for (name, xs) in data {
        for (x, ys) in xs.values() {
            let mean = mean(ys);
            let lo = ys.iter().cloned().fold(f64::MAX, f64::min);
            let hi = ys.iter().cloned().fold(f64::MIN, f64::max);
            let _ = writeln!(s, "{name},{x},{},{mean:.3},{lo:.3},{hi:.3}", ys.len());
        }
    }
    s
}

/// `--kind scaling`: the SVG, or the plotted data as CSV.
pub fn plot(req: &Request) -> Result<String, String> {
    let (data, bands, scenario) = read(req)?;
    Ok(match req.format {
        Format::Csv => csv(&data, req),
        _ => svg(&data, &bands, req, &scenario),
    })
}
