//! `stop_machine()` (kernel/stop_machine.c) on small hand-built systems:
//! each test names the kernel function whose behaviour it checks.

use smpsim_kernel::stop_machine::*;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// A caller on CPU 0 that sleeps 100 us, then calls
/// `stop_machine_cpuslocked(func, cpu)` once (histogram `call`), and exits.
fn caller(s: &mut Spec, func: u64, cpu: Option<i64>) {
    let h = histogram(s, "call");
    task_group(
        s,
        "caller",
        vec![0],
        Policy::Normal,
        0,
        vec![
            sleep_for(100 * US),
            Op::SyscallEnter,
            Op::Mark(0),
            Op::Stop(StopOp::StopMachine {
                func: Dist::Const(func),
                cpu: cpu.map(Expr::Const),
            }),
            Op::RecordSince { hist: h, slot: 0 },
            Op::SyscallExit,
            Op::Exit,
        ],
    );
}

/// Runs the spec, returning its result and the one call's timeline.
fn run(s: &Spec) -> (RunResult, StopRecord) {
    let mut k = Kernel::new(s);
    k.log_stop_machine();
    let r = k.run();
    let log = k.stop_machine_log();
    assert_eq!(log.len(), 1, "one call");
    (r, log[0].clone())
}

/// The states every CPU goes through, in order.
const STATES: [usize; 4] = [
    MULTI_STOP_PREPARE,
    MULTI_STOP_DISABLE_IRQ,
    MULTI_STOP_RUN,
    MULTI_STOP_EXIT,
];

/// `multi_cpu_stop()` with `ack_state()` / `set_state()`: the last CPU to
/// ack a state moves `msdata->state` on, so every CPU sees each state,
/// and none sees the next before every CPU has acked this one. Here 16
/// CPUs, half of them busy with a task the stopper must preempt first.
#[test]
fn every_cpu_reaches_each_state_before_any_leaves_it() {
    let mut s = spec(flat_machine(16), 20 * MS);
    forever(
        &mut s,
        "busy",
        (8..16).collect(),
        Policy::Normal,
        vec![Op::Work(Dist::Exp { mean: 30 * US })],
    );
    caller(&mut s, 5 * US, None);
    let (_, rec) = run(&s);
    assert_eq!(rec.cpus.len(), 16, "num_threads = num_online_cpus()");
    for c in &rec.cpus {
        for w in STATES.windows(2) {
            assert!(c.seen[w[0]] <= c.acked[w[0]], "{c:?}");
            assert!(c.acked[w[0]] <= c.seen[w[1]], "{c:?}");
        }
        assert!(c.arrived <= c.seen[MULTI_STOP_PREPARE]);
        assert_eq!(
            c.exit, c.acked[MULTI_STOP_EXIT],
            "EXIT acked, the loop ends"
        );
    }
    for w in STATES.windows(2) {
        let last_ack = rec.cpus.iter().map(|c| c.acked[w[0]]).max().unwrap();
        let first_next = rec.cpus.iter().map(|c| c.seen[w[1]]).min().unwrap();
        assert!(
            last_ack < first_next,
            "state {} seen at {first_next} before every CPU acked {} (last at {last_ack})",
            w[1],
            w[0]
        );
    }
    let last_arrival = rec.cpus.iter().map(|c| c.arrived).max().unwrap();
    let first_disable = rec
        .cpus
        .iter()
        .map(|c| c.seen[MULTI_STOP_DISABLE_IRQ])
        .min()
        .unwrap();
    assert!(last_arrival < first_disable);
    // The caller returns once the last stopper has signalled done.
    let last_signal = rec.cpus.iter().map(|c| c.signalled).max().unwrap();
    assert_eq!(rec.completed_at, last_signal);
    assert!(rec.returned_at >= rec.completed_at);
    // The same spec and seed give the same timeline.
    assert_eq!(run(&s).1, rec);
}

/// `cpu_stop_queue_work()` wakes `migration/N`, which is in the stop class
/// and preempts whatever runs on its CPU, but only when that CPU can be
/// preempted: a task in a preempt-disabled section (`preempt_disable()`),
/// or with interrupts off (`local_irq_disable()`), keeps the CPU, and
/// every other CPU spins in MULTI_STOP_PREPARE until it lets go.
#[test]
fn the_call_waits_for_a_cpu_in_a_preempt_off_or_irq_off_section() {
    let section = 2 * MS;
    let call = |kind: Option<(Op, Op)>| {
        let mut s = spec(flat_machine(8), 20 * MS);
        let mut ops = Vec::new();
        if let Some((off, on)) = kind {
            ops.extend([
                Op::SyscallEnter,
                off,
                Op::Work(Dist::Const(section)),
                on,
                Op::SyscallExit,
            ]);
        }
        ops.extend([sleep_for(10 * MS), Op::Exit]);
        task_group(&mut s, "holder", vec![3], Policy::Normal, 1, ops);
        caller(&mut s, 5 * US, None);
        run(&s)
    };
    let (_, free) = call(None);
    let quick = free.returned_at - free.called_at;
    assert!(quick < 50 * US, "nothing in the way: {quick} ns");
    for (name, off, on) in [
        (
            "preempt-off",
            Op::Preempt(PreemptOp::PreemptDisable),
            Op::Preempt(PreemptOp::PreemptEnable),
        ),
        (
            "irq-off",
            Op::Preempt(PreemptOp::LocalIrqDisable),
            Op::Preempt(PreemptOp::LocalIrqEnable),
        ),
    ] {
        let (r, rec) = call(Some((off, on)));
        let cpu3 = rec.cpus.iter().find(|c| c.cpu == 3).unwrap();
        assert!(
            cpu3.arrived >= section,
            "{name}: migration/3 ran at {} inside the section",
            cpu3.arrived
        );
        let (fn_cpu, fn_start, _) = rec.fn_runs[0];
        assert_eq!(fn_cpu, 0);
        assert!(fn_start > section, "{name}: fn ran at {fn_start}");
        let took = r.histogram("call").unwrap().max;
        assert!(
            took > section - 100 * US - 10 * US,
            "{name}: the call took {took} ns"
        );
        // The others were in multi_cpu_stop() long before, spinning.
        for c in rec.cpus.iter().filter(|c| c.cpu != 3) {
            assert!(c.arrived < 150 * US, "{name}: {c:?}");
            assert!(r.cpus[c.cpu as usize].times.spin > section - 200 * US);
        }
    }
}

