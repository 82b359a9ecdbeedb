//! A figure's band: how far it could be from what the model says, from
//! three sources, each shown (computed by the runner crate's `band`
//! module): the seeds (luck), the assumed values over their ranges, and
//! the model's stated error for the machine. This module holds the band
//! and writes it as text; `band_rows` puts it on a reproduction's rows,
//! `band_html` draws it.

use serde::Serialize;

/// `[lo, hi]` of the figure under one source of uncertainty alone.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Part {
    pub lo: f64,
    pub hi: f64,
}

/// The figure with one assumed value at each end of its range (the
/// others as written): how the parameters were ranked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Swing {
    /// The parameter (`ipi_latency`, `kernel.tg_walk_cost`).
    pub name: String,
    /// The value at the range's ends, as set (`500`, `"75ns"`).
    pub lo_value: String,
    pub hi_value: String,
    /// The figure at each end; `None` where it is not a number there.
    pub at_lo: Option<f64>,
    pub at_hi: Option<f64>,
}

impl Swing {
    /// How far the figure moves from `centre` at either end.
    pub fn reach(&self, centre: f64) -> f64 {
        [self.at_lo, self.at_hi]
            .into_iter()
            .flatten()
            .map(|v| (v - centre).abs())
            .fold(0.0, f64::max)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Parts {
    pub seeds: Part,
    pub assumed: Part,
    pub model: Part,
}

/// A figure's band.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Band {
    pub lo: f64,
    pub hi: f64,
    pub parts: Parts,
    /// What widens the band most: an assumed value's name, `seeds` or
    /// `model`; `none` for a band of zero width.
    pub dominant: String,
    /// Every parameter varied, in the order of how far it moves the
    /// figure (the largest first).
    pub params: Vec<Swing>,
}

impl Band {
    /// Whether `x` lies inside the band (ends included).
    pub fn holds(&self, x: f64) -> bool {
        x >= self.lo && x <= self.hi
    }
}

/// `122x [64x - 210x], dominated by ipi_latency`, each number written by
/// `num`.
pub fn line(value: f64, band: &Band, num: impl Fn(f64) -> String) -> String {
    format!(
        "{} [{} - {}], dominated by {}",
        num(value),
        num(band.lo),
        num(band.hi),
        band.dominant
    )
}

/// The parts in a few words: `seeds [a - b], assumed [c - d], model [e - f]`.
pub fn parts_line(band: &Band, num: impl Fn(f64) -> String) -> String {
    let p = &band.parts;
    let part = |name: &str, x: &Part| format!("{name} [{} - {}]", num(x.lo), num(x.hi));
    format!(
        "{}, {}, {}",
        part("seeds", &p.seeds),
        part("assumed", &p.assumed),
        part("model", &p.model)
    )
}

/// A figure as the reports write it: 4 significant digits, no exponent
/// for ordinary magnitudes.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e7).contains(&a) {
        return format!("{v:.3e}");
    }
    let digits = if a == 0.0 {
        0
    } else {
        (3 - a.log10().floor() as i32).clamp(0, 6) as usize
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(lo: f64, hi: f64) -> Band {
        let p = Part { lo, hi };
        Band {
            lo,
            hi,
            parts: Parts {
                seeds: p,
                assumed: p,
                model: p,
            },
            dominant: "ipi_latency".into(),
            params: Vec::new(),
        }
    }

    #[test]
    fn the_line_reads_as_the_issue_writes_it() {
        let b = band(64.0, 210.0);
        assert_eq!(
            line(122.0, &b, |v| format!("{}x", num(v))),
            "122x [64x - 210x], dominated by ipi_latency"
        );
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(num(214.09251), "214.1");
        assert_eq!(num(0.0035960), "0.003596");
        assert_eq!(num(93930000.0), "9.393e7");
        assert_eq!(num(-80.0), "-80");
        assert_eq!(num(0.0), "0");
    }
}
