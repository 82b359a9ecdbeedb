//! A sweep's bands (`sweep --band`) drawn: `smpsim plot` shades each
//! series' band across the swept axis and the sweep's HTML page does the
//! same, with `[lo - hi]` beside each figure in its table; a sweep without
//! bands draws as before, with no band shape.

mod common;

use std::path::{Path, PathBuf};

use common::{dir, smpsim, stderr};

/// One point's line: `ops` at `rate`, with the band `[lo, hi]` if given,
/// as `sweep --band` writes it.
fn line(cpus: u32, rate: f64, band: Option<(f64, f64)>) -> String {
    let mut p = serde_json::json!({
        "cpus": cpus,
        "index": cpus,
        "key": format!("h|base|{cpus}||1"),
        "result": {"counters": [{"name": "ops", "count": 1, "rate": rate}]},
        "scenario": "banded",
        "scenario_file": "banded.toml",
        "scenario_hash": "h",
        "seed": 1,
        "settings": {},
        "variant": "base"
    });
    if let Some((lo, hi)) = band {
        p["band"] = serde_json::json!([{
            "figure": "base.counter.ops.rate",
            "value": rate,
            "band": {"lo": lo, "hi": hi, "parts": {}, "dominant": "ipi_latency", "params": []}
        }]);
    }
    serde_json::to_string(&p).unwrap() + "\n"
}

/// A results file of three points over 1, 2 and 4 CPUs, banded or not.
fn results(d: &Path, banded: bool) -> PathBuf {
    let points = [
        (1, 1000.0, (800.0, 1300.0)),
        (2, 1900.0, (1500.0, 2600.0)),
        (4, 3500.0, (2600.0, 5000.0)),
    ];
    let text: String = points
        .iter()
        .map(|&(c, r, b)| line(c, r, banded.then_some(b)))
        .collect();
    let path = d.join(if banded {
        "banded.jsonl"
    } else {
        "plain.jsonl"
    });
    std::fs::write(&path, text).unwrap();
    path
}

fn plot(results: &Path, to: &Path) -> String {
    let out = smpsim()
        .arg("plot")
        .arg(results)
        .args(["--y", "counter.ops.rate", "-o"])
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(to).unwrap()
}

fn page(results: &Path, to: &Path) -> String {
    let out = smpsim()
        .arg("report")
        .arg(results)
        .arg("-o")
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(to).unwrap()
}

/// The y pixel range a shape's `points` cover.
fn y_span(points: &str) -> (f64, f64) {
    points
        .split_whitespace()
        .map(|xy| xy.split(',').nth(1).unwrap().parse::<f64>().unwrap())
        .fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)))
}

fn attr<'a>(svg: &'a str, class: &str, name: &str) -> Option<&'a str> {
    let at = svg.find(&format!("class=\"{class}\""))?;
    let rest = &svg[at..];
    let start = rest.find(&format!("{name}=\""))? + name.len() + 2;
    Some(&rest[start..start + rest[start..].find('"')?])
}

#[test]
fn a_plot_of_a_banded_sweep_shades_the_band_and_a_plain_one_does_not() {
    let d = dir("sweep-bands-plot");
    let banded = plot(&results(&d, true), &d.join("banded.svg"));
    let plain = plot(&results(&d, false), &d.join("plain.svg"));
    assert!(!plain.contains("class=\"band\""), "{plain}");
    assert!(!plain.contains("shaded"), "{plain}");
    let shape = attr(&banded, "band", "points").expect("a band shape");
    // Three x values: the upper ends and the lower ends back, six corners.
    assert_eq!(shape.split_whitespace().count(), 6, "{shape}");
    // The band reaches above and below the curve it surrounds.
    let curve = attr(&banded, "series", "points").expect("a curve");
    let (band_top, band_bottom) = y_span(shape);
    let (curve_top, curve_bottom) = y_span(curve);
    assert!(
        band_top < curve_top && band_bottom > curve_bottom,
        "{shape} vs {curve}"
    );
    assert!(banded.contains("shaded: each point's band"), "{banded}");
    // The y axis reaches the band's top (5000), not only the curve's.
    assert!(banded.contains(">5k</text>"), "{banded}");
    assert!(!plain.contains(">5k</text>"), "{plain}");
}

#[test]
fn a_report_of_a_banded_sweep_shades_the_band_and_tables_its_ends() {
    let d = dir("sweep-bands-report");
    let banded = page(&results(&d, true), &d.join("banded.html"));
    let plain = page(&results(&d, false), &d.join("plain.html"));
    assert!(banded.contains("class=\"band\""), "{banded}");
    assert!(banded.contains("3.5k [2.6k - 5.0k]"), "{banded}");
    assert!(
        !plain.contains("class=\"band\"") && !plain.contains(" [2.6k"),
        "{plain}"
    );
    assert!(plain.contains("3.5k"), "{plain}");
}
