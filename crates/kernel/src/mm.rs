//! Address spaces (`struct mm_struct`), `active_mm` and lazy TLB, with an
//! mm-lifetime checker that runs on every scenario.
//!
//! Every task has an mm; the idle task has none and, like a kernel thread,
//! keeps using the previous task's mm lazily (`active_mm`). How that lazy
//! use is accounted is the [`LazyTlb`] knob:
//!
//! - `refcount`: switching from a user task to idle takes a lazy reference
//!   (`mmgrab_lazy_tlb()`, an atomic on `mm->mm_count`), switching back drops
//!   it in `finish_task_switch()`. With every CPU running threads of one
//!   process, that cache line is the whole machine's bottleneck.
//! - `shootdown`: no lazy references; the final `__mmdrop()` IPIs the CPUs
//!   of `mm_cpumask` that still use the mm lazily (`cleanup_lazy_tlbs()`)
//!   and frees it when they have switched away.
//! - `cpumask-refcount` (seed 004's proposal) and a naive version of it.
//!
//! The checker reports an mm freed while a CPU still has it as `active_mm`,
//! freed twice, or never freed after its last user and lazy user are gone.

use crate::coherence::Line;
use crate::cpu::Csd;
use crate::env::CoreEnv;
use crate::event::*;
use crate::spec::LazyTlb;
use crate::task::*;

pub use crate::ids::NO_MM;

/// What the mm needs from the rest of the kernel: the core's time, CPUs
/// (their `active_mm`, lazy flag and TLB generation), tasks (their mm),
/// costs and event sink, its own state, and whether the scheduler is
/// still booting. The one implementation, for the kernel, is in
/// `sim/sched_env.rs`.
pub(crate) trait MmEnv: CoreEnv {
    /// The compiled scenario's knobs and seed.
    fn spec(&self) -> &crate::spec::Spec;
    /// The mm's own state.
    fn mm(&self) -> &MmState;
    /// The mm's own state, to change.
    fn mm_mut(&mut self) -> &mut MmState;
    /// The mm's state, the CPUs, the tasks and the costs at once
    /// (disjoint borrows).
    fn mm_parts(&mut self) -> MmParts<'_>;
    /// Queues a cross-CPU call on `target` (`smp.rs`).
    fn queue_csd(&mut self, target: u32, csd: Csd, at: smpsim_engine::Nanos, from: u32);
    /// The scheduler is switching each CPU's first task in, before the run.
    fn sched_booting(&self) -> bool;
}

/// The mm's state, the CPUs, the tasks and the costs, borrowed together.
pub(crate) struct MmParts<'a> {
    pub(crate) mm: &'a mut MmState,
    pub(crate) cpus: &'a mut [crate::cpu::Cpu],
    pub(crate) tasks: &'a mut [Task],
    pub(crate) cost: &'a crate::costs::CostNs,
}

/// Every address space and what is counted of them.
#[derive(Default)]
pub(crate) struct MmState {
    /// Address spaces, by mm id (one per task group unless shared), with
    /// their users, `mm_count` and `mm_cpumask`.
    // invariant: each mm's `mask_weight` is the number of CPUs in its
    // `mask`; a freed mm has no users.
    mms: Vec<Mm>,
    stats: crate::result::MmStats,
}

impl MmState {
    /// The address spaces `mms`, by mm id, none of them used yet.
    pub(crate) fn new(mms: Vec<Mm>) -> Self {
        MmState {
            mms,
            stats: Default::default(),
        }
    }

    /// Address space `mm`.
    #[inline]
    pub(crate) fn mm(&self, mm: u32) -> &Mm {
        &self.mms[mm as usize]
    }

    /// The counts of the run so far.
    pub(crate) fn stats(&self) -> crate::result::MmStats {
        self.stats
    }

    /// `n` TLB-flush IPIs sent by a cross-CPU call that flushes
    /// (`flush_tlb_mm_range()` through `smp_call_function_many()`).
    pub(crate) fn count_tlb_flush_ipis(&mut self, n: u64) {
        self.stats.tlb_flush_ipis += n;
    }
}

