//! Waking an idle CPU (kernel/smp.c `send_call_function_single_ipi()`,
//! kernel/sched/core.c `set_nr_if_polling()` / `set_nr_and_not_polling()`):
//! a CPU that polls its thread flags in idle gets no IPI, only the store
//! to those flags; one that does not gets an IPI. Either way it first
//! leaves its idle state (`idle_exit`).

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;
use smpsim_machine::Cost;

const US: u64 = 1_000;

/// CPU 0 makes one synchronous call to idle CPU 1 and exits; returns when
/// it exited.
fn call_idle_cpu(polling: bool) -> (u64, Spec) {
    let mut m = flat_machine(2);
    m.idle.polling = polling;
    m.costs.idle_exit = Some(Cost::assumed(2_000.0, "test"));
    let mut s = spec(m, 100 * US);
    let mm = 0;
    task_group(
        &mut s,
        "caller",
        vec![0],
        Policy::Normal,
        mm,
        vec![smp_call_function_single(Expr::Const(1), US, true), Op::Exit],
    );
    let r = simulate(&s);
    let wall = r.task_groups[0].per_task[0].wall_ns.expect("it exited");
    (wall, s)
}

#[test]
fn a_polling_idle_cpu_is_woken_by_a_flag_store_not_an_ipi() {
    let (polled, s) = call_idle_cpu(true);
    let (ipi, _) = call_idle_cpu(false);
    let c = &s.machine.costs;
    // The IPI path pays the IPI's latency and the interrupt entry/exit;
    // the polled path pays one line transfer for the flag store instead.
    let saved = c.ipi_latency.nanos() + c.irq_entry_exit.nanos() - s.machine.line_transfer(0, 1);
    assert_eq!(ipi - polled, saved, "ipi {ipi} polled {polled}");
    // Both wait for the idle exit: the call takes at least that long.
    assert!(polled > 2_000 + US, "{polled}");
}

/// A CSD moves more than the csd_unlock() line: the caller's llist_add()
/// on the target's queue and the target's read of the csd each cost a
/// transfer (kernel/smp.c `__smp_call_single_queue()`,
/// `__flush_smp_call_function_queue()`).
#[test]
fn a_synchronous_call_moves_the_queue_the_csd_and_the_unlock() {
    let (polled, s) = call_idle_cpu(true);
    let c = &s.machine.costs;
    let xfer = s.machine.line_transfer(0, 1);
    // ipi_send by the caller, llist_add, the flag store, idle exit, the
    // csd read, the function, csd_unlock seen by the caller, the exit.
    let expected = c.ipi_send.nanos() + xfer + xfer + 2_000 + xfer + US + xfer;
    assert!(
        polled >= expected && polled < expected + 2 * US,
        "{polled} vs at least {expected}"
    );
}
