//! `smpsim calibrate --contention` on this host, briefly: 1 and 2 threads,
//! a few short trials; the rows must parse back and be positive.

use smpsim_host::calibrate::contention::{measure, Bench, Contention, Options};

#[test]
fn contention_rows_on_this_host_parse_and_are_positive() {
    let online = smpsim_host::sys::online_cpus();
    let allowed = smpsim_host::sys::allowed_cpus();
    if allowed.iter().filter(|c| online.contains(c)).count() < 2 {
        eprintln!("skipped: fewer than 2 CPUs allowed to this process, a contended line needs two");
        return;
    }
    let o = Options {
        max_threads: Some(2),
        trials: 5,
        burst_ns: 500_000,
        fifo: true,
    };
    let c = measure("test-host", &o).expect("measured");
    let (curves, idle) = Contention::parse(&c.render()).expect("the rows parse back");
    assert_eq!(curves.len(), Bench::ALL.len() * 2, "{curves:?}");
    for b in Bench::ALL {
        for n in [1, 2] {
            let r = curves
                .iter()
                .find(|r| r.benchmark == b.id() && r.threads == n)
                .unwrap_or_else(|| panic!("{} at {n} threads", b.id()));
            assert!(r.value > 0.0 && r.value.is_finite(), "{r:?}");
            assert_eq!(r.unit, "ns_per_op_per_thread");
            assert_eq!(r.machine, "test-host");
        }
    }
    assert!(!idle.is_empty());
    for r in &idle {
        assert!(r.value_ns > 0.0 && r.n_pairs == Some(1), "{r:?}");
    }
}