pub struct Mm {
    /// `mm_users`: live tasks.
    pub users: u32,
    /// `mm_count`: 1 for all users together, plus lazy references.
    pub count: u32,
    /// The line holding `mm_users` and `mm_count`.
    pub line: Line,
    /// `mm_cpumask`: the CPUs in it, sorted (sparse: a process touches few
    /// CPUs of a large machine, and there may be a process per CPU).
    pub mask: CpuMask,
    pub mask_weight: u32,
    /// The line holding `mm_cpumask`.
    pub mask_line: Line,
    pub freed: bool,
    /// Shootdown IPIs still outstanding before the free.
    pub shoot_pending: u32,
    /// `mm->context.tlb_gen`: bumped by every flush of the mm.
    pub tlb_gen: u64,
    /// `mm->context.next_trim_cpumask`.
    pub next_trim: smpsim_engine::Nanos,
    /// `mm->context.global_asid` is set: flushes of the mm are broadcast.
    pub global_asid: bool,
}

impl Mm {
    pub fn new(users: u32, nr_cpus: usize) -> Self {
        Mm {
            users,
            count: 1,
            line: Line::new(nr_cpus, 0),
            mask: CpuMask::default(),
            mask_weight: 0,
            mask_line: Line::new(nr_cpus, 0),
            freed: false,
            shoot_pending: 0,
            tlb_gen: 0,
            next_trim: 1_000_000_000,
            global_asid: false,
        }
    }
}

pub use crate::result::MmStats;

/// A set of CPUs kept as a sorted list.
#[derive(Clone, Debug, Default)]
pub struct CpuMask(Vec<u32>);

impl CpuMask {
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }
    /// Adds `cpu`; false if it was there.
    pub fn insert(&mut self, cpu: u32) -> bool {
        match self.0.binary_search(&cpu) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, cpu);
                true
            }
        }
    }
    /// Removes `cpu`; false if it was not there.
    pub fn remove(&mut self, cpu: u32) -> bool {
        match self.0.binary_search(&cpu) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }
}

/// The mm's methods: the switch's side, TLB flush targets, exit and
/// the lifetime checker; for every mm env.
pub(crate) trait MmOps: MmEnv {
    fn mode(&self) -> LazyTlb {
        self.spec().knobs.lazy_tlb
    }

    fn cpumask_mode(&self) -> bool {
        matches!(
            self.mode(),
            LazyTlb::CpumaskRefcount | LazyTlb::CpumaskRefcountNaive
        )
    }

    /// An atomic on the mm's `mm_users`/`mm_count` line from CPU `c`;
    /// returns how long it takes from now.
    fn mm_atomic(&mut self, mm: u32, c: u32) -> u64 {
        let now = self.now();
        let MmParts {
            mm: state, cost, ..
        } = self.mm_parts();
        state.mms[mm as usize].line.rmw(cost, c, now) - now
    }

    fn mask_set(&mut self, mm: u32, c: u32) -> u64 {
        let (booting, now) = (self.sched_booting(), self.now());
        let MmParts {
            mm: state, cost, ..
        } = self.mm_parts();
        let m = &mut state.mms[mm as usize];
        if !m.mask.insert(c) {
            return 0;
        }
        m.mask_weight += 1;
        if booting {
            // Set before the run began: no transfer of the line in it.
            return 0;
        }
        m.mask_line.rmw(cost, c, now) - now
    }

    /// Clears CPU `c` from the mask; returns (RMW latency, mask now empty).
    fn mask_clear(&mut self, mm: u32, c: u32) -> (u64, bool) {
        let now = self.now();
        let MmParts {
            mm: state, cost, ..
        } = self.mm_parts();
        let m = &mut state.mms[mm as usize];
        if !m.mask.remove(c) {
            return (0, m.mask_weight == 0);
        }
        m.mask_weight -= 1;
        let done = m.mask_line.rmw(cost, c, now) - now;
        (done, m.mask_weight == 0)
    }

