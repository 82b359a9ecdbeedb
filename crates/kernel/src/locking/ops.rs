//! The locking ops: the one place where the interpreter's lock and
//! atomic ops reach their object's implementation. A lock op finds the
//! object's kind and hands the op to it; the atomics work on their
//! object's cache line.

use super::rwsem::RwsemOps;
use super::seqcount::SeqcountOps;
use super::sleeping::SleepingLocks;
use super::spinning::SpinningLocks;
use super::{atomic, percpu_rwsem, sleeping_ops, LockdepOps, LockingEnv};
use crate::mechanism::{Flow, MechanismOp};
use crate::program::{LockMode, LockingOp};
use crate::task::{Mode, Resume, TaskId};

impl<K: LockingEnv> MechanismOp<K> for LockingOp {
    fn run(&self, k: &mut K, c: u32, t: TaskId, resume: Resume) -> Flow {
        match self {
            LockingOp::Lock {
                lock,
                mode,
                irqsave,
            } => {
                if resume == Resume::Op {
                    k.lockdep_acquire(c, t, lock.object, *mode == LockMode::Read, *irqsave);
                    k.hold(t, lock.object);
                }
                let l = k.instance(t, lock);
                match k.locking().objects.sleeping_kind(lock.object) {
                    Some(kind) => k.sleeping_lock(c, t, kind, l, *mode, resume),
                    None => k.spin_lock(c, t, l, *mode, *irqsave),
                }
            }
            LockingOp::Unlock {
                lock,
                mode,
                irqrestore,
            } => {
                k.lockdep_release(t, lock.object);
                k.unhold(t, lock.object);
                let l = k.instance(t, lock);
                match k.locking().objects.sleeping_kind(lock.object) {
                    Some(kind) => sleeping_ops::<K>(kind).unlock(k, c, t, l, *mode),
                    None => k.spin_unlock(c, t, l, *mode, *irqrestore),
                }
            }
            LockingOp::RwsemTrylock { lock, mode, slot } => {
                let l = k.instance(t, lock);
                let got = k.rwsem_trylock(c, t, l, *mode);
                if got {
                    k.lockdep_acquire(c, t, lock.object, *mode == LockMode::Read, false);
                    k.hold(t, lock.object);
                }
                if let Some(slot) = slot {
                    k.tasks_mut()[t as usize].vars[*slot as usize] = got as i64;
                }
                k.advance(t);
                Flow::Next
            }
            LockingOp::DowngradeWrite(lock) => {
                let l = k.instance(t, lock);
                k.rwsem_downgrade_write(c, t, l);
                Flow::Next
            }
            LockingOp::WriteSeqcount { seq, begin } => {
                let s = k.instance(t, seq);
                k.write_seqcount(c, t, s, *begin);
                Flow::Next
            }
            LockingOp::ReadSeqcountBegin { seq, slot } => {
                let s = k.instance(t, seq);
                k.read_seqcount_begin(c, t, s, *slot)
            }
            LockingOp::ReadSeqcountRetry { seq, slot, retry } => {
                let s = k.instance(t, seq);
                k.read_seqcount_retry(c, t, s, *slot, *retry)
            }
            LockingOp::Down(r) => {
                let s = k.instance(t, r);
                let kind = semaphore_kind(k, r.object);
                k.sleeping_lock(c, t, kind, s, LockMode::Exclusive, resume)
            }
            LockingOp::Up(r) => {
                let s = k.instance(t, r);
                let kind = semaphore_kind(k, r.object);
                sleeping_ops::<K>(kind).unlock(k, c, t, s, LockMode::Exclusive)
            }
            LockingOp::CpusReadLock | LockingOp::CpusWriteLock => {
                let read = matches!(self, LockingOp::CpusReadLock);
                let (mode, step) = match resume {
                    Resume::Lock(s) => (LockMode::Write, Some(s)),
                    _ => (LockMode::Write, None),
                };
                let mode = if read { LockMode::Read } else { mode };
                if step.is_none() {
                    k.lockdep_acquire(c, t, k.hotplug_lock_class(), read, false);
                }
                let l = k.locking().hotplug_lock;
                sleeping_ops::<K>(percpu_rwsem::KIND.id).lock(k, c, t, l, mode, step)
            }
            LockingOp::CpusReadUnlock | LockingOp::CpusWriteUnlock => {
                let mode = match self {
                    LockingOp::CpusReadUnlock => LockMode::Read,
                    _ => LockMode::Write,
                };
                k.lockdep_release(t, k.hotplug_lock_class());
                let l = k.locking().hotplug_lock;
                sleeping_ops::<K>(percpu_rwsem::KIND.id).unlock(k, c, t, l, mode)
            }
            LockingOp::AtomicRmw(r) | LockingOp::AtomicRead(r) => {
                let l = k.instance(t, r);
                let now = k.now();
                let p = k.locking_parts();
                let line = p.locking.objects.atomic_line(l);
                let done = if matches!(self, LockingOp::AtomicRmw(_)) {
                    line.rmw_void(p.cost, c, now)
                } else {
                    line.read(p.cost, c, now)
                };
                p.tasks[t as usize].batch.push(Mode::Sys, done - now);
                k.advance(t);
                Flow::Next
            }
            LockingOp::AtomicReadOld { obj, slot } => {
                let l = k.instance(t, obj);
                let p = k.locking_parts();
                let line = p.locking.objects.atomic_line(l);
                atomic::read_old(line, p.cost, c, p.now, &mut p.tasks[t as usize], *slot);
                Flow::Next
            }
            LockingOp::AtomicTryCmpxchg { obj, slot, done } => {
                let l = k.instance(t, obj);
                let p = k.locking_parts();
                let line = p.locking.objects.atomic_line(l);
                let task = &mut p.tasks[t as usize];
                if !atomic::try_cmpxchg(line, p.cost, c, p.now, task, *slot, *done) {
                    p.locking.objects.note_cmpxchg_fail(l);
                }
                Flow::Next
            }
            LockingOp::AtomicCmpxchgLoop(r) => {
                let l = k.instance(t, r);
                let now = k.now();
                let p = k.locking_parts();
                let line = p.locking.objects.atomic_line(l);
                let mut failed = false;
                let done = match resume {
                    // The first attempt expects what a read finds.
                    Resume::Cmpxchg(expected) => {
                        let (done, ok) = line.cmpxchg(p.cost, c, now, expected);
                        if ok {
                            k.advance(t);
                        } else {
                            // A failed cmpxchg returns the value it found:
                            // the next attempt expects it.
                            p.tasks[t as usize].resume = Resume::Cmpxchg(line.writes());
                            failed = true;
                        }
                        done
                    }
                    _ => {
                        let expected = line.writes();
                        let seen = line.read(p.cost, c, now);
                        p.tasks[t as usize].resume = Resume::Cmpxchg(expected);
                        seen
                    }
                };
                if failed {
                    k.locking_parts().locking.objects.note_cmpxchg_fail(l);
                }
                // The next attempt (or op) at `done`.
                k.tasks_mut()[t as usize]
                    .batch
                    .push(Mode::Sys, done.max(now + 1) - now);
                Flow::Next
            }
        }
    }
}

/// The sleeping kind (its id) of `down()`/`up()`'s object: compiled only
/// for a `semaphore` object, so always one.
fn semaphore_kind<K: LockingEnv>(k: &K, object: u32) -> u8 {
    k.locking()
        .objects
        .sleeping_kind(object)
        .expect("down()/up() compile only for a semaphore object")
}
