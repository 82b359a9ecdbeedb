//! `ttwu_queue_wakelist()`: a remote wakeup queued on the wakee CPU's
//! `call_single_queue` instead of enqueued by the waker under the wakee's
//! rq lock (`[kernel] ttwu_queue`, [`crate::spec::TtwuQueue`]).
//!
//! kernel/sched/core.c: `ttwu_queue()` asks `ttwu_queue_cond()` (not when
//! the target is not active; yes when the CPUs share no LLC), and
//! `__ttwu_queue_wakelist()` does `__smp_call_single_queue(cpu,
//! &p->wake_entry.llist)` (kernel/smp.c): an `llist_add()` on the target's
//! `call_single_queue`, and `send_call_function_single_ipi()` only when
//! that returned true (the queue was empty); for a polling idle target the
//! IPI is a flag write (`set_nr_if_polling()`). The target's handler
//! (`flush_smp_call_function_queue()`) takes the list with
//! `llist_del_all()` and calls `sched_ttwu_pending()`: `rq_lock_irqsave()`
//! of its own runqueue, `ttwu_do_activate()` of each queued task, unlock.
//!
//! Here: the waker pays the `llist_add()` (a coherence RMW on the queue
//! head's line, homed at the target) and, when it sends one, the IPI's
//! `ipi_send`; the task stays asleep (its timers stale). The target's
//! handler takes the line back, runs the `sched_ttwu_pending` hook (where a
//! scenario takes `rq_lock[this_cpu()]`) and `cost.wakeup` a task
//! (`ttwu_do_activate()`: the half of `try_to_wake_up()` the waker no
//! longer does), all in hardirq time. The tasks join the runqueue at the
//! handler's start; the CPU runs them only once the handler is done.

use smpsim_engine::Nanos;

use super::prelude::*;
use crate::coherence::Line;
use crate::event::{Event, SmpEvent};
use crate::spec::TtwuQueue;
use crate::task::{TaskId, TaskState};

/// The wake list's state: the queue heads' lines and the counts.
pub(crate) struct TtwuQueueState {
    /// By CPU: the line of its `call_single_queue` head. Empty unless the
    /// scenario queues wakeups on it.
    pub(crate) lines: Vec<Line>,
    pub(crate) stats: crate::result::TtwuQueueStats,
}

impl TtwuQueueState {
    pub(crate) fn new(mode: TtwuQueue, nr_cpus: u32) -> Self {
        let lines = match mode {
            TtwuQueue::RqLock => Vec::new(),
            _ => (0..nr_cpus)
                .map(|c| Line::new(nr_cpus as usize, c))
                .collect(),
        };
        TtwuQueueState {
            lines,
            stats: Default::default(),
        }
    }
}

