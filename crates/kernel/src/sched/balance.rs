//! Load balancing and task placement (kernel/sched/fair.c, topology.c).
//!
//! A task whose affinity allows more than its own CPU moves in four ways,
//! as in the kernel:
//!
//! - **wake-up placement** (`select_task_rq_fair()`): `wake_affine()`
//!   chooses between the waker's CPU and the task's previous one, then
//!   `select_idle_sibling()` takes that CPU if idle, else the previous CPU
//!   if idle and sharing its LLC, else the first idle CPU of the LLC;
//! - **newidle balancing** (`sched_balance_newidle()`): a CPU about to go
//!   idle pulls a runnable task from the busiest CPU of its smallest sched
//!   domain that has one, unless its average idle time is shorter than
//!   `sysctl_sched_migration_cost` or than what the scan has cost before;
//! - **periodic balancing** (`sched_balance_domains()`) from the tick of a
//!   busy CPU, each domain every `balance_interval` (the span's weight in
//!   ms, times `busy_factor` 16 on a busy CPU, doubled while balanced), by
//!   the domain's designated CPU only (`should_we_balance()`);
//! - **NOHZ idle balancing**: idle CPUs have no tick, so a tick that sees
//!   two runnable tasks kicks the first idle CPU (`nohz_balancer_kick()`),
//!   which balances on behalf of every idle CPU whose interval is due.
//!
//! A balance pass moves `(busiest - local) / 2` tasks (at least one into
//! an idle CPU), coldest first, never a running or pinned task, nor (in
//! periodic balancing) a cache-hot one until balancing has failed more
//! than `cache_nice_tries` times. Sched domains are built from the
//! topology: SMT (a core), MC (an LLC), NODE, PKG (a socket), and the
//! whole machine, each kept only if it spans more than the level below
//! (the kernel's degenerate-domain rule). A moved task owes a refill of
//! its working set (`migration_footprint_lines` line transfers from its
//! old CPU) when it next runs. Only CFS tasks are balanced; RT tasks move
//! only when their CPU goes offline.

use super::prelude::*;
use smpsim_engine::Nanos;
use smpsim_machine::{CpuPlace, Machine};

use crate::event::{Event, SchedEvent};
use crate::spec::{Affinity, Policy};
use crate::task::{TaskId, TaskState, NO_TASK, PINNED};

/// `sd->busy_factor` (kernel/sched/topology.c `sd_init()`).
const BUSY_FACTOR: u64 = 16;
/// `sd->cache_nice_tries` for the levels modelled here.
const CACHE_NICE_TRIES: u32 = 1;

/// One sched-domain level: which span each CPU's domain is.
struct Level {
    span_of: Vec<u32>,
    spans: Vec<Vec<u32>>,
}

impl Level {
    fn new(places: &[CpuPlace], key: fn(&CpuPlace) -> u32) -> Self {
        let span_of: Vec<u32> = places.iter().map(key).collect();
        let nr_spans = span_of.iter().max().map_or(0, |m| *m as usize + 1);
        let mut spans = vec![Vec::new(); nr_spans];
        for (c, &s) in span_of.iter().enumerate() {
            spans[s as usize].push(c as u32);
        }
        Level { span_of, spans }
    }

    fn weight(&self) -> usize {
        self.spans.iter().map(Vec::len).max().unwrap_or(1)
    }
}

/// A CPU's state in one of its domains.
#[derive(Clone, Copy, Debug)]
struct DomainState {
    next_balance: Nanos,
    /// `sd->balance_interval`, in ms.
    interval_ms: u64,
    nr_balance_failed: u32,
    /// `sd->max_newidle_lb_cost`.
    max_newidle_lb_cost: Nanos,
}

/// Whether the balancing CPU is idle (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdleType {
    Idle,
    NotIdle,
    NewlyIdle,
}

