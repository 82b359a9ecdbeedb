//! What a reader of `smpsim plot` sees: per-point plots drawn at the
//! largest swept x unless `--at` says otherwise (and saying so), a heatmap
//! of a point with data, axis labels in the unit of their ticks, x ticks at
//! the swept values, titles in words, captions inside the canvas, and the
//! ideal-scaling line of will-it-scale's plots.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{dir, repo, smpsim};

/// A sweep of the worked example over 1..16 CPUs, made once.
fn sweep() -> &'static PathBuf {
    static SWEEP: OnceLock<PathBuf> = OnceLock::new();
    SWEEP.get_or_init(|| {
        let out = dir("plot-defaults").join("r.jsonl");
        let scenario = repo("scenarios/examples/mutex-contention.toml");
        let status = smpsim()
            .args(["sweep", scenario.to_str().unwrap()])
            .args(["--cpus", "1,2,4,8,16", "--seeds", "2", "-q"])
            .args(["--set", "scenario.duration=20ms", "-o"])
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        out
    })
}

/// `smpsim plot` of the sweep with `args`, written to `to`; its text (a
/// PNG's bytes lossily).
fn plot(args: &[&str], to: &Path) -> String {
    let out = smpsim()
        .arg("plot")
        .arg(sweep())
        .args(args)
        .arg("-o")
        .arg(to)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&std::fs::read(to).unwrap()).into_owned()
}

fn svg(name: &str, args: &[&str]) -> String {
    plot(args, &dir(&format!("plot-defaults-{name}")).join("p.svg"))
}

/// The text of each `<text>` on the lines holding `marker`.
fn texts_on_lines_with(svg: &str, marker: &str) -> Vec<String> {
    svg.lines()
        .filter(|l| l.contains(marker))
        .filter_map(|l| {
            let at = l.find("<text")?;
            let open = at + l[at..].find('>')? + 1;
            let close = open + l[open..].find("</text>")?;
            Some(l[open..close].to_string())
        })
        .collect()
}

/// The caption's lines.
fn caption_lines(svg: &str) -> Vec<String> {
    let caption = svg
        .lines()
        .find(|l| l.contains("class=\"caption\""))
        .expect("a caption");
    caption
        .split("<tspan")
        .skip(1)
        .map(|t| {
            let open = t.find('>').unwrap() + 1;
            t[open..t.find("</tspan>").unwrap()].to_string()
        })
        .collect()
}