/// The wake list's verbs over the scheduler's env.
pub(crate) trait TtwuQueueing<'s>: SchedEnv<'s> + Scheduler<'s> {
    /// Whether what happens at `t` is in the measured part of the run
    /// (past the warm-up, not past the end).
    fn counted(&self, t: Nanos) -> bool {
        self.metrics().measuring(t) && self.metrics().in_run(t)
    }

    /// `ttwu_queue_cond()` for a wakeup on CPU `on` of a task placed on
    /// `target`: whether it goes on `target`'s wake list.
    fn ttwu_queue_cond(&self, on: u32, target: u32) -> bool {
        let mode = self.spec().knobs.ttwu_queue;
        if mode == TtwuQueue::RqLock || on == target || !self.cpus()[target as usize].online {
            return false;
        }
        match mode {
            TtwuQueue::RqLock => false,
            TtwuQueue::Wakelist => true,
            TtwuQueue::CrossLlc => !self.shares_llc(on, target),
        }
    }

    /// `__ttwu_queue_wakelist()` on CPU `on` for task `p` on `target`:
    /// `llist_add()` of `p->wake_entry`, and the IPI if the queue was
    /// empty. The waker pays both.
    fn ttwu_queue_wakelist(&mut self, p: TaskId, on: u32, target: u32) {
        let now = self.now();
        // Timers armed for the sleep are stale from here.
        let task = &mut self.tasks_mut()[p as usize];
        task.gen = task.gen.wrapping_add(1);
        let added = self.call_single_queue_add(target, on, now);
        let cpu = &mut self.cpus_mut()[target as usize];
        let first = cpu.csd_queue.is_empty();
        cpu.csd_queue.push_back(crate::cpu::Csd::Ttwu { task: p });
        let mut cost = added - now;
        let counted = self.counted(now);
        if first {
            // send_call_function_single_ipi(): a polling idle CPU only
            // sees its flag set (set_nr_if_polling()); others take an IPI.
            let polled = self.cost().idle_polling
                && self.cpus()[target as usize].activity == crate::cpu::Activity::Idle;
            if !polled {
                cost += self.cost().ipi_send;
            }
            let arrives = now + cost + self.wake_idle_latency(target, on);
            self.cpus_mut()[target as usize].polled_wake |= polled;
            self.at(arrives, Event::Smp(SmpEvent::Ipi { cpu: target }));
            if counted && !polled {
                self.sched_mut().ttwu.stats.ipis += 1;
            }
        }
        if counted {
            self.sched_mut().ttwu.stats.queued += 1;
        }
        self.charge_hook(on, cost);
    }

    /// `sched_ttwu_pending()` in CPU `c`'s handler from `t`, for the
    /// wakees its flush took: activates them and returns when the handler
    /// has done with them, or (the hook takes locks) the activations' cost
    /// for the hook run that goes on from `t` (the handler's end is that
    /// run's to say).
    fn sched_ttwu_pending(&mut self, c: u32, mut t: Nanos) -> (Nanos, Option<Nanos>) {
        if self.cpus()[c as usize].ttwu_pending.is_empty() {
            return (t, None);
        }
        let woken = std::mem::take(&mut self.cpus_mut()[c as usize].ttwu_pending);
        // llist_del_all(): the queue head's line comes back to its CPU.
        t = self.call_single_queue_add(c, c, t);
        for &p in &woken {
            debug_assert_eq!(self.tasks()[p as usize].state, TaskState::Sleeping);
            self.ttwu_do_activate(p, c, c);
        }
        if self.counted(t) {
            let stats = &mut self.sched_mut().ttwu.stats;
            stats.activated += woken.len() as u64;
            stats.handler_runs += 1;
        }
        let activate = woken.len() as Nanos * self.cost().wakeup;
        // Handed back for the next flush (no allocation per IPI).
        let mut woken = woken;
        woken.clear();
        self.cpus_mut()[c as usize].ttwu_pending = woken;
        match self.hook(crate::hooks::HookEvent::SchedTtwuPending) {
            Some(_) if self.hook_takes_locks(crate::hooks::HookEvent::SchedTtwuPending) => {
                (t, Some(activate))
            }
            Some(h) => (self.run_hook(c, h, t) + activate, None),
            None => (t + activate, None),
        }
    }
}

impl<'s, K: SchedEnv<'s> + ?Sized> TtwuQueueing<'s> for K {}

#[cfg(test)]
mod tests {
    use crate::cpu::{Activity, Csd};
    use crate::env::CoreEnv;
    use crate::program::*;
    use crate::spec::*;
    use crate::task::TaskState;
    use crate::testkit::*;

    const US: u64 = 1_000;

    fn semaphore(s: &mut Spec, name: &str) -> ObjRef {
        s.objects.push(ObjectDecl {
            name: name.into(),
            kind: ObjectKind::Semaphore { initial: 0 },
            per_cpu: false,
        });
        ObjRef {
            object: s.objects.len() as u32 - 1,
            index: None,
        }
    }

    /// A producer on CPU 0 `up()`s a semaphore every 20 us; its consumer,
    /// task 1, sleeps on it on CPU 1.
    fn one_remote_wakee(mode: TtwuQueue) -> Spec {
        let mut s = spec(flat_machine(2), 2_000 * US);
        s.knobs.ttwu_queue = mode;
        s.knobs.load_balance = false;
        let items = semaphore(&mut s, "items");
        forever(
            &mut s,
            "producer",
            vec![0],
            Policy::Normal,
            vec![
                Op::Work(Dist::Const(20 * US)),
                Op::Locking(LockingOp::Up(items.clone())),
            ],
        );
        forever(
            &mut s,
            "consumer",
            vec![1],
            Policy::Normal,
            vec![
                Op::Locking(LockingOp::Down(items)),
                Op::Work(Dist::Const(US)),
            ],
        );
        s
    }

