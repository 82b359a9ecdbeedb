//! Plots of results as SVG (and PNG): the chart frame (canvas, axes,
//! ticks, legend, caption) here, one file per chart kind, and the
//! extraction of the plotted data from a sweep's points in [`data`], the
//! x and y scales and their ticks in [`axis`].
//!
//! The SVG is written directly (axes, ticks, curves, legend, caption): the
//! plots are simple, and writing them ourselves keeps the bytes the same on
//! every host, with no font files needed to lay out the labels.

use std::fmt::Write;
use std::path::PathBuf;

pub(crate) mod axis;
pub mod cputime;
pub mod data;
pub mod heatmap;
pub mod line;
pub mod percentiles;
pub mod png;
pub mod ratio;

pub use line::{add_band, line_svg, Bands, Data, LinePlot};
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
    /// `--kind scaling` of a rate: draw each curve's ideal (linear)
    /// scaling.
    pub ideal: bool,
    /// `--per-task`: each y divided by its x (the task count, one task per
    /// CPU as will-it-scale runs them): will-it-scale's per-task plot,
    /// whose ideal is flat at the first point's rate.
    pub per_task: bool,
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
    if req.per_task && req.x != "cpus" {
        return Err(format!(
            "error: --per-task divides by the task count: it needs --x cpus (got --x {})",
            req.x
        ));
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

/// What a result path measures, which decides how its axis reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Events per second (`counter.NAME.rate`): scaling plots draw the
    /// ideal line for it.
    Rate,
    /// Nanoseconds: a histogram's statistics, a field named `*_ns`.
    Time,
    /// Anything else, drawn as plain numbers.
    Plain,
}

/// A path's segments and the table it starts in (its long key).
fn segments(spec: &str) -> (Vec<&str>, &str) {
    let parts: Vec<&str> = spec.split('.').collect();
    let table = parts.first().map_or("", |t| crate::path::key(t));
    (parts, table)
}

/// What `spec` measures.
pub fn quantity(spec: &str) -> Quantity {
    let (parts, table) = segments(spec);
    let last = parts.last().copied().unwrap_or("");
    match (table, last) {
        ("counters", "rate") => Quantity::Rate,
        ("histograms", "count") => Quantity::Plain,
        ("histograms", _) if parts.len() >= 3 => Quantity::Time,
        (_, field) if field.ends_with("_ns") => Quantity::Time,
        _ => Quantity::Plain,
    }
}

/// The metric in words for a title: `ops/s` for `counter.ops.rate`,
/// `syscall_latency p99` for `histogram.syscall_latency.p99`.
pub fn metric_words(spec: &str) -> String {
    let (parts, table) = segments(spec);
    let name = parts
        .get(1..parts.len().saturating_sub(1))
        .map(|p| p.join("."))
        .unwrap_or_default();
    let last = parts.last().copied().unwrap_or("");
    match table {
        "counters" if last == "rate" => format!("{name}/s"),
        "counters" if last == "count" => name,
        "histograms" if last == "p999" => format!("{name} p99.9"),
        "histograms" | "locks" | "task_groups" if !name.is_empty() => {
            format!("{name} {}", last.trim_end_matches("_ns"))
        }
        _ => spec.to_string(),
    }
}

/// The x axis in words: `CPUs` for `cpus`, else the setting's key.
pub fn x_words(x: &str) -> &str {
    match x {
        "cpus" => "CPUs",
        "seed" => "seed",
        key => key,
    }
}

/// A title in words: `mutex-contention: ops/s vs CPUs`.
pub fn title(scenario: &str, y: &str, x: &str) -> String {
    format!("{scenario}: {} vs {}", metric_words(y), x_words(x))
}

/// The y axis in the units the value has; `unit` for a time, the unit its
/// ticks are in.
pub fn y_axis_label(spec: &str, unit: Option<TimeUnit>) -> String {
    let (parts, table) = segments(spec);
    let name = parts
        .get(1..parts.len().saturating_sub(1))
        .map(|p| p.join("."))
        .unwrap_or_default();
    let words = match (table, parts.last()) {
        ("counters", Some(&"rate")) => return format!("{name} per second"),
        ("counters", Some(&"count")) => return format!("{name} (count)"),
        _ => metric_words(spec),
    };
    match unit {
        Some(u) => format!("{words} ({})", u.name),
        None => words,
    }
}

/// A unit of time an axis is drawn in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    pub name: &'static str,
    /// Nanoseconds in one unit.
    pub ns: f64,
}

/// The unit of time that shows `max_ns` (the largest value on the axis)
/// with at most three digits before the point: ns, us, ms or s.
pub fn time_unit(max_ns: f64) -> TimeUnit {
    let (name, ns) = match max_ns.abs() {
        a if a < 1e3 => ("ns", 1.0),
        a if a < 1e6 => ("us", 1e3),
        a if a < 1e9 => ("ms", 1e6),
        _ => ("s", 1e9),
    };
    TimeUnit { name, ns }
}

