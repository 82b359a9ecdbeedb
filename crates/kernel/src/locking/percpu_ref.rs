//! `struct percpu_ref` (include/linux/percpu-refcount.h,
//! lib/percpu-refcount.c): a reference count that is a per-CPU counter
//! while the object lives, and one shared `atomic_long_t` once it is being
//! torn down.
//!
//! - **percpu mode** (from `percpu_ref_init()`): `percpu_ref_get()` and
//!   `percpu_ref_put()` are `this_cpu_inc()` / `this_cpu_dec()` of the
//!   CPU's own counter under `rcu_read_lock()`: a store to a line the CPU
//!   keeps, no line ever moves, and a put never tests for zero.
//! - `percpu_ref_kill()`: sets `__PERCPU_REF_DEAD` and
//!   `__PERCPU_REF_ATOMIC` at once (`__percpu_ref_switch_to_atomic()`), so
//!   gets and puts from then on go to `ref->data->count`, and queues
//!   `percpu_ref_switch_to_atomic_rcu()` with `call_rcu_hurry()`. The
//!   per-CPU counts are summed into the atomic count only after that grace
//!   period, when no CPU can still be in a percpu-mode get or put (until
//!   then the atomic count carries `PERCPU_COUNT_BIAS` and cannot reach
//!   zero). The callback then drops the initial reference.
//! - **atomic mode**: a get is `atomic_long_inc()`, a put
//!   `atomic_long_dec_and_test()`, both RMWs of the one shared line; the
//!   put that takes the count to zero calls `release()`.
//!
//! The model keeps the true count (the per-CPU sum plus the atomic part)
//! and the switch's state; the cost of each get and put is its line
//! transaction on the machine. A put with no reference left is the
//! kernel's `percpu ref (...) <= 0` warning, reported as an unbalanced
//! release. Not modelled: `percpu_ref_resurrect()`, `percpu_ref_reinit()`,
//! `percpu_ref_switch_to_percpu()`, and the callback's sum of every
//! CPU's counter (assumed: charged nothing; it runs once per kill).
//!
//! The type is registered whole by [`OBJECT_TYPE`] (its name, the fields
//! it refuses, its ops, how it is built) in [`super::OBJECT_TYPES`].

use crate::coherence::Line;
use crate::event::RcuCallback;
use crate::locking::object_type::{ObjectOpInfo, ObjectTypeInfo};
use crate::locking::objects::Objects;
use crate::locking::LockingEnv;
use crate::mechanism::{Flow, MechanismOp};
use crate::program::{Op, PercpuRefOp};
use crate::task::{Mode, Resume, TaskId};

/// `type = "percpu_ref"`: everything the scenario compiler and the
/// object table need to know of the type.
pub static OBJECT_TYPE: ObjectTypeInfo = ObjectTypeInfo {
    name: "percpu_ref",
    refuses: &[
        ("spin", "nothing spins on it"),
        ("per_cpu", "it is per-CPU inside already"),
        ("count", "it is per-CPU inside already"),
    ],
    ops: &[
        ObjectOpInfo {
            name: "percpu_ref_get",
            ir: |r| Op::PercpuRef(PercpuRefOp::Get(r)),
        },
        ObjectOpInfo {
            name: "percpu_ref_put",
            ir: |r| Op::PercpuRef(PercpuRefOp::Put(r)),
        },
        ObjectOpInfo {
            name: "percpu_ref_kill",
            ir: |r| Op::PercpuRef(PercpuRefOp::Kill(r)),
        },
    ],
    build,
    line_transfers,
    rcu_callback: Some(switched),
};

/// One `struct percpu_ref`.
pub struct PercpuRef {
    object: u32,
    /// Each CPU's counter (`percpu_count_ptr`), on a line of its CPU.
    percpu: Vec<Line>,
    /// `ref->data->count`, the atomic count every CPU shares.
    atomic: Line,
    /// References held: the per-CPU sum plus the atomic part. The initial
    /// reference of `percpu_ref_init()` is one of them.
    count: i64,
    /// `__PERCPU_REF_ATOMIC`: gets and puts use the atomic count.
    atomic_mode: bool,
    /// `__PERCPU_REF_DEAD`: killed.
    dead: bool,
    /// `percpu_ref_switch_to_atomic_rcu()` has run: the atomic count is
    /// the whole count, and a put that takes it to zero releases.
    switched: bool,
    /// `release()` was called.
    released: bool,
}

impl PercpuRef {
    /// Whether gets and puts use the per-CPU counters.
    pub fn percpu_mode(&self) -> bool {
        !self.atomic_mode
    }

