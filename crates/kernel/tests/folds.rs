//! Event folds (`Kernel::folds`): an event handled as soon as it is
//! scheduled, when it would be the next one delivered anyway, gives the
//! same run as one that goes through the queue: every field of the
//! result is equal with each fold on, all on, and none; only the count of
//! folded events differs, and a fold that applies does fold events.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// The run with the given folds, and how many events it folded.
fn run(spec: &spec::Spec, folds: u8) -> (result::RunResult, u64) {
    let mut k = Kernel::new(spec);
    k.folds = folds;
    let mut r = k.run();
    r.stats.wall_seconds = 0.0;
    let folded = r.stats.by_kind.folded.iter().sum();
    r.stats.by_kind.folded = Default::default();
    (r, folded)
}

/// `spec` gives the same result whatever the folds; returns the events
/// each single fold (spin end, IRQ exit, task) folded.
fn same_with_every_fold(spec: &spec::Spec) -> [u64; 3] {
    let (none, folded) = run(spec, 0);
    assert_eq!(folded, 0);
    let mut each = [0; 3];
    for (i, fold) in [FOLD_SPIN_END, FOLD_IRQ_EXIT, FOLD_TASK, FOLD_ALL]
        .into_iter()
        .enumerate()
    {
        let (r, folded) = run(spec, fold);
        if r != none {
            let (a, b) = (format!("{none:?}"), format!("{r:?}"));
            let at = a
                .bytes()
                .zip(b.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            let from = at.saturating_sub(300);
            panic!(
                "fold {fold} changed the result:\n{}\n{}",
                &a[from..(at + 200).min(a.len())],
                &b[from..(at + 200).min(b.len())]
            );
        }
        if i < 3 {
            each[i] = folded;
        }
    }
    each
}

#[test]
fn the_global_mutex_benchmark_is_the_same_with_folds() {
    for cpus in [2, 16, 64] {
        let s = global_mutex_bench(cpus, US, 20 * US, 5 * MS);
        let [spin_end, _, task] = same_with_every_fold(&s);
        assert!(spin_end > 0 && task > 0, "{cpus} CPUs: {spin_end} {task}");
    }
}

#[test]
fn spinning_locks_are_the_same_with_folds() {
    for kind in ["ticket", "qspinlock", "ttas"] {
        let times = (Dist::Exp { mean: 200 }, Dist::Exp { mean: 2 * US });
        let s = lock_scaling_with(
            preset_machine("opteron-6172-48"),
            kind,
            LockOptions::default(),
            8,
            times,
            2 * MS,
        );
        let [spin_end, _, _] = same_with_every_fold(&s);
        assert!(spin_end > 0, "{kind}");
    }
}

#[test]
fn cross_cpu_calls_are_the_same_with_folds() {
    let mut s = spec(flat_machine(4), 5 * MS);
    let call = |cpu| {
        Op::Smp(SmpOp::SmpCallFunctionSingle {
            cpu: Expr::Const(cpu),
            func: CallFunc {
                cost: Dist::Exp { mean: 300 },
                units: None,
                handler: None,
            },
            wait: true,
        })
    };
    let ops = vec![
        Op::SyscallEnter,
        call(1),
        Op::SyscallExit,
        Op::Work(Dist::Exp { mean: 3 * US }),
    ];
    group(&mut s, "caller", vec![0, 2], Policy::Normal, ops, 1);
    let ops = vec![Op::Work(Dist::Exp { mean: 5 * US })];
    group(&mut s, "target", vec![1, 3], Policy::Normal, ops, 1);
    let [spin_end, irq_exit, _] = same_with_every_fold(&s);
    assert!(spin_end > 0 && irq_exit > 0, "{spin_end} {irq_exit}");
}
