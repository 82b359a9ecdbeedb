//! Plots of results as SVG (and PNG): the chart frame (canvas, axes,
//! ticks, legend, caption) here, one file per chart kind, and the
//! extraction of the plotted data from a sweep's points in [`data`].
//!
//! The SVG is written directly (axes, ticks, curves, legend, caption): the
//! plots are simple, and writing them ourselves keeps the bytes the same on
//! every host, with no font files needed to lay out the labels.

use std::fmt::Write;
use std::path::PathBuf;

pub mod cputime;
pub mod data;
pub mod heatmap;
pub mod line;
pub mod percentiles;
pub mod png;
pub mod ratio;

pub use line::{line_svg, Data};
pub use png::png;
pub use ratio::{ratio_svg, RatioBar};

/// What `smpsim plot` draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Scaling,
    Percentiles,
    Cputime,
    Heatmap,
}

/// What `smpsim plot` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Svg,
    Png,
    Csv,
}

/// A plot of a sweep's results file, as `smpsim plot` asks for it.
pub struct Request {
    pub results: PathBuf,
    pub x: String,
    pub y: String,
    pub by: String,
    pub kind: Kind,
    pub at: Option<f64>,
    pub format: Format,
}

/// The plot asked for: its SVG (a PNG is drawn from it by [`png`]) or,
/// for `Format::Csv`, its data.
pub fn render(req: &Request) -> Result<String, String> {
    match req.kind {
        Kind::Percentiles => return percentiles::plot(req),
        Kind::Cputime => return cputime::plot(req),
        Kind::Heatmap => return heatmap::plot(req),
        Kind::Scaling => {}
    }
    if req.at.is_some() {
        return Err("error: --at goes with --kind percentiles, cputime or heatmap".to_string());
    }
    line::plot(req)
}

pub(crate) const W: f64 = 720.0;

pub(crate) const H: f64 = 450.0;

pub(crate) const LEFT: f64 = 90.0;

pub(crate) const RIGHT: f64 = 160.0;

pub(crate) const TOP: f64 = 40.0;

pub(crate) const BOTTOM: f64 = 70.0;

pub(crate) const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Round tick steps: 1, 2 or 5 times a power of ten.
pub(crate) fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 6.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| span / s <= 7.0)
        .unwrap_or(10.0 * p);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

/// The y axis in the units the value has.
pub fn y_axis_label(spec: &str) -> String {
    let parts: Vec<&str> = spec.split('.').collect();
    let name = parts
        .get(1..parts.len().saturating_sub(1))
        .map(|p| p.join("."))
        .unwrap_or_default();
    match (parts.first().map(|t| crate::path::key(t)), parts.last()) {
        (Some("counters"), Some(&"rate")) => format!("{name} per second"),
        (Some("counters"), Some(&"count")) => format!("{name} (count)"),
        (Some("histograms"), Some(stat)) => format!("{name} {stat} (ns)"),
        _ => spec.to_string(),
    }
}

pub(crate) fn label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The plot area's width and height.
pub(crate) const PLOT_W: f64 = W - LEFT - RIGHT;

pub(crate) const PLOT_H: f64 = H - TOP - BOTTOM;

/// An SVG of `w` x `h` on white with `title` centred at `title_x`.
pub(crate) fn canvas(w: f64, h: f64, title_x: f64, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text class="title" x="{title_x}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        escape(title)
    );
    s
}

/// An SVG chart's opening: the canvas, the title and the two axes.
pub(crate) fn frame(title: &str) -> String {
    let mut s = canvas(W, H, LEFT + PLOT_W / 2.0, title);
    let _ = writeln!(
        s,
        r#"<g class="axes" stroke="black"><line x1="{LEFT}" y1="{}" x2="{}" y2="{}"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}"/></g>"#,
        TOP + PLOT_H,
        LEFT + PLOT_W,
        TOP + PLOT_H,
        TOP + PLOT_H
    );
    s
}

pub(crate) fn axis_labels(s: &mut String, x_label: &str, y_label: &str) {
    let _ = writeln!(
        s,
        r#"<text class="xlabel" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + PLOT_W / 2.0,
        H - 25.0,
        escape(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text class="ylabel" transform="translate(20 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + PLOT_H / 2.0,
        escape(y_label)
    );
}

/// The legend line of series `i`, right of the plot; closes the series'
/// group.
pub(crate) fn legend_entry(s: &mut String, i: usize, name: &str, color: &str) {
    let ly = TOP + 10.0 + 20.0 * i as f64;
    let _ = writeln!(
        s,
        r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"/><text x="{}" y="{}">{}</text></g>"#,
        LEFT + PLOT_W + 12.0,
        LEFT + PLOT_W + 32.0,
        LEFT + PLOT_W + 38.0,
        ly + 4.0,
        escape(name)
    );
}

/// The caption under the plot, and the end of the SVG.
pub(crate) fn close(mut s: String, caption: &str) -> String {
    let _ = writeln!(
        s,
        r##"<text class="caption" x="{LEFT}" y="{}" font-size="10" fill="#555">{}</text>"##,
        H - 6.0,
        escape(caption)
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(1.0, 16.0), vec![5.0, 10.0, 15.0]);
        assert_eq!(ticks(0.0, 8.0), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        let t = ticks(0.0, 1.05e6);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.len() <= 8 && *t.last().unwrap() <= 1.05e6);
        assert_eq!(label(2_500_000.0), "2.5M");
    }
}
