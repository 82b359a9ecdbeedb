//! The figures the README and the case docs quote from `reproduce` are the
//! program's (issue 37: `docs/membarrier-percpu.md` gave 205.7x after the
//! program had moved to 122.2x).
//!
//! Every quoted figure is registered below: the doc, the text that quotes
//! it, the case and metric it comes from, and the run (the full one, or
//! `--quick`). Three checks:
//!
//! - always: every registered quote is still in its doc, word for word (a
//!   doc edit that changes a figure must change its entry too);
//! - always (cheap): the cases whose full run takes well under a second
//!   (`hotplug-smt`) are run and their figures compared;
//! - with a results file: `SMPSIM_REPRODUCE_JSON=FILE` (from `smpsim
//!   reproduce --format json -o FILE`, the full run, ~3 min) compares
//!   every full-run figure, `SMPSIM_REPRODUCE_QUICK_JSON=FILE` (`reproduce
//!   --quick`, which the CI script's reproduce step writes) every quick one.
//!
//! A figure matches when the program's value, rounded to the decimals the
//! doc gives, is the doc's number.

mod common;

use common::{repo, smpsim};

/// Which `reproduce` run a figure comes from.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Run {
    Full,
    Quick,
}

/// A figure a doc quotes.
struct Figure {
    doc: &'static str,
    /// Text of the doc that quotes it (unique enough to find).
    quoted: &'static str,
    /// The number as the quote writes it (commas allowed).
    number: &'static str,
    run: Run,
    case: &'static str,
    metric: &'static str,
    /// The metric times this is the doc's number (units, sign).
    scale: f64,
}

/// The registered figures, one a line:
/// `doc, run, case, metric [* scale], number, quoted`: the doc quotes
/// `number` in the text `quoted`, and it is the `metric` of `case` in
/// that `reproduce` run, times `scale` (units, sign) if given.
macro_rules! figures {
    ($($doc:expr, $run:ident, $case:literal, $metric:literal $(* $scale:literal)?, $number:literal, $quoted:literal;)*) => {
        &[$(Figure {
            doc: $doc,
            quoted: $quoted,
            number: $number,
            run: Run::$run,
            case: $case,
            metric: $metric,
            scale: 1.0 $(* $scale)?,
        }),*]
    };
}

const README: &str = "README.md";
const MEMBARRIER: &str = "docs/membarrier-percpu.md";
const IPI_PREEMPT: &str = "docs/ipi-preempt.md";
const SLOW_MUTEX: &str = "docs/slow-mutex.md";

const FIGURES: &[Figure] = figures! {
    // README, seed reproductions table.
    README, Full, "membarrier-percpu", "throughput_ratio", "241.4", "| 241.4x (2 s); sentinel max 1.5 ms |";
    README, Full, "membarrier-percpu", "sentinel_max_latency_ms_after", "1.5", "| 241.4x (2 s); sentinel max 1.5 ms |";
    README, Full, "slow-mutex", "sys_per_reader_s_spin", "2.743", "| sys 2.743 / 0.458 s,";
    README, Full, "slow-mutex", "sys_per_reader_s_nospin", "0.458", "| sys 2.743 / 0.458 s,";
    README, Full, "slow-mutex", "wall_s_spin", "2.744", "real 2.744 / 2.746 s, one reader 0.458 s |";
    README, Full, "slow-mutex", "wall_s_nospin", "2.746", "real 2.744 / 2.746 s, one reader 0.458 s |";
    README, Full, "slow-mutex", "single_reader_sys_s", "0.458", "one reader 0.458 s |";
    README, Full, "ipi-preempt", "p99_max_preempt_off_ns_before", "23,993,332", "| 23,993,332 ns before,";
    README, Full, "ipi-preempt", "p99_max_preempt_off_ns_after", "2,136,903", "2,136,903 ns after (-91.1%)";
    README, Full, "ipi-preempt", "reduction_pct", "91.1", "2,136,903 ns after (-91.1%)";
    README, Full, "hotplug-smt", "smt1_baseline_s", "56.8", "| 56.8 s -> 2.52 s, 28.1 s -> 0.64 s;";
    README, Full, "hotplug-smt", "smt1_expedited_s", "2.52", "| 56.8 s -> 2.52 s, 28.1 s -> 0.64 s;";
    README, Full, "hotplug-smt", "smt8_baseline_s", "28.1", "| 56.8 s -> 2.52 s, 28.1 s -> 0.64 s;";
    README, Full, "hotplug-smt", "smt8_expedited_s", "0.64", "| 56.8 s -> 2.52 s, 28.1 s -> 0.64 s;";
    README, Full, "hotplug-smt", "smt1_batched_ratio", "1.00", "batching: ratio 1.00 / 1.00 |";
    README, Full, "lazy-tlb", "switches_per_s_refcount" * 1e-6, "4.14", "| 4.14M/s and 93.9M/s (22.7x;";
    README, Full, "lazy-tlb", "switches_per_s_shootdown" * 1e-6, "93.9", "| 4.14M/s and 93.9M/s (22.7x;";
    README, Full, "lazy-tlb", "speedup", "22.7", "| 4.14M/s and 93.9M/s (22.7x;";
    // README, "How to read a band": the quick run's text.
    README, Quick, "membarrier-percpu", "throughput_ratio", "248.7", "membarrier-percpu throughput_ratio: 248.7 [";
    // docs/membarrier-percpu.md, its result table.
    MEMBARRIER, Full, "membarrier-percpu", "throughput_ratio", "241.4", "| `throughput_ratio` (after / before) | ~200 | **241.4** |";
    MEMBARRIER, Full, "membarrier-percpu", "sentinel_max_latency_ms_after", "1.5", "| `sentinel_max_latency_ms_after` | <= 50 (test criterion) | 1.5 | 0.004 |";
    MEMBARRIER, Quick, "membarrier-percpu", "throughput_ratio", "248.7", "full 241.4, quick 248.7";
    MEMBARRIER, Full, "membarrier-percpu", "throughput_ratio", "241.4", "full 241.4, quick 248.7";
    MEMBARRIER, Quick, "membarrier-percpu", "sentinel_max_latency_ms_after", "0.004", "| 1.5 | 0.004 |";
    MEMBARRIER, Quick, "membarrier-percpu", "sentinel_max_latency_ms_before", "0.002", "| 0.002 | information |";
    MEMBARRIER, Full, "membarrier-percpu", "sentinel_max_latency_ms_before", "1.5", "| (none) | 1.5 | 0.002 |";
    // docs/ipi-preempt.md, its result table (full and quick columns).
    IPI_PREEMPT, Full, "ipi-preempt", "p99_max_preempt_off_ns_before", "23,993,332", "| 16,723,307 | 23,993,332 | 1.43 | 18,629,610 |";
    IPI_PREEMPT, Quick, "ipi-preempt", "p99_max_preempt_off_ns_before", "18,629,610", "| 16,723,307 | 23,993,332 | 1.43 | 18,629,610 |";
    IPI_PREEMPT, Full, "ipi-preempt", "p99_max_preempt_off_ns_after", "2,136,903", "| 1,556,034 | 2,136,903 | 1.37 | 3,963,932 |";
    IPI_PREEMPT, Quick, "ipi-preempt", "p99_max_preempt_off_ns_after", "3,963,932", "| 1,556,034 | 2,136,903 | 1.37 | 3,963,932 |";
    IPI_PREEMPT, Full, "ipi-preempt", "reduction_pct", "91.1", "| 90.7 | 91.1 | +0.4 points | 78.7 |";
    IPI_PREEMPT, Quick, "ipi-preempt", "reduction_pct", "78.7", "| 90.7 | 91.1 | +0.4 points | 78.7 |";
    SLOW_MUTEX, Full, "slow-mutex", "wall_s_nospin", "2.746", "| `wall_s_nospin` | ~2.79 | 2.746 |";
};

