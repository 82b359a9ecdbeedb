//! `--kind heatmap`: the longest preempt-off or IRQ-off section per CPU and
//! window, a panel per series.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::data::{at, points_at, swept, swept_xs, At};
use super::*;

/// Series -> per CPU, the longest section of each window (ns).
type Panels = BTreeMap<String, Vec<Vec<f64>>>;

/// Per series, the first point at `x` (in seed order) with a section in
/// some window, else its first point; the scenario's name; and the
/// measured run's length (ns), which the windows divide.
fn panels_at(req: &Request, x: f64, field: &str) -> Result<(Panels, String, f64), String> {
    let (points, scenario) = points_at(req, x)?;
    let mut panels = Panels::new();
    let mut measured = 0.0;
    for (p, series) in points {
        let rows: Vec<Vec<f64>> = p
            .result_part("cpus")
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
            .collect();
        let has_data = |rows: &Vec<Vec<f64>>| rows.iter().flatten().any(|v| *v > 0.0);
        let keep = panels
            .get(&series)
            .is_none_or(|old| !has_data(old) && has_data(&rows));
        if keep {
            let r = p.result_json();
            measured =
                r["duration_ns"].as_f64().unwrap_or(0.0) - r["warmup_ns"].as_f64().unwrap_or(0.0);
            panels.insert(series, rows);
        }
    }
    Ok((panels, scenario, measured))
}

/// `--kind heatmap`: per series (a point at `--at` with data; without
/// `--at`, at the largest swept x that has any), a panel of CPUs (rows)
/// by windows (columns), each cell the longest preempt-off or IRQ-off
/// section of that CPU in that window, on a log colour scale.
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
    let asked = at(req)?;
    // Without --at: the largest swept x, or the next one down while no
    // point there has a section to show (a 1-CPU point often has none).
    let tries: Vec<f64> = if asked.defaulted {
        swept_xs(req)?.into_iter().rev().collect()
    } else {
        vec![asked.x]
    };
    let mut chosen = None;
    for &x in &tries {
        let (panels, scenario, measured) = panels_at(req, x, field)?;
        let any = panels.values().flatten().flatten().any(|v| *v > 0.0);
        if chosen.is_none() || any {
            chosen = Some((x, panels, scenario, measured));
        }
        if any {
            break;
        }
    }
    let Some((x, panels, scenario, measured)) = chosen else {
        return Err(format!(
            "error: {}: no per-window sections to plot",
            req.results.display()
        ));
    };
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
    let at = At {
        x,
        defaulted: asked.defaulted,
    };
    let where_ = if asked.defaulted && tries.first() != Some(&x) {
        format!(
            "{} = {}, the largest swept with a {what} section (--at to choose another)",
            req.x,
            label(x)
        )
    } else {
        at.caption(req)
    };
    let mut s = frame(&format!(
        "{scenario}: longest {what} section per CPU and window{}",
        at.title(req)
    ));
    let max = panels
        .values()
        .flatten()
        .flatten()
        .fold(0.0f64, |m, v| m.max(*v));
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
        let f = if v <= 0.0 || max <= 0.0 {
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
    let unit = time_unit(max);
    let panel_h = PLOT_H / panels.len() as f64;
    let cols = panels
        .values()
        .flatten()
        .map(|r| r.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let cw = PLOT_W / cols as f64;
    for (i, (name, rows)) in panels.iter().enumerate() {
        let top = TOP + panel_h * i as f64;
        let rh = (panel_h - 16.0) / rows.len().max(1) as f64;
        let _ = writeln!(s, r#"<g class="series" data-name="{}">"#, escape(name));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}">{} ({} CPUs x {} window{})</text>"#,
            LEFT + 4.0,
            top + 12.0,
            escape(name),
            rows.len(),
            cols,
            if cols == 1 { "" } else { "s" }
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
        cpu_ticks(&mut s, rows.len(), top + 16.0, rh);
        s.push_str("</g>\n");
    }
    window_ticks(&mut s, cols, measured);
    let legend: Vec<f64> = if max > 0.0 {
        vec![0.0, min, (min * max).sqrt(), max]
    } else {
        vec![0.0]
    };
    for (k, v) in legend.into_iter().enumerate() {
        let ly = TOP + 10.0 + 20.0 * k as f64;
        let text = if v > 0.0 {
            time_label(v, unit)
        } else {
            "none".to_string()
        };
        let _ = writeln!(
            s,
            r##"<rect x="{}" y="{}" width="14" height="10" fill="{}" stroke="#999"/><text x="{}" y="{}">{text}</text>"##,
            LEFT + PLOT_W + 12.0,
            ly - 5.0,
            color(v),
            LEFT + PLOT_W + 32.0,
            ly + 4.0,
        );
    }
    axis_labels(
        &mut s,
        "time after the warm-up (a column per latency_window)",
        "CPU",
    );
    Ok(close(
        s,
        &format!(
            "{}; at {where_}; colour: the longest {what} section, log scale (white: none)",
            swept(req, &scenario)
        ),
    ))
}

/// Row labels `cpuN` left of a panel of `rows` CPUs from `top`, `rh` a
/// row: every row, or every few so that labels do not overlap.
fn cpu_ticks(s: &mut String, rows: usize, top: f64, rh: f64) {
    let every = (11.0 / rh.max(0.1)).ceil().max(1.0) as usize;
    for cpu in (0..rows).step_by(every) {
        let _ = writeln!(
            s,
            r#"<text class="ytick" x="{}" y="{:.1}" text-anchor="end" font-size="10">cpu{cpu}</text>"#,
            LEFT - 6.0,
            top + rh * (cpu as f64 + 0.5) + 3.5
        );
    }
}

/// Ticks at window boundaries under the plot, labelled with the time
/// since the warm-up ended (the `cols` windows share the `measured` run),
/// every few windows so that labels do not overlap, the end always.
fn window_ticks(s: &mut String, cols: usize, measured: f64) {
    let cw = PLOT_W / cols as f64;
    let every = (50.0 / cw).ceil().max(1.0) as usize;
    let unit = time_unit(measured);
    let mut ticks: Vec<usize> = (0..=cols).step_by(every).collect();
    if ticks.last() != Some(&cols) {
        if ticks.len() > 1 && (cols - ticks[ticks.len() - 1]) * 2 < every {
            ticks.pop();
        }
        ticks.push(cols);
    }
    for w in ticks {
        let x = LEFT + cw * w as f64;
        let _ = writeln!(
            s,
            r#"<line class="xtick" x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="black"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            TOP + PLOT_H,
            TOP + PLOT_H + 5.0,
            TOP + PLOT_H + 20.0,
            time_label(measured * w as f64 / cols as f64, unit)
        );
    }
}
