//! `docs/lock-scaling.md` quotes the lock-scaling sweep
//! (`docs/lock-scaling.csv`, written by `docs/sweeps/lock-scaling.sh`),
//! lock_stat counts of its runs and first-principles estimates from the
//! machine's transfers. It was left quoting the model of before issue 38
//! (ticket 0.229M at 48 CPUs where the program gave 0.115M); these checks
//! make the next model change fail here instead:
//!
//! - the doc's table is the CSV, every cell to three significant figures
//!   (on failure the message holds the table as it should read);
//! - every registered figure of the doc's prose (and the README's summary)
//!   is the CSV's, a run's or its estimate's, to the decimals it gives;
//! - the CSV is the program's: a sweep at a few CPU counts gives its rows
//!   exactly (re-run `docs/sweeps/lock-scaling.sh` when it does not);
//! - the estimates' formulas hold where the machine's distances cannot
//!   blur them: on a machine whose transfers are all 100 ns each run is
//!   within 1% of its formula (the doc says so);
//! - the machine's standing line the doc quotes is the program's.

mod common;

use std::collections::HashMap;

use common::{repo, smpsim};

const DOC: &str = "docs/lock-scaling.md";
const README: &str = "README.md";
const CSV: &str = "docs/lock-scaling.csv";
const SCENARIO: &str = "scenarios/lock-scaling.toml";
const PRESET: &str = "opteron-6172-48";

/// CPU counts the program re-runs (the CSV's other rows are trusted to
/// the script): one alone, one past the knee, all.
const SWEPT: &str = "1,12,48";

