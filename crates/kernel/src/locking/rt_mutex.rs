//! `struct rt_mutex` (kernel/locking/rtmutex.c) without priority
//! inheritance: a sleeping lock whose waiters are ordered by priority, not
//! arrival, and whose top waiter spins while the owner runs.
//!
//! - `rt_mutex_lock()`: a cmpxchg of the owner word from NULL
//!   (`rt_mutex_cmpxchg_acquire()`); taken, the task goes on.
//! - Contended (`rt_mutex_slowlock()`): the waiter is queued in priority
//!   order (`rt_mutex_enqueue()`: RT priority first, FIFO among equals).
//!   The top waiter spins on the owner while the owner runs
//!   (`rtmutex_spin_on_owner()`, polling the lock's line; every other
//!   waiter sleeps in TASK_UNINTERRUPTIBLE). The spin ends with the lock,
//!   when the owner leaves its CPU, or at `need_resched()`; the waiter then
//!   sleeps.
//! - `rt_mutex_unlock()`: the release writes the owner word; the top waiter
//!   gets the lock (`mark_wakeup_next_waiter()`, here a direct handoff so
//!   that no lower-priority arrival steals it) and is woken, or, spinning,
//!   sees the release one re-fetch of the line later.
//!
//! Not modelled: priority inheritance (boosting the owner to the top
//! waiter's priority) and its chain walk, deadlock detection, timeouts.
//!
//! A scenario declares one as `type = "mutex", kind = "rt_mutex"`; its ops
//! are `mutex_lock` and `mutex_unlock`.

use crate::coherence::Line;
use crate::event::*;
use crate::lock_stat::LockCpu;
use crate::locking::objects::Objects;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::spec::ObjectKind;
use crate::task::*;
use smpsim_engine::Nanos;

/// `rt_mutex` in the sleeping-lock registry.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "rt-mutex",
    id: 4,
    name: "rt_mutex",
    object_type: "mutex",
    default: false,
    summary: "`struct rt_mutex` without priority inheritance: waiters by priority, the top one spins while the owner runs",
    imp: &RtMutexKind,
};

/// The [`Resume::Lock`] step: woken (or back from a spin) on the wait list.
const WAITING: u8 = 0;

pub struct RtMutex {
    object: u32,
    /// The top waiter may spin on a running owner.
    spin: bool,
    owner: TaskId,
    /// Owner word, `wait_lock` and the waiter tree.
    line: Line,
    /// Waiters, top first: higher RT priority first, FIFO among equals.
    waiters: Vec<(TaskId, u8)>,
    /// The top waiter, while it spins on the owner.
    spinner: TaskId,
    acquired_at: Nanos,
}

pub(crate) struct RtMutexKind;

/// The kind's own table ([`Objects::kind_table`]).
#[derive(Default)]
struct RtMutexes {
    all: Vec<RtMutex>,
    /// The instances whose top waiter spins on the owner now, in index
    /// order (few at a time): the only ones an owner leaving its CPU
    /// concerns, so a context switch looks at these, not at every
    /// instance.
    spun_on: Vec<u32>,
}

fn table(o: &mut Objects) -> &mut RtMutexes {
    o.kind_table::<RtMutexes>()
}

/// Instance `l` (an index into the kind's table).
fn rt(o: &mut Objects, l: u32) -> &mut RtMutex {
    &mut table(o).all[l as usize]
}

/// The line of rt_mutex `l` (owner, `wait_lock`, the waiter tree's root),
/// for an object placed on it (`line = "NAME"`).
pub(crate) fn line_mut(o: &mut Objects, l: u32) -> &mut Line {
    &mut rt(o, l).line
}

fn rt_ref(o: &Objects, l: u32) -> &RtMutex {
    let table = o.kind_table_ref::<RtMutexes>();
    &table.expect("rt_mutex instances are built before use").all[l as usize]
}

/// Instance `l`'s top waiter starts (`on`) or stops spinning on the owner.
fn set_spun_on(o: &mut Objects, l: u32, on: bool) {
    let spun_on = &mut table(o).spun_on;
    match (spun_on.binary_search(&l), on) {
        (Err(at), true) => spun_on.insert(at, l),
        (Ok(at), false) => {
            spun_on.remove(at);
        }
        _ => {}
    }
}

