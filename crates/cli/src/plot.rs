//! `smpsim plot RESULTS`: a sweep's results as an SVG line plot, one curve
//! per variant (or per value of a setting), the mean over seeds with error
//! bars from the lowest to the highest seed.
//!
//! The SVG is written directly (axes, ticks, curves, legend, caption): the
//! plot is simple, and writing it ourselves keeps the bytes the same on
//! every host, with no font files needed to lay out the labels.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cli::PlotArgs;
use crate::output::{emit, emit_bytes, fail};

const W: f64 = 720.0;
const H: f64 = 450.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 70.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// The font every PNG is drawn with, bundled so that a PNG is the same on
/// every host (DejaVu Sans, Bitstream Vera license: fonts/DejaVuSans-LICENSE.txt).
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// An SVG of ours drawn as a PNG at twice its size, with [`FONT`] for
/// every text.
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut opt = resvg::usvg::Options {
        font_family: "DejaVu Sans".into(),
        ..Default::default()
    };
    let db = opt.fontdb_mut();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    let tree = resvg::usvg::Tree::from_str(svg, &opt)
        .map_err(|e| format!("error: drawing the PNG: {e}"))?;
    let size = tree.size().to_int_size();
    let scale = 2.0;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(
        (size.width() as f32 * scale) as u32,
        (size.height() as f32 * scale) as u32,
    )
    .ok_or("error: drawing the PNG: an empty image")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| format!("error: encoding the PNG: {e}"))
}

/// A value of the y axis from one point's result: a counter's or a
/// histogram's figure, by a path of [`smpsim_report::path`].
pub fn y_value(result: &serde_json::Value, spec: &str) -> Result<f64, String> {
    let parts: Vec<&str> = spec.split('.').collect();
    let bad = || {
        format!("error: --y {spec}: expected counter.NAME.rate, counter.NAME.count or histogram.NAME.(p50|p90|p99|p999|mean|max)")
    };
    if parts.len() < 3 {
        return Err(bad());
    }
    let (kind, table) = match smpsim_report::path::key(parts[0]) {
        "counters" => ("counter", "counters"),
        "histograms" => ("histogram", "histograms"),
        _ => return Err(bad()),
    };
    if let Ok(v) = smpsim_report::path::number(result, spec) {
        return Ok(v);
    }
    // Why not, in the words of a plot.
    let name = parts[1..parts.len() - 1].join(".");
    let rows = result[table].as_array().ok_or_else(bad)?;
    if !rows.iter().any(|r| r["name"] == name.as_str()) {
        let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
        return Err(format!(
            "error: --y {spec}: no {kind} `{name}` in the results; they have: {}",
            names.join(", ")
        ));
    }
    Err(bad())
}

/// The x value and the series of one point.
fn x_and_series(point: &serde_json::Value, x: &str, by: &str) -> Result<(f64, String), String> {
    let x_value = match x {
        "cpus" => point["cpus"].as_f64(),
        "seed" => point["seed"].as_f64(),
        key => point["settings"][key].as_str().and_then(|v| v.parse().ok()),
    }
    .ok_or_else(|| format!("error: --x {x}: the points have no numeric `{x}` (sweep with --cpus, or --set {x}=...)"))?;
    let series = match by {
        "variant" => point["variant"].as_str().unwrap_or("base").to_string(),
        key => format!("{key}={}", point["settings"][key].as_str().unwrap_or("?")),
    };
    Ok((x_value, series))
}

/// Round tick steps: 1, 2 or 5 times a power of ten.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
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
    match (
        parts.first().map(|t| smpsim_report::path::key(t)),
        parts.last(),
    ) {
        (Some("counters"), Some(&"rate")) => format!("{name} per second"),
        (Some("counters"), Some(&"count")) => format!("{name} (count)"),
        (Some("histograms"), Some(stat)) => format!("{name} {stat} (ns)"),
        _ => spec.to_string(),
    }
}

