//! HTML reports: one self-contained page (inline CSS and SVG, no script
//! or font from elsewhere, nothing fetched when it is viewed) for a
//! `reproduce` run (`reproduce --html FILE`) or a sweep's results
//! (`smpsim report results.jsonl -o page.html`).
//!
//! A reproduction page has the published-vs-simulated table, then per
//! case: its plot (simulated / published per metric, with the band the
//! pass rule accepts), the machine with the source of every cost, every
//! `assumed:` value of the scenario, counters, lock_stat and detector
//! findings. A sweep page has a curve per counter against the swept
//! axis. Both say the exact command that regenerates them. The plots
//! come from `plot.rs`, the same SVG as `smpsim plot`.
//!
//! A small inline script checks, once the page has loaded, that every
//! image and plot rendered, and marks the `<body>` with `data-check`
//! (a headless browser test reads it).

use crate::sweep_point::SweepPoint;
use std::fmt::Write;

pub use crate::assumed::assumed;
use crate::{fmt_ns, fmt_rate, VariantRun};

use crate::model::{CaseRun, MetricRow};
use crate::plot::{add_band, escape, line_svg, ratio_svg, Bands, Data, LinePlot, RatioBar};

const STYLE: &str = "
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
td.text { text-align: left; }
td.pass { color: #176117; font-weight: bold; } td.fail { color: #b00; font-weight: bold; }
code, pre { background: #f6f6f6; padding: .15em .3em; }
pre.command { padding: .6em; white-space: pre-wrap; word-break: break-all; }
.note { color: #555; font-size: .9em; }
svg { display: block; margin: .5em 0; max-width: 100%; height: auto; }
";

/// Marks the body once everything rendered: `ok N plots` or `broken ...`.
const CHECK: &str = "
window.addEventListener('load', function () {
  var bad = [];
  document.querySelectorAll('img').forEach(function (i) {
    if (!i.complete || i.naturalWidth === 0) bad.push(i.src);
  });
  var svgs = document.querySelectorAll('svg');
  svgs.forEach(function (s, k) {
    var b = s.getBBox();
    if (!(b.width > 0 && b.height > 0)) bad.push('svg ' + k);
  });
  document.body.setAttribute('data-check',
    bad.length ? 'broken ' + bad.join(' ') : 'ok ' + svgs.length + ' plots');
});
";

/// The command line this process was started with, as a shell would
/// take it back (`smpsim` for the program).
pub fn command_line() -> String {
    let mut out = vec!["smpsim".to_string()];
    out.extend(std::env::args().skip(1).map(|a| shell_quote(&a)));
    out.join(" ")
}

fn shell_quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}<script>{CHECK}</script>\n</body>\n</html>\n",
        escape(title)
    )
}

/// A table; a cell starting with `\u{1}pass` or `\u{1}fail` gets that
/// class, `\u{1}text` is left-aligned text.
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table>\n<tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr>\n");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let (class, text) = match c.strip_prefix('\u{1}') {
                Some(rest) => {
                    let (class, text) = rest.split_at(4);
                    (format!(" class=\"{class}\""), text)
                }
                None => (String::new(), c.as_str()),
            };
            let _ = write!(s, "<td{class}>{}</td>", escape(text));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

fn text_cell(s: &str) -> String {
    format!("\u{1}text{s}")
}

