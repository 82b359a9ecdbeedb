//! Bands on a reproduction's rows: a row's band and whether its
//! published figure lies inside it, and the rows' bands as text and LKML.

use crate::band::{line, num, parts_line, Band};
use crate::model::MetricRow;

impl MetricRow {
    /// The row with its band, and whether its published figure lies
    /// inside it (`agrees`): a bound or an information row has no
    /// published figure to place.
    pub fn set_band(&mut self, band: Band) {
        self.agrees = match (self.kind, self.published) {
            (crate::model::RowKind::Compared, Some(p)) => Some(band.holds(p)),
            _ => None,
        };
        self.sim_band = Some(band);
    }

    /// `agrees` / `outside band` / `` for the verdict's side.
    pub fn agreement_word(&self) -> &'static str {
        match self.agrees {
            Some(true) => "agrees",
            Some(false) => "outside band",
            None => "",
        }
    }
}

/// The bands of a reproduction's rows, one line each, for the text
/// output: `case metric: 214 [150 - 290], dominated by ipi_latency;
/// published 200 agrees` and the parts below it.
pub fn reproduce_text(rows: &[MetricRow]) -> String {
    let mut s = String::new();
    if rows.iter().all(|r| r.sim_band.is_none()) {
        return s;
    }
    s.push_str("bands (seeds, assumed values over their ranges, the model's stated error; README: how to read a band):\n");
    for r in rows {
        let Some(b) = &r.sim_band else { continue };
        s.push_str(&format!(
            "  {} {}: {}",
            r.case,
            r.metric,
            line(r.simulated, b, num)
        ));
        if let (Some(p), Some(agrees)) = (r.published, r.agrees) {
            s.push_str(&format!(
                "; published {} {}",
                num(p),
                if agrees { "agrees" } else { "outside the band" }
            ));
        }
        s.push('\n');
        s.push_str(&format!("      {}\n", parts_line(b, num)));
    }
    s
}

/// The bands for LKML text: one line per figure, in 72 columns:
/// `metric  [lo - hi]  dominated by NAME`.
pub fn lkml_table(rows: &[MetricRow]) -> String {
    let mut s = String::new();
    if rows.iter().all(|r| r.sim_band.is_none()) {
        return s;
    }
    s.push_str("\nbands (seeds, assumed values, model error):\n");
    let mut case = "";
    for r in rows {
        let Some(b) = &r.sim_band else { continue };
        if r.case != case {
            case = &r.case;
            s.push_str(&format!("{case}:\n"));
        }
        let mut line = format!(
            "  {:<30} [{} - {}] {}",
            r.metric,
            short(b.lo),
            short(b.hi),
            b.dominant
        );
        if line.chars().count() > 72 {
            line = line.chars().take(71).collect::<String>() + "~";
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// A figure in at most ~7 characters for 72-column text.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        num(v)
    }
}
