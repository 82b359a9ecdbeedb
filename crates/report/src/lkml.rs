//! `--format lkml`: plain text that pastes into a reply on a kernel
//! mailing list. No line is longer than 72 columns; comparisons are
//! before / %change / after columns as `lkp ncompare` prints them (the
//! first variant is "before", each other one "after"), with `±N%`, the
//! standard deviation over seeds, where there are several.

use crate::sweep_point::SweepPoint;
use std::fmt::Write;

use crate::{fmt_ns, fmt_rate, VariantRun};

use crate::model::MetricRow;

pub const WIDTH: usize = 72;
/// Width of a value column.
const VAL: usize = 14;
/// Width of the %change column.
const PCT: usize = 8;

/// A value and how to print it.
#[derive(Clone, Copy)]
pub enum Unit {
    Rate,
    Ns,
    Count,
    Plain,
}

fn fmt(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        Unit::Rate => fmt_rate(v),
        Unit::Ns => fmt_ns(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Plain => {
            if v.abs() >= 1e5 {
                format!("{v:.0}")
            } else if v.abs() >= 100.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.3}")
            }
        }
    }
}

/// Mean and the standard deviation as a percentage of it.
fn mean_sd(vs: &[f64]) -> (f64, Option<f64>) {
    let n = vs.len() as f64;
    let mean = vs.iter().sum::<f64>() / n.max(1.0);
    if vs.len() < 2 || mean == 0.0 {
        return (mean, None);
    }
    let var = vs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, Some(100.0 * var.sqrt() / mean.abs()))
}

/// A value cell: the mean, then (`sd`) ncompare's `±NN%` field, the
/// standard deviation over seeds, blank where there is a single sample so
/// every row keeps the same columns.
fn cell(vs: &[f64], unit: Unit, sd: bool) -> String {
    if vs.is_empty() {
        // The variant does not have it (a lock only the other one has).
        return if sd { "-      ".into() } else { "-".into() };
    }
    let (m, dev) = mean_sd(vs);
    if !sd {
        return fmt(m, unit);
    }
    match dev {
        Some(d) => format!("{} ±{:>3.0}%", fmt(m, unit), d.min(999.0)),
        None => format!("{}      ", fmt(m, unit)),
    }
}

/// `+12.3%`, as ncompare prints the change from before to after.
pub fn pct_change(before: f64, after: f64) -> String {
    if !before.is_finite() || !after.is_finite() {
        "-".into()
    } else if before == 0.0 {
        if after == 0.0 {
            "0.0%".into()
        } else {
            "-".into()
        }
    } else {
        let p = 100.0 * (after - before) / before.abs();
        if p.abs() >= 1000.0 {
            format!("{:+.0}x", after / before)
        } else {
            format!("{p:+.1}%")
        }
    }
}

/// Words of `text` in lines of at most `WIDTH` columns, each after
/// `indent`; a word longer than a line is cut.
pub fn wrap(text: &str, indent: &str) -> String {
    let room = WIDTH - indent.chars().count();
    let mut out = String::new();
    let mut line = String::new();
    let mut words: Vec<String> = Vec::new();
    for w in text.split_whitespace() {
        let chars: Vec<char> = w.chars().collect();
        for chunk in chars.chunks(room.max(1)) {
            words.push(chunk.iter().collect());
        }
    }
    for w in words {
        if !line.is_empty() && line.chars().count() + 1 + w.chars().count() > room {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&w);
    }
    if !line.is_empty() || out.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// One compared row: values over seeds before and after, and its name.
pub struct Row {
    pub before: Vec<f64>,
    pub after: Vec<f64>,
    pub metric: String,
    pub unit: Unit,
}

/// The ncompare-style table: the variants, a `%stddev` / `%change` /
/// `%stddev` header, then before, %change, after, metric. `±N%` is on
/// every row when any row has several seeds, and on none otherwise; a
/// metric name too long for its column goes on under it, broken only
/// between words.
pub fn compare_table(before: &str, after: &str, rows: &[Row]) -> String {
    let sd = rows.iter().any(|r| r.before.len() > 1 || r.after.len() > 1);
    let name_w = WIDTH - 2 * VAL - PCT - 6;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>VAL$}  {:>PCT$}  {:>VAL$}",
        clip(before, VAL),
        "",
        clip(after, VAL)
    );
    let _ = writeln!(
        s,
        "{}  {}  {}  {}",
        "-".repeat(VAL),
        "-".repeat(PCT),
        "-".repeat(VAL),
        "-".repeat(name_w)
    );
    let _ = writeln!(
        s,
        "{:>VAL$}  {:>PCT$}  {:>VAL$}  metric",
        "%stddev", "%change", "%stddev"
    );
    let _ = writeln!(s, "{:>VAL$}  {:>PCT$}  {:>VAL$}", "\\", "|", "\\");
    for r in rows {
        let (b, _) = mean_sd(&r.before);
        let (a, _) = mean_sd(&r.after);
        let lead = format!(
            "{:>VAL$}  {:>PCT$}  {:>VAL$}  ",
            cell(&r.before, r.unit, sd),
            if r.before.is_empty() || r.after.is_empty() {
                "-".into()
            } else {
                pct_change(b, a)
            },
            cell(&r.after, r.unit, sd)
        );
        name_lines(&mut s, &lead, &r.metric, name_w);
    }
    s
}

