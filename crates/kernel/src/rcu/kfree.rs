//! `kfree_rcu()` / `kvfree_rcu()` batching (mm/slab_common.c since v6.13,
//! kernel/rcu/tree.c before): objects freed after a grace period without
//! an `rcu_head` callback each.
//!
//! Lifecycle of an object queued by `kvfree_call_rcu()` on CPU `c`:
//!
//! 1. `add_ptr_to_bulk_krc_lock()` under `krc_this_cpu_lock()` (IRQs off,
//!    CPU `c`'s own raw spinlock: never contended here, as only `c` and
//!    its own kworker take it) puts the pointer on the newest page
//!    (`struct kvfree_rcu_bulk_data`) of `c`'s `krcp`, a new page once it
//!    holds `KVFREE_BULK_MAX_ENTR` (507) pointers, and snapshots the grace
//!    period state into the page (`get_state_synchronize_rcu_full()`).
//!    Then `schedule_delayed_monitor_work()`: the monitor runs
//!    `KFREE_DRAIN_JIFFIES` (5 s; the `kfree_drain_jiffies` knob) after the
//!    first object, or 1 jiffy once the `krcp` holds a page's worth (an
//!    armed monitor is brought forward, never pushed back). The caller pays
//!    `kfree_rcu_cost`.
//! 2. `kfree_rcu_monitor()` runs in `c`'s kworker (`kworker/c`, a CFS
//!    task bound to `c`, as system_wq's per-CPU workers are):
//!    `kvfree_rcu_drain_ready()` frees at once the oldest pages whose
//!    snapshot says a full grace period has passed since their last
//!    object; `kvfree_rcu_queue_batch()` moves the rest into one of the two
//!    `krw_arr` batches not already waiting (`KFREE_N_BATCHES`) and
//!    `queue_rcu_work()`s it: one `call_rcu_hurry()`. If objects are left
//!    (both batches busy), the monitor is re-armed.
//! 3. After that grace period the callback (`rcu_work_rcufn()`) queues
//!    `kfree_rcu_work()` on `c`'s kworker, which frees every object of the
//!    batch (`kfree_bulk()`), `kfree_rcu_free_cost` each, and the batch is
//!    free for the next monitor run.
//!
//! Memory waiting for a grace period: the bytes of objects queued and not
//! yet freed (an object counts until the kworker's free of it ends), its
//! peak and time average over the measured part of the run.
//!
//! Not modelled: the `rcu_head` fallback list when no page can be had
//! (`krcp->head`, and `synchronize_rcu()` for the head-less form), the
//! page cache refill worker and the shrinker, vmalloc'd objects (channel
//! 1, one `vfree()` each), and 6.13's unbound `rcu_reclaim_wq` (its work
//! may run on another CPU of the pod).

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::*;
use crate::kthread::KthreadStep;

/// `KVFREE_BULK_MAX_ENTR`: pointers in a page of `struct
/// kvfree_rcu_bulk_data` ((PAGE_SIZE - 40) / 8 on x86-64: a list head, a
/// `struct rcu_gp_oldstate` and `nr_records` ahead of the records).
pub const KVFREE_BULK_MAX_ENTR: u32 = 507;
/// `KFREE_N_BATCHES` (mm/slab_common.c).
const KFREE_N_BATCHES: usize = 2;
/// What `kfree_rcu_monitor()` costs the kworker besides the frees:
/// `krcp->lock`, the list moves and `queue_rcu_work()`'s `call_rcu()`
/// (assumed: 500 ns, range 200 ns - 2 us).
const MONITOR_COST: Nanos = 500;

/// A page of pointers on a `krcp` or in a batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Page {
    objs: u32,
    bytes: u64,
    /// `bnode->gp_snap`: the state at its last object's add.
    gp_snap: i64,
    /// When its last object was added.
    last_add: Nanos,
}

/// A piece of work queued on a CPU's kworker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// `kfree_rcu_monitor()`.
    Monitor,
    /// `kfree_rcu_work()` of batch `slot`, whose grace period has ended.
    Free { slot: usize },
}

