//! Progress goes to stderr only: a bar on a terminal (tested under a
//! pseudo-terminal made by `script(1)`, skipped where there is none),
//! periodic lines in a log, nothing with `--quiet`; stdout keeps the
//! results, valid JSON with `--format json`.

mod common;

use std::process::Command;

use common::{bin, repo, smpsim};

/// A run long enough for the bar to be drawn a few times.
fn run_args() -> Vec<String> {
    vec![
        "run".into(),
        repo("scenarios/examples/mutex-contention.toml")
            .display()
            .to_string(),
        "--set".into(),
        "scenario.duration=300ms".into(),
        "--format".into(),
        "json".into(),
    ]
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn the_bar_is_drawn_on_a_terminal_and_stdout_stays_json() {
    let has_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_script {
        eprintln!("note: no script(1) here to make a pseudo-terminal; test skipped");
        return;
    }
    let dir = common::dir("pty");
    let json = dir.join("out.json");
    // stdout to a file, stderr to the pseudo-terminal `script` records.
    let mut cmd = quote(&bin().display().to_string());
    for a in run_args() {
        cmd.push(' ');
        cmd.push_str(&quote(&a));
    }
    cmd.push_str(&format!(" > {}", quote(&json.display().to_string())));
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let term = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{term}");
    assert!(
        term.contains("run [") && term.contains("variants") && term.contains("ETA"),
        "no bar on the terminal: {term:?}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("stdout is JSON");
    assert_eq!(v["variants"].as_array().unwrap().len(), 2);
    assert!(!text.contains("ETA"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_log_gets_plain_lines_and_quiet_gets_nothing() {
    let out = smpsim()
        .args(run_args())
        .env("SMPSIM_PROGRESS_INTERVAL", "0.05")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("run: ") && l.contains("ETA") && l.contains("elapsed]")),
        "{err}"
    );
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is JSON");
    let out = smpsim()
        .args(run_args())
        .arg("--quiet")
        .env("SMPSIM_PROGRESS_INTERVAL", "0.05")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
