//! `smpsim host compare` on the real kernel: a verdict (within x2 or not)
//! and the cost that dominates the simulated figure, in text and JSON.
//! Skips, saying why, where the host cannot run the test.

mod common;

use common::smpsim;

/// A 2-CPU profile made from the generic-x86 preset: the figures need not
/// match this host, only the verdict's shape is checked.
fn profile() -> std::path::PathBuf {
    let text = include_str!("../../machine/presets/generic-x86.toml")
        .replace("cores_per_llc = 16", "cores_per_llc = 2");
    let path = std::env::temp_dir().join(format!("smpsim-cmp-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn compare_prints_a_verdict_and_the_dominant_cost() {
    if std::fs::read_to_string("/sys/devices/system/cpu/online").map_or(true, |s| s.trim() == "0") {
        eprintln!("skipped: host compare ctxswitch needs 2 online CPUs");
        return;
    }
    let p = profile();
    let run = |format: &str| {
        smpsim()
            .args([
                "host",
                "compare",
                "ctxswitch",
                "--seconds",
                "0.3",
                "--format",
                format,
            ])
            .arg("--profile")
            .arg(&p)
            .output()
            .unwrap()
    };
    let out = run("json");
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ratio = v["ratio"].as_f64().unwrap();
    assert_eq!(
        v["within_x2"].as_bool().unwrap(),
        (0.5..=2.0).contains(&ratio)
    );
    let sens = v["sensitivity"].as_array().unwrap();
    assert!(
        sens.iter().any(|s| s["cost"] == "context_switch"),
        "{sens:?}"
    );
    // The dominant cost is the first of the sensitivity table.
    assert_eq!(v["dominant_cost"], sens[0]["cost"]);
    let _ = std::fs::remove_file(&p);
}