/// The sched domains, affinity masks and balancing state of a run.
pub struct Balance {
    levels: Vec<Level>,
    /// The LLCs, which `select_idle_sibling()` searches.
    llc: Level,
    /// Affinity masks of the task groups that may move, as bitsets.
    masks: Vec<Vec<u64>>,
    /// Per CPU, then per level.
    domains: Vec<DomainState>,
    /// `rq->avg_idle` and `rq->idle_stamp` per CPU.
    avg_idle: Vec<Nanos>,
    idle_stamp: Vec<Option<Nanos>>,
    /// Runnable (queued, not running) tasks that may move: none means no
    /// balancing pass can find anything (the kernel's `rd->overload`).
    nr_movable_queued: u32,
    nohz_next_kick: Nanos,
    nohz_kick_pending: bool,
    /// Tasks moved to another CPU, by any path.
    pub nr_migrations: u64,
}

impl Balance {
    /// A task that may move became runnable (`queued`) or stopped being
    /// so: the count that lets balancing passes skip a machine with
    /// nothing to move.
    #[inline]
    pub(crate) fn movable_queued(&mut self, queued: bool) {
        if queued {
            self.nr_movable_queued += 1;
        } else {
            self.nr_movable_queued -= 1;
        }
    }

    pub fn new(machine: &Machine) -> Self {
        let topo = &machine.topology;
        let n = machine.nr_cpus() as u32;
        let keys: [fn(&CpuPlace) -> u32; 5] =
            [|p| p.core, |p| p.llc, |p| p.node, |p| p.socket, |_| 0];
        let places: Vec<_> = (0..n).map(|c| topo.place(c)).collect();
        let mut levels: Vec<Level> = Vec::new();
        let mut below = 1usize;
        for key in keys {
            let level = Level::new(&places, key);
            if level.weight() > below {
                below = level.weight();
                levels.push(level);
            }
        }
        let llc = Level::new(&places, |p| p.llc);
        let domains = (0..n)
            .flat_map(|c| {
                levels.iter().map(move |l| {
                    let weight = l.spans[l.span_of[c as usize] as usize].len() as u64;
                    DomainState {
                        next_balance: 0,
                        interval_ms: weight,
                        nr_balance_failed: 0,
                        max_newidle_lb_cost: 0,
                    }
                })
            })
            .collect();
        Balance {
            levels,
            llc,
            masks: Vec::new(),
            domains,
            // init_sched_fair_class(): rq->avg_idle = 2 * migration cost.
            avg_idle: vec![1_000_000; n as usize],
            idle_stamp: vec![None; n as usize],
            nr_movable_queued: 0,
            nohz_next_kick: 0,
            nohz_kick_pending: false,
            nr_migrations: 0,
        }
    }

    /// Registers a task group's affinity; returns what its tasks'
    /// `affinity` is.
    pub fn add_affinity(&mut self, affinity: &Affinity) -> u32 {
        match affinity {
            Affinity::Pinned => PINNED,
            Affinity::Cpus(cpus) if cpus.len() <= 1 => PINNED,
            Affinity::Cpus(cpus) => {
                let words = self.avg_idle.len().div_ceil(64);
                let mut mask = vec![0u64; words];
                for &c in cpus {
                    mask[c as usize / 64] |= 1 << (c % 64);
                }
                self.masks.push(mask);
                (self.masks.len() - 1) as u32
            }
        }
    }

    fn domain(&mut self, cpu: u32, level: usize) -> &mut DomainState {
        &mut self.domains[cpu as usize * self.levels.len() + level]
    }

    fn span(&self, cpu: u32, level: usize) -> &[u32] {
        let l = &self.levels[level];
        &l.spans[l.span_of[cpu as usize] as usize]
    }

    /// How many sched-domain levels the topology gave.
    pub fn nr_levels(&self) -> usize {
        self.levels.len()
    }
}

/// Task placement and load balancing; for every scheduler env.
pub(crate) trait Balancer<'s>: SchedEnv<'s> {
    fn balancing(&self) -> bool {
        self.spec().knobs.load_balance
    }

    /// Whether task `t` may run on `cpu` (`cpumask_test_cpu(cpu,
    /// p->cpus_ptr)`).
    fn cpu_allowed(&self, t: TaskId, cpu: u32) -> bool {
        let task = &self.tasks()[t as usize];
        match task.affinity {
            PINNED => task.cpu == cpu,
            a => self.sched().balance.masks[a as usize][cpu as usize / 64] & (1 << (cpu % 64)) != 0,
        }
    }