fn label(v: f64) -> String {
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

/// Series name -> x -> the values over seeds.
pub type Data = BTreeMap<String, BTreeMap<u64, (f64, Vec<f64>)>>;

/// The points of a sweep's results file that have a result (a point that
/// failed to compile has none).
fn points(args: &PlotArgs) -> Result<Vec<serde_json::Value>, String> {
    let mut out = Vec::new();
    for (_, p) in crate::report::result_lines(&args.results)? {
        if p.get("result").is_some() {
            out.push(p);
        }
    }
    Ok(out)
}

/// ` at cpus = 16` for a plot of the points at `--at`, else nothing.
fn at_text(args: &PlotArgs) -> String {
    match args.at {
        Some(at) => format!(" at {} = {}", args.x, label(at)),
        None => String::new(),
    }
}

/// Where the results come from, for a caption: the scenario and the
/// smpsim (version and commit) that swept them.
fn swept(args: &PlotArgs, scenario: &str) -> String {
    let by = points(args).ok().and_then(|ps| {
        ps.iter()
            .find_map(|p| p["smpsim"].as_str().map(String::from))
    });
    format!(
        "sweep of {scenario} by smpsim {}",
        by.as_deref().unwrap_or("(commit not recorded)")
    )
}

/// The points at `--at` (all without it), each with its series, and the
/// scenario's name.
fn points_at(args: &PlotArgs) -> Result<(Vec<(serde_json::Value, String)>, String), String> {
    let mut out = Vec::new();
    let mut scenario = String::new();
    for p in points(args)? {
        let (x, series) = x_and_series(&p, &args.x, &args.by)?;
        if args.at.is_none_or(|at| at == x) {
            scenario = p["scenario"].as_str().unwrap_or("").to_string();
            out.push((p, series));
        }
    }
    Ok((out, scenario))
}

fn read(args: &PlotArgs) -> Result<(Data, String), String> {
    let mut data: Data = BTreeMap::new();
    let mut scenario = String::new();
    for p in points(args)? {
        scenario = p["scenario"].as_str().unwrap_or("").to_string();
        let (x, series) = x_and_series(&p, &args.x, &args.by)?;
        let y = y_value(&p["result"], &args.y)?;
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
            args.results.display()
        ));
    }
    Ok((data, scenario))
}

/// The SVG for the data of `plot`.
fn svg(data: &Data, args: &PlotArgs, scenario: &str) -> String {
    let x_label = if args.x == "cpus" {
        "CPUs"
    } else {
        args.x.as_str()
    };
    line_svg(
        data,
        &format!("{scenario}: {} against {}", args.y, args.x),
        x_label,
        &y_axis_label(&args.y),
        &format!(
            "{}; mean over seeds, bars from the lowest to the highest seed",
            swept(args, scenario)
        ),
    )
}

/// The plot area's width and height.
const PLOT_W: f64 = W - LEFT - RIGHT;
const PLOT_H: f64 = H - TOP - BOTTOM;

