//! Runs over several seeds or replicas give the same output on one worker
//! thread or two (each seed's, each replica's streams depend on its seed
//! alone), and the same output when repeated.

mod common;

use common::{repo, smpsim};

/// Drops host time, the only field allowed to differ between runs.
fn strip_wall(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.remove("wall_seconds");
            map.values_mut().for_each(strip_wall);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_wall),
        _ => {}
    }
}

fn json_on(args: &[&str], threads: &str) -> serde_json::Value {
    let out = smpsim()
        .args(args)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", common::stderr(&out));
    let mut v = serde_json::from_slice(&out.stdout).expect("valid JSON");
    strip_wall(&mut v);
    v
}

#[test]
fn seeds_and_replicas_runs_do_not_depend_on_the_thread_count() {
    let scenario = repo("scenarios/examples/mutex-contention.toml");
    let scenario = scenario.to_str().unwrap();
    let short = [
        "--set",
        "scenario.duration=20ms",
        "--set",
        "scenario.warmup=2ms",
    ];
    let seeds: Vec<&str> = ["run", scenario, "--seeds", "4", "-q", "--format", "json"]
        .into_iter()
        .chain(short)
        .collect();
    let replicas: Vec<&str> = ["run", scenario, "--set", "scenario.replicas=3"]
        .into_iter()
        .chain(["-q", "--format", "json"])
        .chain(short)
        .collect();
    for args in [seeds, replicas] {
        let one = json_on(&args, "1");
        assert_eq!(one, json_on(&args, "2"), "{args:?}");
        assert_eq!(one, json_on(&args, "2"), "{args:?} repeated");
    }
}
