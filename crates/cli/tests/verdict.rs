//! `reproduce` and `run` put the verdict first: the pass/miss summary per
//! case and the published-vs-simulated table before the details, per-CPU
//! rows only with `--per-cpu`, no published figure printed as `-` (JSON
//! `null`) rather than 0 or NaN, and a `--quick` run labelled as quick in
//! every format.

mod common;

use common::{dir, repo, reproduce_in, scenario, smpsim, tiny_case, TASK};

/// A two-metric case built from the example: one with a published figure
/// (that misses), one only reported (no `published`, bounds only).
fn case_dir(test: &str) -> std::path::PathBuf {
    tiny_case(
        test,
        r#"
[[reproduce.metric]]
name = "spin_over_nospin"
published = 100.0
expr = "spin.counter.ops.rate / nospin.counter.ops.rate"
pass = { factor = 2.0 }
source = "test: a figure the model misses"
[[reproduce.metric]]
name = "nospin_p99_us"
expr = "nospin.hist.syscall_latency.p99 / 1000"
pass = { min = 0.0 }
source = "not published; reported"
"#,
    )
}

fn reproduce(d: &std::path::Path, extra: &[&str]) -> String {
    reproduce_in(d, extra, None)
}

#[test]
fn reproduce_text_prints_the_verdict_first_and_no_published_as_dash() {
    let d = case_dir("verdict-text");
    let text = reproduce(&d, &[]);
    let verdict = text.find("=== verdict ===").expect(&text);
    let table = text.find("=== published vs simulated ===").expect(&text);
    let details = text.find("=== tiny ===").expect(&text);
    assert!(verdict < table && table < details, "{text}");
    assert!(
        text.contains(
            "tiny  0 of 1 metrics pass (1 information row, not judged); MISS: spin_over_nospin"
        ),
        "{text}"
    );
    assert!(!text.contains("QUICK"), "a full run is not quick: {text}");
    let row = text
        .lines()
        .find(|l| l.contains("nospin_p99_us"))
        .expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[2], "-", "no published figure: {row}");
    assert_eq!(cells[4], "-", "no ratio: {row}");
    assert!(!text.contains("NaN"), "{text}");
}

