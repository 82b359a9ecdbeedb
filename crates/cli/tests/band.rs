//! Bands: a figure with how sure the model is of it. Widening an assumed
//! range widens the band; a value the figure does not depend on does not;
//! the band is the same bytes on 1 and 2 threads; a bad range is an error
//! at its place; `reproduce` carries a band on every row by default.

mod common;

use std::path::{Path, PathBuf};

use common::{dir, refused, reproduce_in, smpsim, stderr, tiny_case};

/// One CPU looping over a syscall: its rate rests on the syscall cost,
/// given here with `range`. `extra` goes into `[kernel]`.
fn looping(d: &Path, range: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"[scenario]
name = "loop"
duration = "2ms"
[machine]
preset = "generic-x86"
[machine.topology]
cores_per_llc = 1
[machine.costs.syscall]
ns = 300
range = {range}
source = "assumed: for the test"
[kernel]
{extra}
[[tasks]]
name = "t"
count = 1
code = '''
    for (;;) {{
        syscall(getpid) {{
            work(200ns);
        }}
        count(ops);
    }}
'''
"#
    );
    let p = d.join("loop.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `run --band --format json`'s bands, with `threads` threads.
fn bands(scenario: &Path, threads: &str) -> serde_json::Value {
    let out = smpsim()
        .args(["run", "--band", "--format", "json", "-q"])
        .arg(scenario)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["bands"].clone()
}

fn figure<'a>(bands: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    bands
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["figure"] == name)
        .unwrap_or_else(|| panic!("no {name} in {bands}"))
}

fn lo_hi(b: &serde_json::Value) -> (f64, f64) {
    (
        b["band"]["lo"].as_f64().unwrap(),
        b["band"]["hi"].as_f64().unwrap(),
    )
}

#[test]
fn widening_an_assumed_range_widens_the_band() {
    let d = dir("band-widen");
    let narrow = bands(&looping(&d, "[280, 320]", ""), "2");
    let wide = bands(&looping(&d, "[100, 1200]", ""), "2");
    let rate = "base.counter.ops.rate";
    let (n, w) = (figure(&narrow, rate), figure(&wide, rate));
    let (value, (nlo, nhi), (wlo, whi)) = (n["value"].as_f64().unwrap(), lo_hi(n), lo_hi(w));
    assert!(nlo <= value && value <= nhi, "{n}");
    assert!(wlo < nlo && whi > nhi, "narrow {n}\nwide {w}");
    assert_eq!(w["band"]["dominant"], "syscall", "{w}");
    // The figure falls as the syscall gets dearer.
    let swing = &w["band"]["params"][0];
    assert_eq!(swing["name"], "syscall");
    assert!(swing["at_hi"].as_f64().unwrap() < value && swing["at_lo"].as_f64().unwrap() > value);
}