    /// `available_idle_cpu()`.
    fn cpu_idle(&self, cpu: u32) -> bool {
        let c = &self.cpus()[cpu as usize];
        c.online && c.curr == NO_TASK && c.nr_running == 0
    }

    fn shares_llc(&self, a: u32, b: u32) -> bool {
        let llc = &self.sched().balance.llc.span_of;
        llc[a as usize] == llc[b as usize]
    }

    /// `set_task_cpu()` for a task that is not on a runqueue, run on CPU
    /// `on`: its CPU, its group runqueue, its vruntime relative to the new
    /// runqueue, the refill it owes, and the `set_task_cpu` hook
    /// (`migrate_task_rq_fair()`'s work, charged to `on`).
    fn set_task_cpu(&mut self, t: TaskId, dst: u32, on: u32) {
        let src = self.tasks()[t as usize].cpu;
        if src == dst {
            return;
        }
        // migrate_task_rq_fair() runs before __set_task_cpu(): task_cpu(p)
        // is still src.
        self.wake_hook(on, crate::hooks::HookEvent::SetTaskCpu, t);
        let (src_min, dst_min) = match self.tasks()[t as usize].top_group {
            None => (
                self.cpus()[src as usize].cfs.min_vruntime,
                self.cpus()[dst as usize].cfs.min_vruntime,
            ),
            Some(top) => {
                let g = |c: u32| (top * self.nr_cpus() + c) as usize;
                (
                    self.sched().groups[g(src)].cfs.min_vruntime,
                    self.sched().groups[g(dst)].cfs.min_vruntime,
                )
            }
        };
        let refill = self.spec().knobs.migration_footprint_lines as u64
            * self.cost().line_transfer(src, dst);
        let nr_cpus = self.nr_cpus();
        let task = &mut self.tasks_mut()[t as usize];
        task.vruntime = dst_min + task.vruntime.saturating_sub(src_min);
        task.cpu = dst;
        task.group_rq = task.top_group.map(|top| top * nr_cpus + dst);
        task.migration_refill += refill;
        self.sched_mut().balance.nr_migrations += 1;
    }

    /// Moves a runnable, queued task to `dst`'s runqueue (`move_queued_task()`)
    /// and lets it preempt there.
    fn migrate_queued(&mut self, t: TaskId, dst: u32, from: u32) {
        debug_assert_eq!(self.tasks()[t as usize].state, TaskState::Runnable);
        let src = self.tasks()[t as usize].cpu;
        self.dequeue_task(t);
        self.cpus_mut()[src as usize].nr_running -= 1;
        // move_queued_task() runs on the balancing (or hotplug) CPU.
        let on = if from == super::FROM_SOFTIRQ {
            dst
        } else {
            from
        };
        self.set_task_cpu(t, dst, on);
        self.cpus_mut()[dst as usize].nr_running += 1;
        self.enqueue_task(t);
        self.check_preempt_wakeup(dst, t, from);
    }

    /// `select_task_rq_fair()` for a waking task, `waker` the waking CPU.
    fn select_task_rq(&mut self, t: TaskId, waker: u32) -> u32 {
        let prev = self.tasks()[t as usize].cpu;
        let ok = |c: u32| self.cpus()[c as usize].online && self.cpu_allowed(t, c);
        // wake_affine(): wake_affine_idle(), then a load comparison.
        let mut target = prev;
        if waker != prev && ok(waker) {
            if self.cpu_idle(waker) && self.shares_llc(waker, prev) {
                target = if self.cpu_idle(prev) { prev } else { waker };
            } else if !self.cpu_idle(prev)
                && self.cpus()[waker as usize].nr_running < self.cpus()[prev as usize].nr_running
            {
                target = waker;
            }
        }
        if !ok(target) {
            target = if ok(prev) { prev } else { self.fallback_cpu(t) };
        }
        // select_idle_sibling().
        if !self.cost().capacity.is_empty() && self.spec().knobs.asym_cpu_capacity {
            return self.select_idle_sibling_asym(t, target, prev);
        }
        if self.cpu_idle(target) {
            return target;
        }
        if prev != target && ok(prev) && self.shares_llc(prev, target) && self.cpu_idle(prev) {
            return prev;
        }
        // select_idle_cpu(): the LLC, from the CPU after the target.
        let llc = &self.sched().balance.llc;
        let span = &llc.spans[llc.span_of[target as usize] as usize];
        let start = span.iter().position(|&c| c == target).unwrap_or(0);
        for i in 1..span.len() {
            let c = span[(start + i) % span.len()];
            if ok(c) && self.cpu_idle(c) {
                return c;
            }
        }
        target
    }