#[test]
fn quick_is_labelled_in_text_json_markdown_lkml_and_html() {
    let d = case_dir("verdict-quick");
    let text = reproduce(&d, &["--quick"]);
    assert!(text.starts_with("QUICK:"), "{text}");
    let json = reproduce(&d, &["--quick", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for row in v.as_array().unwrap() {
        assert_eq!(row["quick"], true, "{row}");
    }
    let reported = &v[1];
    assert_eq!(reported["metric"], "nospin_p99_us");
    assert!(reported["published"].is_null(), "{reported}");
    assert!(reported["ratio"].is_null(), "{reported}");
    assert_eq!(v[0]["published"], 100.0);
    let md = reproduce(&d, &["--quick", "--format", "markdown"]);
    assert!(md.starts_with("**QUICK:"), "{md}");
    assert!(md.contains("| tiny | nospin_p99_us | - |"), "{md}");
    let lkml = reproduce(&d, &["--quick", "--format", "lkml"]);
    assert!(lkml.contains("QUICK:"), "{lkml}");
    let html = d.join("r.html");
    reproduce(&d, &["--quick", "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<title>smpsim reproduce (quick)</title>"),
        "{page}"
    );
    assert!(
        page.contains("0 of 1 metrics pass (1 information row, not judged)"),
        "verdict on the page"
    );
    assert!(!page.contains("0.00x"));
}

#[test]
fn run_prints_per_cpu_rows_only_with_per_cpu() {
    let d = dir("verdict-per-cpu");
    let s = scenario(
        &d,
        "w.toml",
        &format!("[kernel]\nlatency_window = \"250us\"\n{TASK}"),
    );
    let run = |extra: &[&str]| {
        let out = smpsim()
            .args(["run", "-q", s.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(&[]);
    assert!(
        !plain.lines().any(|l| l.starts_with("cpu0 ")),
        "per-CPU rows by default: {plain}"
    );
    assert!(plain.contains("--per-cpu"), "{plain}");
    let detectors = plain.find("detectors [").expect(&plain);
    let cpu_time = plain.find("cpu time").expect(&plain);
    assert!(detectors < cpu_time, "the verdict comes first: {plain}");
    let full = run(&["--per-cpu"]);
    assert!(
        full.lines().any(|l| l.starts_with("cpu0 ")),
        "--per-cpu shows them: {full}"
    );
}

#[test]
fn sweep_lkml_compares_latencies_too() {
    let d = dir("verdict-sweep-lkml");
    let out = smpsim()
        .args([
            "sweep",
            repo("scenarios/examples/mutex-contention.toml")
                .to_str()
                .unwrap(),
            "--cpus",
            "2,4",
            "--seeds",
            "2",
            "--set",
            "scenario.duration=2ms",
            "--set",
            "scenario.warmup=0ms",
            "-q",
            "--format",
            "lkml",
            "-o",
            d.join("r.jsonl").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("%stddev"), "{text}");
    for m in [
        "ops/s @4 CPUs",
        "syscall_latency p50 @4 CPUs",
        "syscall_latency p99 @2 CPUs",
    ] {
        let l = text.lines().find(|l| l.ends_with(m)).expect(&text);
        assert_eq!(l.matches('±').count(), 2, "{l}");
    }
    for l in text.lines() {
        assert!(l.chars().count() <= 72, "{l}");
    }
}

/// The README's worked example is what `run` prints: every line of it
/// (but the abridged ones, with `...`) is a line of the output.
#[test]
fn the_readmes_worked_example_is_what_run_prints() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let at = readme
        .find("prints, variants side by side")
        .expect("the worked example");
    let block = readme[at..].split("```").nth(1).unwrap();
    let out = smpsim()
        .args([
            "run",
            "-q",
            repo("scenarios/examples/mutex-contention.toml")
                .to_str()
                .unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for l in block
        .lines()
        .filter(|l| !l.is_empty() && !l.contains("..."))
    {
        assert!(
            lines.contains(&l),
            "README line not in the output: {l:?}\n{text}"
        );
    }
}

/// Issue 37: a metric with no published figure is information, not a
/// pass; a published limit (`published = 50`, `pass = { max = 50 }`) is a
/// bound, shown as `<= 50` with no ratio, bar or %change; in every format.
#[test]
fn information_rows_are_not_passes_and_a_bound_shows_as_a_bound() {
    let d = tiny_case(
        "verdict-bound",
        r#"
[[reproduce.metric]]
name = "p99_bound_us"
published = 50.0
expr = "nospin.hist.syscall_latency.p99 / 1000"
pass = { max = 50.0 }
source = "test: a limit the source sets"
[[reproduce.metric]]
name = "reported_us"
expr = "nospin.hist.syscall_latency.p99 / 1000"
pass = { min = 0.0 }
source = "not published; reported"
"#,
    );
    let text = reproduce(&d, &["--quick"]);
    assert!(
        text.contains("tiny  1 of 1 metrics pass (1 information row, not judged)"),
        "{text}"
    );
    assert!(
        text.contains(
            "1 of 1 metrics within their pass rule; 1 with no published figure are information"
        ),
        "{text}"
    );
    let cells = |t: &str, m: &str| -> Vec<String> {
        let row = t
            .lines()
            .find(|l| l.starts_with("tiny ") && l.contains(m))
            .expect(t);
        row.split_whitespace().map(String::from).collect()
    };
    let bound = cells(&text, "p99_bound_us");
    assert_eq!(bound[2..4], ["<=", "50.000"], "{bound:?}");
    assert_eq!(bound[5], "-", "no sim/pub for a bound: {bound:?}");
    assert_eq!(bound.last().unwrap(), "yes");
    let info = cells(&text, "reported_us");
    assert_eq!(info.last().unwrap(), "info", "{info:?}");

    let json = reproduce(&d, &["--quick", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["kind"], "bound");
    assert!(v[0]["ratio"].is_null(), "{}", v[0]);
    assert_eq!(v[0]["pass"], true);
    assert_eq!(v[1]["kind"], "information");
    assert!(v[1]["pass"].is_null(), "not a pass: {}", v[1]);

    let md = reproduce(&d, &["--quick", "--format", "markdown"]);
    assert!(md.contains("| tiny | p99_bound_us | <= 50.000 |"), "{md}");
    let row = md.lines().find(|l| l.contains("reported_us")).unwrap();
    assert!(row.ends_with("| info |"), "{row}");

    let lkml = reproduce(&d, &["--quick", "--format", "lkml"]);
    let row = lkml.lines().find(|l| l.ends_with("p99_bound_us")).unwrap();
    assert!(row.trim_start().starts_with("<= 50"), "{row}");
    assert!(!row.contains('%'), "no %change against a bound: {row}");
    let row = lkml.lines().find(|l| l.ends_with("reported_us")).unwrap();
    assert!(row.contains(" info "), "{row}");
    assert!(
        lkml.contains("1 of 1 metrics within their pass rule"),
        "{lkml}"
    );

    let html = d.join("r.html");
    reproduce(&d, &["--quick", "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("1 of 1 metrics pass (1 information row, not judged)"));
    assert!(page.contains("bound: simulated"), "the bar row says bound");
    assert!(page.contains("&lt;= 50.000"), "published shown as a bound");
    // No bar is drawn for the bound: only the information note and the
    // bound note stand where the bars would be.
    let bars = page.matches("fill=\"#1f77b4\"").count() + page.matches("fill=\"#d62728\"").count();
    assert_eq!(bars, 0, "no ratio bar for a bound or an information row");
}