    /// `context_switch()` at the start of a switch on CPU `c` from `prev`
    /// to `next`: the lazy reference taken when going lazy, `switch_mm()`
    /// when the mm changes. Returns the time it adds to the switch.
    fn mm_switch_start(&mut self, c: u32, prev: TaskId, next: TaskId) -> u64 {
        let mut cost = 0;
        let active = self.cpus()[c as usize].active_mm;
        if next == NO_TASK || self.tasks()[next as usize].kthread.is_some() {
            // To the idle task or a kthread: it borrows prev's mm.
            if prev != NO_TASK
                && self.tasks()[prev as usize].state != TaskState::Exited
                && !self.cpus()[c as usize].lazy
            {
                self.cpus_mut()[c as usize].lazy = true;
                if self.mode() == LazyTlb::Refcount && active != NO_MM {
                    self.mm_mut().mms[active as usize].count += 1;
                    self.mm_mut().stats.lazy_refcount_ops += 1;
                    cost += self.mm_atomic(active, c);
                }
            }
            return cost;
        }
        let n = self.tasks()[next as usize].mm;
        if n != active {
            cost += self.mask_set(n, c);
            if self.mode() == LazyTlb::CpumaskRefcountNaive && active != NO_MM {
                // Naive: drop the bit before the CPU has stopped using the mm,
                // then look at the mask and mm_users in a separate step.
                let (t, _) = self.mask_clear(active, c);
                let at = self.now() + t;
                let MmParts {
                    mm: state,
                    cost: costs,
                    ..
                } = self.mm_parts();
                let read = state.mms[active as usize].mask_line.read(costs, c, at);
                self.at(read, Event::Mm(MmEvent::Check { mm: active }));
                cost += t;
            }
        }
        cost
    }

    /// `finish_task_switch()`: `next` (a task) now runs on CPU `c`.
    /// Returns work the task does first (dropping a lazy reference).
    fn mm_switch_finish(&mut self, c: u32, next: TaskId) -> u64 {
        let n = self.tasks()[next as usize].mm;
        let gen = self.mm().mms[n as usize].tlb_gen;
        let flush_full = self.cost().tlb_flush_full;
        let cpu = &mut self.cpus_mut()[c as usize];
        let (old, was_lazy) = (cpu.active_mm, cpu.lazy);
        // switch_mm_irqs_off(): back from lazy on the same mm, a TLB behind
        // the mm's generation is flushed now (the flush it was not sent);
        // a different mm starts from a flushed (new-ASID) TLB.
        let behind = old == n && was_lazy && cpu.tlb_gen < gen;
        cpu.tlb_gen = gen;
        cpu.active_mm = n;
        cpu.lazy = false;
        let deferred = if behind {
            self.mm_mut().stats.deferred_tlb_flushes += 1;
            flush_full
        } else {
            0
        };
        if old == NO_MM {
            return deferred;
        }
        deferred + self.mm_switch_drop_lazy(c, old, n, was_lazy)
    }

    /// The lazy-reference side of `finish_task_switch()` when CPU `c`
    /// leaves `old` for `n`.
    fn mm_switch_drop_lazy(&mut self, c: u32, old: u32, n: u32, was_lazy: bool) -> u64 {
        match self.mode() {
            LazyTlb::Refcount if was_lazy => {
                // mmdrop_lazy_tlb_sched(): drop the reference the idle task held.
                self.mm_mut().stats.lazy_refcount_ops += 1;
                let t = self.mm_atomic(old, c);
                let m = &mut self.mm_mut().mms[old as usize];
                m.count -= 1;
                if m.count == 0 {
                    let now = self.now();
                    self.at(now + t, Event::Mm(MmEvent::Free { mm: old }));
                }
                t
            }
            LazyTlb::CpumaskRefcount if old != n => {
                // Stopped using it; clearing the bit and seeing the mask empty
                // is one atomic operation, so one CPU alone frees.
                let (t, empty) = self.mask_clear(old, c);
                if empty && self.mm().mms[old as usize].users == 0 {
                    self.at(self.now() + t, Event::Mm(MmEvent::Free { mm: old }));
                }
                t
            }
            _ => 0,
        }
    }