impl SleepingLock for RtMutexKind {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let ObjectKind::Sleeping { spin, .. } = *b.kind else {
            unreachable!("an rt_mutex declared as {:?}", b.kind)
        };
        let all = &mut table(o).all;
        let base = all.len();
        for i in 0..b.n {
            all.push(RtMutex {
                object: b.object,
                spin,
                owner: NO_TASK,
                line: Line::at((b.home)(i)),
                waiters: Vec::new(),
                spinner: NO_TASK,
                acquired_at: 0,
            });
        }
        base
    }

    fn lock_fn(&self, _: LockMode) -> String {
        "rt_mutex_lock".to_string()
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        rt_ref(o, l).object
    }

    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64 {
        (first..first + n)
            .map(|l| rt_ref(o, l as u32).line.transfers)
            .sum()
    }
}

impl<K: LockingEnv> SleepingLockOps<K> for RtMutexKind {
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode, step: Option<u8>) -> Flow {
        let now = k.now();
        if step.is_some() {
            // Back on the CPU after a sleep: the unlock handed it over.
            if rt(&mut k.locking_mut().objects, l).owner == t {
                k.advance(t);
                return Flow::Next;
            }
            return sleep(k, c, t, l);
        }
        let m = rt(&mut k.locking_mut().objects, l);
        let object = m.object;
        if m.owner == t {
            let (name, lock) = (
                k.task_name(t),
                k.spec().objects[object as usize].name.clone(),
            );
            k.metrics_mut()
                .recursive_locking(c, now, &name, "rt_mutex_lock", &lock);
        }
        k.tasks_mut()[t as usize].wait.wait_start = now;
        let p = k.locking_parts();
        let m = rt(&mut p.locking.objects, l);
        let done = m.line.rmw(p.cost, c, now);
        if m.owner == NO_TASK {
            m.owner = t;
            m.acquired_at = done;
            p.metrics
                .lock_acquired(now, object, LockCpu::new(l, c), None);
            p.tasks[t as usize].batch.push(Mode::Sys, done - now);
            k.advance(t);
            return Flow::Next;
        }
        p.metrics.lock_contended(now, object, LockCpu::new(l, c));
        // rt_mutex_enqueue() under wait_lock: behind every waiter of the
        // same or a higher priority.
        let prio = p.tasks[t as usize].rt_prio();
        let m = rt(&mut p.locking.objects, l);
        let at = m.waiters.iter().take_while(|w| w.1 >= prio).count();
        m.waiters.insert(at, (t, prio));
        let queued = m.line.rmw(p.cost, c, done);
        let queued = m.line.store(p.cost, c, queued);
        p.tasks[t as usize].batch.push(Mode::Sys, queued - now);
        let owner = m.owner;
        let top = m.waiters[0].0 == t;
        let (may_spin, displaced) = (m.spin && top, m.spinner);
        if top && displaced != NO_TASK {
            // The spinner is no longer the top waiter: it stops and sleeps.
            abort_spin(k, displaced, 0);
        }
        if may_spin
            && !k.cpu(c).need_resched
            && k.tasks()[owner as usize].state == TaskState::Running
        {
            // rtmutex_spin_on_owner(): poll the owner word and owner->on_cpu.
            let p = k.locking_parts();
            let m = rt(&mut p.locking.objects, l);
            m.spinner = t;
            let ready = m.line.poll(p.cost, c, queued);
            set_spun_on(&mut p.locking.objects, l, true);
            k.preempt_disable(t);
            let oc = k.tasks()[owner as usize].cpu;
            let transfer = k.cost().line_transfer(oc, c);
            let task = &mut k.tasks_mut()[t as usize];
            task.gen = task.gen.wrapping_add(1);
            task.wait.spin = Spin::Sleeping {
                kind: KIND.id,
                lock: l,
                how: SpinHow::OnOwner,
            };
            task.wait.spin_done = false;
            task.wait.spin_abort = false;
            task.wait.spin_ready = ready + transfer;
            return Flow::Stop;
        }
        sleep(k, c, t, l)
    }

    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode) -> Flow {
        let now = k.now();
        let p = k.locking_parts();
        let m = rt(&mut p.locking.objects, l);
        if m.owner != t {
            let object = m.object as usize;
            let (name, lock) = (k.task_name(t), k.spec().objects[object].name.clone());
            k.metrics_mut()
                .bad_unlock(c, now, &name, "rt_mutex_unlock", &lock);
            k.advance(t);
            return Flow::Next;
        }
        let (object, held) = (m.object, now.saturating_sub(m.acquired_at));
        let released = m.line.rmw(p.cost, c, now);
        m.owner = NO_TASK;
        let mut cost = released - now;
        if !m.waiters.is_empty() {
            // mark_wakeup_next_waiter(): the top waiter gets it.
            let (w, _) = m.waiters.remove(0);
            m.owner = w;
            let wc = p.tasks[w as usize].cpu;
            if m.spinner == w {
                m.spinner = NO_TASK;
                set_spun_on(&mut p.locking.objects, l, false);
                let m = rt(&mut p.locking.objects, l);
                let seen = m
                    .line
                    .take_poll(wc)
                    .unwrap_or(now)
                    .max(p.tasks[w as usize].wait.spin_ready);
                let got = m.line.rmw(p.cost, wc, seen.max(now));
                m.acquired_at = got;
                let waited = got - p.tasks[w as usize].wait.wait_start;
                p.metrics
                    .lock_acquired(now, object, LockCpu::new(l, wc), Some(waited));
                let gen = p.tasks[w as usize].gen;
                k.at(got, Event::Sched(SchedEvent::SpinEnd { task: w, gen }));
            } else {
                m.acquired_at = now;
                let waited = now - p.tasks[w as usize].wait.wait_start;
                // Booked at the handoff, on the CPU the waiter last ran on.
                p.metrics
                    .lock_acquired(now, object, LockCpu::new(l, wc), Some(waited));
                p.metrics.lock_handoff(now, object);
                let spinner = m.spinner;
                if k.tasks_mut()[w as usize].state == TaskState::Sleeping {
                    k.wake_up(w, c);
                    cost += k.cost().wakeup;
                }
                if spinner != NO_TASK {
                    // The new owner is not on a CPU: the spinner gives up.
                    let delay = k.cost().line_transfer(c, k.tasks()[spinner as usize].cpu);
                    abort_spin(k, spinner, delay);
                }
            }
        }
        k.metrics_mut().lock_released(now, object, held);
        k.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
        k.advance(t);
        Flow::Next
    }

    fn owner_leaves_cpu(&self, k: &mut K, owner: TaskId) {
        // Only an instance spun on can be this owner's with a spinner; in
        // index order, as a scan of every instance would find them.
        let Some(spun_on) = k.locking().objects.kind_table_ref::<RtMutexes>() else {
            return;
        };
        for l in spun_on.spun_on.clone() {
            let m = rt(&mut k.locking_mut().objects, l);
            if m.owner != owner || m.spinner == NO_TASK {
                continue;
            }
            let s = m.spinner;
            let (oc, sc) = (
                k.tasks_mut()[owner as usize].cpu,
                k.tasks_mut()[s as usize].cpu,
            );
            let delay = k.cost().line_transfer(oc, sc);
            abort_spin(k, s, delay);
        }
    }

    fn spin_need_resched(&self, k: &mut K, c: u32, t: TaskId, l: u32) {
        k.settle(c);
        if rt(&mut k.locking_mut().objects, l).owner == t {
            // Granted already; the spin ends with the cmpxchg.
            return;
        }
        stop_spinning(k, t, l);
        let task = &mut k.tasks_mut()[t as usize];
        task.wait.spin = Spin::None;
        task.gen = task.gen.wrapping_add(1);
        k.preempt_enable(t);
        sleep(k, c, t, l);
    }

    fn spin_finished(&self, k: &mut K, c: u32, t: TaskId, l: u32) -> bool {
        k.tasks_mut()[t as usize].wait.spin_abort = false;
        if rt(&mut k.locking_mut().objects, l).owner == t {
            k.advance(t);
            if k.preempt_enable(t) {
                k.schedule(c);
                return false;
            }
            return true;
        }
        // The owner left its CPU: sleep until the unlock hands it over.
        stop_spinning(k, t, l);
        k.preempt_enable(t);
        sleep(k, c, t, l);
        false
    }
}