    /// `select_fallback_rq()`: an online CPU the task may use, nearest its
    /// CPU first; if none, any online CPU (the kernel's "no longer affine").
    fn fallback_cpu(&self, t: TaskId) -> u32 {
        let prev = self.tasks()[t as usize].cpu;
        let topo = &self.spec().machine.topology;
        let online = |c: &u32| self.cpus()[*c as usize].online;
        let nearest = |allowed_only: bool| {
            (0..self.nr_cpus())
                .filter(online)
                .filter(|&c| !allowed_only || (c != prev && self.cpu_allowed(t, c)))
                .min_by_key(|&c| (topo.distance(prev, c), c))
        };
        nearest(true).or_else(|| nearest(false)).unwrap_or(prev)
    }

    /// Placement of a waking task, before it is queued: `select_task_rq()`
    /// if it may move, a fallback CPU if its CPU went offline.
    fn place_waking_task(&mut self, t: TaskId, waker: u32) {
        let task = &self.tasks()[t as usize];
        let dst = if !self.cpus()[task.cpu as usize].online {
            self.fallback_rq(t)
        } else if self.balancing() && task.affinity != PINNED {
            self.select_task_rq(t, waker)
        } else {
            return;
        };
        // try_to_wake_up() runs on the waking CPU.
        self.set_task_cpu(t, dst, waker);
    }

    /// `select_fallback_rq()`: the CPU a task leaving an offline CPU goes
    /// to; a task that may run nowhere else online goes anyway, with the
    /// kernel's "no longer affine" warning.
    fn fallback_rq(&mut self, t: TaskId) -> u32 {
        let dst = self.fallback_cpu(t);
        if !self.cpu_allowed(t, dst) {
            let (cpu, name) = (self.tasks()[t as usize].cpu, self.task_name(t));
            let now = self.now();
            self.metrics_mut().no_longer_affine(cpu, now, &name);
        }
        dst
    }

    /// `migrate_tasks()` / `balance_push()` for an outgoing CPU: every
    /// queued task moves to a fallback CPU now; sleeping ones move when
    /// they wake; the running one when it next leaves the CPU.
    fn migrate_tasks_off(&mut self, c: u32, from: u32) {
        for t in 0..self.tasks().len() as TaskId {
            let task = &self.tasks()[t as usize];
            if task.cpu == c && task.state == TaskState::Runnable {
                let dst = self.fallback_rq(t);
                self.migrate_queued(t, dst, from);
            }
        }
    }

    /// The running task of an offline CPU `c` is leaving it: queue it on a
    /// fallback CPU instead of back here.
    fn push_off_offline_cpu(&mut self, t: TaskId, c: u32) {
        let dst = self.fallback_rq(t);
        self.set_task_cpu(t, dst, c);
        self.cpus_mut()[c as usize].nr_running -= 1;
        self.cpus_mut()[dst as usize].nr_running += 1;
        self.enqueue_task(t);
        self.check_preempt_wakeup(dst, t, c);
    }

    /// `task_hot()`.
    fn task_hot(&self, t: TaskId) -> bool {
        self.now().saturating_sub(self.tasks()[t as usize].last_ran)
            < self.spec().knobs.sched_migration_cost
    }