    /// The targets of a flush of task `t`'s mm from its CPU (see the module
    /// doc), in CPU order; bumps the mm's TLB generation.
    fn tlb_flush_targets(&mut self, t: TaskId, freed_tables: bool, out: &mut Vec<u32>) {
        let (now, nr_cpus, cpumask_mode) = (self.now(), self.nr_cpus(), self.cpumask_mode());
        let MmParts {
            mm: state,
            cpus,
            tasks,
            ..
        } = self.mm_parts();
        let me = tasks[t as usize].cpu;
        let mm = tasks[t as usize].mm;
        let m = &mut state.mms[mm as usize];
        m.tlb_gen += 1;
        let gen = m.tlb_gen;
        // The caller flushes its own TLB (flush_tlb_func() called locally).
        cpus[me as usize].tlb_gen = gen;
        // should_trim_cpumask(): at most once a second per mm.
        let trim = now > m.next_trim;
        if trim {
            m.next_trim = now + 1_000_000_000;
        }
        for c in 0..nr_cpus {
            let cpu = &cpus[c as usize];
            if c == me || !cpu.online || !state.mms[mm as usize].mask.contains(c) {
                continue;
            }
            // A CPU switching to the mm counts as running it: its IRQs are
            // off until the switch is done (LOADED_MM_SWITCHING).
            let switching_in = match cpu.activity {
                crate::cpu::Activity::Switch { next, .. } => {
                    next != NO_TASK && tasks[next as usize].mm == mm
                }
                _ => false,
            };
            let cpu = &mut cpus[c as usize];
            let loaded = cpu.active_mm == mm || switching_in;
            let flush = if freed_tables {
                true
            } else if cpu.lazy {
                false
            } else {
                loaded || trim
            };
            if !flush {
                continue;
            }
            out.push(c);
            if loaded {
                cpu.tlb_gen = gen;
            } else if !cpumask_mode {
                // flush_tlb_func() on a CPU that switched away: it clears
                // its bit and returns.
                let m = &mut state.mms[mm as usize];
                m.mask.remove(c);
                m.mask_weight -= 1;
            }
        }
    }

    /// The targets of a flush of task `t`'s mm sent to the CPUs of its
    /// mask `slot` as it was built (`native_flush_tlb_multi()` given a
    /// cpumask computed earlier): each online one but this CPU is
    /// interrupted and flushes (a lazy one switches to `init_mm`, one gone
    /// to another mm clears its bit). Counts the IPIs to CPUs not running
    /// the mm (`mask_flush_ipis_not_running`) and the CPUs running it, not
    /// lazy, that the mask missed (`mask_flush_missed`): their TLB is left
    /// behind the mm's generation.
    fn tlb_flush_mask_targets(&mut self, t: TaskId, slot: u16, out: &mut Vec<u32>) {
        let (nr_cpus, cpumask_mode) = (self.nr_cpus(), self.cpumask_mode());
        let MmParts {
            mm: state,
            cpus,
            tasks,
            ..
        } = self.mm_parts();
        let me = tasks[t as usize].cpu;
        let mm = tasks[t as usize].mm;
        let m = &mut state.mms[mm as usize];
        m.tlb_gen += 1;
        let gen = m.tlb_gen;
        cpus[me as usize].tlb_gen = gen;
        let mask = std::mem::take(&mut tasks[t as usize].smp.masks);
        let chosen = mask.get(slot as usize).map_or(&[][..], |m| m.as_slice());
        for c in 0..nr_cpus {
            let cpu = &mut cpus[c as usize];
            if c == me || !cpu.online {
                continue;
            }
            let running = cpu.active_mm == mm && !cpu.lazy;
            if !crate::cpumask::test(chosen, c) {
                if running && cpu.tlb_gen < gen {
                    state.stats.mask_flush_missed += 1;
                }
                continue;
            }
            out.push(c);
            state.stats.mask_flush_ipis += 1;
            if cpu.active_mm == mm {
                cpu.tlb_gen = gen;
            }
            if !running {
                state.stats.mask_flush_ipis_not_running += 1;
                let m = &mut state.mms[mm as usize];
                if cpu.active_mm != mm && !cpumask_mode && m.mask.remove(c) {
                    m.mask_weight -= 1;
                }
            }
        }
        tasks[t as usize].smp.masks = mask;
    }

    /// Broadcast TLB invalidation is in use: the machine has it and the
    /// kernel uses it (`X86_FEATURE_INVLPGB`, the `tlb_broadcast` knob).
    fn tlb_broadcast_on(&self) -> bool {
        self.spec().knobs.tlb_broadcast && self.cost().tlb_broadcast.is_some()
    }

    /// `consider_global_asid()` after a flush by IPIs: once in 32 jiffies
    /// for a given task (`(current->pid & 0x1f) == (jiffies & 0x1f)`), an mm
    /// active on more than 3 CPUs (`mm_active_cpus_exceeds(mm, 3)`: CPUs
    /// of `mm_cpumask` with the mm loaded and not lazy) gets a global ASID
    /// (`use_global_asid()`), and its later flushes are broadcast.
    fn consider_global_asid(&mut self, t: TaskId) {
        let mm = self.tasks()[t as usize].mm;
        if mm == NO_MM || self.mm().mms[mm as usize].global_asid {
            return;
        }
        let jiffies = self.now() * self.spec().knobs.hz as u64 / 1_000_000_000;
        if (t as u64 & 0x1f) != (jiffies & 0x1f) {
            return;
        }
        let m = &self.mm().mms[mm as usize];
        if m.mask_weight <= 3 {
            return;
        }
        let active = (0..self.nr_cpus())
            .filter(|&c| {
                let cpu = &self.cpus()[c as usize];
                m.mask.contains(c) && cpu.active_mm == mm && !cpu.lazy
            })
            .count();
        if active > 3 {
            self.mm_mut().mms[mm as usize].global_asid = true;
            self.mm_mut().stats.global_asids += 1;
        }
    }

