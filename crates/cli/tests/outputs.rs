//! Outputs: one never replaces an input or another output, a write error
//! names the path asked for, and a torn last line of a sweep is named by
//! `report` and `plot` and repaired by `sweep`.

mod common;

use std::process::Command;

use common::{dir, refused, scenario, smpsim, stderr, HEADER, TASK};

#[test]
fn an_output_never_replaces_an_input_or_another_output() {
    let d = dir("outputs");
    let p = scenario(&d, "s.toml", TASK);
    let before = std::fs::read(&p).unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("-o")
        .arg(&p)
        .output()
        .unwrap();
    refused(&o, "is the scenario");
    assert_eq!(
        std::fs::read(&p).unwrap(),
        before,
        "the scenario was replaced"
    );
    // An included file, named another way.
    std::fs::write(d.join("lib.toml"), "[functions]\nf = '''work(1us);'''\n").unwrap();
    let inc = d.join("inc.toml");
    std::fs::write(&inc, format!("include = [\"lib.toml\"]\n{HEADER}{TASK}")).unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&inc)
        .arg("-o")
        .arg(d.join(".").join("lib.toml"))
        .output()
        .unwrap();
    refused(&o, "is the included file");
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .arg("-o")
        .arg(&p)
        .output()
        .unwrap();
    refused(&o, "is the scenario");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // Two outputs on one path: the trace would be lost.
    let x = d.join("x.json");
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("--trace")
        .arg(&x)
        .arg("-o")
        .arg(&x)
        .output()
        .unwrap();
    refused(&o, "are the same file: one would be lost");
    assert!(!x.exists());
    // Devices take any number of outputs.
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--trace", "/dev/null", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn write_errors_name_the_path_asked_for_and_stale_temporaries_go() {
    let d = dir("writes");
    let p = scenario(&d, "s.toml", TASK);
    let out = d.join("missing-dir").join("r.txt");
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(&format!("{}:", out.display())), "{e}");
    assert!(!e.contains(".tmp"), "the error names the temporary: {e}");
    // A temporary left by a process that is gone (SIGKILL) is removed by
    // the next write of the same path; a live process's is kept.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = d.join(format!(".r.txt.{dead}.a1B2c3.tmp"));
    let live = d.join(format!(".r.txt.{}.a1B2c3.tmp", std::process::id()));
    std::fs::write(&stale, "x".repeat(1000)).unwrap();
    std::fs::write(&live, "x").unwrap();
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .arg("-o")
        .arg(d.join("r.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists(), "the stale temporary is still there");
    assert!(live.exists(), "a live process's temporary was removed");
}

#[test]
fn a_torn_last_line_is_named_by_report_and_plot_and_repaired_by_sweep() {
    let d = dir("torn");
    let p = scenario(&d, "s.toml", TASK);
    let full = d.join("r.jsonl");
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .args(["--seeds", "3", "-q", "-o"])
        .arg(&full)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = std::fs::read(&full).unwrap();
    let torn = d.join("torn.jsonl");
    std::fs::write(&torn, &whole[..whole.len() - 40]).unwrap();
    let o = smpsim()
        .arg("report")
        .arg(&torn)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("torn.jsonl:3: the last line is torn"),
        "{}",
        stderr(&o)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    let o = smpsim()
        .arg("plot")
        .arg(&torn)
        .args(["--x", "seed", "--y", "counter.x.rate", "-o"])
        .arg(d.join("p.svg"))
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("torn.jsonl:3: the last line is torn"),
        "{}",
        stderr(&o)
    );
    // A torn line elsewhere is an error naming it.
    let mut mid = whole[..whole.len() - 40].to_vec();
    mid.extend_from_slice(b"\n");
    mid.extend_from_slice(&whole[whole.len() - 40..]);
    std::fs::write(&torn, &mid).unwrap();
    let o = smpsim().arg("report").arg(&torn).output().unwrap();
    refused(&o, "torn.jsonl:3: not a sweep result");
    // The sweep resumed: the torn point runs again, the file is whole.
    std::fs::write(&torn, &whole[..whole.len() - 40]).unwrap();
    let o = smpsim()
        .arg("sweep")
        .arg(&p)
        .args(["--seeds", "3", "-q", "-o"])
        .arg(&torn)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&torn).unwrap(), whole);
}

/// `run --seeds` and `run --explore` in each `--format`: refused with an
/// error, or printed in that format, never silently as text.
#[test]
fn every_format_over_many_runs_is_refused_or_itself() {
    use clap::ValueEnum;
    let d = dir("many_runs_formats");
    let p = scenario(&d, "s.toml", TASK);
    let many = |flag: &str, format: &str| {
        smpsim()
            .arg("run")
            .arg(&p)
            .args([flag, "2", "-q", "--format", format])
            .output()
            .unwrap()
    };
    for flag in ["--seeds", "--explore"] {
        let text = many(flag, "text");
        assert!(text.status.success(), "{flag}: {}", stderr(&text));
        for f in smpsim_report::format::RunFormat::value_variants() {
            let name = f.to_possible_value().unwrap().get_name().to_string();
            let o = many(flag, &name);
            let why = match flag {
                "--seeds" => f.over_seeds().err(),
                _ => f.over_schedules().err(),
            };
            if let Some(why) = why {
                refused(&o, &format!("error: --format {why}"));
                assert!(o.stdout.is_empty(), "{flag} --format {name} printed");
                continue;
            }
            assert!(o.status.success(), "{flag} --format {name}: {}", stderr(&o));
            if name != "text" {
                assert_ne!(o.stdout, text.stdout, "{flag} --format {name} printed text");
            }
        }
    }
}