    /// The queued tasks of `src` that may move to `dst`, coldest first is
    /// what `detach_tasks()` takes from the tail of `cfs_tasks`.
    fn coldest_movable(&self, src: u32, dst: u32, allow_hot: bool) -> Option<TaskId> {
        let nr_tasks = self.tasks().len() as u32;
        let mut best: Option<(Nanos, TaskId)> = None;
        let mut consider = |t: TaskId| {
            let task = &self.tasks()[t as usize];
            if task.affinity == PINNED
                || task.policy != Policy::Normal
                || !self.cpu_allowed(t, dst)
                || (!allow_hot && self.task_hot(t))
            {
                return;
            }
            let key = (task.last_ran, t);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        };
        for (_, ent) in self.cpus()[src as usize].cfs.entities() {
            if ent < nr_tasks {
                consider(ent);
            } else {
                for (_, t) in self.sched().groups[(ent - nr_tasks) as usize]
                    .cfs
                    .entities()
                {
                    consider(t);
                }
            }
        }
        best.map(|b| b.1)
    }

    /// `sched_balance_rq()` for `dst`'s domain at `level`: pulls tasks from
    /// the busiest CPU of the span. Returns the tasks moved and the time
    /// the pass took (reading each CPU's runqueue, then the busiest one's
    /// lock and each moved task).
    fn balance_rq(&mut self, dst: u32, level: usize, idle: IdleType) -> (u32, Nanos) {
        let local = self.cpus()[dst as usize].nr_running;
        let mut busiest: Option<(u32, u32)> = None;
        let mut cost = 0;
        for &c in self.sched().balance.span(dst, level) {
            if c == dst || !self.cpus()[c as usize].online {
                continue;
            }
            cost += self.cost().line_transfer(c, dst);
            let nr = self.cpus()[c as usize].nr_running;
            if busiest.is_none_or(|(n, _)| nr > n) {
                busiest = Some((nr, c));
            }
        }
        let Some((nr, src)) = busiest else {
            return (0, cost);
        };
        let idle_dst = idle != IdleType::NotIdle && local == 0;
        let imbalance = if nr >= local + 2 {
            (nr - local) / 2
        } else if idle_dst && nr >= 2 {
            1
        } else {
            return (0, cost);
        };
        let failed = self
            .sched_mut()
            .balance
            .domain(dst, level)
            .nr_balance_failed;
        let allow_hot = idle == IdleType::NewlyIdle || failed > CACHE_NICE_TRIES;
        let mut moved = 0;
        cost += 2 * self.cost().line_transfer(src, dst);
        while moved < imbalance {
            let Some(t) = self.coldest_movable(src, dst, allow_hot) else {
                break;
            };
            self.migrate_queued(t, dst, dst);
            cost += self.cost().line_transfer(src, dst);
            moved += 1;
        }
        let d = self.sched_mut().balance.domain(dst, level);
        d.nr_balance_failed = if moved == 0 { failed + 1 } else { 0 };
        (moved, cost)
    }

    /// `sched_balance_newidle()`: CPU `c` found nothing to run. Returns the
    /// time spent.
    fn newidle_balance(&mut self, c: u32) -> Nanos {
        if !self.balancing()
            || self.sched().balance.nr_movable_queued == 0
            || !self.cpus()[c as usize].online
        {
            return 0;
        }
        let avg_idle = self.sched().balance.avg_idle[c as usize];
        self.sched_mut().balance.idle_stamp[c as usize] = Some(self.now());
        if avg_idle < self.spec().knobs.sched_migration_cost {
            return 0;
        }
        let mut spent = 0;
        for level in 0..self.sched().balance.levels.len() {
            if avg_idle
                < spent
                    + self
                        .sched_mut()
                        .balance
                        .domain(c, level)
                        .max_newidle_lb_cost
            {
                break;
            }
            let (moved, cost) = self.balance_rq(c, level, IdleType::NewlyIdle);
            let d = self.sched_mut().balance.domain(c, level);
            d.max_newidle_lb_cost = d.max_newidle_lb_cost.max(cost);
            spent += cost;
            if moved > 0 {
                self.sched_mut().balance.idle_stamp[c as usize] = None;
                break;
            }
        }
        spent
    }

    /// A task is queued on a CPU that was idle: update its `avg_idle`
    /// (`ttwu_do_activate()`).
    fn idle_ends(&mut self, c: u32) {
        if let Some(stamp) = self.sched_mut().balance.idle_stamp[c as usize].take() {
            let delta = self.now() - stamp;
            let cap = 2 * self.spec().knobs.sched_migration_cost;
            let avg = &mut self.sched_mut().balance.avg_idle[c as usize];
            // update_avg(): avg += (sample - avg) / 8, capped at twice the
            // largest newidle scan cost (at least the migration cost).
            let a = *avg as i64;
            *avg = (a + (delta as i64 - a) / 8) as Nanos;
            *avg = (*avg).min(cap);
        }
    }

