//! `--kind heatmap`: the longest preempt-off or IRQ-off section per CPU and
//! window, a panel per series.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::data::{at_text, points_at, swept};
use super::*;

/// `--kind heatmap`: per series (its first point at `--at`), a panel of
/// CPUs (rows) by windows (columns), each cell the longest preempt-off or
/// IRQ-off section of that CPU in that window, on a log colour scale.
pub fn plot(req: &Request) -> Result<String, String> {
    if req.format == Format::Csv {
        return Err("error: --kind heatmap draws a plot (SVG or PNG), no CSV".to_string());
    }
    let (field, what) = match req.y.as_str() {
        "" | "preempt_off" => ("preempt_off_windows", "preempt-off"),
        "irq_off" => ("irq_off_windows", "IRQ-off"),
        y => {
            return Err(format!(
                "error: --y {y}: --kind heatmap plots `preempt_off` (default) or `irq_off`"
            ))
        }
    };
    let (points, scenario) = points_at(req)?;
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
            req.results.display()
        ));
    }
    let at = at_text(req);
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
                    crate::fmt_ns(*v)
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
            crate::fmt_ns(v)
        );
    }
    axis_labels(&mut s, "window", "CPU");
    Ok(close(
        s,
        &format!(
            "{}; colour: the longest {what} section, log scale (white: none)",
            swept(req, &scenario)
        ),
    ))
}
