//! `smpsim host run`: its text starts with stress-ng's `--metrics-brief`
//! table (stressor, bogo ops, real/usr/sys time, bogo ops/s both ways),
//! and its JSON carries the same figures. Needs a host that can run
//! `ctxswitch` (2 online CPUs); skips, saying so, where it cannot.

mod common;

use common::smpsim;

/// Whether `host list` says `test` can run here.
fn runnable(test: &str) -> bool {
    let out = smpsim()
        .args(["host", "list", "--format", "json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .any(|t| t["test"] == test && t["runnable"] == true)
}

#[test]
fn host_run_prints_stress_ngs_metrics_brief() {
    if !runnable("ctxswitch") {
        eprintln!("SKIPPED: this host cannot run ctxswitch (see `smpsim host list`)");
        return;
    }
    let out = smpsim()
        .args(["host", "run", "ctxswitch", "--seconds", "0.4"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("stressor "))
        .expect(&text);
    assert_eq!(
        lines[at],
        "stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s"
    );
    assert_eq!(
        lines[at + 1],
        "                          (secs)    (secs)    (secs)   (real time) (usr+sys time)"
    );
    let row: Vec<&str> = lines[at + 2].split_whitespace().collect();
    assert_eq!(row.len(), 7, "{row:?}");
    assert_eq!(row[0], "ctxswitch");
    let n: f64 = row[1].parse().unwrap();
    let f = |i: usize| row[i].parse::<f64>().unwrap();
    assert!(n > 0.0 && f(2) > 0.0 && f(3) + f(4) > 0.0, "{row:?}");
    // The rates are the bogo ops over the times printed, to their rounding
    // (each time is within 0.005 s of the one divided by).
    let within = |rate: f64, secs: f64, slack: f64| {
        n / (secs + slack) <= rate * 1.0001 && rate <= n / (secs - slack).max(1e-9) * 1.0001
    };
    assert!(within(f(5), f(2), 0.005), "{row:?}");
    assert!(within(f(6), f(3) + f(4), 0.01), "{row:?}");
    assert!(lines[at + 3].contains("a bogo op: one pipe round trip"));
}
