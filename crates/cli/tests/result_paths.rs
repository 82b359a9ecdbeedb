//! One result-path syntax for every command: a path (in either spelling
//! of its table, `histogram`/`hist`, `counter`/`counters`) reads the same
//! figure in `plot --y`, in the columns of `sweep --format csv` and
//! `report --format csv`, and in a `[reproduce]` metric expression.

use std::path::PathBuf;
use std::process::Command;

fn smpsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smpsim"))
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(path)
}

fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn one_path_syntax_in_plot_sweep_report_and_reproduce() {
    let dir = std::env::temp_dir().join(format!("smpsim-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(repo("scenarios/examples/mutex-contention.toml"))
        .unwrap()
        .replace("duration = \"200ms\"", "duration = \"20ms\"")
        .replace("warmup = \"10ms\"", "warmup = \"2ms\"");
    let scenario = dir.join("paths.toml");
    std::fs::write(&scenario, &text).unwrap();
    let results = dir.join("r.jsonl");
    let csv = ok(smpsim()
        .arg("sweep")
        .arg(&scenario)
        .args([
            "--cpus",
            "2",
            "--variant",
            "spin",
            "-q",
            "--format",
            "csv",
            "-o",
        ])
        .arg(&results)
        .output()
        .unwrap());
    // The sweep's columns are paths.
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head
        .iter()
        .position(|h| *h == "histogram.syscall_latency.p99")
        .expect("a path column");
    let p99: f64 = row[col].parse().unwrap();
    let report = ok(smpsim()
        .arg("report")
        .arg(&results)
        .args(["--format", "csv"])
        .output()
        .unwrap());
    assert_eq!(report, csv);
    // plot: the same figure under every spelling.
    for y in [
        "histogram.syscall_latency.p99",
        "hist.syscall_latency.p99",
        "histograms.syscall_latency.p99",
    ] {
        let out = dir.join("p.csv");
        ok(smpsim()
            .arg("plot")
            .arg(&results)
            .args(["--y", y, "--format", "csv", "-o"])
            .arg(&out)
            .output()
            .unwrap());
        let plotted = std::fs::read_to_string(&out).unwrap();
        let mean: f64 = plotted
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(3)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(mean, p99, "{y}: {plotted}");
    }
    for y in ["counter.ops.rate", "counters.ops.rate"] {
        let out = dir.join("c.csv");
        ok(smpsim()
            .arg("plot")
            .arg(&results)
            .args(["--y", y, "--format", "csv", "-o"])
            .arg(&out)
            .output()
            .unwrap());
    }
    // reproduce: both spellings in one expression, against the same run.
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = format!(
        "{text}\n[reproduce]\ncase = \"paths\"\nseeds = 1\n\n[[reproduce.metric]]\nname = \"same\"\npublished = 1.0\nexpr = \"spin.histogram.syscall_latency.p99 / spin.hist.syscall_latency.p99\"\npass = {{ within_pct = 0.001 }}\nsource = \"the path syntax\"\n\n[[reproduce.metric]]\nname = \"p99\"\npublished = {p99}\nexpr = \"spin.histograms.syscall_latency.p99 + 0 * spin.counters.ops.rate\"\npass = {{ within_pct = 50.0 }}\nsource = \"the sweep's column\"\n"
    );
    std::fs::write(cases.join("paths.toml"), case).unwrap();
    let json = ok(smpsim()
        .args(["reproduce", "-q", "--format", "json", "--scenarios"])
        .arg(&cases)
        .output()
        .unwrap());
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(rows[0]["simulated"], 1.0, "{json}");
    assert!(rows[1]["simulated"].as_f64().unwrap() > 0.0, "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}