/// Where a quoted figure comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// A kind's acquisitions per second at N CPUs, in millions (the CSV).
    Rate(&'static str, u32),
    /// One kind's rate over another's at N CPUs (the CSV).
    Ratio(&'static str, &'static str, u32),
    /// Transfers of the lock's line per acquisition (lock_stat `bounces /
    /// acquisitions` of `lock`) of a kind at N CPUs (a run).
    PerAcquisition(&'static str, u32),
    /// lock_stat's longest wait of a kind at N CPUs, in ms (a run).
    WaitMaxMs(&'static str, u32),
    /// A kind's rate at N CPUs without the snoop window
    /// (`coherence.snoop_fraction = 0`), in millions (a run).
    NoWindow(&'static str, u32),
    /// The doc's estimate of a kind's rate at 48 CPUs, in millions, with
    /// every transfer `x` ns ([`estimate_ns`]).
    Estimate(&'static str, f64),
    /// A kind's rate at 48 CPUs (the CSV) as a percentage of its estimate
    /// on the Opteron.
    OfEstimate(&'static str),
}

/// A figure a doc quotes: the text quoting it (whitespace runs count as
/// one space) and the number as written.
struct Quote {
    doc: &'static str,
    quoted: &'static str,
    number: &'static str,
    from: Source,
}

const fn q(doc: &'static str, quoted: &'static str, number: &'static str, from: Source) -> Quote {
    Quote {
        doc,
        quoted,
        number,
        from,
    }
}

/// Mean transfer between two of the Opteron's 48 CPUs (the preset's SOSP
/// 2013 Table 2 figures): 5 on the same die, 6 on the other die of the
/// package, 18 one hop and 18 two hops away.
const OPTERON_MEAN_X: f64 = (5.0 * 38.6 + 6.0 * 76.7 + 18.0 * 81.9 + 18.0 * 120.0) / 47.0;

use Source::*;

const QUOTES: &[Quote] = &[
    q(
        DOC,
        "`T = 3x̄ + cs` = 583 ns: 1.72M",
        "1.72",
        Estimate("mcs", OPTERON_MEAN_X),
    ),
    q(DOC, "mcs: sweep 1.72M", "1.72", Rate("mcs", 48)),
    q(
        DOC,
        "1.0 transfers of the lock word per acquisition",
        "1.0",
        PerAcquisition("mcs", 48),
    ),
    q(
        DOC,
        "`1 / (8x̄ + 2a)` = 1.31M",
        "1.31",
        Estimate("qspinlock", OPTERON_MEAN_X),
    ),
    q(DOC, "qspinlock: sweep 1.10M", "1.10", Rate("qspinlock", 48)),
    q(
        DOC,
        "1.10M, 8.0 per acquisition",
        "8.0",
        PerAcquisition("qspinlock", 48),
    ),
    q(
        DOC,
        "the line is busy 84% of the time",
        "84",
        OfEstimate("qspinlock"),
    ),
    q(
        DOC,
        "qspinlock/mcs = 0.64 at 48",
        "0.64",
        Ratio("qspinlock", "mcs", 48),
    ),
    q(
        DOC,
        "`T = 94x̄` = 8.57 us: 0.117M",
        "0.117",
        Estimate("ticket", OPTERON_MEAN_X),
    ),
    q(DOC, "ticket: sweep 0.115M", "0.115", Rate("ticket", 48)),
    q(
        DOC,
        "0.115M, 93.6 per acquisition",
        "93.6",
        PerAcquisition("ticket", 48),
    ),
    q(
        DOC,
        "qspinlock/ticket = 9.6x at 48",
        "9.6",
        Ratio("qspinlock", "ticket", 48),
    ),
    q(
        DOC,
        "= 5.54 us: 0.180M",
        "0.180",
        Estimate("tas", OPTERON_MEAN_X),
    ),
    q(DOC, "tas: sweep 0.207M", "0.207", Rate("tas", 48)),
    q(
        DOC,
        "0.207M, 48.8 per acquisition",
        "48.8",
        PerAcquisition("tas", 48),
    ),
    q(DOC, "tas gives 0.257M at 48", "0.257", NoWindow("tas", 48)),
    q(
        DOC,
        "tas_backoff: sweep 0.482M",
        "0.482",
        Rate("tas_backoff", 48),
    ),
    q(
        DOC,
        "0.482M, 19.3 per acquisition",
        "19.3",
        PerAcquisition("tas_backoff", 48),
    ),
    q(
        DOC,
        "(19.3 x 109.4 ns",
        "19.3",
        PerAcquisition("tas_backoff", 48),
    ),
    q(DOC, "against 1/0.482M", "0.482", Rate("tas_backoff", 48)),
    q(
        DOC,
        "(4.6 at 12 CPUs)",
        "4.6",
        PerAcquisition("tas_backoff", 12),
    ),
    q(
        DOC,
        "= 17.8 us: 0.056M",
        "0.056",
        Estimate("ttas", OPTERON_MEAN_X),
    ),
    q(DOC, "ttas: sweep 0.0626M", "0.0626", Rate("ttas", 48)),
    q(
        DOC,
        "0.0626M, 186.8 per acquisition",
        "186.8",
        PerAcquisition("ttas", 48),
    ),
    q(
        DOC,
        "`waittime-max`, 20.0 ms",
        "20.0",
        WaitMaxMs("ttas", 48),
    ),
    q(
        DOC,
        "formulas give mcs 1.62M",
        "1.62",
        Estimate("mcs", FLAT_X),
    ),
    q(DOC, "ticket 0.106M,", "0.106", Estimate("ticket", FLAT_X)),
    q(DOC, "tas 0.167M and", "0.167", Estimate("tas", FLAT_X)),
    q(DOC, "ttas 0.0514M;", "0.0514", Estimate("ttas", FLAT_X)),
    q(
        README,
        "collapses to 0.11M acquisitions/s at 48",
        "0.11",
        Rate("ticket", 48),
    ),
    q(
        README,
        "stays near 1.1M past its knee",
        "1.1",
        Rate("qspinlock", 48),
    ),
    q(
        README,
        "0.64 of a plain MCS lock",
        "0.64",
        Ratio("qspinlock", "mcs", 48),
    ),
];

/// The doc's constants: an atomic's extra cost (the preset's), the
/// critical section's local work, the waiters at 48 CPUs.
const ATOMIC: f64 = 18.2;
const WORK: f64 = 200.0;
const WAITERS: f64 = 46.0;

/// Nanoseconds per acquisition at 48 CPUs, every transfer `x`, by the
/// doc's formulas ("Each kind, from the transactions on the lock's line");
/// for qspinlock the line's bound.
fn estimate_ns(kind: &str, x: f64) -> f64 {
    let (a, k) = (ATOMIC, WAITERS);
    let cs = x + a + WORK;
    match kind {
        "mcs" => 3.0 * x + cs,
        "qspinlock" => 8.0 * x + 2.0 * a,
        "ticket" => (2.0 * k + 2.0) * x,
        "tas" => (k + 1.0) * (x + a) + x + cs,
        "ttas" => (4.0 * k + 2.0) * x + k * a,
        _ => panic!("no estimate for {kind}"),
    }
}

/// Every transfer this long on the flat machine.
const FLAT_X: f64 = 100.0;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The CSV: column names (after `cpus`) and rate by (kind, CPUs).
fn csv() -> (Vec<String>, HashMap<(String, u32), f64>) {
    let text = read(CSV);
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    assert_eq!(header[0], "cpus");
    let mut rates = HashMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let cpus: u32 = cells[0].parse().unwrap();
        for (kind, v) in header[1..].iter().zip(&cells[1..]) {
            rates.insert((kind.clone(), cpus), v.parse().unwrap());
        }
    }
    (header[1..].to_vec(), rates)
}

/// `m` (millions) to three significant figures, as the table writes it.
fn millions(per_second: f64) -> String {
    let m = per_second / 1e6;
    let decimals = (2 - m.log10().floor() as i32).max(0) as usize;
    format!("{m:.decimals$}M")
}

#[test]
fn the_docs_table_is_the_csv() {
    let (kinds, rates) = csv();
    let mut cpus: Vec<u32> = rates.keys().map(|&(_, n)| n).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut table = format!("| CPUs | {} |\n", kinds.join(" | "));
    table += &format!("|{}\n", "---:|".repeat(kinds.len() + 1));
    for n in cpus {
        let row: Vec<String> = kinds
            .iter()
            .map(|k| millions(rates[&(k.clone(), n)]))
            .collect();
        table += &format!("| {n} | {} |\n", row.join(" | "));
    }
    assert!(
        read(DOC).contains(&table),
        "{DOC}'s table is not {CSV}'s; it should read:\n{table}"
    );
}

/// The value a source gives, or `None` if it needs a run the caller has
/// not made.
fn value(from: Source, rates: &HashMap<(String, u32), f64>, runs: Option<&Runs>) -> Option<f64> {
    let rate = |k: &str, n: u32| rates[&(k.to_string(), n)];
    Some(match from {
        Rate(k, n) => rate(k, n) / 1e6,
        Ratio(a, b, n) => rate(a, n) / rate(b, n),
        Estimate(k, x) => 1e3 / estimate_ns(k, x),
        OfEstimate(k) => 100.0 * rate(k, 48) / (1e9 / estimate_ns(k, OPTERON_MEAN_X)),
        PerAcquisition(k, n) => {
            let p = &runs?.points[&(k.to_string(), n)];
            p.bounces / p.acquisitions
        }
        WaitMaxMs(k, n) => runs?.points[&(k.to_string(), n)].wait_max_ns / 1e6,
        NoWindow(k, n) => runs?.no_window[&(k.to_string(), n)] / 1e6,
    })
}

fn check_quotes(runs: Option<&Runs>) {
    let (_, rates) = csv();
    let mut errors = Vec::new();
    for quote in QUOTES {
        let text = squeeze(&read(quote.doc));
        assert!(
            text.contains(quote.quoted),
            "{}: no longer quotes `{}`: update the doc and its entry in this test together",
            quote.doc,
            quote.quoted
        );
        assert!(
            quote.quoted.contains(quote.number),
            "`{}` not in `{}`",
            quote.number,
            quote.quoted
        );
        let Some(v) = value(quote.from, &rates, runs) else {
            continue;
        };
        let decimals = quote.number.split_once('.').map_or(0, |(_, d)| d.len());
        let rounded = format!("{v:.decimals$}");
        if rounded != quote.number {
            errors.push(format!(
                "{}: `{}` quotes {} for {:?}; the program gives {v} ({rounded})",
                quote.doc, quote.quoted, quote.number, quote.from
            ));
        }
    }
    assert!(errors.is_empty(), "figures drifted:\n{}", errors.join("\n"));
}

#[test]
fn the_figures_quoted_from_the_csv_and_the_estimates_are_theirs() {
    check_quotes(None);
}

#[test]
fn the_quoted_standing_line_is_the_programs() {
    let out = smpsim().args(["machine", PRESET]).output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let standing = text
        .lines()
        .find(|l| l.starts_with("standing: "))
        .expect("a standing line");
    assert!(
        read(DOC).contains(&format!("> {standing}\n")),
        "{DOC} does not quote the standing line as `smpsim machine {PRESET}` prints it:\n{standing}"
    );
}

/// lock_stat of the `lock` object of one run.
struct Point {
    rate: f64,
    acquisitions: f64,
    bounces: f64,
    wait_max_ns: f64,
}

struct Runs {
    points: HashMap<(String, u32), Point>,
    no_window: HashMap<(String, u32), f64>,
}

/// `smpsim sweep` of the scenario on the preset with `args`, one point
/// per line: (kind, CPUs) -> the point; the kind is `rename` if given.
/// `name` names its scratch directory (tests run in parallel).
fn sweep(name: &str, args: &[&str], rename: Option<&str>) -> HashMap<(String, u32), Point> {
    let out_file = common::dir(name).join("r.jsonl");
    let out = smpsim()
        .args(["sweep", repo(SCENARIO).to_str().unwrap(), "-q", "-o"])
        .arg(&out_file)
        .args(["--preset", PRESET])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = std::fs::read_to_string(&out_file).unwrap();
    let mut points = HashMap::new();
    for line in text.lines() {
        let p: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind = rename.map_or_else(|| p["variant"].as_str().unwrap().to_string(), String::from);
        let cpus: u32 = p["settings"]["tasks.locker.count"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let r = &p["result"];
        let rate = r["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "acquisitions")
            .unwrap()["rate"]
            .as_f64()
            .unwrap();
        let lock = r["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == "lock")
            .unwrap();
        let f = |k: &str| lock[k].as_f64().unwrap();
        points.insert(
            (kind, cpus),
            Point {
                rate,
                acquisitions: f("acquisitions"),
                bounces: f("bounces"),
                wait_max_ns: f("wait_max_ns"),
            },
        );
    }
    points
}

#[test]
fn the_csv_and_the_quoted_runs_are_the_programs() {
    let count = format!("tasks.locker.count={SWEPT}");
    let mut points = sweep("lock-scaling-doc-kinds", &["--set", &count], None);
    points.extend(sweep(
        "lock-scaling-doc-ttas",
        &[
            "--variant",
            "tas",
            "--set",
            "variant.tas.objects.lock.kind=ttas",
            "--set",
            &count,
        ],
        Some("ttas"),
    ));
    let no_window = sweep(
        "lock-scaling-doc-no-window",
        &[
            "--variant",
            "tas",
            "--set",
            "machine.coherence.snoop_fraction=0",
            "--set",
            "tasks.locker.count=48",
        ],
        None,
    )
    .into_iter()
    .map(|(key, p)| (key, p.rate))
    .collect();

    let (kinds, rates) = csv();
    let mut stale = Vec::new();
    for kind in &kinds {
        for n in SWEPT.split(',').map(|n| n.parse::<u32>().unwrap()) {
            let run = points[&(kind.clone(), n)].rate;
            if format!("{run:.0}") != format!("{:.0}", rates[&(kind.clone(), n)]) {
                stale.push(format!(
                    "{kind} at {n} CPUs: the CSV has {}, the program gives {run:.0}",
                    rates[&(kind.clone(), n)]
                ));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{CSV} is stale: re-run `bash docs/sweeps/lock-scaling.sh > {CSV}` and the doc's table:\n{}",
        stale.join("\n")
    );
    check_quotes(Some(&Runs { points, no_window }));
}

/// `--set`s that make every transfer of the preset `FLAT_X` ns.
fn flat() -> Vec<String> {
    let mut sets: Vec<String> = [
        "same_llc",
        "same_node",
        "smt_sibling",
        "same_socket",
        "cross_socket",
    ]
    .iter()
    .map(|c| format!("machine.costs.line_transfer.{c}.ns={FLAT_X}"))
    .collect();
    sets.push(format!(
        "machine.costs.line_transfer.by_node_distance=[{{distance=16,ns={FLAT_X},source=\"flat\"}},{{distance=22,ns={FLAT_X},source=\"flat\"}}]"
    ));
    sets
}

#[test]
fn on_a_flat_machine_each_run_is_within_1pct_of_its_estimate() {
    let mut args = vec!["--set".to_string(), "tasks.locker.count=48".to_string()];
    for s in flat() {
        args.push("--set".into());
        args.push(s);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut with_variants = args.clone();
    with_variants.extend([
        "--variant",
        "mcs",
        "--variant",
        "ticket",
        "--variant",
        "tas",
    ]);
    let mut points = sweep("lock-scaling-doc-flat", &with_variants, None);
    let mut ttas = args.clone();
    ttas.extend([
        "--variant",
        "tas",
        "--set",
        "variant.tas.objects.lock.kind=ttas",
    ]);
    points.extend(sweep("lock-scaling-doc-flat-ttas", &ttas, Some("ttas")));
    for kind in ["mcs", "ticket", "tas", "ttas"] {
        let run = points[&(kind.to_string(), 48)].rate;
        let estimate = 1e9 / estimate_ns(kind, FLAT_X);
        let off = run / estimate - 1.0;
        assert!(
            off.abs() < 0.01,
            "{kind} at 48 CPUs, every transfer {FLAT_X} ns: the run gives {run:.0}/s, the doc's formula {estimate:.0}/s ({:+.1}%): the derivation in {DOC} no longer holds",
            off * 100.0
        );
    }
}
