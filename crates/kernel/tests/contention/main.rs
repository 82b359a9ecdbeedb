//! The coherence model against published **contended** micro-benchmarks
//! (`data/contention/`): one set of global contention rules fitted on the
//! one-line curves of every machine, checked by leaving each machine out
//! of the fit (`fit`), and folly's lock curves as predictions (`folly`).
//!
//! `cargo test --release -p smpsim-kernel --test contention -- --nocapture`
//! prints the tables of docs/contention.md.

mod curves;
mod fit;
mod folly;
mod model;

use curves::MACHINES;
use fit::*;
use model::Rules;

fn grid() -> Vec<Rules> {
    let env = |k: &str, d: &str| -> Vec<f64> {
        std::env::var(k)
            .unwrap_or_else(|_| d.into())
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let mut g = Vec::new();
    for &occupancy in &env("FIT_OCC", "5,10,15") {
        for &per_transfer in &env("FIT_PT", "0.5,0.75,1,1.25") {
            for &forward in &env("FIT_FWD", "0.5,0.75,1") {
                for &snoop in &env("FIT_SNOOP", "0,0.25,0.5,0.75,1") {
                    g.push(Rules {
                        occupancy,
                        per_transfer,
                        forward,
                        snoop,
                    });
                }
            }
        }
    }
    g
}

fn row(points: &[curves::Point], model: &[f64], mi: usize) -> String {
    let mut out = String::new();
    for (ci, (bench, _)) in MACHINES[mi].curves.iter().enumerate() {
        out += &format!("\n    {bench:18}");
        for (p, m) in points.iter().zip(model) {
            if p.machine == mi && p.curve == ci {
                out += &format!(" N{}:{:.2}", p.threads, m / p.published);
            }
        }
    }
    out
}

/// Every machine of `data/contention/curves.csv` is run, or says why not.
#[test]
fn every_machine_of_the_data_is_run_or_says_why_not() {
    let all = curves::published();
    let ids: std::collections::BTreeSet<&str> = all.iter().map(|p| p.machine.as_str()).collect();
    for id in ids {
        let run = MACHINES.iter().any(|m| m.id == id);
        let why_not = curves::NOT_RUN.iter().any(|n| n.0 == id);
        assert!(
            run != why_not,
            "{id}: run {run}, listed as not run {why_not}"
        );
    }
}

/// Machines whose own median, left out of the fit, is above the issue's
/// x1.5, each with the reason (docs/contention.md): the test fails if one
/// of them comes within it (remove it here) or another leaves it.
const KNOWN_MACHINE_MISSES: &[(&str, &str)] = &[(
    "i7-6700hq",
    "too fast left out (x0.55-0.68; x1.36 in sample): without it the other five choose a home busy 10 ns + 1.0 of a transfer per request over 1.25 by a near tie (score 0.150 vs 0.160), which its line, moving about once per increment, does not accept; its transfer is a proxy's (the 4.0 GHz i7-6700K). No idle transfer up to the clock-scaled 30.3 ns, no other scoring, no uniformly finer grid and no seventh machine closed it (docs/contention.md, \"The i7-6700HQ's miss\")",
)];

/// Over every point of every machine left out: the bound is a
/// median within x1.35; met (x1.23), with the i7 above x1.5 and four
/// points beyond x2.5 (docs/contention.md).
const OVERALL_MEDIAN_BOUND_MET: bool = true;

/// What the model does meet, left out (x1.23 over all points, x1.58 on
/// the worst machine): a change that loses ground fails here, whatever
/// the recorded table says.
const OVERALL_MEDIAN_CEILING: f64 = 1.25;
const MACHINE_MEDIAN_CEILING: f64 = 1.60;

#[test]
#[cfg_attr(debug_assertions, ignore = "simulates a grid: cargo test --release")]
fn global_rules_predict_each_machine_left_out() {
    let all = curves::published();
    let points = curves::points(&all);
    let grid = grid();
    let model = evaluate(&points, &grid);
    let g = best(&points, &model, |_| true);
    eprintln!("in-sample: {:?}", grid[g]);
    for (mi, m) in MACHINES.iter().enumerate() {
        eprintln!("  {}{}", m.id, row(&points, &model[g], mi));
    }
    print_own_best(&points, &model, &grid);
    if let Ok(kinds) = std::env::var("FIT_CRITERIA") {
        compare_criteria(&points, &model, &grid, &kinds);
    }
    let loo = leave_one_out(&points, &model);
    let mut everything = Vec::new();
    let mut per_machine = Vec::new();
    for (mi, &lg) in loo.iter().enumerate() {
        let errs: Vec<f64> = points
            .iter()
            .zip(&model[lg])
            .filter(|(p, _)| p.machine == mi)
            .map(|(p, &m)| ln_err(p, m).abs())
            .collect();
        everything.extend(errs.iter().copied());
        let (med, worst) = (
            median(errs.clone()).exp(),
            errs.iter().cloned().fold(0.0, f64::max).exp(),
        );
        // How decided the fit without it is: the others' score of the
        // rules fitted without it against that of the rules fitted on all.
        let others = |k: usize| k != mi;
        eprintln!(
            "left out: {} median x{med:.2} worst x{worst:.2} under {:?} (the others' score {:.4}; {:.4} under the rules fitted on all){}",
            MACHINES[mi].id,
            grid[lg],
            score(&points, &model[lg], others),
            score(&points, &model[g], others),
            row(&points, &model[lg], mi)
        );
        per_machine.push((mi, errs.len(), med, worst));
    }
    let overall = median(everything).exp();
    let worst_machine = per_machine
        .iter()
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .expect("machines");
    eprintln!("left out, all points: median x{overall:.2}");
    let toml = table_toml(&grid[g], overall, worst_machine, &per_machine);
    eprintln!("--- crates/machine/contention.toml, generated part ---\n{toml}");

    // The shipped table is this fit.
    let t = smpsim_machine::contention_table();
    let r = &t.rules;
    assert_eq!(
        (
            r.occupancy_ns,
            r.occupancy_per_transfer,
            r.forward_fraction,
            r.snoop_fraction
        ),
        (
            grid[g].occupancy,
            grid[g].per_transfer,
            grid[g].forward,
            grid[g].snoop
        ),
        "contention.toml's rules are not the fit's: record the table printed above"
    );
    let close = |a: f64, b: f64| (a - b).abs() < 0.006;
    assert!(
        close(t.left_out.median, overall),
        "left_out.median: record the table above"
    );
    for &(mi, n, med, worst) in &per_machine {
        let m = &MACHINES[mi];
        let c = t
            .machines
            .iter()
            .find(|c| c.data == m.id)
            .unwrap_or_else(|| panic!("contention.toml has no row for {}", m.id));
        assert_eq!(c.preset, m.preset);
        assert!(
            c.points as usize == n && close(c.median, med) && close(c.worst, worst),
            "{}: record the table above",
            m.id
        );
        assert!(
            med <= MACHINE_MEDIAN_CEILING,
            "{}: left-out median x{med:.2} above x{MACHINE_MEDIAN_CEILING}",
            m.id
        );
        // The bounds, or a named miss.
        let known = KNOWN_MACHINE_MISSES.iter().any(|k| k.0 == m.id);
        assert_eq!(
            med > 1.5,
            known,
            "{}: left-out median x{med:.2} (known miss: {known})",
            m.id
        );
    }
    assert!(
        overall <= OVERALL_MEDIAN_CEILING,
        "left-out median x{overall:.2} above x{OVERALL_MEDIAN_CEILING}"
    );
    assert_eq!(
        overall <= 1.35,
        OVERALL_MEDIAN_BOUND_MET,
        "left-out median x{overall:.2}"
    );
}

/// Each machine's median factor under a set of rules.
fn machine_medians(points: &[curves::Point], model: &[f64]) -> Vec<f64> {
    (0..MACHINES.len())
        .map(|mi| {
            let errs: Vec<f64> = points
                .iter()
                .zip(model)
                .filter(|(p, _)| p.machine == mi)
                .map(|(p, &m)| ln_err(p, m).abs())
                .collect();
            median(errs).exp()
        })
        .collect()
}

/// For each machine, the rules of the grid that fit it best alone, and
/// every machine's median under them: whether any rules of the grid fit
/// one machine without losing another (docs/contention.md, the i7).
fn print_own_best(points: &[curves::Point], model: &[Modelled], grid: &[Rules]) {
    eprintln!("each machine's own best rules; every machine's median under them:");
    for (mi, m) in MACHINES.iter().enumerate() {
        let g = best(points, model, |k| k == mi);
        let meds: Vec<String> = machine_medians(points, &model[g])
            .iter()
            .zip(MACHINES)
            .map(|(v, o)| format!("{} x{v:.2}", o.id))
            .collect();
        eprintln!("  {} under {:?}: {}", m.id, grid[g], meds.join(", "));
    }
}

/// An experiment (`FIT_CRITERIA=meanabs,median,minimax`): the
/// leave-one-out table under each way of scoring the fit, on the grid
/// already simulated. Prints, then panics: the recorded table is the
/// default criterion's.
fn compare_criteria(points: &[curves::Point], model: &[Modelled], grid: &[Rules], kinds: &str) {
    for kind in kinds.split(',') {
        set_criterion(kind);
        let g = best(points, model, |_| true);
        let loo = leave_one_out(points, model);
        let mut all = Vec::new();
        let mut row = Vec::new();
        for (mi, &lg) in loo.iter().enumerate() {
            let errs: Vec<f64> = points
                .iter()
                .zip(&model[lg])
                .filter(|(p, _)| p.machine == mi)
                .map(|(p, &m)| ln_err(p, m).abs())
                .collect();
            let worst = errs.iter().cloned().fold(0.0, f64::max).exp();
            all.extend(errs.iter().copied());
            row.push(format!(
                "{} x{:.2} (worst x{worst:.2}) under {:?}",
                MACHINES[mi].id,
                median(errs).exp(),
                grid[lg]
            ));
        }
        let beyond = all.iter().filter(|e| e.exp() > 2.5).count();
        eprintln!(
            "criterion {kind}: all-six rules {:?}; left out, all points x{:.2}, {beyond} beyond x2.5\n    {}",
            grid[g],
            median(all).exp(),
            row.join("\n    ")
        );
    }
    panic!("FIT_CRITERIA is an experiment: the recorded table is the default criterion's");
}

/// The generated part of `crates/machine/contention.toml`.
fn table_toml(
    rules: &Rules,
    overall: f64,
    worst: &(usize, usize, f64, f64),
    per_machine: &[(usize, usize, f64, f64)],
) -> String {
    let mut s = format!(
        "[rules]\noccupancy_ns = {:?}\noccupancy_per_transfer = {:?}\nforward_fraction = {:?}\nsnoop_fraction = {:?}\n\n[left_out]\nmedian = {overall:.2}\nworst_machine = {:.2}\nworst_machine_id = \"{}\"\n",
        rules.occupancy, rules.per_transfer, rules.forward, rules.snoop, worst.2, MACHINES[worst.0].id
    );
    for &(mi, n, med, w) in per_machine {
        let m = &MACHINES[mi];
        let curves: Vec<String> = m.curves.iter().map(|c| format!("\"{}\"", c.0)).collect();
        s += &format!(
            "\n[[machine]]\npreset = \"{}\"\ndata = \"{}\"\ncurves = [{}]\npoints = {n}\nmedian = {med:.2}\nworst = {w:.2}\n",
            m.preset,
            m.id,
            curves.join(", ")
        );
    }
    s
}