#[test]
fn per_point_plots_default_to_the_largest_swept_x_and_say_so() {
    for (name, kind) in [
        (
            "tail",
            &["--kind", "percentiles", "--y", "histogram.syscall_latency"][..],
        ),
        ("cpu", &["--kind", "cputime"][..]),
        ("heat", &["--kind", "heatmap"][..]),
    ] {
        let default = svg(&format!("{name}-default"), kind);
        let at16 = svg(&format!("{name}-16"), &[kind, &["--at", "16"]].concat());
        assert!(
            default.contains(" at cpus = 16</text>"),
            "{name}: {default}"
        );
        let said = "at cpus = 16, the largest swept (--at to choose another)";
        assert!(caption_lines(&default).join(" ").contains(said), "{name}");
        assert!(
            !caption_lines(&at16).join(" ").contains("largest"),
            "{name}"
        );
        // The same plot as --at 16 but for the caption.
        let body = |s: &str| {
            s.lines()
                .filter(|l| {
                    !l.contains("class=\"caption\"")
                        && !l.starts_with("<svg")
                        && !l.starts_with("<rect width")
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(body(&default), body(&at16), "{name}");
    }
    // Where 16 CPUs' time goes with a spinning mutex: busy, not the ~60%
    // idle of every swept count averaged together.
    let cpu = svg("cpu-idle", &["--kind", "cputime"]);
    let idle: Vec<f64> = cpu
        .lines()
        .filter(|l| l.starts_with("<rect class=\"idle\""))
        .map(|l| l.split("<title>idle ").nth(1).unwrap())
        .map(|t| t.split('%').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(idle.len(), 2);
    assert!(idle.iter().all(|&i| i < 30.0), "idle shares {idle:?}");
}

#[test]
fn a_heatmap_shows_a_point_with_data_and_ticks_cpus_and_time() {
    let h = svg("heatmap", &["--kind", "heatmap"]);
    let filled = h
        .lines()
        .filter(|l| l.starts_with("<rect class=\"cell\"") && !l.contains("fill=\"#ffffff\""))
        .count();
    assert!(filled >= 16, "a drawn panel, not a blank one: {h}");
    // The legend in the unit of its range, no "0ns, 0ns, 1ns, 1ns".
    let legend = texts_on_lines_with(&h, "stroke=\"#999\"");
    assert_eq!(legend[0], "none");
    assert!(legend[1..].iter().all(|l| l.ends_with("us")), "{legend:?}");
    // CPU rows and time windows are ticked.
    let cpus = texts_on_lines_with(&h, "class=\"ytick\"");
    assert!(
        cpus.contains(&"cpu0".to_string()) && cpus.len() >= 8,
        "{cpus:?}"
    );
    let windows = texts_on_lines_with(&h, "class=\"xtick\"");
    assert_eq!(windows.first().map(String::as_str), Some("0ms"));
    assert_eq!(
        windows.last().map(String::as_str),
        Some("10ms"),
        "the measured 20 ms - 10 ms warm-up"
    );
}

#[test]
fn axes_are_labelled_in_the_unit_of_their_ticks() {
    // A latency tail: the label's unit is the ticks' unit.
    let t = svg(
        "units-tail",
        &["--kind", "percentiles", "--y", "histogram.syscall_latency"],
    );
    assert!(t.contains(">syscall_latency (us, log scale)</text>"), "{t}");
    let ticks = texts_on_lines_with(&t, "stroke=\"#ddd\"");
    assert!(ticks.iter().all(|l| l.ends_with("us")), "{ticks:?}");
    // A latency against CPUs: ticks in us, not "120.0k".
    let p99 = svg("units-p99", &["--y", "histogram.syscall_latency.p99"]);
    assert!(p99.contains(">syscall_latency p99 (us)</text>"), "{p99}");
    let ticks = texts_on_lines_with(&p99, "class=\"ytick\"");
    assert!(
        ticks.len() >= 3 && ticks.iter().all(|l| l.ends_with("us")),
        "{ticks:?}"
    );
    // A rate: plain round numbers.
    let ops = svg("units-ops", &["--y", "counter.ops.rate"]);
    let ticks = texts_on_lines_with(&ops, "class=\"ytick\"");
    assert!(ticks.iter().all(|l| !l.contains('.')), "{ticks:?}");
}

#[test]
fn x_ticks_are_the_swept_values_and_titles_are_words() {
    let s = svg("xticks", &["--y", "counter.ops.rate"]);
    assert_eq!(
        texts_on_lines_with(&s, "class=\"xtick\""),
        ["1", "2", "4", "8", "16"]
    );
    assert!(s.contains(">CPUs (log2 scale)</text>"));
    assert!(s.contains(">mutex-contention: ops/s vs CPUs</text>"), "{s}");
    let p99 = svg("title-p99", &["--y", "hist.syscall_latency.p99"]);
    assert!(p99.contains(">mutex-contention: syscall_latency p99 vs CPUs</text>"));
}

#[test]
fn scaling_plots_of_a_rate_draw_the_ideal_line_unless_asked_not_to() {
    let s = svg("ideal", &["--y", "counter.ops.rate"]);
    let ideal: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("class=\"ideal\""))
        .collect();
    assert_eq!(ideal.len(), 2, "one per variant");
    // Linear from the first point: the y pixel drops 16x as far at 16
    // CPUs as at 1 (the axis is y = 0 at pixel 380).
    for line in &ideal {
        let points: Vec<(f64, f64)> = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let (first, last) = (points[0].1, points[points.len() - 1].1);
        let ratio = (380.0 - last) / (380.0 - first);
        assert!((ratio - 16.0).abs() < 0.5, "{ratio}: {line}");
    }
    assert!(s.contains(">ideal (linear)</text>"));
    assert!(caption_lines(&s)
        .join(" ")
        .contains("dashed: ideal (linear) scaling"));
    let off = svg("no-ideal", &["--y", "counter.ops.rate", "--no-ideal"]);
    assert!(!off.contains("class=\"ideal\"") && !off.contains("ideal (linear)"));
    // A latency does not scale: no ideal line.
    let p99 = svg("p99-no-ideal", &["--y", "histogram.syscall_latency.p99"]);
    assert!(!p99.contains("class=\"ideal\""));
}

#[test]
fn captions_wrap_inside_the_svg_and_the_png() {
    let d = dir("plot-defaults-caption");
    let s = plot(
        &["--kind", "percentiles", "--y", "histogram.syscall_latency"],
        &d.join("t.svg"),
    );
    let lines = caption_lines(&s);
    assert!(lines.len() >= 2, "{lines:?}");
    // 10 px DejaVu Sans, at most 6.4 px a character, from x = 10.
    assert!(
        lines
            .iter()
            .all(|l| l.chars().count() as f64 * 6.4 <= 700.0),
        "{lines:?}"
    );
    assert!(lines
        .join(" ")
        .ends_with("bars from the lowest to the highest"));
    let height = 450 + 13 * (lines.len() - 1);
    assert!(s.starts_with(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"{height}\""
    )));
    let png = d.join("t.png");
    plot(
        &["--kind", "percentiles", "--y", "histogram.syscall_latency"],
        &png,
    );
    let bytes = std::fs::read(&png).unwrap();
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(
        (be32(16), be32(20)),
        (1440, 2 * height as u32),
        "IHDR width x height"
    );
}

#[test]
fn csv_without_an_output_goes_to_stdout_and_svg_asks_for_one() {
    let out = smpsim()
        .arg("plot")
        .arg(sweep())
        .args(["--y", "counter.ops.rate", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let csv = String::from_utf8(out.stdout).unwrap();
    let to_dash = smpsim()
        .arg("plot")
        .arg(sweep())
        .args(["--y", "counter.ops.rate", "--format", "csv", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(csv.as_bytes(), &to_dash.stdout[..], "the same as `-o -`");
    assert!(csv.lines().count() > 5, "{csv}");
    let svg = smpsim()
        .arg("plot")
        .arg(sweep())
        .args(["--y", "counter.ops.rate"])
        .output()
        .unwrap();
    assert_eq!(svg.status.code(), Some(2));
    assert!(svg.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&svg.stderr).contains("give -o FILE"),
        "{}",
        String::from_utf8_lossy(&svg.stderr)
    );
}