    /// `sched_balance_domains()` for CPU `c`.
    fn rebalance_domains(&mut self, c: u32, idle: IdleType) {
        let jiffy = self.sched().tick_ns;
        for level in 0..self.sched().balance.levels.len() {
            if !self.should_we_balance(c, level) {
                break;
            }
            let d = *self.sched_mut().balance.domain(c, level);
            if self.now() < d.next_balance {
                continue;
            }
            let (moved, _) = self.balance_rq(c, level, idle);
            let weight = self.sched().balance.span(c, level).len() as u64;
            let (hz, nr_cpus, now) = (
                self.spec().knobs.hz as u64,
                self.cpus().len() as u64,
                self.now(),
            );
            let d = self.sched_mut().balance.domain(c, level);
            d.interval_ms = if moved > 0 {
                weight
            } else {
                (d.interval_ms * 2).min(2 * weight)
            };
            // get_sd_balance_interval(): busy CPUs balance less often;
            // at least a jiffy, at most HZ * nr_cpus / 10 jiffies.
            let factor = if idle == IdleType::NotIdle {
                BUSY_FACTOR
            } else {
                1
            };
            let max = (hz * nr_cpus / 10).max(1);
            let jiffies = (d.interval_ms * factor * hz / 1000).clamp(1, max);
            d.next_balance = now + jiffies * jiffy;
        }
    }

    /// `should_we_balance()`: the first idle CPU of `c`'s group at this
    /// level (its span one level down), or the group's first CPU if none
    /// is idle, balances the domain.
    fn should_we_balance(&self, c: u32, level: usize) -> bool {
        if level == 0 {
            return true;
        }
        let group = self.sched().balance.span(c, level - 1);
        let first_idle = group.iter().copied().find(|&x| self.cpu_idle(x));
        first_idle.unwrap_or(group[0]) == c
    }

    /// `sched_balance_trigger()` from CPU `c`'s tick: periodic balancing of
    /// its own domains, and the NOHZ kick for the idle ones.
    fn trigger_load_balance(&mut self, c: u32) {
        if !self.balancing() || self.sched().balance.nr_movable_queued == 0 {
            return;
        }
        self.rebalance_domains(c, IdleType::NotIdle);
        // nohz_balancer_kick(): two runnable tasks here, and an idle CPU.
        if self.cpus()[c as usize].nr_running < 2
            || self.sched().balance.nohz_kick_pending
            || self.now() < self.sched().balance.nohz_next_kick
        {
            return;
        }
        if let Some(ilb) = (0..self.nr_cpus()).find(|&x| self.cpu_idle(x)) {
            self.sched_mut().balance.nohz_kick_pending = true;
            let at = self.now() + self.wake_idle_latency(ilb, c);
            self.at(at, Event::Sched(SchedEvent::NohzBalance { cpu: ilb }));
        }
    }

    /// `_nohz_idle_balance()` on the kicked CPU: balance on behalf of every
    /// idle CPU whose interval is due, itself last.
    fn nohz_idle_balance(&mut self, ilb: u32) -> smpsim_engine::Handled {
        self.sched_mut().balance.nohz_kick_pending = false;
        let mut next = self.now() + self.sched().tick_ns;
        let order = (0..self.nr_cpus()).filter(|&c| c != ilb).chain([ilb]);
        for c in order {
            if !self.cpu_idle(c) || self.sched().balance.nr_movable_queued == 0 {
                continue;
            }
            self.rebalance_domains(c, IdleType::Idle);
            let now = self.now();
            for level in 0..self.sched().balance.levels.len() {
                next = next.min(
                    self.sched_mut()
                        .balance
                        .domain(c, level)
                        .next_balance
                        .max(now + 1),
                );
            }
        }
        self.sched_mut().balance.nohz_next_kick = next;
        smpsim_engine::Handled::Done
    }
}

