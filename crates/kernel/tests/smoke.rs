use smpsim_kernel::testkit::*;

#[test]
fn global_mutex_runs_and_conserves_cpu_time() {
    let spec = global_mutex_bench(16, 1_000, 20_000, 50_000_000);
    let r = smpsim_kernel::simulate(&spec);
    let acquired = r.counter("acquired").unwrap().count;
    let lock = r.lock("global").unwrap();
    eprintln!(
        "acquired {acquired} events {} lock {:?}",
        r.stats.events, lock
    );
    for cpu in &r.cpus {
        assert_eq!(
            cpu.times.total(),
            spec.duration,
            "cpu {} {:?}",
            cpu.cpu,
            cpu.times
        );
    }
    assert!(acquired > 1000);
}

/// A throttled cgroup of CPU burners gets about its quota, not more.
#[test]
fn cfs_bandwidth_limits_usage_to_quota() {
    use smpsim_kernel::*;
    let cpus = 8;
    let mut s = spec(flat_machine(cpus), 200_000_000);
    s.warmup = 20_000_000;
    s.cgroups.push(CgroupDecl {
        name: "base".into(),
        parent: None,
        bandwidth: Some(Bandwidth {
            quota: 1_000_000,
            period: 5_000_000,
            phase: 0,
        }),
        generated_descendants: 100,
    });
    s.task_groups.push(TaskGroupDecl {
        name: "burner".into(),
        placement: (0..4 * cpus).map(|k| k % cpus).collect(),
        affinity: Affinity::Pinned,
        policy: Policy::Normal,
        cgroup: Some(0),
        mm: 0,
        mm_per_task: false,
        program: Program {
            ops: vec![Op::Work(Dist::Const(1_000_000)), Op::Jump(0)],
            slots: 0,
            init: vec![],
        },
    });
    let r = simulate(&s);
    let bw = &r.cfs_bandwidth[0];
    eprintln!("{bw:?}");
    let quota_total = 1_000_000 * bw.nr_periods;
    // Each period may overrun by up to a tick per CPU that ran.
    assert!(
        bw.usage_ns <= quota_total + 2 * 1_000_000 * bw.nr_periods,
        "{bw:?}"
    );
    assert!(bw.usage_ns >= quota_total / 2, "{bw:?}");
    // Issue 37, item 17: cpu.stat's nr_throttled counts periods that began
    // throttled, never more than nr_periods (cfs_rq throttles are
    // `throttle_events`).
    assert!(bw.nr_throttled <= bw.nr_periods, "{bw:?}");
    assert!(bw.nr_throttled * 10 >= bw.nr_periods * 9, "{bw:?}");
    assert!(bw.throttle_events >= bw.nr_throttled, "{bw:?}");
}

/// A run that reports its progress gives the same result, and reports the
/// whole simulated time of every replica.
#[test]
fn progress_reporting_does_not_change_the_result() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let mut spec = smpsim_kernel::testkit::global_mutex_bench(8, 1_000, 20_000, 3_000_003);
    spec.replicas = 3;
    let plain = smpsim_kernel::simulate(&spec);
    let reached = Arc::new(AtomicU64::new(0));
    let reported = smpsim_kernel::simulate_with_progress(&spec, &reached);
    assert_eq!(plain, reported);
    assert_eq!(reached.load(Ordering::Relaxed), 3 * 3_000_003);
}