    /// Sampled every 20 ns: for each wakeup of the consumer, from the wake
    /// (its state leaves Sleeping, or it is queued on the wake list) until
    /// it runs; and, for the wake list, CPU 1's activity when the wakee
    /// first stops sleeping.
    fn wake_to_run(s: &Spec) -> (Vec<u64>, Vec<Activity>) {
        const CONSUMER: u32 = 1;
        let mut sim = crate::Simulation::new(s);
        let (mut woken_at, mut sleeping) = (None, true);
        let (mut latencies, mut activated_in) = (Vec::new(), Vec::new());
        let mut horizon = 0;
        while !sim.advance(horizon) {
            let k = sim.kernel();
            let cpu = k.cpu(1);
            let queued = cpu.csd_queue.contains(&Csd::Ttwu { task: CONSUMER });
            let state = k.task(CONSUMER).state;
            if queued {
                // ttwu_queue_wakelist(): not runnable until the handler.
                assert_eq!(state, TaskState::Sleeping, "at {}", k.now());
                woken_at.get_or_insert(k.now());
            }
            if sleeping && state != TaskState::Sleeping {
                woken_at.get_or_insert(k.now());
                if s.knobs.ttwu_queue != TtwuQueue::RqLock {
                    activated_in.push(cpu.activity);
                }
            }
            sleeping = state == TaskState::Sleeping;
            if cpu.curr == CONSUMER && cpu.activity == Activity::Task {
                if let Some(w) = woken_at.take() {
                    latencies.push(k.now() - w);
                }
            }
            horizon += 20;
        }
        (latencies, activated_in)
    }

    fn mean(v: &[u64]) -> u64 {
        v.iter().sum::<u64>() / v.len() as u64
    }

    /// With the wake list the wakee stays asleep while queued, becomes
    /// runnable inside CPU 1's IPI handler, and its wake-to-run latency
    /// has the handler's activation (and the IPI send) on top of what the
    /// remote rq->lock path takes.
    #[test]
    fn a_queued_wakee_runs_only_after_its_cpus_ipi_handler() {
        let list = one_remote_wakee(TtwuQueue::Wakelist);
        let (wl, activated_in) = wake_to_run(&list);
        let (rq, _) = wake_to_run(&one_remote_wakee(TtwuQueue::RqLock));
        assert!(wl.len() > 50 && rq.len() > 50, "{} {}", wl.len(), rq.len());
        assert_eq!(activated_in.len(), wl.len());
        assert!(
            activated_in
                .iter()
                .all(|a| matches!(a, Activity::Irq { .. })),
            "activated outside the handler: {activated_in:?}"
        );
        let wakeup = crate::costs::CostNs::new(&list.machine).wakeup;
        assert!(
            mean(&wl) >= mean(&rq) + wakeup,
            "wake list {} ns, rq lock {} ns, cost.wakeup {wakeup}",
            mean(&wl),
            mean(&rq)
        );
    }

