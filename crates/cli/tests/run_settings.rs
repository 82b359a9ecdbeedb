//! What a run is told and what it says about itself: a variant-scoped
//! `--set` applies to that variant, a shorter duration names the warm-up
//! to shorten too, the header shows each variant's CPUs and a measured
//! window shorter than two ticks is warned.

mod common;

use common::{dir, repo, scenario, smpsim, stderr, TASK};

/// A variant-scoped `--set` applies to that variant (it was
/// silently ignored); a misspelt variant is an error.
#[test]
fn variant_scoped_set_applies_or_is_refused() {
    let s = repo("scenarios/examples/mutex-contention.toml");
    let s = s.to_str().unwrap();
    let out = smpsim()
        .args(["run", s, "--format", "json"])
        .args(["--set", "variant.spin.scenario.duration=30ms"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let simulated: Vec<u64> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["stats"]["simulated_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(simulated, vec![30_000_000, 200_000_000]);

    let out = smpsim()
        .args(["run", s, "--set", "variant.spn.scenario.duration=1ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown variant `spn`"),
        "{}",
        stderr(&out)
    );
}

/// Item 9: `--set scenario.duration=20ms` on a shipped scenario with a
/// longer warm-up says what else to set.
#[test]
fn a_shorter_duration_says_to_shorten_the_warmup() {
    let s = repo("scenarios/membarrier-percpu.toml");
    let s = s.to_str().unwrap();
    let out = smpsim()
        .args(["run", s, "--set", "scenario.duration=20ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--set scenario.warmup=0s"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_header_shows_each_variants_cpus_and_a_short_window_is_warned() {
    let d = dir("header");
    let p = scenario(
        &d,
        "v.toml",
        &format!("{TASK}[variant.one]\ndescription = \"1 CPU\"\n[variant.big]\nmachine.topology.cores_per_llc = 4\n"),
    );
    let o = smpsim().arg("run").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("c on generic-x86 (CPUs: one 1, big 4), 1.00ms simulated"),
        "{out}"
    );
    // 1 ms measured at HZ=1000: shorter than two ticks.
    assert!(
        stderr(&o).contains(
            "warning: one: the measured window (1 ms) is shorter than two scheduler ticks (1 ms at HZ=1000)"
        ),
        "{}",
        stderr(&o)
    );
    let o = smpsim()
        .arg("run")
        .arg(&p)
        .args(["--set", "scenario.duration=10ms"])
        .output()
        .unwrap();
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}