    /// Whether the grace period after the kill has passed and the per-CPU
    /// counts were folded into the atomic count.
    pub fn switched(&self) -> bool {
        self.switched
    }

    /// Whether its `release()` was called.
    pub fn released(&self) -> bool {
        self.released
    }

    /// References held now.
    pub fn count(&self) -> i64 {
        self.count
    }

    /// Line transfers on its lines so far: the shared count's, and the
    /// per-CPU counters' (none while each CPU uses only its own).
    pub fn line_transfers(&self) -> u64 {
        self.atomic.transfers + self.percpu.iter().map(|l| l.transfers).sum::<u64>()
    }
}

/// The object type's own table ([`Objects::kind_table`]).
#[derive(Default)]
pub(crate) struct PercpuRefs {
    all: Vec<PercpuRef>,
}

/// Makes `n` instances of declared object `object`; returns the first's
/// index.
pub(crate) fn build(o: &mut Objects, object: u32, n: u32, nr_cpus: u32) -> usize {
    let all = &mut o.kind_table::<PercpuRefs>().all;
    let base = all.len();
    for _ in 0..n {
        all.push(PercpuRef {
            object,
            // alloc_percpu(): each CPU's counter in its own per-CPU area.
            percpu: (0..nr_cpus)
                .map(|c| Line::new(nr_cpus as usize, c))
                .collect(),
            atomic: Line::new(nr_cpus as usize, 0),
            count: 1,
            atomic_mode: false,
            dead: false,
            switched: false,
            released: false,
        });
    }
    base
}

/// Line transfers on the lines of instances `base..base + n`.
fn line_transfers(o: &Objects, base: usize, n: usize) -> u64 {
    (base..base + n)
        .filter_map(|l| o.percpu_ref(l as u32))
        .map(|p| p.line_transfers())
        .sum()
}

fn instance(o: &mut Objects, l: u32) -> &mut PercpuRef {
    &mut o.kind_table::<PercpuRefs>().all[l as usize]
}

impl Objects {
    /// percpu_ref instance `l`, if there is one.
    pub fn percpu_ref(&self, l: u32) -> Option<&PercpuRef> {
        self.kind_table_ref::<PercpuRefs>()?.all.get(l as usize)
    }
}

impl<K: LockingEnv> MechanismOp<K> for PercpuRefOp {
    fn run(&self, k: &mut K, c: u32, t: TaskId, _: Resume) -> Flow {
        let now = k.now();
        let done = match self {
            PercpuRefOp::Get(r) => {
                let l = k.instance(t, r);
                let parts = k.locking_parts();
                let cost = parts.cost;
                let p = instance(&mut parts.locking.objects, l);
                p.count += 1;
                if p.atomic_mode {
                    p.atomic.rmw_void(cost, c, now)
                } else {
                    p.percpu[c as usize].store(cost, c, now)
                }
            }
            PercpuRefOp::Put(r) => {
                let l = k.instance(t, r);
                put(k, c, t, l)
            }
            PercpuRefOp::Kill(r) => {
                let l = k.instance(t, r);
                let parts = k.locking_parts();
                let p = instance(&mut parts.locking.objects, l);
                if p.dead {
                    // percpu_ref_kill_and_confirm(): "called more than once".
                    let object = p.object as usize;
                    let (name, lock) = (k.task_name(t), k.spec().objects[object].name.clone());
                    k.metrics_mut()
                        .bad_unlock(c, now, &name, "percpu_ref_kill", &lock);
                    now
                } else {
                    p.dead = true;
                    p.atomic_mode = true;
                    // percpu_ref_switch_lock and the flags: one RMW of the
                    // shared word.
                    let done = p.atomic.rmw(parts.cost, c, now);
                    let object = p.object;
                    k.call_rcu(
                        c,
                        RcuCallback::Object {
                            object,
                            instance: l,
                        },
                    );
                    done
                }
            }
        };
        k.tasks_mut()[t as usize].batch.push(Mode::Sys, done - now);
        k.advance(t);
        Flow::Next
    }
}