/// The spin of `s` ends without the lock, `delay` from now.
fn abort_spin<K: LockingEnv>(k: &mut K, s: TaskId, delay: Nanos) {
    let task = &mut k.tasks_mut()[s as usize];
    if task.wait.spin_done || task.wait.spin_abort {
        return;
    }
    task.wait.spin_abort = true;
    let gen = task.gen;
    k.at(
        k.now() + delay,
        Event::Sched(SchedEvent::SpinEnd { task: s, gen }),
    );
}

/// The top waiter `t` stops spinning (it stays on the wait list).
fn stop_spinning<K: LockingEnv>(k: &mut K, t: TaskId, l: u32) {
    let c = k.tasks_mut()[t as usize].cpu;
    let m = rt(&mut k.locking_mut().objects, l);
    m.line.unpoll(c);
    if m.spinner == t {
        m.spinner = NO_TASK;
        set_spun_on(&mut k.locking_mut().objects, l, false);
    }
}

/// `t`, on the wait list, sleeps until the unlock that hands it the lock.
fn sleep<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, l: u32) -> Flow {
    debug_assert!(rt(&mut k.locking_mut().objects, l)
        .waiters
        .iter()
        .any(|w| w.0 == t));
    let wait_start = k.tasks_mut()[t as usize].wait.wait_start;
    let flow = k.sleep_until_woken(c, t, Resume::Lock(WAITING));
    // Keep the lock-wait start, not the sleep start, for lock_stat.
    k.tasks_mut()[t as usize].wait.wait_start = wait_start;
    flow
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use crate::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// A holder on CPU 0, then a SCHED_NORMAL waiter and a later SCHED_FIFO
    /// waiter: the FIFO one gets the lock first, though it came last.
    fn rt_spec(spin: bool) -> (Spec, u32, u32) {
        let mut s = spec(flat_machine(3), 5 * MS);
        s.objects.push(ObjectDecl {
            name: "rt".into(),
            kind: ObjectKind::Sleeping {
                kind: super::KIND.handle(),
                spin,
            },
            per_cpu: false,
        });
        let lock = ObjRef {
            object: 0,
            index: None,
        };
        let normal = counter(&mut s, "normal_got_it");
        let fifo = counter(&mut s, "fifo_got_it");
        let taker = |wait: u64, got: u32| {
            vec![
                Op::Work(Dist::Const(wait)),
                Op::mutex_lock(lock.clone()),
                Op::Count(got),
                Op::Work(Dist::Const(100 * US)),
                Op::mutex_unlock(lock.clone()),
                Op::Exit,
            ]
        };
        task_group(
            &mut s,
            "owner",
            vec![0],
            Policy::Normal,
            0,
            vec![
                Op::mutex_lock(lock.clone()),
                Op::Work(Dist::Const(MS)),
                Op::mutex_unlock(lock.clone()),
                Op::Exit,
            ],
        );
        task_group(
            &mut s,
            "normal",
            vec![1],
            Policy::Normal,
            0,
            taker(10 * US, normal),
        );
        task_group(
            &mut s,
            "fifo",
            vec![2],
            Policy::Fifo(10),
            0,
            taker(20 * US, fifo),
        );
        (s, normal, fifo)
    }

    #[test]
    fn waiters_get_it_in_priority_order() {
        for spin in [false, true] {
            let (s, _, _) = rt_spec(spin);
            let r = simulate(&s);
            let l = r.lock("rt").unwrap();
            assert_eq!(l.acquisitions, 3, "{l:?}");
            assert_eq!(l.contentions, 2, "{l:?}");
            // The FIFO waiter took it at the owner's unlock (1 ms), then
            // the normal one 100 us later: the normal one waited longest.
            let fifo = r.task_groups[2].total;
            let normal = r.task_groups[1].total;
            assert!(
                fifo.sleep + fifo.spin < normal.sleep + normal.spin,
                "{fifo:?} {normal:?}"
            );
            assert!(l.wait_max_ns >= MS, "{l:?}");
        }
    }

    /// Only the top waiter spins, and only while the owner runs; the rest
    /// sleep.
    #[test]
    fn only_the_top_waiter_spins() {
        let (s, _, _) = rt_spec(true);
        let r = simulate(&s);
        let (normal, fifo) = (r.task_groups[1].total, r.task_groups[2].total);
        assert!(fifo.spin > 900 * US, "{fifo:?}");
        assert!(normal.sleep > 900 * US, "{normal:?}");
    }
}