/// `v` with three significant digits at most, no trailing zeros: `125`,
/// `1.5`, `0.25`, `600`.
pub(crate) fn short_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A time in `unit`, for a tick: `125us`, `1.5ms`, `0.1us`.
pub(crate) fn time_label(ns: f64, unit: TimeUnit) -> String {
    format!("{}{}", short_number(ns / unit.ns), unit.name)
}

/// A count or rate, for a tick: `125`, `120k`, `2.5M`, `1.25G`.
pub(crate) fn label(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", short_number(scaled))
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

/// Caption characters per line: 10 px DejaVu Sans is at most 6.4 px a
/// character (digits; most letters are narrower), so this many fit in the
/// canvas' width less its margins.
pub(crate) const CAPTION_CHARS: usize = ((W - 2.0 * CAPTION_X) / 6.4) as usize;

/// Where caption lines start.
pub(crate) const CAPTION_X: f64 = 10.0;

/// The height a caption line adds.
const CAPTION_LINE: f64 = 13.0;

/// `text` broken between words into lines of at most `width` characters
/// (a longer word gets a line of its own).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The caption under the plot, wrapped to the canvas' width (the canvas
/// grows a line for each line past the first), and the end of the SVG.
pub(crate) fn close(s: String, caption: &str) -> String {
    let lines = wrap(caption, CAPTION_CHARS);
    let grown = H + CAPTION_LINE * lines.len().saturating_sub(1) as f64;
    // The canvas was opened at the height of a one-line caption.
    let mut s = s
        .replacen(
            &format!(r#"height="{H}" viewBox="0 0 {W} {H}""#),
            &format!(r#"height="{grown}" viewBox="0 0 {W} {grown}""#),
            1,
        )
        .replacen(
            &format!(r#"<rect width="{W}" height="{H}""#),
            &format!(r#"<rect width="{W}" height="{grown}""#),
            1,
        );
    let _ = write!(
        s,
        r##"<text class="caption" x="{CAPTION_X}" y="{}" font-size="10" fill="#555">"##,
        H - 6.0
    );
    for (i, line) in lines.iter().enumerate() {
        let dy = if i == 0 { 0.0 } else { CAPTION_LINE };
        let _ = write!(
            s,
            r#"<tspan x="{CAPTION_X}" dy="{dy}">{}</tspan>"#,
            escape(line)
        );
    }
    s.push_str("</text>\n</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 8.0), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        let t = ticks(0.0, 1.05e6);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.len() <= 8 && *t.last().unwrap() <= 1.05e6);
    }

    /// Labels print the value, not a rounding of it: 125 us was "120.0k".
    #[test]
    fn labels_print_the_value_in_its_unit() {
        assert_eq!(label(2_500_000.0), "2.5M");
        assert_eq!(label(120_000.0), "120k");
        assert_eq!(label(125_000.0), "125k");
        assert_eq!(label(600_000.0), "600k");
        assert_eq!(label(7.0), "7");
        assert_eq!(time_label(125_000.0, time_unit(125_000.0)), "125us");
        assert_eq!(time_label(1_500_000.0, time_unit(2e6)), "1.5ms");
        assert_eq!(time_label(100.0, time_unit(1e5)), "0.1us");
        assert_eq!(time_label(0.0, time_unit(1e5)), "0us");
    }

    #[test]
    fn titles_and_labels_are_in_words_with_the_ticks_unit() {
        assert_eq!(
            title("mutex-contention", "counter.ops.rate", "cpus"),
            "mutex-contention: ops/s vs CPUs"
        );
        assert_eq!(
            metric_words("hist.syscall_latency.p999"),
            "syscall_latency p99.9"
        );
        assert_eq!(
            metric_words("locks.big_lock.wait_total_ns"),
            "big_lock wait_total"
        );
        assert_eq!(quantity("histogram.syscall_latency.p99"), Quantity::Time);
        assert_eq!(quantity("histogram.syscall_latency.count"), Quantity::Plain);
        assert_eq!(quantity("counters.ops.rate"), Quantity::Rate);
        assert_eq!(
            y_axis_label("histogram.syscall_latency.p99", Some(time_unit(125e3))),
            "syscall_latency p99 (us)"
        );
        assert_eq!(y_axis_label("counter.ops.rate", None), "ops per second");
    }

    /// A caption longer than the canvas is wrapped, nothing cut, and the
    /// canvas grows to hold it.
    #[test]
    fn captions_wrap_inside_the_canvas() {
        let caption = "sweep of mutex-contention by smpsim 0.1.0 (fb76f685b04c); per variant: mean over its points, bars from the lowest to the highest, at cpus = 16, the largest swept value (--at to choose another)";
        let lines = wrap(caption, CAPTION_CHARS);
        assert!(lines.len() >= 2);
        assert!(lines.iter().all(|l| l.chars().count() <= CAPTION_CHARS));
        assert_eq!(lines.join(" "), caption);
        let svg = close(frame("t"), caption);
        let grown = H + CAPTION_LINE * (lines.len() - 1) as f64;
        assert!(svg.contains(&format!(r#"height="{grown}" viewBox="0 0 {W} {grown}""#)));
        assert_eq!(svg.matches("<tspan").count(), lines.len());
        assert!(CAPTION_CHARS as f64 * 6.4 <= W - 2.0 * CAPTION_X);
    }
}