/// A metric name after its `lead` cells, in a column of `w`: broken only
/// between words; a word longer than the column goes on a line of its own,
/// ending at the right margin.
fn name_lines(s: &mut String, lead: &str, name: &str, w: usize) {
    let pad = " ".repeat(lead.chars().count());
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in name.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > w {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    for (i, l) in lines.iter().enumerate() {
        let first = if i == 0 { lead } else { &pad };
        let n = l.chars().count();
        if n > w {
            // Too long for the column: the whole word, flush right.
            if i == 0 {
                let _ = writeln!(s, "{}", lead.trim_end());
            }
            let _ = writeln!(s, "{}{l}", " ".repeat(WIDTH.saturating_sub(n)));
        } else {
            let _ = writeln!(s, "{first}{l}");
        }
    }
}

fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

/// The rows comparing two runs: counters, latencies, CPU time maxima,
/// locks, context switches.
fn run_rows(before: &[&VariantRun], after: &[&VariantRun]) -> Vec<Row> {
    let mut rows = Vec::new();
    let first = &before[0].result;
    let mut push = |metric: String, unit: Unit, f: &dyn Fn(&VariantRun) -> Option<f64>| {
        let b: Vec<f64> = before.iter().filter_map(|r| f(r)).collect();
        let a: Vec<f64> = after.iter().filter_map(|r| f(r)).collect();
        if !b.is_empty() || !a.is_empty() {
            rows.push(Row {
                before: b,
                after: a,
                metric,
                unit,
            });
        }
    };
    let mut counters: Vec<String> = first.counters.iter().map(|c| c.name.clone()).collect();
    for c in &after[0].result.counters {
        if !counters.contains(&c.name) {
            counters.push(c.name.clone());
        }
    }
    for c in &counters {
        push(format!("{c} per second"), Unit::Rate, &|r| {
            r.result.counter(c).map(|x| x.rate)
        });
    }
    let mut hists: Vec<String> = first.histograms.iter().map(|h| h.name.clone()).collect();
    for h in &after[0].result.histograms {
        if !hists.contains(&h.name) {
            hists.push(h.name.clone());
        }
    }
    for h in &hists {
        push(format!("{h} p50"), Unit::Ns, &|r| {
            r.result.histogram(h).map(|x| x.p50 as f64)
        });
        push(format!("{h} p99"), Unit::Ns, &|r| {
            r.result.histogram(h).map(|x| x.p99 as f64)
        });
        push(format!("{h} max"), Unit::Ns, &|r| {
            r.result.histogram(h).map(|x| x.max as f64)
        });
    }
    push("max preempt-off section".into(), Unit::Ns, &|r| {
        r.result
            .cpus
            .iter()
            .map(|c| c.max_preempt_off_ns)
            .max()
            .map(|v| v as f64)
    });
    push("max irq-off section".into(), Unit::Ns, &|r| {
        r.result
            .cpus
            .iter()
            .map(|c| c.max_irq_off_ns)
            .max()
            .map(|v| v as f64)
    });
    push("context switches".into(), Unit::Count, &|r| {
        Some(r.result.context_switches as f64)
    });
    // Every lock either side took: one a variant added (a mutex replaced
    // by an rwsem) shows its figures, the side without it `-`.
    let mut locks: Vec<&str> = Vec::new();
    for r in before.iter().chain(after) {
        for l in &r.result.locks {
            if (l.acquisitions > 0 || l.contentions > 0) && !locks.contains(&l.name.as_str()) {
                locks.push(&l.name);
            }
        }
    }
    for name in locks {
        push(format!("{name} contentions"), Unit::Count, &|r| {
            r.result.lock(name).map(|x| x.contentions as f64)
        });
        push(format!("{name} wait total"), Unit::Ns, &|r| {
            r.result.lock(name).map(|x| x.wait_total_ns as f64)
        });
    }
    rows
}

/// `run --format lkml`: every variant against the first.
pub fn runs(scenario: &str, machine: &str, runs: &[VariantRun]) -> String {
    let first = &runs[0].result;
    let mut s = wrap(
        &format!(
            "smpsim: {scenario} on {machine} ({} CPUs), {} simulated, seed {}",
            first.nr_cpus,
            fmt_ns(first.duration_ns as f64),
            first.seed
        ),
        "",
    );
    for r in runs {
        s.push_str(&wrap(&format!("{}: {}", r.variant, r.description), "  "));
    }
    let seeds: Vec<Vec<&VariantRun>> = runs.iter().map(|r| vec![r]).collect();
    s.push_str(&compared(&seeds));
    s
}

/// `run --seeds N --format lkml`: every variant against the first, each
/// value the mean over the variant's seeds with ncompare's `±N%`.
/// `per_variant` holds each variant's runs, one per seed, in seed order.
pub fn seeds(scenario: &str, machine: &str, per_variant: &[Vec<VariantRun>]) -> String {
    let first = &per_variant[0][0].result;
    let last = per_variant[0].last().map_or(first.seed, |r| r.result.seed);
    let mut s = wrap(
        &format!(
            "smpsim: {scenario} on {machine} ({} CPUs), {} simulated, seeds {}..{} ({} per variant)",
            first.nr_cpus,
            fmt_ns(first.duration_ns as f64),
            first.seed,
            last,
            per_variant[0].len()
        ),
        "",
    );
    for runs in per_variant {
        let r = &runs[0];
        s.push_str(&wrap(&format!("{}: {}", r.variant, r.description), "  "));
    }
    let refs: Vec<Vec<&VariantRun>> = per_variant.iter().map(|v| v.iter().collect()).collect();
    s.push_str(&compared(&refs));
    s
}

/// The body under the heading: one variant's values (mean `±N%` where it
/// has several seeds), or a compare table of each variant against the first.
fn compared(per_variant: &[Vec<&VariantRun>]) -> String {
    let mut s = String::new();
    let base = &per_variant[0];
    if per_variant.len() == 1 {
        s.push('\n');
        let sd = base.len() > 1;
        for r in run_rows(base, base) {
            let line = format!("{:>VAL$}  {}", cell(&r.before, r.unit, sd), r.metric);
            s.push_str(&wrap(&line, ""));
        }
        return s;
    }
    for after in &per_variant[1..] {
        s.push('\n');
        s.push_str(&compare_table(
            &base[0].variant,
            &after[0].variant,
            &run_rows(base, after),
        ));
    }
    s
}

/// `reproduce --format lkml`: published, %change, simulated and whether
/// the pass rule holds, per metric, under a line per case.
pub fn reproduce(rows: &[MetricRow]) -> String {
    const V: usize = 11;
    let mut s = String::from("smpsim reproduce: published vs simulated\n");
    if rows.first().is_some_and(|r| r.quick) {
        s.push_str(&wrap(crate::text::QUICK_NOTE, ""));
    }
    s.push('\n');
    let name_w = WIDTH - 2 * V - PCT - 4 - 8;
    let _ = writeln!(
        s,
        "{:>V$}  {:>PCT$}  {:>V$}  {:<4}  metric",
        "published", "%change", "simulated", "pass"
    );
    let _ = writeln!(
        s,
        "{}  {}  {}  {}  {}",
        "-".repeat(V),
        "-".repeat(PCT),
        "-".repeat(V),
        "-".repeat(4),
        "-".repeat(name_w)
    );
    let mut case = "";
    for r in rows {
        if r.case != case {
            case = &r.case;
            s.push_str(&wrap(&format!("{case}:"), ""));
        }
        let lead = format!(
            "{:>V$}  {:>PCT$}  {:>V$}  {:<4}  ",
            r.published_text(|p| fmt(p, Unit::Plain)),
            // A change is against a measured figure, not a bound.
            match (r.kind, r.published) {
                (crate::model::RowKind::Compared, Some(p)) => pct_change(p, r.simulated),
                _ => "-".into(),
            },
            fmt(r.simulated, Unit::Plain),
            match r.pass {
                Some(true) => "ok",
                Some(false) => "MISS",
                None => "info",
            }
        );
        name_lines(&mut s, &lead, &r.metric, name_w);
    }
    let (passed, judged, info) = crate::model::totals(rows);
    s.push('\n');
    s.push_str(&wrap(
        &format!(
            "{passed} of {judged} metrics within their pass rule (MISS: outside it).{}",
            if info > 0 {
                format!(" {info} with no published figure are information (info), not judged.")
            } else {
                String::new()
            }
        ),
        "",
    ));
    s
}

/// A sweep's results: per point (CPUs and settings), each counter before
/// (the first variant) and after (each other variant), over seeds.
pub fn sweep(points: &[SweepPoint]) -> String {
    let ok: Vec<&SweepPoint> = points.iter().filter(|p| p.result.is_some()).collect();
    let name = ok.first().map_or("?", |p| p.scenario.as_str());
    let mut s = wrap(
        &format!("smpsim sweep: {name}, {} points", points.len()),
        "",
    );
    let mut variants: Vec<String> = Vec::new();
    let mut where_: Vec<String> = Vec::new();
    let varying = crate::results_file::varying_settings(points);
    let place = |p: &SweepPoint| {
        let mut w = match p.cpus {
            Some(c) => format!("@{c} CPUs"),
            None => String::new(),
        };
        for (k, v) in p.settings.iter().filter(|(k, _)| varying.contains(k)) {
            let key = k.rsplit('.').next().unwrap_or(k);
            let _ = write!(w, " {key}={v}");
        }
        w.trim().to_string()
    };
    let mut counters: Vec<String> = Vec::new();
    let mut hists: Vec<String> = Vec::new();
    for p in &ok {
        if !variants.contains(&p.variant) {
            variants.push(p.variant.clone());
        }
        let w = place(p);
        if !where_.contains(&w) {
            where_.push(w);
        }
        for c in p.result_part("counters").as_array().into_iter().flatten() {
            if let Some(n) = c["name"].as_str() {
                if !counters.iter().any(|x| x == n) {
                    counters.push(n.to_string());
                }
            }
        }
        for h in p.result_part("histograms").as_array().into_iter().flatten() {
            if let Some(n) = h["name"].as_str() {
                if !hists.iter().any(|x| x == n) {
                    hists.push(n.to_string());
                }
            }
        }
    }
    // What is compared, as (result path, unit, name): each counter's rate,
    // then each latency's p50 and p99.
    let metrics: Vec<(String, Unit, String)> = counters
        .iter()
        .map(|c| (format!("counter.{c}.rate"), Unit::Rate, format!("{c}/s")))
        .chain(hists.iter().flat_map(|h| {
            ["p50", "p99"].map(|q| (format!("histogram.{h}.{q}"), Unit::Ns, format!("{h} {q}")))
        }))
        .collect();
    let values = |variant: &str, w: &str, path: &str| -> Vec<f64> {
        ok.iter()
            .filter(|p| p.variant == variant && place(p) == w)
            .filter_map(|p| crate::path::y_value(p.result_json(), path).ok())
            .collect()
    };
    let failed = points.len() - ok.len();
    if failed > 0 {
        s.push_str(&wrap(
            &format!("{failed} points failed (see the results file)"),
            "",
        ));
    }
    if variants.len() < 2 {
        // Nothing to compare: one column of values.
        for (path, unit, name) in &metrics {
            s.push('\n');
            s.push_str(&wrap(&format!("{name}:"), ""));
            for w in &where_ {
                let vs = values(variants.first().map_or("base", |v| v), w, path);
                s.push_str(&wrap(
                    &format!("{:>VAL$}  {w}", cell(&vs, *unit, false)),
                    "",
                ));
            }
        }
        return s;
    }
    for after in &variants[1..] {
        let rows: Vec<Row> = metrics
            .iter()
            .flat_map(|m| where_.iter().map(move |w| (m, w)))
            .map(|((path, unit, name), w)| Row {
                before: values(&variants[0], w, path),
                after: values(after, w, path),
                metric: format!("{name} {w}"),
                unit: *unit,
            })
            .filter(|r| !r.before.is_empty() || !r.after.is_empty())
            .collect();
        s.push('\n');
        s.push_str(&compare_table(&variants[0], after, &rows));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_fit_in_72_columns_and_say_the_change() {
        let rows = vec![
            Row {
                before: vec![1.0e6, 1.1e6],
                after: vec![1.5e6, 1.6e6],
                metric: "ops per second".into(),
                unit: Unit::Rate,
            },
            Row {
                before: vec![1.0],
                after: vec![0.0],
                metric: "a_very_long_metric_name_that_does_not_fit_in_its_column_at_all_no".into(),
                unit: Unit::Count,
            },
        ];
        let t = compare_table("a-rather-long-variant-name", "after", &rows);
        for l in t.lines() {
            assert!(l.chars().count() <= WIDTH, "{l:?}");
        }
        assert!(t.contains("+47.6%"), "{t}");
        assert!(t.contains("-100.0%"), "{t}");
        assert!(t.contains('±'), "{t}");
        assert_eq!(pct_change(0.0, 1.0), "-");
        assert_eq!(pct_change(1.0, 2000.0), "+2000x");
        for l in wrap(&"word ".repeat(40), "  ").lines() {
            assert!(l.chars().count() <= WIDTH);
        }
        for l in wrap(&"x".repeat(200), "").lines() {
            assert!(l.chars().count() <= WIDTH);
        }
    }

    #[test]
    fn stddev_on_every_row_or_none_under_an_ncompare_header() {
        let row = |b: Vec<f64>, a: Vec<f64>, m: &str| Row {
            before: b,
            after: a,
            metric: m.into(),
            unit: Unit::Rate,
        };
        // 733.5k is exact over its seeds: it still gets its ± field.
        let t = compare_table(
            "before",
            "after",
            &[
                row(vec![733.5e3, 733.5e3], vec![693.4e3, 700.0e3], "ops"),
                row(vec![1e3, 1.1e3], vec![1e3, 1e3], "other"),
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[2].contains("%stddev") && lines[2].contains("%change"),
            "{t}"
        );
        let rows = &lines[4..];
        assert!(rows.iter().all(|l| l.matches('±').count() == 2), "{t}");
        // The columns line up: the metric starts at the same column.
        let at: Vec<usize> = rows.iter().map(|l| l.find("  o").unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] == w[1]), "{t}");
        // One seed: no ± anywhere.
        let t = compare_table("b", "a", &[row(vec![1.0], vec![2.0], "ops")]);
        assert!(!t.contains('±'), "{t}");
    }

    #[test]
    fn metric_names_break_between_words_only() {
        let mut s = String::new();
        name_lines(
            &mut s,
            "lead  ",
            "sentinel_max_latency_ms_before_the_patch_was_applied_x",
            20,
        );
        assert!(
            s.lines()
                .any(|l| l.trim() == "sentinel_max_latency_ms_before_the_patch_was_applied_x"),
            "{s}"
        );
        let mut s = String::new();
        name_lines(&mut s, "lead  ", "ops/s @16 CPUs duration=20ms", 16);
        let words: Vec<&str> = s.split_whitespace().collect();
        assert_eq!(
            words,
            ["lead", "ops/s", "@16", "CPUs", "duration=20ms"],
            "{s}"
        );
        for l in s.lines() {
            assert!(l.chars().count() <= WIDTH);
        }
    }
}