impl<'s, K: SchedEnv<'s> + ?Sized> Balancer<'s> for K {}

#[cfg(test)]
mod tests {
    use crate::program::{Dist, Expr, HotplugOp, Op};
    use crate::spec::{Affinity, Policy};
    use crate::task::TaskState;
    use crate::testkit::*;
    use crate::Kernel;

    const MS: u64 = 1_000_000;

    /// `n` CPU hogs that may run anywhere, all starting on CPU 0.
    fn hogs_on_cpu0(s: &mut crate::Spec, n: u32) {
        let all = Affinity::Cpus((0..s.machine.nr_cpus() as u32).collect());
        task_group(
            s,
            "hog",
            vec![0; n as usize],
            Policy::Normal,
            0,
            vec![Op::Work(Dist::Const(MS)), Op::Jump(0)],
        );
        s.task_groups.last_mut().unwrap().affinity = all;
    }

    #[test]
    fn tasks_started_on_one_cpu_spread_to_every_cpu() {
        let mut s = spec(flat_machine(8), 200 * MS);
        hogs_on_cpu0(&mut s, 8);
        let mut k = Kernel::new(&s);
        let r = k.run();
        for c in &k.cpus {
            assert_eq!(
                c.nr_running, 1,
                "CPU{} ends with {} tasks",
                c.id, c.nr_running
            );
        }
        // Every CPU did work; the later CPUs idled only until a task came.
        for (c, cpu) in r.cpus.iter().enumerate() {
            assert!(cpu.times.user > 100 * MS, "CPU{c}: {:?}", cpu.times);
        }
        assert!(k.sched.balance.nr_migrations >= 7);
    }

    #[test]
    fn without_load_balancing_they_stay() {
        let mut s = spec(flat_machine(8), 50 * MS);
        s.knobs.load_balance = false;
        hogs_on_cpu0(&mut s, 8);
        let mut k = Kernel::new(&s);
        k.run();
        assert_eq!(k.cpus[0].nr_running, 8);
        assert_eq!(k.sched.balance.nr_migrations, 0);
    }

    /// A pinned task and one that may move, both on CPU 3, which a task on
    /// CPU 0 takes offline at 10 ms: both go on running elsewhere, the
    /// pinned one with the kernel's "no longer affine" warning.
    #[test]
    fn an_offlined_cpus_tasks_continue_elsewhere() {
        let mut s = spec(flat_machine(4), 100 * MS);
        let work = vec![Op::Work(Dist::Const(MS)), Op::Jump(0)];
        task_group(&mut s, "free", vec![3], Policy::Normal, 0, work.clone());
        s.task_groups[0].affinity = Affinity::Cpus(vec![0, 1, 2, 3]);
        task_group(&mut s, "bound", vec![3], Policy::Normal, 0, work);
        let offline = vec![
            Op::Sleep {
                dist: Dist::Const(10 * MS),
                overshoot: None,
            },
            Op::Hotplug(HotplugOp::CpuOffline(Expr::Const(3))),
            Op::Exit,
        ];
        task_group(&mut s, "hotplug", vec![0], Policy::Fifo(50), 1, offline);
        let mut k = Kernel::new(&s);
        let r = k.run();
        for t in 0..2 {
            let task = &k.tasks[t];
            assert_ne!(task.cpu, 3);
            assert!(task.times.user > 80 * MS, "{:?}", task.times);
            assert_ne!(task.state, TaskState::Sleeping);
        }
        let f = r.finding("no_longer_affine").expect("bound task moved");
        assert!(f.message.contains("bound/0"), "{f:?}");
        assert!(r.cpus[3].times.idle > 85 * MS);
    }

    #[test]
    fn domains_follow_the_topology() {
        let m = crate::testkit::preset_machine("amd-turin-384");
        let b = super::Balance::new(&m);
        // SMT, MC (CCX), NODE/PKG (a socket), the machine.
        assert_eq!(b.nr_levels(), 4);
        assert_eq!(b.span(0, 0).len(), 2);
        assert_eq!(b.span(0, 3).len(), 384);
        let flat = super::Balance::new(&flat_machine(8));
        assert_eq!(flat.nr_levels(), 1);
    }
}
