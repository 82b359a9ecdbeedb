//! Reports: the HTML page of `reproduce --html` opened in a real browser
//! (headless Chromium, when the build found one: `SMPSIM_CHROMIUM`, or
//! `chromium` / `chromium-browser` on PATH; reported as ignored, SKIPPED,
//! when not), the page's own content,
//! `--format lkml` within 72 columns, CSV, and `report`'s bad input.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{repo, smpsim};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("smpsim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ok(out: std::process::Output) -> String {
    assert!(out.status.success(), "{}", common::stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The Chromium to test with: the build script found one
/// (`SMPSIM_CHROMIUM`, or `chromium` / `chromium-browser` on PATH) and
/// said where; without one the browser test is ignored, which the test
/// run reports as such rather than as a pass.
fn chromium() -> PathBuf {
    let p = PathBuf::from(option_env!("SMPSIM_TEST_CHROMIUM").unwrap_or(""));
    assert!(
        p.is_file(),
        "the Chromium found at build time ({}) is gone: rebuild the tests",
        p.display()
    );
    p
}

fn headless(browser: &Path, profile: &Path, args: &[&str], page: &Path) -> std::process::Output {
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("the browser starts")
}

/// The cases of the test: the quick ones (the page's builder is the same
/// for every case).
const CASES: &[&str] = &["hotplug-smt", "slow-mutex"];

/// `reproduce --html` of [`CASES`], made once: the page, its JSON rows and
/// its folder.
fn reproduce_page() -> &'static (PathBuf, Vec<serde_json::Value>, PathBuf) {
    static PAGE: std::sync::OnceLock<(PathBuf, Vec<serde_json::Value>, PathBuf)> =
        std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        let dir = scratch("html");
        let page = dir.join("report.html");
        let json = ok(smpsim()
            .args(["reproduce", "--quick", "-q", "--format", "json", "--html"])
            .arg(&page)
            .args(CASES)
            .output()
            .unwrap());
        (page, serde_json::from_str(&json).unwrap(), dir)
    })
}

#[test]
fn the_reproduce_page_is_self_contained_with_machine_and_whole_assumptions() {
    let (page, _, _) = reproduce_page();
    let html = std::fs::read_to_string(page).unwrap();
    // Self-contained: nothing fetched (the SVG namespace is a name, not a fetch).
    for bad in [
        "<img",
        "<link",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(bad), "{bad}");
    }
    assert!(html.contains("smpsim reproduce --quick -q --format json --html"));
    assert!(html.contains("<h3>Machine: ") && html.contains("Assumed values ("));
    // hotplug-smt's takedown_cpu assumption is a paragraph: all of it is
    // listed, with the setting below it.
    assert!(
        html.contains("pseries_cpu_disable() (set_cpu_online(), the XIVE teardown")
            && html.contains("stop_machine_park(). Swept in docs/hotplug-smt.md."),
        "the takedown_cpu assumption, whole"
    );
    // Machine costs: a value and its unit, words without one.
    assert!(html.contains("<th>cost</th><th>value</th><th>unit</th><th>source</th>"));
    assert!(!html.contains("<th>ns</th>"));
}

#[test]
#[cfg_attr(
    smpsim_no_chromium,
    ignore = "SKIPPED: no Chromium here (set SMPSIM_CHROMIUM, or install chromium, and rebuild)"
)]
fn the_reproduce_page_renders_in_a_browser_with_every_case_and_metric() {
    let (page, rows, dir) = reproduce_page();
    let (page, dir) = (page.as_path(), dir.as_path());
    let browser = chromium();
    let profile = dir.join("profile");
    // The DOM after the page's scripts ran: every case and metric, and the
    // page's own check that every plot rendered.
    let out = headless(&browser, &profile, &["--dump-dom"], page);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && dom.contains("</html>"), "{dom}");
    for r in rows {
        for key in ["case", "metric"] {
            let v = r[key].as_str().unwrap();
            assert!(dom.contains(v), "{key} {v} missing from the page");
        }
    }
    for c in CASES {
        assert!(dom.contains(&format!("id=\"case-{c}\"")), "{c}");
    }
    // Per case: its ratio plot and its bands' plot (bands are on by default).
    let plots = 2 * CASES.len();
    assert!(
        dom.contains(&format!("data-check=\"ok {plots} plots\"")),
        "the page's check: {}",
        dom.split("data-check=")
            .nth(1)
            .unwrap_or("(no mark)")
            .chars()
            .take(200)
            .collect::<String>()
    );
    // A screenshot, and no console error while it loads.
    let png = dir.join("report.png");
    let out = headless(
        &browser,
        &profile,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,2400",
            "--enable-logging=stderr",
            "--v=0",
        ],
        page,
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    for bad in ["Uncaught", "ERROR:CONSOLE", "Failed to load resource"] {
        assert!(!log.contains(bad), "{bad} in the browser's log:\n{log}");
    }
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{}",
        bytes.len()
    );
    // The page stays for the other test of it; the browser's files go.
    let _ = std::fs::remove_dir_all(&profile);
}