/// `percpu_ref_put()` of instance `l` by `t` on CPU `c`; returns when its
/// store or RMW is done.
fn put<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, l: u32) -> smpsim_engine::Nanos {
    let now = k.now();
    let parts = k.locking_parts();
    let cost = parts.cost;
    let p = instance(&mut parts.locking.objects, l);
    if p.count <= 0 {
        // A put without a reference: the count would go negative.
        let object = p.object as usize;
        let (name, lock) = (k.task_name(t), k.spec().objects[object].name.clone());
        k.metrics_mut()
            .bad_unlock(c, now, &name, "percpu_ref_put", &lock);
        return now;
    }
    p.count -= 1;
    if !p.atomic_mode {
        return p.percpu[c as usize].store(cost, c, now);
    }
    // atomic_long_dec_and_test(): its result decides the release.
    let done = p.atomic.rmw(cost, c, now);
    if p.switched && p.count == 0 {
        p.released = true;
    }
    done
}

/// `percpu_ref_switch_to_atomic_rcu()` of instance `l` (its type's RCU
/// callback), a grace period after its kill: the per-CPU counts are in the
/// atomic count now, and the reference the kill left (the initial one) is
/// dropped.
fn switched(o: &mut Objects, l: u32) {
    let p = instance(o, l);
    p.switched = true;
    // percpu_ref_call_confirm_rcu() -> percpu_ref_put(): the initial
    // reference, unless a put already gave it back.
    if p.count > 0 {
        p.count -= 1;
    }
    if p.count == 0 {
        p.released = true;
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use crate::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    fn r(object: u32) -> ObjRef {
        ObjRef {
            object,
            index: None,
        }
    }

    /// Getters on CPUs 1-3 of a 4-CPU machine (each takes a reference,
    /// works 1 us, puts it and sleeps 1 us), and a task on CPU 0 that
    /// kills the ref at `kill_at` (or never); the kill gives back the
    /// initial reference a grace period later, as `percpu_ref_kill()`
    /// does.
    fn run(kill_at: Option<u64>, until: u64) -> (crate::Kernel<'static>, u32) {
        let mut s = spec(flat_machine(4), until);
        s.objects.push(ObjectDecl {
            name: "ref".into(),
            kind: ObjectKind::Registered(crate::locking::percpu_ref::OBJECT_TYPE.handle()),
            per_cpu: false,
        });
        let get_put = vec![
            Op::PercpuRef(PercpuRefOp::Get(r(0))),
            Op::Work(Dist::Const(US)),
            Op::PercpuRef(PercpuRefOp::Put(r(0))),
            Op::Sleep {
                dist: Dist::Const(US),
                overshoot: None,
            },
            Op::Jump(0),
        ];
        for cpu in 1..4 {
            task_group(
                &mut s,
                &format!("user{cpu}"),
                vec![cpu],
                Policy::Normal,
                0,
                get_put.clone(),
            );
        }
        let killer = match kill_at {
            Some(at) => vec![
                Op::Sleep {
                    dist: Dist::Const(at),
                    overshoot: None,
                },
                Op::PercpuRef(PercpuRefOp::Kill(r(0))),
                Op::Exit,
            ],
            None => vec![Op::Exit],
        };
        task_group(&mut s, "killer", vec![0], Policy::Normal, 0, killer);
        let spec: &'static crate::Spec = Box::leak(Box::new(s));
        let mut k = crate::Kernel::new(spec);
        k.run();
        let l = k.locking.objects.first_instance(0);
        (k, l)
    }

    /// In percpu mode each CPU's get and put write only its own counter:
    /// no line moves between CPUs, however many CPUs take references.
    #[test]
    fn percpu_mode_moves_no_line() {
        let (k, l) = run(None, 5 * MS);
        let p = k.locking.objects.percpu_ref(l).unwrap();
        assert!(p.percpu_mode());
        assert_eq!(p.line_transfers(), 0);
        // Three getters, each holding at most one reference, and the
        // initial one.
        assert!((1..=4).contains(&p.count()), "{}", p.count());
    }

    /// After the kill every get and put is an RMW of the one shared line,
    /// which moves between the CPUs; the per-CPU counts are folded in only
    /// a grace period later.
    #[test]
    fn kill_switches_to_the_shared_count_after_a_grace_period() {
        let (k, l) = run(Some(MS), 40 * MS);
        let p = k.locking.objects.percpu_ref(l).unwrap();
        assert!(!p.percpu_mode());
        assert!(p.switched(), "a grace period passed in 39 ms");
        assert!(p.line_transfers() > 100, "{}", p.line_transfers());
        // Once switched, a put that finds no other reference releases it
        // (the getters hold one each only between their get and put).
        assert!(p.released());

        let (k, l) = run(Some(MS), MS + 20 * US);
        let p = k.locking.objects.percpu_ref(l).unwrap();
        assert!(!p.percpu_mode());
        assert!(!p.switched(), "20 us is shorter than a grace period");
        assert!(!p.released(), "no release before the switch");
    }
}
