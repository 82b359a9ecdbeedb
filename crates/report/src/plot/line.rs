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

fn read(req: &Request) -> Result<(Data, String), String> {
    let mut data: Data = BTreeMap::new();
    let mut scenario = String::new();
    for p in points(req)? {
        scenario = p["scenario"].as_str().unwrap_or("").to_string();
        let (x, series) = x_and_series(&p, &req.x, &req.by)?;
        let y = y_value(&p["result"], &req.y)?;
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
    Ok((data, scenario))
}

/// The SVG for the data of `plot`.
fn svg(data: &Data, req: &Request, scenario: &str) -> String {
    let x_label = if req.x == "cpus" {
        "CPUs"
    } else {
        req.x.as_str()
    };
    line_svg(
        data,
        &format!("{scenario}: {} against {}", req.y, req.x),
        x_label,
        &y_axis_label(&req.y),
        &format!(
            "{}; mean over seeds, bars from the lowest to the highest seed",
            swept(req, scenario)
        ),
    )
}

/// Curves with error bars: per series, the mean over seeds at each x and
/// a bar from the lowest value to the highest. Shared with the HTML report.
pub fn line_svg(data: &Data, title: &str, x_label: &str, y_label: &str, caption: &str) -> String {
    let points = || data.values().flat_map(|s| s.values());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
    for (x, ys) in points() {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y1 = ys.iter().fold(y1, |m, v| m.max(*v));
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.05 };
    let (pw, ph) = (PLOT_W, PLOT_H);
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - y / y1 * ph;
    let mut s = frame(title);
    for t in ticks(x0, x1) {
        let x = sx(t);
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="black"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            TOP + ph,
            TOP + ph + 5.0,
            TOP + ph + 20.0,
            label(t)
        );
    }
    for t in ticks(0.0, y1) {
        let y = sy(t);
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            label(t)
        );
    }
    axis_labels(&mut s, x_label, y_label);
    // One curve per series: the mean, and a bar from the lowest seed's
    // value to the highest.
    for (i, (name, xs)) in data.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mean = |ys: &[f64]| ys.iter().sum::<f64>() / ys.len() as f64;
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
    close(s, caption)
}

/// The plot's data as CSV: series, x, seeds, mean, min, max.
fn csv(data: &Data, req: &Request) -> String {
    let mut s = format!("{},{},seeds,mean,min,max\n", req.by, req.x);
    for (name, xs) in data {
        for (x, ys) in xs.values() {
            let mean = ys.iter().sum::<f64>() / ys.len() as f64;
            let lo = ys.iter().cloned().fold(f64::MAX, f64::min);
            let hi = ys.iter().cloned().fold(f64::MIN, f64::max);
            let _ = writeln!(s, "{name},{x},{},{mean:.3},{lo:.3},{hi:.3}", ys.len());
        }
    }
    s
}

/// `--kind scaling`: the SVG, or the plotted data as CSV.
pub fn plot(req: &Request) -> Result<String, String> {
    let (data, scenario) = read(req)?;
    Ok(match req.format {
        Format::Csv => csv(&data, req),
        _ => svg(&data, req, &scenario),
    })
}
