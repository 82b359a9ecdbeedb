//! The global fit and its leave-one-machine-out check.
//!
//! Every machine's curves are simulated under each set of global rules of
//! a grid. The shipped rules are those that minimise the mean over
//! machines of each machine's mean squared ln(model / published) (every
//! machine weighs the same, however many points it has).
//! Leave-one-machine-out: for each machine, the rules that minimise the
//! same score over the *other* machines, and this machine's error under
//! them: what a prediction for a machine whose curves the fit never saw is
//! worth.

use std::collections::BTreeMap;

use crate::curves::{Point, MACHINES};
use crate::model::{ns_per_op, Rules};

/// The model's figure for each point.
pub type Modelled = Vec<f64>;

/// Simulates every point under every set of rules, on every host CPU.
pub fn evaluate(points: &[Point], grid: &[Rules]) -> Vec<Modelled> {
    let jobs: Vec<(usize, usize)> = (0..grid.len())
        .flat_map(|g| (0..points.len()).map(move |p| (g, p)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out = std::sync::Mutex::new(vec![0.0; jobs.len()]);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(g, p)) = jobs.get(i) else { break };
                let pt = &points[p];
                let m = &MACHINES[pt.machine];
                let ns = ns_per_op(m, m.curves[pt.curve].1, pt.threads, grid[g]);
                out.lock().unwrap()[i] = ns;
            });
        }
    });
    out.into_inner()
        .unwrap()
        .chunks(points.len())
        .map(|c| c.to_vec())
        .collect()
}

pub fn ln_err(p: &Point, model: f64) -> f64 {
    (model / p.published).ln()
}

/// How the fit scores a set of rules (`FIT_CRITERION`, an experiment's
/// knob; the shipped fit is the default, `meansq`): per machine, the mean
/// squared ln error (`meansq`), the mean |ln error| (`meanabs`) or the
/// median |ln error| (`median`, `minimax`); over machines, their mean,
/// or the worst machine's (`minimax`).
fn criterion() -> String {
    if let Some(c) = CRITERION.lock().unwrap().clone() {
        return c;
    }
    std::env::var("FIT_CRITERION").unwrap_or_else(|_| "meansq".into())
}

static CRITERION: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Scores the fit by `kind` from now on (`FIT_CRITERIA`: several
/// criteria compared on one simulated grid).
pub fn set_criterion(kind: &str) {
    *CRITERION.lock().unwrap() = Some(kind.into());
}

/// Each machine's score under one set of rules (`criterion`).
pub fn machine_scores(points: &[Point], model: &[f64]) -> BTreeMap<usize, f64> {
    let kind = criterion();
    let mut errs: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for (p, &m) in points.iter().zip(model) {
        errs.entry(p.machine).or_default().push(ln_err(p, m));
    }
    errs.into_iter()
        .map(|(k, e)| {
            let n = e.len() as f64;
            let s = match kind.as_str() {
                "meansq" => e.iter().map(|x| x * x).sum::<f64>() / n,
                "meanabs" => e.iter().map(|x| x.abs()).sum::<f64>() / n,
                "median" | "minimax" => median(e.iter().map(|x| x.abs()).collect()),
                other => panic!("FIT_CRITERION {other}: meansq, meanabs, median or minimax"),
            };
            (k, s)
        })
        .collect()
}

/// The rules (index into the grid) minimising the mean score of the
/// machines `keep` accepts (the worst one's under `minimax`).
pub fn best(points: &[Point], model: &[Modelled], keep: impl Fn(usize) -> bool) -> usize {
    (0..model.len())
        .min_by(|&a, &b| {
            score(points, &model[a], &keep).total_cmp(&score(points, &model[b], &keep))
        })
        .expect("a grid")
}

/// The fit's score of one set of rules over the machines `keep` accepts:
/// the mean of their scores (the worst one's under `minimax`).
pub fn score(points: &[Point], model: &[f64], keep: impl Fn(usize) -> bool) -> f64 {
    let kept: Vec<f64> = machine_scores(points, model)
        .into_iter()
        .filter(|(k, _)| keep(*k))
        .map(|(_, s)| s)
        .collect();
    if criterion() == "minimax" {
        kept.iter().cloned().fold(0.0, f64::max)
    } else {
        kept.iter().sum::<f64>() / kept.len() as f64
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// For each machine, the grid index fitted without it.
pub fn leave_one_out(points: &[Point], model: &[Modelled]) -> Vec<usize> {
    (0..MACHINES.len())
        .map(|mi| best(points, model, |k| k != mi))
        .collect()
}