/// One CPU's `struct kfree_rcu_cpu` and its kworker.
#[derive(Clone, Debug, Default)]
struct Krc {
    /// `bulk_head[0]`: pages not yet in a batch, oldest first.
    pages: VecDeque<Page>,
    /// `krw_arr[]`: each batch waiting for its grace period or its free
    /// (empty: free for the monitor).
    batches: [Vec<Page>; KFREE_N_BATCHES],
    /// When the armed monitor fires, if one is armed (and not yet run:
    /// `delayed_work_pending()`), and its timer's generation (a re-arm
    /// makes the older timer stale).
    monitor_at: Option<Nanos>,
    monitor_gen: u32,
    /// The kworker: its task, its queue, and the work it is doing (whose
    /// effect, the frees, happens when it ends), with the pages it frees.
    kworker: TaskId,
    queue: VecDeque<Work>,
    running: Vec<Page>,
}

/// Every CPU's `krcp` and the memory they hold.
#[derive(Clone, Debug, Default)]
pub(crate) struct Kfree {
    krc: Vec<Krc>,
    /// Bytes queued and not yet freed; and when it last changed.
    bytes: u64,
    since: Nanos,
    /// Bytes x ns over the measured part of the run.
    area: u128,
    /// The measured part of the run: set at the first `kfree_rcu()`.
    window: (Nanos, Nanos),
}

impl Kfree {
    /// The memory-waiting figures for the result: the time average over
    /// the measured part of the run, up to its end.
    pub(crate) fn finish(&self, stats: &mut crate::result::RcuStats) {
        let (start, end) = self.window;
        if end <= start {
            return;
        }
        let tail = end.saturating_sub(self.since.max(start));
        let area = self.area + u128::from(self.bytes) * u128::from(tail);
        stats.kfree_rcu_bytes_waiting_mean = (area / u128::from(end - start)) as u64;
    }
}

/// Whether a scenario calls `kfree_rcu()` (and so gets the kworkers).
pub fn used_by(spec: &crate::Spec) -> bool {
    spec.task_groups.iter().any(|g| {
        g.program.ops.iter().any(|op| {
            matches!(
                op,
                crate::program::Op::Rcu(crate::program::RcuOp::KfreeRcu { .. })
            )
        })
    })
}

/// `kfree_rcu()` batching, for any kernel RCU runs in.
pub(crate) trait RcuKfree: RcuEnv {
    /// `KFREE_DRAIN_JIFFIES`, as time.
    fn kfree_drain(&self) -> Nanos {
        let k = &self.spec().knobs;
        let j = k.kfree_drain_jiffies.unwrap_or(5 * u64::from(k.hz));
        j.max(1) * self.jiffy()
    }

    /// `add` bytes start waiting now and `sub` stop: the time average and
    /// peak follow.
    fn kfree_account(&mut self, add: u64, sub: u64) {
        let now = self.now();
        let measuring = self.metrics().measuring(now);
        let end = self.spec().duration;
        let kf = &mut self.rcu_mut().kfree;
        let (start, _) = kf.window;
        let from = kf.since.max(start);
        let to = now.min(end);
        if to > from {
            kf.area += u128::from(kf.bytes) * u128::from(to - from);
        }
        kf.since = now;
        kf.bytes = kf.bytes + add - sub.min(kf.bytes + add);
        let bytes = kf.bytes;
        if measuring && now <= end {
            let s = &mut self.rcu_mut().stats;
            s.kfree_rcu_bytes_waiting_peak = s.kfree_rcu_bytes_waiting_peak.max(bytes);
        }
    }

    /// `kvfree_call_rcu()` of an object of `bytes` by a task on CPU `c`;
    /// returns what it costs the caller.
    fn kvfree_call_rcu(&mut self, c: u32, bytes: u64) -> Nanos {
        let now = self.now();
        let snap = self.rcu().get_state_synchronize_rcu();
        let krc = &mut self.rcu_mut().kfree.krc[c as usize];
        match krc.pages.back_mut() {
            Some(p) if p.objs < KVFREE_BULK_MAX_ENTR => {
                p.objs += 1;
                p.bytes += bytes;
                p.gp_snap = snap;
                p.last_add = now;
            }
            _ => krc.pages.push_back(Page {
                objs: 1,
                bytes,
                gp_snap: snap,
                last_add: now,
            }),
        }
        if self.metrics().measuring(now) {
            self.rcu_mut().stats.kfree_rcu_objects += 1;
        }
        self.kfree_account(bytes, 0);
        self.schedule_delayed_monitor_work(c);
        self.spec().knobs.kfree_rcu_cost
    }