fn assert_72(text: &str) {
    assert!(!text.trim().is_empty());
    for l in text.lines() {
        assert!(
            l.chars().count() <= 72,
            "{} columns: {l:?}",
            l.chars().count()
        );
    }
}

#[test]
fn lkml_text_fits_72_columns_for_run_reproduce_and_sweep() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let run = ok(smpsim()
        .arg("run")
        .arg(&scenario)
        .args(["--set", "scenario.duration=20ms", "--format", "lkml", "-q"])
        .output()
        .unwrap());
    assert_72(&run);
    assert!(
        run.contains("%change") && run.contains("ops per second"),
        "{run}"
    );
    let rep = ok(smpsim()
        .args(["reproduce", "--quick", "-q", "--format", "lkml"])
        .args(CASES)
        .output()
        .unwrap());
    assert_72(&rep);
    assert!(
        rep.contains("published") && rep.contains("smt1_speedup"),
        "{rep}"
    );
    let dir = scratch("lkml");
    let results = dir.join("r.jsonl");
    let sweep = ok(smpsim()
        .arg("sweep")
        .arg(&scenario)
        .args([
            "--cpus",
            "1,4",
            "--seeds",
            "2",
            "--set",
            "scenario.duration=20ms",
        ])
        .args(["-q", "--format", "lkml", "-o"])
        .arg(&results)
        .output()
        .unwrap());
    assert_72(&sweep);
    assert!(sweep.contains("ops/s @4 CPUs"), "{sweep}");
    // The same from the results file, and as CSV and HTML.
    let again = ok(smpsim()
        .arg("report")
        .arg(&results)
        .args(["--format", "lkml"])
        .output()
        .unwrap());
    assert_eq!(again, sweep);
    let csv = ok(smpsim()
        .arg("report")
        .arg(&results)
        .args(["--format", "csv"])
        .output()
        .unwrap());
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 2 * 2);
    assert!(lines[0].starts_with("variant,cpus,scenario.duration,seed,counter.ops.rate"));
    let page = dir.join("page.html");
    ok(smpsim()
        .arg("report")
        .arg(&results)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("class=\"series\" data-name=\"spin\""));
    assert!(html.contains("smpsim sweep ") && html.contains("--cpus 1,4"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_gives_its_window_series_as_csv() {
    let csv = ok(smpsim()
        .arg("run")
        .arg(repo("scenarios/examples/mutex-contention.toml"))
        .args([
            "--set",
            "scenario.duration=30ms",
            "--set",
            "scenario.warmup=0ms",
        ])
        .args([
            "--set",
            "kernel.latency_window=10ms",
            "--format",
            "csv",
            "-q",
        ])
        .output()
        .unwrap());
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "variant,cpu,window,preempt_off_max_ns,irq_off_max_ns"
    );
    // 2 variants x 16 CPUs x 3 windows.
    assert_eq!(lines.len(), 1 + 2 * 16 * 3, "{csv}");
    assert!(lines[1].starts_with("spin,0,0,"));
}

#[test]
fn report_refuses_what_is_not_a_sweep() {
    let dir = scratch("report-bad");
    let not = dir.join("not.jsonl");
    std::fs::write(&not, "{\"a\": 1}\n").unwrap();
    let garbage = dir.join("garbage.jsonl");
    std::fs::write(&garbage, "hello\n").unwrap();
    for f in [dir.join("missing.jsonl"), not, garbage, dir.clone()] {
        let out = smpsim().arg("report").arg(&f).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", f.display());
        assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
        assert!(out.stdout.is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The text report's task-group table lists every variant's groups,
/// matched by name: with `rcu_nocbs` only the second variant has the
/// `rcuop/N` kthreads, and their time (the callbacks' work) must show.
#[test]
fn task_groups_of_a_later_variant_only_are_in_the_text_report() {
    let out = ok(smpsim()
        .arg("run")
        .arg(repo("scenarios/examples/rcu-callbacks.toml"))
        .args([
            "--set",
            "scenario.duration=5ms",
            "--set",
            "scenario.warmup=1ms",
        ])
        .output()
        .unwrap());
    let table = out
        .split("(times per task)\n")
        .nth(1)
        .expect("the task-group table");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    let row = |group: &str, variant: &str| {
        rows.iter()
            .find(|r| r.first() == Some(&group) && r.get(1) == Some(&variant))
            .cloned()
    };
    let rcuop = row("[rcuop]", "nocbs").unwrap_or_else(|| panic!("no [rcuop] row:\n{table}"));
    assert_eq!(rcuop[2], "16", "{table}");
    assert_ne!(
        rcuop[4], "0ns",
        "rcuop's sys time is the callbacks':\n{table}"
    );
    assert!(row("[rcuop]", "softirq").is_none(), "{table}");
    assert!(row("[rcu_sched]", "softirq").is_some(), "{table}");
    assert!(row("[rcu_sched]", "nocbs").is_some(), "{table}");
}