/// An SVG of `w` x `h` on white with `title` centred at `title_x`.
fn canvas(w: f64, h: f64, title_x: f64, title: &str) -> String {
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
fn frame(title: &str) -> String {
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

fn axis_labels(s: &mut String, x_label: &str, y_label: &str) {
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
fn legend_entry(s: &mut String, i: usize, name: &str, color: &str) {
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
fn close(mut s: String, caption: &str) -> String {
    let _ = writeln!(
        s,
        r##"<text class="caption" x="{LEFT}" y="{}" font-size="10" fill="#555">{}</text>"##,
        H - 6.0,
        escape(caption)
    );
    s.push_str("</svg>\n");
    s
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

/// One bar of a [`ratio_svg`] chart.
pub struct RatioBar {
    pub name: String,
    /// Simulated / published (NaN if the published value is 0).
    pub ratio: f64,
    pub pass: bool,
    /// The ratios the pass rule accepts, if it is a ratio rule.
    pub band: Option<(f64, f64)>,
}

/// Simulated / published per metric as horizontal bars on a log scale
/// from 1/16 to 16, each with the band its pass rule accepts.
pub fn ratio_svg(title: &str, bars: &[RatioBar]) -> String {
    const NAME_W: f64 = 230.0;
    const ROW: f64 = 26.0;
    let (w, top) = (W, 40.0);
    let h = top + ROW * bars.len().max(1) as f64 + 50.0;
    let pw = w - NAME_W - 30.0;
    let span = 4.0; // log2: 1/16 .. 16
    let sx = |r: f64| NAME_W + (r.log2().clamp(-span, span) + span) / (2.0 * span) * pw;
    let mut s = canvas(w, h, w / 2.0, title);
    let bottom = top + ROW * bars.len().max(1) as f64;
    for k in [-4i32, -2, -1, 0, 1, 2, 4] {
        let r = 2f64.powi(k);
        let x = sx(r);
        let text = if k < 0 {
            format!("1/{}x", 1 << -k)
        } else {
            format!("{}x", 1 << k)
        };
        let stroke = if k == 0 { "#000" } else { "#ddd" };
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="{stroke}"/><text x="{x:.1}" y="{}" text-anchor="middle">{text}</text>"#,
            bottom + 16.0
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = top + ROW * i as f64;
        let _ = writeln!(
            s,
            r#"<g class="bar" data-name="{}"><text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            escape(&b.name),
            NAME_W - 8.0,
            y + ROW / 2.0 + 4.0,
            escape(&b.name)
        );
        if let Some((lo, hi)) = b.band {
            let _ = writeln!(
                s,
                r##"<rect class="band" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#2ca02c" fill-opacity="0.15"/>"##,
                sx(lo),
                y + 2.0,
                (sx(hi) - sx(lo)).max(1.0),
                ROW - 4.0
            );
        }
        if b.ratio.is_finite() && b.ratio > 0.0 {
            let (x0, x1) = (sx(1.0).min(sx(b.ratio)), sx(1.0).max(sx(b.ratio)));
            let color = if b.pass { "#1f77b4" } else { "#d62728" };
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="10">{:.2}x</text>"#,
                y + 7.0,
                (x1 - x0).max(1.5),
                ROW - 14.0,
                x1 + 4.0,
                y + ROW / 2.0 + 4.0,
                b.ratio
            );
        } else {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="10">no ratio (published 0)</text>"#,
                sx(1.0) + 4.0,
                y + ROW / 2.0 + 4.0
            );
        }
        s.push_str("</g>\n");
    }
    let _ = writeln!(
        s,
        r##"<text class="caption" x="10" y="{}" font-size="10" fill="#555">simulated / published, log scale; shaded: what the pass rule accepts; red: misses it</text>"##,
        h - 8.0
    );
    s.push_str("</svg>\n");
    s
}

/// The plot's data as CSV: series, x, seeds, mean, min, max.
fn csv(data: &Data, args: &PlotArgs) -> String {
    let mut s = format!("{},{},seeds,mean,min,max\n", args.by, args.x);
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
    (smpsim_report::path::key(table) == "histograms" && !name.is_empty()).then_some(name)
}

/// `--kind percentiles`: the tails of every series over the points read
/// (seeds, and every x unless `--at`), and the scenario's name.
fn read_tails(args: &PlotArgs) -> Result<(Tails, String), String> {
    let name = histogram_name(&args.y).ok_or_else(|| {
        format!(
            "error: --y {}: --kind percentiles plots a histogram: --y histogram.NAME",
            args.y
        )
    })?;
    let mut data: Tails = BTreeMap::new();
    let (points, scenario) = points_at(args)?;
    for (p, series) in points {
        let tails = data.entry(series).or_insert_with(|| vec![Vec::new(); 5]);
        for (k, (field, _)) in TAIL.iter().enumerate() {
            tails[k].push(y_value(&p["result"], &format!("histogram.{name}.{field}"))?);
        }
    }
    if data.is_empty() {
        return Err(format!(
            "error: {}: no results to plot{}",
            args.results.display(),
            match args.at {
                Some(at) => format!(" at {} = {at}", args.x),
                None => String::new(),
            }
        ));
    }
    Ok((data, scenario))
}

/// A latency tail: p50 .. max evenly spaced across, latency on a log
/// scale up, per series the mean over the points read with a bar from the
/// lowest to the highest.
pub fn percentiles_svg(data: &Tails, title: &str, y_label: &str, caption: &str) -> String {
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
            smpsim_report::fmt_ns(10f64.powf(d))
        );
        d += 1.0;
    }
    axis_labels(&mut s, "percentile", y_label);
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

fn percentiles(args: &PlotArgs) -> Result<String, String> {
    let (data, scenario) = read_tails(args)?;
    let name = histogram_name(&args.y).unwrap_or_default();
    let at = at_text(args);
    Ok(match args.format {
        crate::cli::PlotFormat::Svg | crate::cli::PlotFormat::Png => percentiles_svg(
            &data,
            &format!("{scenario}: {name} latency tail{at}"),
            &format!("{name} (ns, log scale)"),
            &format!(
                "{}; per {}: mean over its points, bars from the lowest to the highest",
                swept(args, &scenario),
                args.by
            ),
        ),
        crate::cli::PlotFormat::Csv => {
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

/// Where CPU time goes, in the order the bars stack.
const CPU_TIME: [(&str, &str); 5] = [
    ("user", "#1f77b4"),
    ("sys", "#ff7f0e"),
    ("spin", "#d62728"),
    ("irq", "#9467bd"),
    ("idle", "#dddddd"),
];

/// `--kind cputime`: per series, the share of all CPUs' time in each of
/// [`CPU_TIME`], the mean over the points read.
fn cputime(args: &PlotArgs) -> Result<String, String> {
    if args.format == crate::cli::PlotFormat::Csv {
        return Err("error: --kind cputime draws a plot (SVG or PNG), no CSV".to_string());
    }
    let mut shares: BTreeMap<String, (usize, [f64; 5])> = BTreeMap::new();
    let (points, scenario) = points_at(args)?;
    for (p, series) in points {
        let mut sums = [0f64; 5];
        for cpu in p["result"]["cpus"].as_array().into_iter().flatten() {
            for (k, (field, _)) in CPU_TIME.iter().enumerate() {
                sums[k] += cpu[*field].as_f64().unwrap_or(0.0);
            }
        }
        let all: f64 = sums.iter().sum();
        let entry = shares.entry(series).or_insert((0, [0.0; 5]));
        entry.0 += 1;
        for (share, part) in entry.1.iter_mut().zip(sums) {
            *share += if all > 0.0 { part / all } else { 0.0 };
        }
    }
    if shares.is_empty() {
        return Err(format!(
            "error: {}: no results to plot",
            args.results.display()
        ));
    }
    let at = at_text(args);
    let mut s = frame(&format!("{scenario}: where the CPUs' time goes{at}"));
    let slot = PLOT_W / shares.len() as f64;
    for (i, (name, (points, sum))) in shares.iter().enumerate() {
        let x = LEFT + slot * (i as f64 + 0.2);
        let mut top = TOP + PLOT_H;
        let _ = writeln!(s, r#"<g class="series" data-name="{}">"#, escape(name));
        for (k, (part, color)) in CPU_TIME.iter().enumerate() {
            let share = sum[k] / *points as f64;
            let h = share * PLOT_H;
            top -= h;
            let _ = writeln!(
                s,
                r#"<rect class="{part}" x="{x:.1}" y="{top:.1}" width="{:.1}" height="{h:.1}" fill="{color}"><title>{part} {:.1}%</title></rect>"#,
                slot * 0.6,
                share * 100.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text></g>"#,
            x + slot * 0.3,
            TOP + PLOT_H + 20.0,
            escape(name)
        );
    }
    for pct in [0, 25, 50, 75, 100] {
        let y = TOP + PLOT_H * (1.0 - pct as f64 / 100.0);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{pct}%</text>"#,
            LEFT - 6.0,
            y + 4.0
        );
    }
    for (k, (part, color)) in CPU_TIME.iter().enumerate() {
        let ly = TOP + 10.0 + 20.0 * (4 - k) as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{}" y="{}" width="14" height="10" fill="{color}"/><text x="{}" y="{}">{part}</text>"#,
            LEFT + PLOT_W + 12.0,
            ly - 5.0,
            LEFT + PLOT_W + 32.0,
            ly + 4.0
        );
    }
    axis_labels(&mut s, &args.by, "share of all CPUs' time");
    Ok(close(
        s,
        &format!(
            "{}; per {}: mean over its points of the CPUs' user, sys, spin, irq and idle time",
            swept(args, &scenario),
            args.by
        ),
    ))
}

/// `--kind heatmap`: per series (its first point at `--at`), a panel of
/// CPUs (rows) by windows (columns), each cell the longest preempt-off or
/// IRQ-off section of that CPU in that window, on a log colour scale.
fn heatmap(args: &PlotArgs) -> Result<String, String> {
    if args.format == crate::cli::PlotFormat::Csv {
        return Err("error: --kind heatmap draws a plot (SVG or PNG), no CSV".to_string());
    }
    let (field, what) = match args.y.as_str() {
        "" | "preempt_off" => ("preempt_off_windows", "preempt-off"),
        "irq_off" => ("irq_off_windows", "IRQ-off"),
        y => {
            return Err(format!(
                "error: --y {y}: --kind heatmap plots `preempt_off` (default) or `irq_off`"
            ))
        }
    };
    let (points, scenario) = points_at(args)?;
    // Series -> per CPU, the longest section of each window (ns).
    let mut panels: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for (p, series) in points {
        panels.entry(series).or_insert_with(|| {
            p["result"]["cpus"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    c[field]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.as_f64())
                        .collect()
                })
                .collect()
        });
    }
    let max = panels
        .values()
        .flatten()
        .flatten()
        .fold(1.0f64, |m, v| m.max(*v));
    if panels.is_empty()
        || panels
            .values()
            .all(|rows| rows.iter().all(|r| r.is_empty()))
    {
        return Err(format!(
            "error: {}: no per-window sections to plot",
            args.results.display()
        ));
    }
    let at = at_text(args);
    let mut s = frame(&format!(
        "{scenario}: longest {what} section per CPU and window{at}"
    ));
    let panel_h = PLOT_H / panels.len() as f64;
    // White (none) to dark red (the longest), on a log scale from the
    // shortest section seen.
    let min = panels
        .values()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(max, f64::min)
        .min(max / 2.0);
    let color = |v: f64| {
        let f = if v <= 0.0 {
            0.0
        } else {
            0.15 + 0.85 * ((v.max(min) / min).ln() / (max / min).ln()).min(1.0)
        };
        let c = |from: f64, to: f64| (from + (to - from) * f).round() as u8;
        format!(
            "#{:02x}{:02x}{:02x}",
            c(255.0, 140.0),
            c(255.0, 0.0),
            c(255.0, 0.0)
        )
    };
    for (i, (name, rows)) in panels.iter().enumerate() {
        let top = TOP + panel_h * i as f64;
        let cols = rows.iter().map(|r| r.len()).max().unwrap_or(1).max(1);
        let (cw, rh) = (
            PLOT_W / cols as f64,
            (panel_h - 16.0) / rows.len().max(1) as f64,
        );
        let _ = writeln!(s, r#"<g class="series" data-name="{}">"#, escape(name));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}">{} ({} CPUs x {} windows)</text>"#,
            LEFT + 4.0,
            top + 12.0,
            escape(name),
            rows.len(),
            cols
        );
        for (cpu, row) in rows.iter().enumerate() {
            for (w, v) in row.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r#"<rect class="cell" x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"><title>cpu{cpu} window {w}: {}</title></rect>"#,
                    LEFT + cw * w as f64,
                    top + 16.0 + rh * cpu as f64,
                    cw,
                    rh,
                    color(*v),
                    smpsim_report::fmt_ns(*v)
                );
            }
        }
        s.push_str("</g>\n");
    }
    for (k, v) in [0.0, min, (min * max).sqrt(), max].into_iter().enumerate() {
        let ly = TOP + 10.0 + 20.0 * k as f64;
        let _ = writeln!(
            s,
            r##"<rect x="{}" y="{}" width="14" height="10" fill="{}" stroke="#999"/><text x="{}" y="{}">{}</text>"##,
            LEFT + PLOT_W + 12.0,
            ly - 5.0,
            color(v),
            LEFT + PLOT_W + 32.0,
            ly + 4.0,
            smpsim_report::fmt_ns(v)
        );
    }
    axis_labels(&mut s, "window", "CPU");
    Ok(close(
        s,
        &format!(
            "{}; colour: the longest {what} section, log scale (white: none)",
            swept(args, &scenario)
        ),
    ))
}

pub fn main(args: PlotArgs) -> i32 {
    let other = match args.kind {
        crate::cli::PlotKind::Scaling => None,
        crate::cli::PlotKind::Percentiles => Some(percentiles(&args)),
        crate::cli::PlotKind::Cputime => Some(cputime(&args)),
        crate::cli::PlotKind::Heatmap => Some(heatmap(&args)),
    };
    if let Some(out) = other {
        return match out.and_then(|out| write(&out, &args)) {
            Ok(()) => 0,
            Err(e) => fail(e),
        };
    }
    if args.at.is_some() {
        return fail("error: --at goes with --kind percentiles, cputime or heatmap".to_string());
    }
    let (data, scenario) = match read(&args) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let out = match args.format {
        crate::cli::PlotFormat::Csv => csv(&data, &args),
        _ => svg(&data, &args, &scenario),
    };
    match write(&out, &args) {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

/// Writes a plot's SVG (or CSV) as asked: a PNG for `--format png` or a
/// `.png` output.
fn write(out: &str, args: &PlotArgs) -> Result<(), String> {
    crate::output::check_outputs(&[("the results", &args.results)], &[("-o", &args.output)])?;
    let as_png = args.format == crate::cli::PlotFormat::Png
        || (args.format == crate::cli::PlotFormat::Svg
            && args
                .output
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("png")));
    let written = if as_png {
        emit_bytes(&png(out)?, Some(&args.output))
    } else {
        emit(out, Some(&args.output))
    };
    written.map_err(|e| format!("error: {e}"))
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
