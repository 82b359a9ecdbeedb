//! Per-CPU state: what the CPU is doing, its runqueues, its pending
//! interrupts and its time accounting.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use smpsim_engine::Nanos;

use crate::task::{TaskId, NO_TASK};

/// What a CPU is doing right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Running the idle task.
    Idle,
    /// Running `curr` (working or spinning: see the task).
    Task,
    /// In a hardirq handler until `end` (IRQs off).
    Irq { end: Nanos },
    /// In `__schedule()` until `end`, switching to `next` (IRQs off, rq
    /// lock held; includes a CFS throttle walk if one was needed).
    Switch { end: Nanos, next: TaskId },
}

/// A queued cross-CPU function call (`call_single_data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Csd {
    /// `smp_call_function_single(wait=1)`: the caller spins until it runs.
    Sync {
        caller: TaskId,
        gen: u32,
        cost: Nanos,
        from_cpu: u32,
        wait: bool,
        /// A handler program to run after `cost` (`NO_HANDLER` if none).
        handler: u32,
    },
    /// `cfsb_csd`: unthrottle this CPU's throttled cfs_rqs on its list.
    CfsbUnthrottle,
    /// `rcu_exp_handler()` of an expedited grace period.
    RcuExp,
    /// `do_shoot_lazy_tlb()` for an mm being freed.
    ShootLazy { mm: u32 },
    /// A wakee's `p->wake_entry` (`CSD_TYPE_TTWU`), queued by
    /// `__ttwu_queue_wakelist()`: `sched_ttwu_pending()` activates it.
    Ttwu { task: TaskId },
}

/// [`Csd::Sync::handler`] of a call whose function is only a cost.
pub const NO_HANDLER: u32 = u32::MAX;

/// CPU time split.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuTimes {
    pub user: Nanos,
    pub sys: Nanos,
    pub spin: Nanos,
    pub irq: Nanos,
    /// Softirq handlers run at the end of an interrupt (`RCU_SOFTIRQ`'s
    /// `rcu_core()`): part of the interrupt's time, kept apart from `irq`.
    /// Left out of the JSON while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub softirq: Nanos,
    pub idle: Nanos,
}

fn is_zero(n: &Nanos) -> bool {
    *n == 0
}

impl CpuTimes {
    pub fn total(&self) -> Nanos {
        self.user + self.sys + self.spin + self.irq + self.softirq + self.idle
    }

    /// The time since `base` (an earlier reading of the same CPU).
    pub fn since(&self, base: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user - base.user,
            sys: self.sys - base.sys,
            spin: self.spin - base.spin,
            irq: self.irq - base.irq,
            softirq: self.softirq - base.softirq,
            idle: self.idle - base.idle,
        }
    }
}

/// A CFS runqueue (`struct cfs_rq`): entities ordered by vruntime in an
/// indexed binary heap so any entity can be removed in O(log n) without
/// allocating. Entity ids are global (tasks, then group entities); the
/// position table is shared by all runqueues.
#[derive(Debug, Default)]
pub struct CfsRq {
    heap: Vec<(u64, u32)>,
    pub min_vruntime: u64,
}

pub const NOT_QUEUED: u32 = u32::MAX;

impl CfsRq {
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    pub fn first(&self) -> Option<(u64, u32)> {
        self.heap.first().copied()
    }
    /// Every queued entity, in no particular order.
    pub fn entities(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.heap.iter().copied()
    }

    pub fn push(&mut self, pos: &mut [u32], vruntime: u64, ent: u32) {
        debug_assert_eq!(pos[ent as usize], NOT_QUEUED);
        self.heap.push((vruntime, ent));
        let i = self.heap.len() - 1;
        pos[ent as usize] = i as u32;
        self.sift_up(pos, i);
    }

    pub fn remove(&mut self, pos: &mut [u32], ent: u32) {
        let i = pos[ent as usize];
        debug_assert_ne!(i, NOT_QUEUED);
        let i = i as usize;
        pos[ent as usize] = NOT_QUEUED;
        let last = self.heap.pop().expect("queued entity");
        if i < self.heap.len() {
            self.heap[i] = last;
            pos[last.1 as usize] = i as u32;
            self.sift_down(pos, i);
            self.sift_up(pos, i);
        }
    }

