//! `--kind cputime`: where the CPUs' time goes, a stacked bar per series.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::data::{at, points_at, swept};
use super::*;

/// Where CPU time goes, in the order the bars stack.
const CPU_TIME: [(&str, &str); 5] = [
    ("user", "#1f77b4"),
    ("sys", "#ff7f0e"),
    ("spin", "#d62728"),
    ("irq", "#9467bd"),
    ("idle", "#dddddd"),
];

/// `--kind cputime`: per series, the share of all CPUs' time in each of
/// [`CPU_TIME`], the mean over its points (seeds) at `--at` (default: the
/// largest swept x).
pub fn plot(req: &Request) -> Result<String, String> {
    if req.format == Format::Csv {
        return Err("error: --kind cputime draws a plot (SVG or PNG), no CSV".to_string());
    }
    let mut shares: BTreeMap<String, (usize, [f64; 5])> = BTreeMap::new();
    let at = at(req)?;
    let (points, scenario) = points_at(req, at.x)?;
    for (p, series) in points {
        let mut sums = [0f64; 5];
        for cpu in p.result_part("cpus").as_array().into_iter().flatten() {
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
            "error: {}: no results to plot at {} = {}",
            req.results.display(),
            req.x,
            at.x
        ));
    }
    let mut s = frame(&format!(
        "{scenario}: where the CPUs' time goes{}",
        at.title(req)
    ));
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
    axis_labels(&mut s, &req.by, "share of all CPUs' time");
    Ok(close(
        s,
        &format!(
            "{}; at {}; per {}: mean over its seeds of the CPUs' user, sys, spin, irq and idle time",
            swept(req, &scenario),
            at.caption(req),
            req.by
        ),
    ))
}
