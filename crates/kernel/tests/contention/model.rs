//! One published point simulated under a set of global contention rules.

use smpsim_kernel::program::*;
use smpsim_kernel::spec::*;
use smpsim_kernel::testkit::*;
use smpsim_kernel::*;

use crate::curves::{Loop, Machine};

const US: u64 = 1_000;

/// The global contention rules: the same for every machine
/// (`smpsim_machine::Coherence`'s defaults are the fitted ones).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rules {
    /// ns a home is busy per request, whatever its transfer.
    pub occupancy: f64,
    /// and this part of the request's whole transfer.
    pub per_transfer: f64,
    /// Of a transfer, the part a request queued at the owner pays.
    pub forward: f64,
    /// Of a transfer, how long the next request's snoop takes to reach
    /// the owner, whose writes hit until then.
    pub snoop: f64,
}

impl Rules {
    fn apply(&self, m: &mut smpsim_machine::Machine) {
        m.coherence.occupancy.ns = self.occupancy;
        m.coherence.occupancy_per_transfer = self.per_transfer;
        m.coherence.forward_fraction = self.forward;
        m.coherence.snoop_fraction = self.snoop;
    }
}

/// A sensitivity run's idle transfer: `FIT_TRANSFER_SCALE=id:factor,...`
/// multiplies the transfers between cores (not the L1 hit, not an SMT
/// sibling's) of the machines named, e.g. a proxy's matrix taken at
/// another clock. For "what would this idle input do" experiments only
/// (docs/contention.md): the recorded table is the run without it.
fn transfer_scale(id: &str) -> f64 {
    std::env::var("FIT_TRANSFER_SCALE")
        .unwrap_or_default()
        .split(',')
        .filter_map(|kv| kv.split_once(':'))
        .find(|(k, _)| *k == id)
        .map_or(1.0, |(_, f)| {
            f.parse().expect("FIT_TRANSFER_SCALE id:factor")
        })
}

/// The model's ns per iteration of one thread with `n` threads per line.
pub fn ns_per_op(m: &Machine, bench: Loop, n: u32, rules: Rules) -> f64 {
    let mut machine = preset_machine(m.preset);
    rules.apply(&mut machine);
    let scale = transfer_scale(m.id);
    if scale != 1.0 {
        let t = &mut machine.costs.line_transfer;
        for c in [
            &mut t.same_llc,
            &mut t.same_node,
            &mut t.same_socket,
            &mut t.cross_socket,
        ] {
            c.ns *= scale;
        }
        for d in &mut t.by_node_distance {
            d.ns *= scale;
        }
    }
    let threads = m.all_threads.unwrap_or(n);
    let groups = i64::from(threads / n);
    let outside = bench.outside();
    // Tight loops settle within a few thousand operations; folly's loops
    // with ~1 us of work each need longer.
    let (duration, warmup) = if outside == 0 {
        (200 * US, 20 * US)
    } else {
        (1_000 * US, 100 * US)
    };
    let mut s = spec(machine, duration);
    s.warmup = warmup;
    let mut line = || {
        s.objects.push(ObjectDecl {
            name: format!("line{}", s.objects.len()),
            kind: ObjectKind::Atomic,
            per_cpu: true,
        });
        ObjRef {
            object: s.objects.len() as u32 - 1,
            index: Some(Expr::Bin(
                BinOp::Rem,
                Box::new(Expr::TaskIndex),
                Box::new(Expr::Const(groups)),
            )),
        }
    };
    let mut ops = match bench {
        Loop::Rmw { .. } => vec![Op::Locking(LockingOp::AtomicRmw(line()))],
        Loop::Cmpxchg { .. } => vec![Op::Locking(LockingOp::AtomicCmpxchgLoop(line()))],
        Loop::RmwLines { lines, .. } => (0..lines)
            .map(|_| Op::Locking(LockingOp::AtomicRmw(line())))
            .collect(),
    };
    let done = counter(&mut s, "iterations");
    ops.push(Op::Count(done));
    if outside > 0 {
        let jitter = outside / 10;
        ops.push(Op::Work(Dist::Uniform {
            lo: outside - jitter,
            hi: outside + jitter,
        }));
    }
    forever(
        &mut s,
        "thread",
        (0..threads).map(m.cpu).collect(),
        Policy::Normal,
        ops,
    );
    let rate = simulate(&s).counter("iterations").expect("iterations").rate;
    f64::from(threads) * 1e9 / rate
}
