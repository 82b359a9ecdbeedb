//! `seqcount_t` (include/linux/seqlock.h): a sequence number that writers
//! make odd while they write and even again after, and readers that retry.
//!
//! - `write_seqcount_begin()` / `write_seqcount_end()`: `s->sequence++`
//!   with a write barrier, each a store to the sequence's line (writers are
//!   serialized by a lock of the scenario's own, as with
//!   `seqcount_spinlock_t`; a `seqlock_t` is that lock plus this count).
//! - A read section is `do { seq = read_seqcount_begin(s); ... } while
//!   (read_seqcount_retry(s, seq));`: `read_seqcount_begin()` reads the
//!   line and, while the value is odd, spins on it (`cpu_relax()`), which
//!   is modelled as polling the line: the reader costs nothing until the
//!   writer's closing store, then re-fetches it. `read_seqcount_retry()`
//!   reads the line again (a miss if a writer wrote it meanwhile) and
//!   starts the section over if the sequence moved.
//!
//! lock_stat counts write sections as acquisitions of the `NAME-W` class,
//! read sections as `NAME-R` acquisitions and their retries and odd waits
//! as `NAME-R` contentions.

use crate::coherence::{Line, LineHome};
use crate::event::*;
use crate::lock_stat::LockCpu;
use crate::locking::objects::Objects;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::task::*;

pub struct Seqcount {
    /// The object this instance belongs to.
    pub object: u32,
    /// `s->sequence`.
    pub sequence: i64,
    /// Readers spinning for an even sequence.
    pub spinners: Vec<TaskId>,
    pub line: Line,
    /// When the current write section began.
    pub write_start: u64,
}

impl Seqcount {
    pub fn new(object: u32, at: LineHome) -> Self {
        Seqcount {
            object,
            sequence: 0,
            spinners: Vec::new(),
            line: Line::at(at),
            write_start: 0,
        }
    }
}

/// `seqcount_t` in the sleeping-lock registry: its ops are its own
/// (`write_seqcount_*`, `read_seqcount_*`, in `locking_op`), not lock and
/// unlock; what it shares is the reader's spin on an odd sequence.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "seqcount",
    id: 3,
    name: "seqcount",
    object_type: "seqcount",
    default: true,
    summary: "`seqcount_t`: odd while written, readers spin and retry",
    imp: &SeqcountKind,
};

pub(crate) struct SeqcountKind;

/// The kind's own table ([`Objects::kind_table`]).
#[derive(Default)]
struct Seqcounts(Vec<Seqcount>);

fn table(o: &mut Objects) -> &mut Vec<Seqcount> {
    &mut o.kind_table::<Seqcounts>().0
}

fn table_ref(o: &Objects) -> &[Seqcount] {
    o.kind_table_ref::<Seqcounts>().map_or(&[], |t| &t.0)
}

/// The line of seqcount `s` (`sequence`), for an object placed on it
/// (`line = "NAME"`).
pub(crate) fn line_mut(o: &mut Objects, s: u32) -> &mut Line {
    &mut table(o)[s as usize].line
}

impl SleepingLock for SeqcountKind {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let base = table(o).len();
        table(o).extend((0..b.n).map(|i| Seqcount::new(b.object, (b.home)(i))));
        base
    }

    fn lock_fn(&self, _: LockMode) -> String {
        "read_seqcount_begin".to_string()
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        table_ref(o)[l as usize].object
    }

    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64 {
        table_ref(o)[first..first + n]
            .iter()
            .map(|s| s.line.transfers)
            .sum()
    }
}

impl<K: LockingEnv> SleepingLockOps<K> for SeqcountKind {
    /// A seqcount's "lock" is its writer's side, `write_seqcount_begin()`
    /// (as `write_seqlock()` is, after its spinlock): the scenario compiler
    /// gives a seqcount only its own ops, but a spec built by hand gets a
    /// defined answer, not a panic.
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode, _: Option<u8>) -> Flow {
        k.write_seqcount(c, t, l, true);
        Flow::Next
    }

    /// `write_seqcount_end()`, as [`Self::lock`] says.
    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode) -> Flow {
        k.write_seqcount(c, t, l, false);
        Flow::Next
    }

    fn spin_finished(&self, k: &mut K, _: u32, t: TaskId, _: u32) -> bool {
        k.seqcount_spin_finished(t);
        true
    }
}