    pub fn pop(&mut self, pos: &mut [u32]) -> Option<(u64, u32)> {
        let first = self.first()?;
        self.remove(pos, first.1);
        Some(first)
    }

    fn sift_up(&mut self, pos: &mut [u32], mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] >= self.heap[parent] {
                break;
            }
            self.heap.swap(i, parent);
            pos[self.heap[i].1 as usize] = i as u32;
            pos[self.heap[parent].1 as usize] = parent as u32;
            i = parent;
        }
    }

    fn sift_down(&mut self, pos: &mut [u32], mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap[l] < self.heap[m] {
                m = l;
            }
            if r < n && self.heap[r] < self.heap[m] {
                m = r;
            }
            if m == i {
                break;
            }
            self.heap.swap(i, m);
            pos[self.heap[i].1 as usize] = i as u32;
            pos[self.heap[m].1 as usize] = m as u32;
            i = m;
        }
    }
}

/// The RT runqueue: highest priority first, FIFO within a priority.
#[derive(Debug, Default)]
pub struct RtRq {
    heap: BinaryHeap<(u8, Reverse<i64>, TaskId)>,
    seq: i64,
}

impl RtRq {
    pub fn push_tail(&mut self, prio: u8, task: TaskId) {
        self.seq += 1;
        self.heap.push((prio, Reverse(self.seq), task));
    }
    /// A preempted RT task goes back to the head of its priority list.
    pub fn push_head(&mut self, prio: u8, task: TaskId) {
        self.seq += 1;
        self.heap.push((prio, Reverse(-self.seq), task));
    }
    pub fn pop(&mut self) -> Option<TaskId> {
        self.heap.pop().map(|e| e.2)
    }
    pub fn remove(&mut self, task: TaskId) {
        self.heap.retain(|e| e.2 != task);
    }
    pub fn top_prio(&self) -> Option<u8> {
        self.heap.peek().map(|e| e.0)
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Hardirq work waiting for the CPU to enable interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingIrq {
    /// An hrtimer of a sleeping task.
    Timer { task: TaskId, gen: u32 },
    /// A CFS bandwidth period timer.
    CfsPeriod { pool: u32 },
    /// A CFS bandwidth slack timer.
    CfsSlack { pool: u32 },
    /// The `sched_tick` hook of a tick that found the CPU running.
    TickHook,
    /// `RCU_SOFTIRQ` raised by the tick, run at its `irq_exit()`: ready RCU
    /// callbacks to invoke (`rcu/callbacks.rs`).
    RcuSoftirq,
}

pub struct Cpu {
    pub id: u32,
    /// In `cpu_online_mask`.
    pub online: bool,
    pub curr: TaskId,
    pub activity: Activity,
    /// Invalidates `Event::Cpu` scheduled for earlier activities.
    pub gen: u32,
    /// Time up to which this CPU's time has been accounted.
    pub accounted_to: Nanos,
    pub need_resched: bool,
    /// A function-call IPI is latched in the APIC.
    pub ipi_pending: bool,
    /// Where the softirq part of the current interrupt begins (it runs to
    /// the interrupt's end): its time is accounted as softirq. Past any
    /// time ([`crate::program::END_OF_TIME`]) when the interrupt runs none.
    pub softirq_from: Nanos,
    /// The CSD queue was handed over by a flag write to this polling idle
    /// CPU, not an IPI: the next handler run has no interrupt entry.
    pub polled_wake: bool,
    /// Time of hooks run here in a context that could not take it at once
    /// (an interrupt handler, a spinning or idle CPU): added to this CPU's
    /// next interrupt or switch. Always 0 without `[hooks]`.
    pub hook_debt: u64,
    /// When the `idle_enter` hook run at this CPU's last entry to idle
    /// ends: what is left of it delays the CPU's next interrupt or switch.
    pub idle_hook_until: u64,
    pub irq_pending: Vec<PendingIrq>,
    /// `call_single_queue`.
    pub csd_queue: VecDeque<Csd>,
    /// Wakees the handler took off `call_single_queue`, for
    /// `sched_ttwu_pending()` (`sched/ttwu_queue.rs`).
    pub ttwu_pending: Vec<TaskId>,
    /// Throttled group runqueues waiting for `__cfsb_csd_unthrottle`.
    pub cfsb_list: Vec<u32>,
    pub rt: RtRq,
    pub cfs: CfsRq,
    /// `rq->nr_running`: tasks on this CPU that are running or runnable.
    pub nr_running: u32,
    pub times: CpuTimes,
    pub tick_armed: bool,
    /// `rq->lock` is held by a long section (throttle walk) until then.
    pub rq_busy_until: Nanos,
    /// Start of the current preempt-disabled section of the running task.
    pub preempt_off_since: Option<Nanos>,
    /// Start of the current IRQ-disabled section.
    pub irq_off_since: Option<Nanos>,
    /// Task that was current when the handler or switch began.
    pub interrupted: TaskId,
    /// The mm the CPU's page tables point to (`rq->curr->active_mm`);
    /// `NO_MM` is `init_mm`.
    pub active_mm: u32,
    /// The current context (idle, an exited task) uses `active_mm` lazily.
    pub lazy: bool,
    /// The `active_mm`'s TLB generation this CPU's TLB is flushed to
    /// (`cpu_tlbstate.ctxs[].tlb_gen`).
    pub tlb_gen: u64,
    /// The last full memory barrier this CPU is known to have executed:
    /// a context switch, or a cross-CPU call's handler.
    pub last_barrier: Nanos,
    /// When the current task was switched in.
    pub switched_in_at: Nanos,
    /// Context switches (`nr_switches`) in the measured part of the run.
    pub nr_switches: u64,
}

impl Cpu {
    pub fn new(id: u32) -> Self {
        Cpu {
            id,
            online: true,
            curr: NO_TASK,
            activity: Activity::Idle,
            gen: 0,
            accounted_to: 0,
            need_resched: false,
            ipi_pending: false,
            softirq_from: crate::program::END_OF_TIME,
            polled_wake: false,
            hook_debt: 0,
            idle_hook_until: 0,
            // Empty until the CPU's first interrupt or cross-CPU call (a
            // reserve here cost 608 bytes a CPU: 640 MB at 1,048,576 CPUs).
            irq_pending: Vec::new(),
            csd_queue: VecDeque::new(),
            ttwu_pending: Vec::new(),
            cfsb_list: Vec::new(),
            rt: RtRq::default(),
            cfs: CfsRq::default(),
            nr_running: 0,
            times: CpuTimes::default(),
            tick_armed: false,
            rq_busy_until: 0,
            preempt_off_since: None,
            irq_off_since: None,
            interrupted: NO_TASK,
            active_mm: crate::ids::NO_MM,
            lazy: false,
            tlb_gen: 0,
            last_barrier: 0,
            switched_in_at: 0,
            nr_switches: 0,
        }
    }

    pub fn has_pending_irq(&self) -> bool {
        self.ipi_pending || !self.irq_pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfs_rq_orders_by_vruntime_and_removes_anywhere() {
        let mut pos = vec![NOT_QUEUED; 10];
        let mut rq = CfsRq::default();
        for (v, e) in [(50, 0), (10, 1), (30, 2), (20, 3), (40, 4)] {
            rq.push(&mut pos, v, e);
        }
        rq.remove(&mut pos, 2);
        assert_eq!(pos[2], NOT_QUEUED);
        let order: Vec<u32> = std::iter::from_fn(|| rq.pop(&mut pos).map(|x| x.1)).collect();
        assert_eq!(order, vec![1, 3, 4, 0]);
        assert!(pos.iter().all(|p| *p == NOT_QUEUED));
    }

    #[test]
    fn rt_rq_is_priority_then_fifo_with_head_requeue() {
        let mut rq = RtRq::default();
        rq.push_tail(10, 1);
        rq.push_tail(20, 2);
        rq.push_tail(10, 3);
        rq.push_head(10, 4);
        assert_eq!(rq.pop(), Some(2));
        assert_eq!(rq.pop(), Some(4));
        assert_eq!(rq.pop(), Some(1));
        assert_eq!(rq.pop(), Some(3));
    }
}
