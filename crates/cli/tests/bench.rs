//! `smpsim bench`: the model rows carry their rate as a fraction of both
//! bare loops, and the two bare loops (a `std` binary heap of (time,
//! sequence) keys and smpsim's own queue) deliver the same events in the
//! same order: the same random draws land on the same events, so they end
//! at the same simulated time.

mod common;

use common::smpsim;
use serde_json::Value;

#[test]
fn bench_reports_both_bare_loops_and_the_fractions() {
    let out = smpsim()
        .args(["bench", "--cpus", "3,40", "--millis", "2", "-q"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let points: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let models: Vec<&str> = points
        .iter()
        .map(|p| p["model"].as_str().unwrap())
        .collect();
    let per_size = ["global-mutex", "+lockdep", "bare-heap", "bare-engine"];
    assert_eq!(models, [per_size, per_size].concat());
    for size in points.chunks(4) {
        let (heap, engine) = (&size[2], &size[3]);
        assert_eq!(heap["events"], engine["events"]);
        assert!(heap["events"].as_u64().unwrap() >= 1_000_000);
        assert_eq!(heap["simulated_ms"], engine["simulated_ms"]);
        assert!(heap["simulated_ms"].as_u64().unwrap() > 0);
        for model in &size[..2] {
            let rate = model["events_per_second"].as_f64().unwrap();
            for (fraction, bare) in [
                ("fraction_of_bare_heap", heap),
                ("fraction_of_bare_engine", engine),
            ] {
                let want = rate / bare["events_per_second"].as_f64().unwrap();
                let got = model[fraction].as_f64().unwrap();
                assert!(
                    (got - want).abs() <= 1e-9 * want,
                    "{fraction}: {got} vs {want}"
                );
            }
        }
        assert!(heap.get("fraction_of_bare_heap").is_none());
    }
}