/// The write and read sides of a `seqcount_t` (over any [`LockingEnv`]).
pub(crate) trait SeqcountOps: LockingEnv {
    /// `write_seqcount_begin()` (`begin`) or `write_seqcount_end()`.
    fn write_seqcount(&mut self, c: u32, t: TaskId, s: u32, begin: bool) {
        let now = self.now();
        let odd = table(&mut self.locking_mut().objects)[s as usize].sequence & 1 == 1;
        if odd == begin {
            // A second writer inside, or an end without a begin: the
            // scenario's own lock does not serialize its writers.
            let object = table(&mut self.locking_mut().objects)[s as usize].object;
            let name = self.task_name(t);
            let lock = self.spec().objects[object as usize].name.clone();
            if begin {
                // Two write sections at once: lockdep's seqcount_acquire()
                // sees the class taken again.
                self.metrics_mut()
                    .recursive_locking(c, now, &name, "write_seqcount_begin", &lock);
            } else {
                self.metrics_mut()
                    .bad_unlock(c, now, &name, "write_seqcount_end", &lock);
            }
        }
        let p = self.locking_parts();
        let sc = &mut table(&mut p.locking.objects)[s as usize];
        sc.sequence = sc.sequence.wrapping_add(1);
        let done = sc.line.store(p.cost, c, now);
        let object = sc.object;
        if begin {
            sc.write_start = now;
            p.metrics
                .lock_acquired(now, object, LockCpu::new(s, c), None);
        } else {
            let held = now.saturating_sub(sc.write_start);
            p.metrics.lock_released(now, object, held);
            // The readers spinning on an odd sequence see it even once
            // their re-fetch lands.
            for i in 0..table(&mut self.locking_mut().objects)[s as usize]
                .spinners
                .len()
            {
                let r = table(&mut self.locking_mut().objects)[s as usize].spinners[i];
                let rc = self.tasks_mut()[r as usize].cpu;
                let sc = &mut table(&mut self.locking_mut().objects)[s as usize];
                let seen = sc.line.take_poll(rc).unwrap_or(done);
                let gen = self.tasks_mut()[r as usize].gen;
                self.at(seen, Event::Sched(SchedEvent::SpinEnd { task: r, gen }));
            }
            table(&mut self.locking_mut().objects)[s as usize]
                .spinners
                .clear();
        }
        self.tasks_mut()[t as usize]
            .batch
            .push(Mode::Sys, done - now);
        self.advance(t);
    }

    /// `read_seqcount_begin()`: the sequence into `slot`, after spinning
    /// while it is odd.
    fn read_seqcount_begin(&mut self, c: u32, t: TaskId, s: u32, slot: u16) -> Flow {
        let now = self.now();
        let p = self.locking_parts();
        let sc = &mut table(&mut p.locking.objects)[s as usize];
        let object = sc.object;
        if sc.sequence & 1 == 0 {
            let done = sc.line.read(p.cost, c, now);
            let seq = sc.sequence;
            p.metrics
                .lock_acquired_mode(now, object, LockCpu::new(s, c), LockMode::Read, None);
            p.tasks[t as usize].vars[slot as usize] = seq;
            p.tasks[t as usize].batch.push(Mode::Sys, done - now);
            self.advance(t);
            return Flow::Next;
        }
        // A writer is inside: spin on the line until it ends.
        sc.line.poll(p.cost, c, now);
        sc.spinners.push(t);
        p.metrics
            .lock_contended_mode(now, object, LockCpu::new(s, c), LockMode::Read);
        let task = &mut p.tasks[t as usize];
        task.wait.wait_start = now;
        task.wait.spin = Spin::Sleeping {
            kind: KIND.id,
            lock: s,
            how: SpinHow::Value,
        };
        task.wait.spin_done = false;
        task.gen = task.gen.wrapping_add(1);
        Flow::Stop
    }

    /// The spin of a reader that waited for an even sequence ended: read
    /// it again from the start of the op.
    fn seqcount_spin_finished(&mut self, t: TaskId) {
        self.tasks_mut()[t as usize].resume = Resume::Op;
    }

    /// `read_seqcount_retry()`: go back to `retry` (the section's
    /// `read_seqcount_begin()`) if the sequence moved since `slot`.
    fn read_seqcount_retry(&mut self, c: u32, t: TaskId, s: u32, slot: u16, retry: u32) -> Flow {
        let now = self.now();
        let p = self.locking_parts();
        let sc = &mut table(&mut p.locking.objects)[s as usize];
        let done = sc.line.read(p.cost, c, now);
        let moved = sc.sequence != p.tasks[t as usize].vars[slot as usize];
        let object = sc.object;
        p.tasks[t as usize].batch.push(Mode::Sys, done - now);
        if moved {
            p.metrics
                .lock_contended_mode(now, object, LockCpu::new(s, c), LockMode::Read);
            let task = &mut p.tasks[t as usize];
            task.pc = retry;
            task.resume = Resume::Op;
        } else {
            self.advance(t);
        }
        Flow::Next
    }
}

impl<K: LockingEnv> SeqcountOps for K {}