    /// Four producers on CPUs 0-3 wake four consumers that share CPU 4;
    /// with `hook`, CPU 4's `sched_ttwu_pending` hook takes its own
    /// runqueue lock `rq[this_cpu()]` for 300 ns.
    fn fan_in(mode: TtwuQueue, hook: bool) -> Spec {
        let mut s = spec(flat_machine(5), 3_000 * US);
        s.knobs.ttwu_queue = mode;
        s.knobs.load_balance = false;
        let items = semaphore(&mut s, "items");
        forever(
            &mut s,
            "producer",
            vec![0, 1, 2, 3],
            Policy::Normal,
            vec![
                Op::Work(Dist::Exp { mean: 3 * US }),
                Op::Locking(LockingOp::Up(items.clone())),
            ],
        );
        forever(
            &mut s,
            "consumer",
            vec![4, 4, 4, 4],
            Policy::Normal,
            vec![
                Op::Locking(LockingOp::Down(items)),
                Op::Work(Dist::Const(300)),
            ],
        );
        if hook {
            s.objects.push(ObjectDecl {
                name: "rq".into(),
                kind: ObjectKind::Spinlock {
                    kind: SpinKind::named("qspinlock").unwrap(),
                    options: LockOptions::default(),
                },
                per_cpu: true,
            });
            let rq = ObjRef {
                object: s.objects.len() as u32 - 1,
                index: Some(Expr::ThisCpu),
            };
            s.hooks[crate::hooks::HookEvent::SchedTtwuPending as usize] = Some(Program {
                ops: vec![
                    lock_op(&rq, LockMode::Exclusive, true),
                    Op::Work(Dist::Const(300)),
                    lock_op(&rq, LockMode::Exclusive, false),
                ],
                slots: 0,
                init: Vec::new(),
            });
        }
        s
    }

    /// Wakeups that reach CPU 4's wake list before its handler runs share
    /// one IPI and one handler run; CPU 4's hardirq time holds every
    /// handler's activations and hook.
    #[test]
    fn one_ipi_serves_the_wakeups_queued_before_the_handler() {
        for hook in [false, true] {
            let list = fan_in(TtwuQueue::Wakelist, hook);
            let r = crate::simulate(&list);
            let q = r.ttwu_queue.expect("wake-list counts");
            assert!(q.queued > 1_000, "{q:?}");
            assert!(q.ipis < q.queued, "one IPI a wakeup: {q:?}");
            assert!(q.handler_runs < q.activated, "no batching: {q:?}");
            let cost = crate::costs::CostNs::new(&list.machine);
            let handler_floor =
                q.activated * cost.wakeup + if hook { q.handler_runs * 300 } else { 0 };
            let irq = r.cpus[4].times.irq;
            assert!(
                irq >= handler_floor,
                "hook {hook}: irq {irq} ns < {handler_floor} ns"
            );
            let rq = crate::simulate(&fan_in(TtwuQueue::RqLock, hook));
            assert!(rq.ttwu_queue.is_none());
            assert!(
                rq.cpus[4].times.irq + handler_floor <= irq,
                "hook {hook}: irq {} ns without the wake list, {irq} ns with it",
                rq.cpus[4].times.irq
            );
            if hook {
                let lock = r.lock("rq").expect("the hook's lock");
                assert!(lock.acquisitions >= q.handler_runs, "{lock:?}");
                assert_eq!(lock.contentions, 0, "only CPU 4 takes its rq lock");
            }
        }
    }

    /// The counts are of the measured part of the run, as the CPU times
    /// they are set against: a warm-up of half the run halves them.
    #[test]
    fn the_counts_leave_out_the_warm_up() {
        let mut s = fan_in(TtwuQueue::Wakelist, false);
        let whole = crate::simulate(&s).ttwu_queue.unwrap();
        s.warmup = s.duration / 2;
        let half = crate::simulate(&s).ttwu_queue.unwrap();
        for (w, h) in [
            (whole.queued, half.queued),
            (whole.ipis, half.ipis),
            (whole.activated, half.activated),
            (whole.handler_runs, half.handler_runs),
        ] {
            assert!(h * 10 > w * 4 && h * 10 < w * 6, "{whole:?} vs {half:?}");
        }
    }

    /// `cross_llc`: a wakeup between CPUs of one LLC takes the waker's
    /// path; across LLCs, the wake list.
    #[test]
    fn cross_llc_queues_only_across_llcs() {
        let mut s = one_remote_wakee(TtwuQueue::CrossLlc);
        let r = crate::simulate(&s);
        assert_eq!(r.ttwu_queue.expect("counts").queued, 0, "one LLC");
        s.machine = preset_machine("xeon-e5-2680v4-56");
        // CPUs 0-13 and 28-41 are socket 0 (sibling-last numbering).
        s.task_groups[1].placement = vec![14];
        let r = crate::simulate(&s);
        let q = r.ttwu_queue.expect("counts");
        assert!(q.queued > 50, "{q:?} {:?}", r.task_groups[1]);
    }
}