    /// `schedule_delayed_monitor_work()`: the monitor 1 jiffy from now if
    /// CPU `c`'s `krcp` holds a page's worth, else `KFREE_DRAIN_JIFFIES`;
    /// an armed one only ever comes earlier.
    fn schedule_delayed_monitor_work(&mut self, c: u32) {
        let krc = &self.rcu().kfree.krc[c as usize];
        let count: u32 = krc.pages.iter().map(|p| p.objs).sum();
        let delay = if count >= KVFREE_BULK_MAX_ENTR {
            self.jiffy()
        } else {
            self.kfree_drain()
        };
        // A jiffies timer: it fires on a tick.
        let at = (self.now() / self.jiffy()) * self.jiffy() + delay;
        let krc = &mut self.rcu_mut().kfree.krc[c as usize];
        if krc.monitor_at.is_some_and(|armed| armed <= at) {
            return;
        }
        krc.monitor_at = Some(at);
        krc.monitor_gen = krc.monitor_gen.wrapping_add(1);
        let gen = krc.monitor_gen;
        self.at(at, Event::Rcu(RcuEvent::KfreeMonitor { cpu: c, gen }));
    }

    /// The monitor's timer fires on CPU `c`: its work goes to `c`'s
    /// kworker, woken from the timer softirq.
    fn kfree_monitor_timer(&mut self, c: u32) {
        self.kworker_queue(c, Work::Monitor);
    }

    /// `rcu_work_rcufn()`: batch `slot` of CPU `c` has waited its grace
    /// period; `kfree_rcu_work()` goes to `c`'s kworker.
    fn kfree_rcu_work_ready(&mut self, c: u32, slot: u32) {
        self.kworker_queue(
            c,
            Work::Free {
                slot: slot as usize,
            },
        );
    }

    /// `queue_work_on(c)`: `w` joins `c`'s kworker's queue, which is woken.
    fn kworker_queue(&mut self, c: u32, w: Work) {
        let krc = &mut self.rcu_mut().kfree.krc[c as usize];
        if !krc.queue.contains(&w) {
            krc.queue.push_back(w);
        }
        let t = krc.kworker;
        self.wake_kthread(t, c);
    }

    /// Frees `pages` now (the end of the kworker's work on them).
    fn kfree_pages(&mut self, c: u32, pages: Vec<Page>) {
        let now = self.now();
        let mut bytes = 0;
        let mut objs = 0;
        for p in &pages {
            // Freed only after a full grace period since its last object
            // (kvfree_rcu_bulk()'s WARN_ON_ONCE()): else a finding.
            if !self.rcu().poll_state_synchronize_rcu(p.gp_snap) {
                let report = format!(
                    "kfree_rcu: {} objects queued on CPU{c} until {} ns freed at {now} ns before a full grace period had passed since (state {}, gp_seq {})",
                    p.objs,
                    p.last_add,
                    p.gp_snap,
                    self.rcu().gp_seq()
                );
                self.metrics_mut().rcu_guarantee(c, now, report);
            }
            bytes += p.bytes;
            objs += u64::from(p.objs);
        }
        if self.metrics().measuring(now) && now <= self.spec().duration {
            self.rcu_mut().stats.kfree_rcu_freed += objs;
        }
        self.kfree_account(0, bytes);
    }

