//! Simulated / published per metric, as bars on a log scale (the
//! reproduction page).

use std::fmt::Write;

use super::*;

/// One bar of a [`ratio_svg`] chart.
pub struct RatioBar {
    pub name: String,
    /// Simulated / published (NaN without a published figure).
    pub ratio: f64,
    pub pass: bool,
    /// The ratios the pass rule accepts, if it is a ratio rule.
    pub band: Option<(f64, f64)>,
    /// What the row shows where there is no ratio to draw (a bound, an
    /// information row).
    pub note: String,
}

/// A ratio as its bar says it: two significant digits at least, so a
/// small ratio is not "0.00x".
fn ratio_label(r: f64) -> String {
    if r >= 0.1 {
        format!("{r:.2}x")
    } else {
        let digits = (-r.log10().floor()) as usize + 1;
        format!("{r:.digits$}x")
    }
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
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
                y + 7.0,
                (x1 - x0).max(1.5),
                ROW - 14.0,
                x1 + 4.0,
                y + ROW / 2.0 + 4.0,
                ratio_label(b.ratio)
            );
        } else {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
                sx(1.0) + 4.0,
                y + ROW / 2.0 + 4.0,
                escape(&b.note)
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