    /// The mm of task `t` has a global ASID and the kernel broadcasts.
    fn flush_by_broadcast(&self, t: TaskId) -> bool {
        let mm = self.tasks()[t as usize].mm;
        self.tlb_broadcast_on() && mm != NO_MM && self.mm().mms[mm as usize].global_asid
    }

    /// `broadcast_tlb_flush()` of `pages` pages of task `t`'s mm: bumps the
    /// mm's TLB generation, which every CPU that has the mm loaded (lazy
    /// or not) reaches without an interrupt, and returns how long the
    /// caller takes: an `INVLPGB` per `invlpgb_count_max` pages
    /// (`invlpgb_flush_user_nr_nosync()`), or one for the whole PCID
    /// (`invlpgb_flush_single_pcid_nosync()`) above
    /// `tlb_single_page_flush_ceiling` (33) pages, where
    /// `get_flush_tlb_info()` turns the range into `TLB_FLUSH_ALL`; then
    /// `__tlbsync()`, waiting for every CPU to have done them. No PTI (the
    /// user PCID's second `INVLPGB`: AMD CPUs with INVLPGB need no PTI).
    fn broadcast_tlb_flush(&mut self, t: TaskId, pages: u64) -> u64 {
        const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;
        let (invlpgb, tlbsync, count_max) = self.cost().tlb_broadcast.expect("broadcast machine");
        let mm = self.tasks()[t as usize].mm;
        let m = &mut self.mm_mut().mms[mm as usize];
        m.tlb_gen += 1;
        let gen = m.tlb_gen;
        for cpu in self.cpus_mut().iter_mut() {
            if cpu.active_mm == mm {
                cpu.tlb_gen = gen;
            }
        }
        let n = if pages > TLB_SINGLE_PAGE_FLUSH_CEILING {
            1
        } else {
            pages.max(1).div_ceil(count_max)
        };
        self.mm_mut().stats.tlb_broadcast_flushes += 1;
        self.mm_mut().stats.invlpgb += n;
        n * invlpgb + tlbsync
    }

    /// A task of mm `mm` exits on CPU `c` (`exit_mm()`, `mmput()`): returns
    /// the time the atomics take.
    fn mm_exit(&mut self, c: u32, t: TaskId) -> u64 {
        let mm = self.tasks()[t as usize].mm;
        let mut cost = self.mm_atomic(mm, c);
        self.mm_mut().mms[mm as usize].users -= 1;
        // The exiting task keeps running on the mm lazily until it switches.
        self.cpus_mut()[c as usize].lazy = true;
        if self.mode() == LazyTlb::Refcount {
            self.mm_mut().mms[mm as usize].count += 1;
            self.mm_mut().stats.lazy_refcount_ops += 1;
            cost += self.mm_atomic(mm, c);
        }
        if self.mm().mms[mm as usize].users > 0 {
            return cost;
        }
        match self.mode() {
            LazyTlb::Refcount | LazyTlb::Shootdown => {
                // mmput() -> mmdrop() of the users' reference.
                cost += self.mm_atomic(mm, c);
                let m = &mut self.mm_mut().mms[mm as usize];
                m.count -= 1;
                if m.count == 0 {
                    if self.mode() == LazyTlb::Shootdown {
                        self.cleanup_lazy_tlbs(c, mm);
                    } else {
                        self.at(self.now() + cost, Event::Mm(MmEvent::Free { mm }));
                    }
                }
            }
            LazyTlb::CpumaskRefcount | LazyTlb::CpumaskRefcountNaive => {
                // The last user is gone: free once no CPU is in the mask.
                if self.mm().mms[mm as usize].mask_weight == 0 {
                    self.at(self.now() + cost, Event::Mm(MmEvent::Free { mm }));
                }
            }
        }
        cost
    }