    /// One step of CPU `c`'s kworker: the work it did takes effect, then
    /// it takes the next piece, or sleeps.
    fn kworker_step(&mut self, t: TaskId) -> KthreadStep {
        let c = self.task(t).index;
        let cu = c as usize;
        let done = std::mem::take(&mut self.rcu_mut().kfree.krc[cu].running);
        if !done.is_empty() {
            self.kfree_pages(c, done);
        }
        let Some(w) = self.rcu_mut().kfree.krc[cu].queue.pop_front() else {
            return KthreadStep::Sleep { timeout: None };
        };
        let per_obj = self.spec().knobs.kfree_rcu_free_cost;
        let (pages, extra) = match w {
            Work::Monitor => (self.kfree_rcu_monitor(c), MONITOR_COST),
            Work::Free { slot } => {
                // kfree_rcu_work(): the batch is taken off under the lock,
                // free for the next monitor run; then freed.
                let pages = std::mem::take(&mut self.rcu_mut().kfree.krc[cu].batches[slot]);
                (pages, 0)
            }
        };
        let objs: u64 = pages.iter().map(|p| u64::from(p.objs)).sum();
        self.rcu_mut().kfree.krc[cu].running = pages;
        KthreadStep::Work(extra + objs * per_obj)
    }

    /// `kfree_rcu_monitor()` on CPU `c`: returns the pages
    /// `kvfree_rcu_drain_ready()` frees at once; queues a batch behind a
    /// grace period; re-arms itself if objects are left.
    fn kfree_rcu_monitor(&mut self, c: u32) -> Vec<Page> {
        let cu = c as usize;
        self.rcu_mut().kfree.krc[cu].monitor_at = None;
        // kvfree_rcu_drain_ready(): oldest first, up to the first page
        // still waiting.
        let mut ready = Vec::new();
        while let Some(p) = self.rcu().kfree.krc[cu].pages.front().copied() {
            if !self.rcu().poll_state_synchronize_rcu(p.gp_snap) {
                break;
            }
            self.rcu_mut().kfree.krc[cu].pages.pop_front();
            ready.push(p);
        }
        // kvfree_rcu_queue_batch(): into a batch not already waiting.
        let slot = self.rcu().kfree.krc[cu]
            .batches
            .iter()
            .position(|b| b.is_empty());
        if let Some(slot) = slot.filter(|_| !self.rcu().kfree.krc[cu].pages.is_empty()) {
            let krc = &mut self.rcu_mut().kfree.krc[cu];
            krc.batches[slot] = krc.pages.drain(..).collect();
            if self.metrics().measuring(self.now()) {
                self.rcu_mut().stats.kfree_rcu_batches += 1;
            }
            // queue_rcu_work(): call_rcu_hurry(&rwork->rcu, rcu_work_rcufn).
            self.call_rcu(
                c,
                RcuCallback::KfreeRcuWork {
                    cpu: c,
                    slot: slot as u32,
                },
            );
        }
        if !self.rcu().kfree.krc[cu].pages.is_empty() {
            self.schedule_delayed_monitor_work(c);
        }
        if self.metrics().measuring(self.now()) {
            let n: u64 = ready.iter().map(|p| u64::from(p.objs)).sum();
            self.rcu_mut().stats.kfree_rcu_drained_ready += n;
        }
        ready
    }
}
impl<K: RcuEnv + ?Sized> RcuKfree for K {}

/// `kworker/N`: system_wq's per-CPU worker, when the scenario calls
/// `kfree_rcu()`.
pub const KTHREAD: crate::kthread::KthreadInfo = crate::kthread::KthreadInfo {
    name: "kworker",
    used_by,
    spawn: crate::kthread::Spawn::PerCpu {
        policy: crate::spec::Policy::Normal,
    },
    step: |k, _, t| k.kworker_step(t),
    started: |k, ids| {
        let nr = ids.len();
        let window = (k.spec().warmup, k.spec().duration);
        let kf = &mut k.rcu_mut().kfree;
        kf.window = window;
        kf.krc.resize(nr, Krc::default());
        for (cpu, id) in ids.into_iter().enumerate() {
            kf.krc[cpu].kworker = id;
        }
    },
};

impl Rcu {
    /// The generation of CPU `c`'s armed monitor timer.
    pub(crate) fn kfree_monitor_gen(&self, c: u32) -> u32 {
        self.kfree.krc.get(c as usize).map_or(0, |k| k.monitor_gen)
    }
}