#[test]
fn a_value_the_figure_does_not_depend_on_does_not_widen_it() {
    let d = dir("band-idle");
    let without = bands(&looping(&d, "[280, 320]", ""), "2");
    // No cgroup is throttled here: the walk's cost is never paid.
    let with = bands(
        &looping(
            &d,
            "[280, 320]",
            r#"tg_walk_cost = { value = "150ns", range = ["10ns", "10us"], source = "assumed: unused here" }"#,
        ),
        "2",
    );
    let rate = "base.counter.ops.rate";
    let (a, b) = (figure(&without, rate), figure(&with, rate));
    assert_eq!(lo_hi(a), lo_hi(b), "without {a}\nwith {b}");
    let walk = b["band"]["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "kernel.tg_walk_cost")
        .expect("the value is varied");
    assert_eq!(walk["at_lo"], b["value"]);
    assert_eq!(walk["at_hi"], b["value"]);
}

#[test]
fn the_band_is_the_same_bytes_on_one_and_two_threads() {
    let d = dir("band-threads");
    let p = looping(&d, "[100, 1200]", "");
    assert_eq!(
        serde_json::to_string(&bands(&p, "1")).unwrap(),
        serde_json::to_string(&bands(&p, "2")).unwrap()
    );
}

/// A case of two variants with a before/after ratio, shortened.
fn case_dir(test: &str) -> PathBuf {
    tiny_case(
        test,
        r#"
[[reproduce.metric]]
name = "spin_over_nospin"
published = 1.2
expr = "spin.counter.ops.rate / nospin.counter.ops.rate"
pass = { factor = 2.0 }
source = "test"
"#,
    )
}

/// `reproduce --quick --format json` on `threads` threads.
fn reproduce(d: &Path, threads: &str, extra: &[&str]) -> String {
    let args = [&["--quick", "--format", "json"], extra].concat();
    reproduce_in(d, &args, Some(threads))
}

#[test]
fn every_reproduce_row_has_its_band_the_same_on_one_and_two_threads() {
    let d = case_dir("band-reproduce");
    let one = reproduce(&d, "1", &[]);
    assert_eq!(one, reproduce(&d, "2", &[]));
    let rows: serde_json::Value = serde_json::from_str(&one).unwrap();
    let row = &rows[0];
    let band = &row["band"];
    let (lo, hi) = (band["lo"].as_f64().unwrap(), band["hi"].as_f64().unwrap());
    let simulated = row["simulated"].as_f64().unwrap();
    assert!(lo <= simulated && simulated <= hi, "{row}");
    for part in ["seeds", "assumed", "model"] {
        let p = &band["parts"][part];
        assert!(
            p["lo"].as_f64().unwrap() <= p["hi"].as_f64().unwrap(),
            "{row}"
        );
    }
    assert!(band["dominant"].as_str().is_some_and(|s| !s.is_empty()));
    let published = row["published"].as_f64().unwrap();
    assert_eq!(row["agrees"], (lo <= published && published <= hi), "{row}");
    // Without bands the row is what it was.
    let plain: serde_json::Value =
        serde_json::from_str(&reproduce(&d, "2", &["--no-band"])).unwrap();
    assert!(plain[0].get("band").is_none() && plain[0].get("agrees").is_none());
    assert_eq!(plain[0]["simulated"], row["simulated"]);
}

#[test]
fn a_bad_range_is_an_error_at_its_place() {
    let d = dir("band-bad");
    let p = looping(&d, "[400, 500]", "");
    let out = smpsim()
        .args(["run", "--band", "-q"])
        .arg(&p)
        .output()
        .unwrap();
    refused(
        &out,
        "loop.toml:10:9: error: invalid machine cost: costs.syscall.range",
    );
    let p = looping(
        &d,
        "[280, 320]",
        r#"tg_walk_cost = { value = "150ns", range = ["200ns"], source = "assumed: x" }"#,
    );
    let out = smpsim().args(["run", "-q"]).arg(&p).output().unwrap();
    refused(&out, "loop.toml:13:43: error: `range` is two values");
}

#[test]
fn machine_shows_each_assumed_cost_with_its_range_beside_the_standing() {
    let out = smpsim().args(["machine", "x86-16"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    assert!(line("ipi_latency").contains("[500 - 1500]"), "{text}");
    assert!(line("wakeup").contains("[150 - 600] default"), "{text}");
    assert!(line("syscall").contains(" -  "), "{text}");
    assert!(
        text.contains("x0.5 - x2") && text.contains("standing: "),
        "{text}"
    );
}

#[test]
fn a_sweep_with_bands_gives_each_point_its_band() {
    let d = dir("band-sweep");
    let p = looping(&d, "[100, 1200]", "");
    let results = d.join("r.jsonl");
    let out = smpsim()
        .args(["sweep", "--band", "-q", "--seeds", "1", "-o"])
        .arg(&results)
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&results)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let b = figure(&line["band"], "base.counter.ops.rate");
    assert_eq!(b["band"]["dominant"], "syscall", "{b}");
}

/// `--band-points` caps the design: the assumed values past the cap are
/// not varied and the note names them; `--band-budget` must be a factor
/// above 0, refused with exit 2 otherwise.
#[test]
fn the_band_points_cap_leaves_values_out_and_says_which() {
    let d = dir("band-cap");
    let p = looping(&d, "[100, 1200]", "");
    let run = |extra: &[&str]| {
        let out = smpsim()
            .args(["run", "--band", "-q"])
            .arg(&p)
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let full = run(&[]);
    assert!(!full.contains("past the cap on points"), "{full}");
    // Two more seeds, the reference, the model's two ends and the two
    // joint corners take 7 points: 11 leaves room for 2 values at both
    // ends.
    let capped = run(&["--band-points", "11"]);
    assert!(
        capped.contains("2 assumed values varied") && capped.contains("past the cap on points"),
        "{capped}"
    );
    for bad in ["0", "-1", "nan", "1000"] {
        let out = smpsim()
            .args(["run", "--band", "-q", &format!("--band-budget={bad}")])
            .arg(&p)
            .output()
            .unwrap();
        refused(&out, "--band-budget");
    }
}
