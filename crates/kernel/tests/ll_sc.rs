//! Atomics on load-linked / store-conditional machines (powerpc
//! `lwarx`/`stwcx.` loops in arch/powerpc/include/asm/atomic.h, arm64
//! without LSE): an RMW is a shared fetch plus an upgrade, and with a
//! `shared` load-reserve a reservation lost to another CPU's store fails
//! the `stwcx.` and the loop retries. Locked atomics (x86) are one
//! read-for-ownership. The per-line arithmetic is tested in `coherence`;
//! here, what it does to CPUs hammering one `atomic_t`.

use smpsim_kernel::testkit::*;
use smpsim_kernel::*;
use smpsim_machine::{AtomicKind, LoadReserve};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// `cpus` CPUs of power8-192 loop on `atomic_inc(&v)` with 1 us of work
/// between; returns the increments done in 5 ms and the machine's cost of
/// one CAS between the first two chips.
fn atomic_incs(kind: AtomicKind, load_reserve: LoadReserve, cpus: u32) -> u64 {
    let mut m = preset_machine("power8-192");
    m.atomics.kind = kind;
    m.atomics.load_reserve = load_reserve;
    let mut s = spec(m, 5 * MS);
    s.objects.push(ObjectDecl {
        name: "v".into(),
        kind: ObjectKind::Atomic,
        per_cpu: false,
    });
    let v = ObjRef {
        object: s.objects.len() as u32 - 1,
        index: None,
    };
    let done = counter(&mut s, "incs");
    // One CPU per chip first: every transfer crosses chips.
    let placement = (0..cpus).map(|i| (i % 16) * 12 + i / 16).collect();
    forever(
        &mut s,
        "incrementers",
        placement,
        Policy::Normal,
        vec![
            Op::Locking(LockingOp::AtomicRmw(v)),
            Op::Count(done),
            Op::Work(Dist::Const(US)),
        ],
    );
    simulate(&s).counters[0].count
}

#[test]
fn an_uncontended_ll_sc_atomic_costs_the_cas_figure() {
    // Two CPUs on different chips: the line ping-pongs, each RMW a fetch
    // and an upgrade, half the CAS figure each: as fast as a locked RMW.
    let locked = atomic_incs(AtomicKind::Locked, LoadReserve::Held, 2);
    let held = atomic_incs(AtomicKind::LlSc, LoadReserve::Held, 2);
    let shared = atomic_incs(AtomicKind::LlSc, LoadReserve::Shared, 2);
    // (Not to the increment: other lines, the tick's, halve on LL/SC.)
    assert!(held.abs_diff(locked) * 100 < locked, "{held} vs {locked}");
    assert!(
        shared.abs_diff(locked) * 100 < locked,
        "{shared} vs {locked}"
    );
}

#[test]
fn contended_ll_sc_with_a_shared_load_reserve_collapses() {
    // 64 CPUs, 4 per chip: the line is saturated (64 RMWs per 1 us of
    // work, each at least a same-chip CAS). Locked and held RMWs
    // serialize at about one CAS figure each, far below what the CPUs
    // ask; with a shared load-reserve the k-th of a burst fetches k times
    // and throughput falls far below that.
    let locked = atomic_incs(AtomicKind::Locked, LoadReserve::Held, 64);
    let held = atomic_incs(AtomicKind::LlSc, LoadReserve::Held, 64);
    let shared = atomic_incs(AtomicKind::LlSc, LoadReserve::Shared, 64);
    eprintln!("64 CPUs, 5 ms: locked {locked}, ll-sc held {held}, ll-sc shared {shared}");
    let same_chip = preset_machine("power8-192").line_transfer(0, 1);
    assert!(locked <= 5 * MS / same_chip, "{locked}");
    assert!(held.abs_diff(locked) * 10 < locked, "{held} vs {locked}");
    assert!(shared * 4 < held, "{shared} vs {held}");
}