/// `multi_cpu_stop()` polls `msdata->state` and acks on
/// `msdata->thread_ack`, one cache line for every CPU: each state costs
/// a transfer of the line per CPU to see it and one to ack it, so the
/// time from the last CPU's arrival to completion grows with the number
/// of CPUs, and with what a transfer costs, not with a per-CPU constant.
/// At a home that serves one request at a time that is every poller's
/// re-fetch in turn; at a pipelined one the re-fetches overlap and only
/// the acks' chain of RMWs is left to grow with the CPUs.
#[test]
fn the_cost_grows_with_the_cpus_through_the_shared_line() {
    let settle_at = |cpus: u32, line_ns: f64, home: smpsim_machine::Home| {
        let mut m = flat_machine(cpus);
        m.costs.line_transfer.same_llc.ns = line_ns;
        m.coherence.home = home;
        let mut s = spec(m, 20 * MS);
        caller(&mut s, 5 * US, None);
        let (_, rec) = run(&s);
        let last_arrival = rec.cpus.iter().map(|c| c.arrived).max().unwrap();
        (rec.completed_at - last_arrival, rec.msdata_transfers)
    };
    let settle = |cpus, line_ns| settle_at(cpus, line_ns, smpsim_machine::Home::Blocking);
    let (p16, _) = settle_at(16, 48.0, smpsim_machine::Home::Pipelined);
    let (p400, _) = settle_at(400, 48.0, smpsim_machine::Home::Pipelined);
    assert!(
        p400 > 3 * p16,
        "pipelined: {p400} ns at 400 CPUs vs {p16} ns at 16"
    );
    let (t16, x16) = settle(16, 48.0);
    let (t400, x400) = settle(400, 48.0);
    // At least a transfer to see and one to ack every state, per CPU.
    assert!(x16 >= 2 * 3 * 16, "{x16} transfers at 16 CPUs");
    assert!(x400 >= 2 * 3 * 400, "{x400} transfers at 400 CPUs");
    assert!(x400 > 20 * x16, "{x400} vs {x16}");
    // 25x the CPUs: more than 8x the time (a data leg per re-fetch, on
    // top of per-CPU constants that do not grow).
    assert!(t400 > 8 * t16, "{t400} ns at 400 CPUs vs {t16} ns at 16");
    // The time is the line's: double the transfer, nearly double the time.
    let (t400x2, _) = settle(400, 96.0);
    let ratio = t400x2 as f64 / t400 as f64;
    assert!((1.8..2.05).contains(&ratio), "ratio {ratio}");
}

/// MULTI_STOP_RUN in `multi_cpu_stop()`: `if (is_active) err =
/// msdata->fn(msdata->data)`, after every CPU acked MULTI_STOP_DISABLE_IRQ
/// (`local_irq_disable()`): `fn` runs once, on the active CPU, while
/// interrupts are off on every CPU. Without a CPU (`cpus == NULL`) the
/// active CPU is `cpumask_first(cpu_online_mask)`.
#[test]
fn fn_runs_once_on_the_active_cpu_with_irqs_off_everywhere() {
    let func = 50 * US;
    for (cpu, active) in [(Some(5), 5), (None, 0)] {
        let mut s = spec(flat_machine(8), 20 * MS);
        caller(&mut s, func, cpu);
        let (r, rec) = run(&s);
        assert_eq!(rec.active_cpu, active);
        assert_eq!(rec.fn_runs.len(), 1, "{:?}", rec.fn_runs);
        let (on, start, end) = rec.fn_runs[0];
        assert_eq!((on, end - start), (active, func));
        for c in &rec.cpus {
            assert!(c.seen[MULTI_STOP_DISABLE_IRQ] <= start, "{c:?}");
            assert!(c.exit >= end, "{c:?}");
            assert!(
                r.cpus[c.cpu as usize].max_irq_off_ns >= func,
                "cpu {} had IRQs off for {} ns at most",
                c.cpu,
                r.cpus[c.cpu as usize].max_irq_off_ns
            );
        }
        // The active CPU's fn ran in sys time, not as spinning.
        let stoppers = r
            .task_groups
            .iter()
            .find(|g| g.name == "[migration]")
            .unwrap();
        assert_eq!(stoppers.tasks, 8);
        let t = &stoppers.per_task[active as usize];
        assert!(t.times.sys - t.times.spin >= func, "{:?}", t.times);
    }
}
