//! Issue 41: a cgroup's CFS period timer with a phase (`Bandwidth::phase`)
//! first fires at the phase, then every period, so the cgroup's throttled
//! stretches move with it; phase 0 keeps the timer at whole periods.

use smpsim_kernel::testkit::*;
use smpsim_kernel::trace::SegKind;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;

/// The stretches `(start, end)` of user time of the one CPU-bound task of a
/// cgroup with `cpu.max = 2ms 10ms` and the given phase, over 45 ms: a
/// gap of more than 100 us between two is a throttle (ticks and the
/// timer's hardirq are shorter).
fn run_stretches(phase: u64) -> Vec<(u64, u64)> {
    let mut s = spec(flat_machine(1), 45 * MS);
    s.cgroups.push(CgroupDecl {
        name: "g".into(),
        parent: None,
        bandwidth: Some(Bandwidth {
            quota: 2 * MS,
            period: 10 * MS,
            phase,
        }),
        generated_descendants: 0,
    });
    forever(
        &mut s,
        "burner",
        vec![0],
        Policy::Normal,
        vec![Op::Work(Dist::Const(MS))],
    );
    s.task_groups[0].cgroup = Some(0);
    let (_, rec) = simulate_traced(&s, 1_000_000, 0..s.duration);
    assert!(!rec.truncated);
    let mut stretches: Vec<(u64, u64)> = Vec::new();
    for seg in rec.segments.iter().filter(|g| g.kind == SegKind::User) {
        match stretches.last_mut() {
            Some(last) if seg.start <= last.1 + 100_000 => last.1 = seg.end,
            _ => stretches.push((seg.start, seg.end)),
        }
    }
    stretches
}

/// When the task runs again after a throttle.
fn run_starts(phase: u64) -> Vec<u64> {
    run_stretches(phase).iter().map(|s| s.0).collect()
}

/// When the task is throttled (the ends of its stretches, but one the
/// run's end cuts), from 20 ms on: the stretch after the first refill
/// also spends the first period's overrun (runtime is charged at the end
/// of each 1 ms work op), later ones spend exactly the quota.
fn throttles_from_20ms(phase: u64) -> Vec<u64> {
    run_stretches(phase)
        .iter()
        .map(|s| s.1)
        .filter(|e| (20 * MS..45 * MS).contains(e))
        .collect()
}

/// Each start is at most 50 us after the period timer's expiry (the
/// hardirq, `distribute_cfs_runtime()` and the switch in).
fn assert_near(got: &[u64], want_ms: &[f64]) {
    let want: Vec<u64> = want_ms.iter().map(|m| (m * MS as f64) as u64).collect();
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!(*g >= *w && *g < w + 50_000, "{got:?} vs {want:?}");
    }
}

#[test]
fn the_phase_moves_when_a_throttled_group_runs_again() {
    // Phase 0: the timer fires at 10, 20, 30, 40 ms; the pool starts full
    // (2 ms), so the task runs 0-2 ms, then 2 ms after each expiry.
    assert_near(&run_starts(0), &[0.0, 10.0, 20.0, 30.0, 40.0]);
    // Phase 3 ms: at 3, 13, 23, 33, 43 ms; every unthrottle moves with it.
    assert_near(&run_starts(3 * MS), &[0.0, 3.0, 13.0, 23.0, 33.0, 43.0]);
    assert_near(&run_starts(7 * MS), &[0.0, 7.0, 17.0, 27.0, 37.0]);
    // Phase 1 ms: the first refill comes before the initial quota is
    // spent, so the first throttle is at 3 ms, not 2.
    assert_near(&run_starts(MS), &[0.0, 11.0, 21.0, 31.0, 41.0]);
}

#[test]
fn every_throttle_is_later_by_the_phase() {
    // Aligned: throttled at 22, 32, 42 ms; with a phase, each of them is
    // that much later in its period (1 ms: 23, 33, 43; 7 ms: 29, 39).
    let aligned = throttles_from_20ms(0);
    assert_eq!(aligned.len(), 3, "{aligned:?}");
    for phase in [1, 3, 7] {
        let phased = throttles_from_20ms(phase * MS);
        assert!(phased.len() >= 2, "phase {phase} ms: {phased:?}");
        for (p, a) in phased.iter().zip(&aligned) {
            assert_eq!(
                *p as i64 - *a as i64,
                (phase * MS) as i64,
                "phase {phase} ms: {phased:?} vs {aligned:?}"
            );
        }
    }
}
