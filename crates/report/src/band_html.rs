//! The bands of a case's figures on the HTML page: each figure on its own
//! axis, the band shaded, each part (seeds, assumed, model) an error bar
//! below it, the simulated figure a dot and the published one a diamond;
//! then a table with the numbers and the dominant parameter.

use std::fmt::Write;

use crate::band::{num, Band, Part};
use crate::model::MetricRow;

const W: f64 = 960.0;
const LABEL: f64 = 230.0;
const PLOT: f64 = 440.0;
const ROW: f64 = 58.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The axis of one row: the band, the parts and the published figure
/// fit, with a margin.
fn axis(value: f64, band: &Band, published: Option<f64>) -> (f64, f64) {
    let p = &band.parts;
    let xs = [
        value,
        band.lo,
        band.hi,
        p.seeds.lo,
        p.seeds.hi,
        p.assumed.lo,
        p.assumed.hi,
        p.model.lo,
        p.model.hi,
    ];
    let mut lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if let Some(p) = published.filter(|p| p.is_finite()) {
        lo = lo.min(p);
        hi = hi.max(p);
    }
    // A band of no width around 0 still gets an axis.
    let pad = ((hi - lo) * 0.08).max(value.abs() * 0.02);
    let pad = if pad > 0.0 { pad } else { 1.0 };
    (lo - pad, hi + pad)
}

/// The SVG and table of the bands of `rows` (one case); empty when no
/// row has a band.
pub fn case_section(rows: &[MetricRow]) -> String {
    let banded: Vec<(&MetricRow, &Band)> = rows
        .iter()
        .filter_map(|r| r.sim_band.as_ref().map(|b| (r, b)))
        .collect();
    if banded.is_empty() {
        return String::new();
    }
    let h = 40.0 + ROW * banded.len() as f64;
    let mut s = format!(
        "<h3>Bands</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" font-family=\"sans-serif\" font-size=\"11\">\n"
    );
    let legend = [
        ("#9ecae1", "band"),
        ("#636363", "seeds"),
        ("#e6550d", "assumed"),
        ("#756bb1", "model"),
    ];
    for (i, (color, name)) in legend.iter().enumerate() {
        let x = LABEL + i as f64 * 90.0;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"8\" width=\"14\" height=\"8\" fill=\"{color}\"/><text x=\"{}\" y=\"16\">{name}</text>",
            x + 18.0
        );
    }
    let _ = writeln!(
        s,
        "<circle cx=\"{}\" cy=\"12\" r=\"4\" fill=\"black\"/><text x=\"{}\" y=\"16\">simulated</text><path d=\"M {} 7 l 5 5 l -5 5 l -5 -5 z\" fill=\"#31a354\"/><text x=\"{}\" y=\"16\">published</text>",
        LABEL + 365.0,
        LABEL + 373.0,
        LABEL + 440.0,
        LABEL + 448.0
    );
    for (i, (r, b)) in banded.iter().enumerate() {
        let top = 30.0 + ROW * i as f64;
        // A bound (`<= 50`) is no figure to place on the band's axis.
        let published = r
            .published
            .filter(|_| r.kind == crate::model::RowKind::Compared);
        let (lo, hi) = axis(r.simulated, b, published);
        let x = |v: f64| LABEL + (v - lo) / (hi - lo) * PLOT;
        let _ = writeln!(
            s,
            "<text x=\"4\" y=\"{}\">{}</text><text x=\"4\" y=\"{}\" fill=\"#555\">by {}</text>",
            top + 16.0,
            esc(&r.metric),
            top + 30.0,
            esc(&b.dominant)
        );
        let _ = writeln!(
            s,
            "<line x1=\"{LABEL}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#ccc\"/>",
            LABEL + PLOT,
            top + 44.0,
            top + 44.0
        );
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"16\" fill=\"#9ecae1\" opacity=\"0.8\"><title>band {} - {}</title></rect>",
            x(b.lo),
            top + 4.0,
            (x(b.hi) - x(b.lo)).max(1.0),
            num(b.lo),
            num(b.hi)
        );
        let parts: [(&str, &Part, f64); 3] = [
            ("#636363", &b.parts.seeds, 25.0),
            ("#e6550d", &b.parts.assumed, 31.0),
            ("#756bb1", &b.parts.model, 37.0),
        ];
        for (color, p, dy) in parts {
            let y = top + dy;
            let _ = writeln!(
                s,
                "<path d=\"M {:.1} {} v 4 M {:.1} {} H {:.1} M {:.1} {} v 4\" stroke=\"{color}\" stroke-width=\"1.5\" fill=\"none\"/>",
                x(p.lo),
                y - 2.0,
                x(p.lo),
                y,
                x(p.hi),
                x(p.hi),
                y - 2.0
            );
        }
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{}\" r=\"4\" fill=\"black\"><title>simulated {}</title></circle>",
            x(r.simulated),
            top + 12.0,
            num(r.simulated)
        );
        if let Some(p) = published.filter(|p| p.is_finite()) {
            let _ = writeln!(
                s,
                "<path d=\"M {:.1} {} l 6 6 l -6 6 l -6 -6 z\" fill=\"#31a354\"><title>published {}</title></path>",
                x(p),
                top + 6.0,
                num(p)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{LABEL}\" y=\"{}\" fill=\"#555\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">{}</text>",
            top + 54.0,
            num(lo),
            LABEL + PLOT,
            top + 54.0,
            num(hi)
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\">{} [{} - {}]</text>",
            LABEL + PLOT + 8.0,
            top + 16.0,
            num(r.simulated),
            num(b.lo),
            num(b.hi)
        );
        if let Some(word) = match r.agrees {
            Some(true) => Some("published agrees"),
            Some(false) => Some("published outside"),
            None => None,
        } {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" fill=\"#555\">{word}</text>",
                LABEL + PLOT + 8.0,
                top + 30.0
            );
        }
    }
    s.push_str("</svg>\n");
    s.push_str("<table>\n<tr><th>metric</th><th>simulated</th><th>band</th><th>seeds</th><th>assumed</th><th>model</th><th>dominated by</th><th>published</th></tr>\n");
    for (r, b) in &banded {
        let part = |p: &Part| format!("{} - {}", num(p.lo), num(p.hi));
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{} - {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.metric),
            num(r.simulated),
            num(b.lo),
            num(b.hi),
            part(&b.parts.seeds),
            part(&b.parts.assumed),
            part(&b.parts.model),
            esc(&b.dominant),
            match (r.published, r.agrees) {
                (Some(p), Some(true)) => format!("{} (inside: agrees)", num(p)),
                (Some(p), Some(false)) => format!("{} (outside)", num(p)),
                (Some(p), None) => num(p),
                (None, _) => "-".into(),
            }
        );
    }
    s.push_str("</table>\n");
    s
}