/// The machine: topology and every cost with its source.
fn machine_section(m: &smpsim_machine::Machine) -> String {
    let t = &m.topology;
    let mut s = format!(
        "<h3>Machine: {}</h3>\n<p>{}<br>{}</p>\n",
        escape(&m.name),
        escape(&m.description),
        escape(&t.shape())
    );
    s.push_str(&format!(
        "<p class=\"standing\"><b>Standing:</b> {}</p>\n",
        escape(&m.standing().to_string())
    ));
    // Durations are in ns; the rest (idle polling, the atomics) are words
    // with no unit.
    let cell = |name: String, value: String, unit: &str, source: &str| {
        vec![name, value, text_cell(unit), text_cell(source)]
    };
    let mut rows: Vec<Vec<String>> = m
        .cost_list()
        .into_iter()
        .map(|(name, c)| cell(name.into(), c.ns.to_string(), "ns", &c.source.to_string()))
        .collect();
    for c in &m.costs.line_transfer.by_node_distance {
        rows.push(cell(
            format!("line_transfer.node_distance {}", c.distance),
            c.ns.to_string(),
            "ns",
            &c.source.to_string(),
        ));
    }
    if !m.idle.source.is_empty() {
        rows.push(cell(
            "idle.polling".into(),
            m.idle.polling.to_string(),
            "",
            &m.idle.source,
        ));
    }
    if !m.atomics.source.is_empty() {
        rows.push(cell(
            "atomics.kind".into(),
            m.atomics.kind.name().to_string(),
            "",
            &m.atomics.source,
        ));
    }
    if m.atomics.kind == smpsim_machine::AtomicKind::LlSc {
        rows.push(cell(
            "atomics.load_reserve".into(),
            m.atomics.load_reserve.name().to_string(),
            "",
            &m.atomics.load_reserve_source,
        ));
    }
    let c = &m.coherence;
    rows.push(cell(
        "coherence.home".into(),
        c.home.name().into(),
        "",
        &c.home_source,
    ));
    rows.push(cell(
        "coherence.occupancy_per_transfer".into(),
        c.occupancy_per_transfer.to_string(),
        "x transfer",
        &c.occupancy_per_transfer_source,
    ));
    rows.push(cell(
        "coherence.forward_fraction".into(),
        c.forward_fraction.to_string(),
        "x transfer",
        &c.forward_fraction_source,
    ));
    rows.push(cell(
        "coherence.snoop_fraction".into(),
        c.snoop_fraction.to_string(),
        "x transfer",
        &c.snoop_fraction_source,
    ));
    s.push_str(&table(&["cost", "value", "unit", "source"], &rows));
    s
}

/// A scenario's path from its folder's parent (`scenarios/x.toml`).
fn short_path(p: &std::path::Path) -> String {
    let parts: Vec<String> = p
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// The scenario's assumed values, then each included file's (a library's
/// assumptions are the scenario's as much as its own are).
fn assumed_section(scenario: &smpsim_scenario::Scenario) -> String {
    let mut s = assumed_table(&short_path(&scenario.path), &scenario.text);
    for inc in &scenario.includes {
        s.push_str(&assumed_table(&short_path(&inc.path), &inc.text));
    }
    s
}

fn assumed_table(name: &str, text: &str) -> String {
    let rows: Vec<Vec<String>> = assumed(text)
        .into_iter()
        .map(|(line, code, why)| {
            vec![
                line.to_string(),
                text_cell(if code.is_empty() { "(comment)" } else { &code }),
                text_cell(&why),
            ]
        })
        .collect();
    let mut s = format!(
        "<h3>Assumed values ({} in {})</h3>\n",
        rows.len(),
        escape(name)
    );
    if rows.is_empty() {
        s.push_str("<p class=\"note\">The file marks no value as assumed.</p>\n");
    } else {
        s.push_str(&table(&["line", "setting", "assumption"], &rows));
    }
    s
}

fn counters_section(runs: &[VariantRun]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for c in &r.result.counters {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    if names.is_empty() {
        return String::new();
    }
    let mut head = vec!["counter (per second)"];
    head.extend(runs.iter().map(|r| r.variant.as_str()));
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|n| {
            let mut row = vec![n.to_string()];
            row.extend(runs.iter().map(|r| {
                r.result
                    .counter(n)
                    .map_or("-".to_string(), |c| fmt_rate(c.rate))
            }));
            row
        })
        .collect();
    let mut s = String::from("<h3>Counters</h3>\n");
    s.push_str(&table(&head, &rows));
    let hist: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|r| {
            r.result.histograms.iter().map(move |h| {
                let mut row = vec![h.name.clone(), r.variant.clone(), h.count.to_string()];
                row.extend(crate::percentile_cells(h));
                row
            })
        })
        .collect();
    if !hist.is_empty() {
        s.push_str("<h3>Latencies</h3>\n");
        s.push_str(&table(
            &[
                "latency", "variant", "count", "p50", "p90", "p99", "p99.9", "max",
            ],
            &hist,
        ));
    }
    s
}

fn lock_stat_section(runs: &[VariantRun]) -> String {
    let rows = if runs.is_empty() {
        Vec::new()
    } else {
        crate::lock_stat::lock_stat_rows(runs)
    };
    let mut s = String::from("<h3>lock_stat</h3>\n");
    if rows.is_empty() {
        s.push_str("<p class=\"note\">No lock was taken.</p>\n");
    } else {
        let untracked = rows.iter().any(|r| r[3] == "-");
        s.push_str(&table(&crate::lock_stat::LOCK_STAT_COLUMNS, &rows));
        if untracked {
            s.push_str(&format!(
                "<p class=\"note\">{}</p>\n",
                escape(crate::lock_stat::UNTRACKED_NOTE)
            ));
        }
    }
    s
}