fn doc(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_registered_figure_is_still_quoted() {
    for f in FIGURES {
        let text = doc(f.doc);
        assert!(
            text.contains(f.quoted),
            "{}: no longer quotes `{}`: update the doc and its entry in this test together",
            f.doc,
            f.quoted
        );
        assert!(
            f.quoted.contains(f.number),
            "entry for {}: `{}` is not in `{}`",
            f.metric,
            f.number,
            f.quoted
        );
    }
}

/// The program's value, rounded as the doc writes it, against the doc's.
fn check(f: &Figure, rows: &serde_json::Value) -> Result<(), String> {
    let row = rows
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["case"] == f.case && r["metric"] == f.metric)
        .ok_or_else(|| format!("no {} {} in the results", f.case, f.metric))?;
    let simulated = row["simulated"].as_f64().ok_or("no simulated figure")? * f.scale;
    let decimals = f.number.split_once('.').map_or(0, |(_, d)| d.len());
    let quoted: f64 = f.number.replace(',', "").parse().unwrap();
    let rounded = format!("{simulated:.decimals$}");
    if (rounded.parse::<f64>().unwrap() - quoted).abs() > 1e-9 {
        return Err(format!(
            "{}: `{}` quotes {} for {} {} ({:?} run); the program gives {simulated} ({rounded})",
            f.doc, f.quoted, f.number, f.case, f.metric, f.run
        ));
    }
    Ok(())
}

fn check_all(run: Run, rows: &serde_json::Value, only: Option<&[&str]>) {
    let errors: Vec<String> = FIGURES
        .iter()
        .filter(|f| f.run == run && only.is_none_or(|o| o.contains(&f.case)))
        .filter_map(|f| check(f, rows).err())
        .collect();
    assert!(errors.is_empty(), "figures drifted:\n{}", errors.join("\n"));
}

/// `hotplug-smt`'s full run takes a fraction of a second: always checked.
#[test]
fn the_cheap_cases_quoted_figures_are_the_programs() {
    let out = smpsim()
        .args(["reproduce", "hotplug-smt", "-q", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    check_all(Run::Full, &rows, Some(&["hotplug-smt"]));
}

fn results(var: &str) -> Option<serde_json::Value> {
    let path = std::env::var_os(var)?;
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{var}={}: {e}", path.to_string_lossy()));
    Some(serde_json::from_str(&text).unwrap())
}

#[test]
fn quoted_figures_match_a_given_reproduce_run() {
    let mut checked = false;
    if let Some(rows) = results("SMPSIM_REPRODUCE_JSON") {
        check_all(Run::Full, &rows, None);
        checked = true;
    }
    if let Some(rows) = results("SMPSIM_REPRODUCE_QUICK_JSON") {
        check_all(Run::Quick, &rows, None);
        checked = true;
    }
    if !checked {
        eprintln!(
            "doc_figures: no SMPSIM_REPRODUCE_JSON / SMPSIM_REPRODUCE_QUICK_JSON given: only the cheap cases were compared"
        );
    }
}
