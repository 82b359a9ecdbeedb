//! Bands on a `run`: its figures are each counter's rate and each
//! histogram's p99 per variant, and, with several variants, each later
//! variant's counter rate over the first's (the before/after ratio).

use smpsim_report::band::Band;
use smpsim_report::VariantRun;
use smpsim_scenario::Scenario;

use super::{bands, Figure, Nominal, Options, Summary};
use crate::progress::Progress;

/// The figures of a run's results.
pub fn figures(runs: &[VariantRun]) -> Vec<Figure> {
    let mut out = Vec::new();
    for r in runs {
        for c in &r.result.counters {
            out.push(Figure {
                name: format!("{}.counter.{}.rate", r.variant, c.name),
                expr: format!("{}.counter.{}.rate", r.variant, c.name),
            });
        }
        for h in &r.result.histograms {
            out.push(Figure {
                name: format!("{}.hist.{}.p99", r.variant, h.name),
                expr: format!("{}.hist.{}.p99", r.variant, h.name),
            });
        }
    }
    if let Some((first, later)) = runs.split_first() {
        for r in later {
            for c in &r.result.counters {
                out.push(Figure {
                    name: format!("{} / {} counter.{}.rate", r.variant, first.variant, c.name),
                    expr: format!(
                        "{}.counter.{}.rate / {}.counter.{}.rate",
                        r.variant, c.name, first.variant, c.name
                    ),
                });
            }
        }
    }
    out
}

/// Each figure of the run with its value and band.
#[derive(serde::Serialize)]
pub struct Banded {
    pub figure: String,
    pub value: f64,
    pub band: Band,
}

/// The bands of a run's figures (those that are numbers).
pub fn run_bands(
    scenario: &Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
    runs: &[VariantRun],
    opts: &Options,
    progress: &Progress,
) -> Result<(Vec<Banded>, Summary), String> {
    let figures = figures(runs);
    let per_seed = vec![runs.to_vec()];
    let nominal = Nominal {
        scenario,
        variants,
        sets,
        runs: &per_seed,
    };
    let (found, summary) = bands(&nominal, &figures, opts, progress)?;
    let map = super::runs_map(runs);
    let out = figures
        .into_iter()
        .zip(found)
        .filter_map(|(f, b)| {
            let value = smpsim_report::metric::eval(&f.expr, &map).ok()?;
            Some(Banded {
                figure: f.name,
                value,
                band: b?,
            })
        })
        .collect();
    Ok((out, summary))
}

/// The bands as text, one figure a line (`NAME: 122 [64 - 210],
/// dominated by ipi_latency`) and its parts below it.
pub fn text(bands: &[Banded], summary: &Summary) -> String {
    let num = smpsim_report::band::num;
    let mut s = String::from("\nbands (seeds, assumed values over their ranges, the model's stated error; README: how to read a band):\n");
    for b in bands {
        s.push_str(&format!(
            "  {}: {}\n      {}\n",
            b.figure,
            smpsim_report::band::line(b.value, &b.band, num),
            smpsim_report::band::parts_line(&b.band, num)
        ));
    }
    s.push_str(&format!("  {}\n", summary.note()));
    s
}

/// The run's JSON (`report`, as `run --format json` writes it) with
/// `bands` added.
pub fn json(report: &str, bands: &[Banded]) -> String {
    let mut v: serde_json::Value = serde_json::from_str(report).expect("the run's own JSON");
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "bands".into(),
            serde_json::to_value(bands).expect("serializable"),
        );
    }
    let mut s = serde_json::to_string_pretty(&v).expect("serializable");
    s.push('\n');
    s
}

/// The bands for LKML text: one line per figure in 72 columns.
pub fn lkml(bands: &[Banded]) -> String {
    let mut s = String::from("\nbands (seeds, assumed values, model error):\n");
    for b in bands {
        let mut line = format!(
            "  {} [{} - {}] {}",
            b.figure,
            smpsim_report::band::num(b.band.lo),
            smpsim_report::band::num(b.band.hi),
            b.band.dominant
        );
        if line.chars().count() > 72 {
            line = line.chars().take(71).collect::<String>() + "~";
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}