    /// `cleanup_lazy_tlbs()`: IPI every CPU of `mm_cpumask` still using the
    /// mm lazily; free it when they have all switched to `init_mm`.
    fn cleanup_lazy_tlbs(&mut self, c: u32, mm: u32) {
        // This CPU switches away itself.
        if self.cpus()[c as usize].active_mm == mm {
            self.cpus_mut()[c as usize].active_mm = NO_MM;
            self.cpus_mut()[c as usize].lazy = false;
        }
        let mut pending = 0;
        for x in 0..self.nr_cpus() {
            if x == c
                || !self.mm().mms[mm as usize].mask.contains(x)
                || !self.cpus()[x as usize].online
            {
                continue;
            }
            if self.cpus()[x as usize].active_mm != mm {
                continue;
            }
            pending += 1;
            self.mm_mut().stats.shootdown_ipis += 1;
            self.queue_csd(
                x,
                Csd::ShootLazy { mm },
                self.now() + self.cost().ipi_send * pending as u64,
                c,
            );
        }
        self.mm_mut().mms[mm as usize].shoot_pending = pending;
        if pending == 0 {
            self.at(self.now(), Event::Mm(MmEvent::Free { mm }));
        }
    }

    /// `do_shoot_lazy_tlb()` on CPU `c`, in its IPI handler.
    fn shoot_lazy_tlb(&mut self, c: u32, mm: u32) {
        let cpu = &mut self.cpus_mut()[c as usize];
        if cpu.active_mm == mm && cpu.lazy {
            cpu.active_mm = NO_MM;
            cpu.lazy = false;
        }
        let m = &mut self.mm_mut().mms[mm as usize];
        m.shoot_pending -= 1;
        if m.shoot_pending == 0 {
            self.mm_free(mm);
        }
    }

    /// The naive protocol's second step: look, then free.
    fn mm_check(&mut self, mm: u32) {
        let m = &self.mm().mms[mm as usize];
        if m.users == 0 && m.mask_weight == 0 {
            self.mm_free(mm);
        }
    }

    /// `__mmdrop()` frees the mm: the checker looks at who still uses it.
    fn mm_free(&mut self, mm: u32) {
        let (now, seed) = (self.now(), self.spec().seed);
        if self.mm().mms[mm as usize].freed {
            self.mm_mut().stats.violations += 1;
            self.metrics_mut().mm_violation(
                crate::result::Detector::MmDoubleFree,
                now,
                0,
                format!("mm {mm} freed twice at {} ns (seed {})", now, seed),
            );
            return;
        }
        self.mm_mut().mms[mm as usize].freed = true;
        self.mm_mut().stats.mms_freed += 1;
        let users: Vec<u32> = (0..self.nr_cpus())
            .filter(|&x| self.cpus()[x as usize].active_mm == mm)
            .collect();
        if let Some(&first) = users.first() {
            self.mm_mut().stats.violations += 1;
            self.metrics_mut().mm_violation(
                crate::result::Detector::MmUseAfterFree,
                now,
                first,
                format!(
                    "mm {mm} freed at {} ns while CPUs {users:?} still have it as active_mm (seed {})",
                    now, seed
                ),
            );
        }
    }

    /// At the end of a run: an mm with no users, not in use, never freed.
    fn mm_check_leaks(&mut self) {
        let (now, seed) = (self.now(), self.spec().seed);
        for mm in 0..self.mm().mms.len() as u32 {
            let m = &self.mm().mms[mm as usize];
            let in_use = (0..self.nr_cpus()).any(|x| self.cpus()[x as usize].active_mm == mm);
            if m.users == 0 && !m.freed && !in_use && m.shoot_pending == 0 {
                let lazy_refs = if self.cpumask_mode() {
                    m.mask_weight
                } else {
                    m.count
                };
                self.mm_mut().stats.violations += 1;
                self.metrics_mut().mm_violation(
                    crate::result::Detector::MmLeak,
                    now,
                    0,
                    format!(
                        "mm {mm} never freed: no users, no CPU uses it, {lazy_refs} references left (seed {})",
                        seed
                    ),
                );
            }
        }
    }

    /// Routes an mm event.
    fn on_mm_event(&mut self, e: MmEvent) -> smpsim_engine::Handled {
        match e {
            MmEvent::Check { mm } => self.mm_check(mm),
            MmEvent::Free { mm } => self.mm_free(mm),
        }
        smpsim_engine::Handled::Done
    }
}

impl<K: MmEnv + ?Sized> MmOps for K {}