/// Findings of every run; `label` says which run (variant, seed).
fn findings_section(runs: &[(String, &VariantRun)]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|(label, r)| {
            r.result.findings.iter().map(move |f| {
                vec![
                    f.detector.clone(),
                    label.clone(),
                    fmt_ns(f.time_ns as f64),
                    format!("cpu{}", f.cpu),
                    f.occurrences.to_string(),
                    text_cell(&f.message),
                ]
            })
        })
        .collect();
    let mut s = String::from("<h3>Detector findings</h3>\n");
    if rows.is_empty() {
        s.push_str("<p class=\"note\">No detector reported anything.</p>\n");
    } else {
        s.push_str(&table(
            &["detector", "run", "at", "cpu", "occurrences", "message"],
            &rows,
        ));
    }
    s
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 1e5 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn command_section(command: &str) -> String {
    format!(
        "<p>Regenerate this page with:</p>\n<pre class=\"command\">{}</pre>\n",
        escape(command)
    )
}

/// The page of a `reproduce` run.
pub fn reproduce(cases: &[CaseRun], rows: &[MetricRow], command: &str) -> String {
    let quick = rows.first().is_some_and(|r| r.quick);
    let title = if quick {
        "smpsim reproduce (quick)"
    } else {
        "smpsim reproduce"
    };
    let mut b = format!("<h1>{title}: published vs simulated</h1>\n");
    if quick {
        let _ = writeln!(
            b,
            "<p class=\"quick\"><strong>{}</strong></p>",
            escape(crate::text::QUICK_NOTE)
        );
    }
    let (passed, judged, info) = crate::model::totals(rows);
    let _ = writeln!(
        b,
        "<p>{} cases, {judged} metrics judged, {passed} within their pass rule{}.</p>",
        cases.len(),
        if info > 0 {
            format!("; {info} with no published figure are information, not judged")
        } else {
            String::new()
        }
    );
    b.push_str("<ul class=\"verdict\">\n");
    for c in crate::model::verdict(rows) {
        let miss = if c.missed.is_empty() {
            String::new()
        } else {
            format!(
                "; <span class=\"fail\">MISS: {}</span>",
                escape(&c.missed.join(", "))
            )
        };
        let _ = writeln!(
            b,
            "<li><a href=\"#case-{0}\">{0}</a>: {1}{miss}</li>",
            escape(&c.case),
            escape(&c.summary())
        );
    }
    b.push_str("</ul>\n");
    b.push_str(&command_section(command));
    b.push_str("<h2 id=\"table\">Reproduction table</h2>\n");
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.case.clone(),
                r.metric.clone(),
                r.published_text(num),
                num(r.simulated),
                r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
                text_cell(&r.rule),
                r.seeds.to_string(),
                match r.pass {
                    Some(true) => "\u{1}passyes".into(),
                    Some(false) => "\u{1}failNO".into(),
                    None => "info".into(),
                },
            ]
        })
        .collect();
    b.push_str(&table(
        &[
            "case",
            "metric",
            "published",
            "simulated",
            "sim/pub",
            "rule",
            "seeds",
            "pass",
        ],
        &table_rows,
    ));
    for c in cases {
        let rep = c.scenario.reproduce.as_ref().expect("a case");
        let _ = writeln!(
            b,
            "<h2 id=\"case-{0}\">{0}</h2>\n<p>{1}</p>",
            escape(&rep.case),
            escape(&c.scenario.description)
        );
        let bars: Vec<RatioBar> = rows[c.rows.clone()]
            .iter()
            .map(|r| RatioBar {
                name: r.metric.clone(),
                ratio: r.ratio.unwrap_or(f64::NAN),
                pass: r.pass != Some(false),
                band: r.band,
                // What stands in for a bar where there is no ratio.
                note: match r.kind {
                    crate::model::RowKind::Bound => format!(
                        "bound: simulated {} against {}{}",
                        num(r.simulated),
                        r.published_text(num),
                        if r.pass == Some(false) { " (MISS)" } else { "" }
                    ),
                    crate::model::RowKind::Information => format!(
                        "no published figure: {} (information{})",
                        num(r.simulated),
                        if r.pass == Some(false) {
                            format!(", outside {}: MISS", r.rule)
                        } else {
                            String::new()
                        }
                    ),
                    crate::model::RowKind::Compared => "no published figure".into(),
                },
            })
            .collect();
        b.push_str(&ratio_svg(
            &format!("{}: simulated / published", rep.case),
            &bars,
        ));
        b.push_str(&crate::band_html::case_section(&rows[c.rows.clone()]));
        let sources: Vec<Vec<String>> = rows[c.rows.clone()]
            .iter()
            .map(|r| {
                vec![
                    r.metric.clone(),
                    num(r.min),
                    num(r.max),
                    text_cell(&r.source),
                ]
            })
            .collect();
        b.push_str(&table(
            &["metric", "min over seeds", "max over seeds", "published in"],
            &sources,
        ));
        b.push_str(&machine_section(&c.machine));
        b.push_str(&assumed_section(c.scenario));
        let first = &c.runs[0];
        b.push_str("<p class=\"note\">Tables below: the first seed's runs.</p>\n");
        b.push_str(&counters_section(first));
        b.push_str(&lock_stat_section(first));
        let labelled: Vec<(String, &VariantRun)> = c
            .runs
            .iter()
            .flat_map(|seed| {
                seed.iter()
                    .map(|r| (format!("{} seed {}", r.variant, r.result.seed), r))
            })
            .collect();
        b.push_str(&findings_section(&labelled));
    }
    page(title, &b)
}

/// The page of a sweep's results (the lines of a results file).
pub fn sweep(
    points: &[SweepPoint],
    scenario: Option<&smpsim_scenario::Scenario>,
    command: &str,
) -> String {
    let name = points.first().map_or("?", |p| p.scenario.as_str());
    let mut b = format!("<h1>smpsim sweep: {}</h1>\n", escape(name));
    let ok: Vec<&SweepPoint> = points.iter().filter(|p| p.result.is_some()).collect();
    let _ = writeln!(
        b,
        "<p>{} points, {} failed.</p>",
        points.len(),
        points.len() - ok.len()
    );
    b.push_str(&command_section(command));
    let varying = crate::results_file::varying_settings(points);
    // The x axis: CPUs if swept, else the first numeric setting.
    let x_key = if ok.iter().any(|p| p.cpus.is_some()) {
        Some("cpus".to_string())
    } else {
        ok.first().and_then(|p| {
            p.settings
                .iter()
                .filter(|(k, _)| varying.contains(k))
                .find(|(_, v)| v.parse::<f64>().is_ok())
                .map(|(k, _)| k.clone())
        })
    };
    let x_of = |p: &SweepPoint| -> Option<f64> {
        match x_key.as_deref() {
            Some("cpus") => p.cpus.map(f64::from),
            Some(k) => p.setting(k).and_then(|s| s.parse().ok()),
            None => None,
        }
    };
    let series_of = |p: &SweepPoint| {
        let mut s = p.variant.clone();
        for (k, v) in p.settings.iter().filter(|(k, _)| varying.contains(k)) {
            if Some(k.as_str()) != x_key.as_deref() {
                let _ = write!(s, " {k}={v}");
            }
        }
        s
    };
    let mut counters: Vec<String> = Vec::new();
    for p in &ok {
        for c in p.result_part("counters").as_array().into_iter().flatten() {
            if let Some(n) = c["name"].as_str() {
                if !counters.iter().any(|x| x == n) {
                    counters.push(n.to_string());
                }
            }
        }
    }
    if let Some(x) = &x_key {
        b.push_str("<h2>Plots</h2>\n");
        for c in &counters {
            let spec = format!("counter.{c}.rate");
            let mut data: Data = Default::default();
            let mut bands: Bands = Default::default();
            for p in &ok {
                let (Some(xv), Ok(y)) = (x_of(p), crate::path::y_value(p.result_json(), &spec))
                else {
                    continue;
                };
                if let Some(band) = p.band_of(&spec) {
                    add_band(&mut bands, &series_of(p), xv, band);
                }
                data.entry(series_of(p))
                    .or_default()
                    .entry(xv.to_bits())
                    .or_insert((xv, Vec::new()))
                    .1
                    .push(y);
            }
            if data.is_empty() {
                continue;
            }
            b.push_str(&line_svg(
                &data,
                &LinePlot {
                    title: &crate::plot::title(name, &spec, x),
                    x,
                    y: &spec,
                    caption: "mean over seeds, bars from the lowest to the highest seed",
                    ideal: true,
                    per_task: false,
                    bands: &bands,
                },
            ));
        }
    }
    b.push_str("<h2>Points</h2>\n");
    let mut head = vec!["variant", "cpus", "settings", "seed"];
    head.extend(counters.iter().map(|c| c.as_str()));
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let settings: Vec<String> =
                p.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut row = vec![
                p.variant.clone(),
                p.cpus.map_or("-".into(), |c| c.to_string()),
                text_cell(&settings.join(" ")),
                p.seed.to_string(),
            ];
            for c in &counters {
                let spec = format!("counter.{c}.rate");
                row.push(match &p.error {
                    Some(e) => text_cell(&format!("error: {e}")),
                    None => crate::path::y_value(p.result_json(), &spec).map_or("-".into(), |y| {
                        // The band beside the figure, as `run --band` writes it.
                        match p.band_of(&spec) {
                            Some((lo, hi)) => {
                                format!("{} [{} - {}]", fmt_rate(y), fmt_rate(lo), fmt_rate(hi))
                            }
                            None => fmt_rate(y),
                        }
                    }),
                });
            }
            row
        })
        .collect();
    b.push_str(&table(&head, &rows));
    // Findings of every point.
    let mut found = Vec::new();
    for p in &ok {
        for f in p.result_part("findings").as_array().into_iter().flatten() {
            found.push(vec![
                f["detector"].as_str().unwrap_or("?").to_string(),
                format!(
                    "{} cpus {} seed {}",
                    p.variant,
                    // `null` when CPUs were not swept, as the page has said.
                    p.cpus.map_or("null".into(), |c| c.to_string()),
                    p.seed
                ),
                text_cell(f["message"].as_str().unwrap_or("")),
            ]);
        }
    }
    b.push_str("<h3>Detector findings</h3>\n");
    if found.is_empty() {
        b.push_str("<p class=\"note\">No detector reported anything at any point.</p>\n");
    } else {
        b.push_str(&table(&["detector", "point", "message"], &found));
    }
    match scenario {
        Some(s) => {
            if let Ok(spec) = s.compile(None, &[]) {
                b.push_str(&machine_section(&spec.machine));
            }
            b.push_str(&assumed_section(s));
        }
        None => b.push_str(
            "<p class=\"note\">The scenario file is not where the sweep read it, or has changed since: no machine or assumed values shown.</p>\n",
        ),
    }
    page(&format!("smpsim sweep: {name}"), &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_costs_keep_values_and_units_apart() {
        let m = smpsim_machine::preset("ppc64-400-smt8").unwrap().unwrap();
        let html = machine_section(&m);
        assert!(html.contains("<th>cost</th><th>value</th><th>unit</th><th>source</th>"));
        let rows: Vec<Vec<&str>> = html
            .lines()
            .filter(|l| l.starts_with("<tr><td>"))
            .map(|l| {
                l.split("</td>")
                    .filter_map(|c| c.rsplit('>').next())
                    .collect()
            })
            .collect();
        assert!(
            rows.iter()
                .any(|r| r[0] == "atomics.kind" && r[1] == "ll-sc"),
            "{rows:?}"
        );
        let snoop = m.coherence.snoop_fraction.to_string();
        assert!(
            rows.iter()
                .any(|r| r[0] == "coherence.snoop_fraction" && r[1] == snoop),
            "{rows:?}"
        );
        for r in &rows {
            // A duration says ns, a fraction of a transfer says so; a word
            // (true, ll-sc, held) says no unit.
            let number = r[1].parse::<f64>().is_ok();
            let fraction = r[0].starts_with("coherence.") && r[0] != "coherence.occupancy";
            let unit = if fraction { "x transfer" } else { "ns" };
            assert_eq!(r[2] == unit, number, "{r:?}");
        }
    }

    #[test]
    fn tables_escape_and_mark_cells() {
        let t = table(&["a<b"], &[vec!["\u{1}passyes".into()], vec!["x&y".into()]]);
        assert!(t.contains("<th>a&lt;b</th>"));
        assert!(t.contains("<td class=\"pass\">yes</td>"));
        assert!(t.contains("<td>x&amp;y</td>"));
        assert_eq!(shell_quote("--set"), "--set");
        assert_eq!(shell_quote("a b"), "'a b'");
        let p = page("t", "<p>x</p>");
        assert!(
            p.starts_with("<!DOCTYPE html>") && !p.contains("http://") && !p.contains("https://")
        );
    }
}
