//! lockdep (kernel/locking/lockdep.c), with `lockdep = true` in
//! `[kernel]`: lock classes, the dependency graph, and the circular-
//! dependency report.
//!
//! Every declared lock object is one class, a per-CPU array of them too
//! (as `DEFINE_PER_CPU` locks share their `lock_class_key`), and
//! `cpu_hotplug_lock` is one more. Each task keeps the stack of classes it
//! holds; `lock_acquire()` runs when a task asks for a lock, before it gets
//! it, and adds an edge "held -> new" for every class the task holds. If
//! the new class already reaches a held one through the graph, taking it
//! closes a cycle: lockdep reports `possible circular locking dependency
//! detected` with both chains, on the first time the order is seen, even
//! if this schedule never deadlocks. Like the kernel, lockdep turns itself
//! off after its first report (`debug_locks_off()`).
//!
//! Not modelled: IRQ-context usage (IPI handlers are costs, not code
//! paths, so `inconsistent {HARDIRQ-ON-W} -> {IN-HARDIRQ-W} usage` cannot
//! arise), read-lock recursion rules beyond "a read may follow a read",
//! and lock nesting annotations.

use crate::task::TaskId;

/// A lock a task holds (or is acquiring), and where it took it.
#[derive(Clone, Copy, Debug)]
struct Held {
    class: u32,
    read: bool,
    /// The op (`pc`) that took it.
    pc: u32,
}

/// An edge of the dependency graph: `to` was taken while `from` was held,
/// first seen with this task at these ops.
#[derive(Clone, Copy, Debug)]
struct Dep {
    to: u32,
    task: TaskId,
    from_pc: u32,
    to_pc: u32,
}

/// One step of a chain in a report: class `class` taken by `task` at op
/// `pc` while holding the previous one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainLink {
    pub class: u32,
    pub task: TaskId,
    pub pc: u32,
}

/// A cycle found at an acquisition: the task holds `held` (taken at
/// `held_pc`) and asks for `new` (at `new_pc`), while the graph already
/// has `new -> ... -> held` (`existing`, in order from `new`).
#[derive(Clone, Debug)]
pub struct Cycle {
    pub held: u32,
    pub held_pc: u32,
    pub new: u32,
    pub new_pc: u32,
    pub existing: Vec<ChainLink>,
}

/// How a class has been used, for the IRQ-safety check: taken in hardirq
/// context, taken with hardirqs enabled; each with where it first was.
#[derive(Clone, Debug, Default)]
struct Usage {
    in_hardirq: Option<String>,
    hardirq_on: Option<String>,
}

/// An inconsistent use: the class was first used one way (`was`, at
/// `was_at`) and is now used the other (`now`).
#[derive(Clone, Debug)]
pub struct Inconsistent {
    pub class: u32,
    pub was: &'static str,
    pub was_at: String,
    pub now: &'static str,
}

pub struct Lockdep {
    held: Vec<Vec<Held>>,
    deps: Vec<Vec<Dep>>,
    usage: Vec<Usage>,
    /// `debug_locks_off()`: after the first report nothing more is checked.
    off: bool,
}

impl Lockdep {
    pub fn new(nr_tasks: usize, nr_classes: usize) -> Self {
        Lockdep {
            held: vec![Vec::new(); nr_tasks],
            deps: vec![Vec::new(); nr_classes],
            usage: vec![Usage::default(); nr_classes],
            off: false,
        }
    }

    /// `lock_acquire()`: task `t` asks for `class` at op `pc`. Returns the
    /// cycle the new order closes, if any (then lockdep is off).
    pub fn acquire(&mut self, t: TaskId, class: u32, read: bool, pc: u32) -> Option<Cycle> {
        if self.off {
            return None;
        }
        let held = &self.held[t as usize];
        // The same op asking again (a reader retrying after a writer) is
        // the same acquisition.
        if held.last().is_some_and(|h| h.class == class && h.pc == pc) {
            return None;
        }
        let mut found = None;
        for i in 0..held.len() {
            let h = self.held[t as usize][i];
            if h.class == class {
                continue; // recursion: its own report
            }
            if h.read && read {
                continue; // recursive read after read
            }
            // Every edge was added after this same search found no cycle,
            // so while lockdep is on the graph has none: if "held -> new"
            // is an edge already, "new" cannot reach "held" and the
            // search would come back empty.
            if self.deps[h.class as usize].iter().any(|d| d.to == class) {
                continue;
            }
            if let Some(existing) = self.path(class, h.class) {
                found = Some(Cycle {
                    held: h.class,
                    held_pc: h.pc,
                    new: class,
                    new_pc: pc,
                    existing,
                });
                break;
            }
            self.deps[h.class as usize].push(Dep {
                to: class,
                task: t,
                from_pc: h.pc,
                to_pc: pc,
            });
        }
        self.held[t as usize].push(Held { class, read, pc });
        if found.is_some() {
            self.off = true;
        }
        found
    }

    /// Whether marking `class` this way can change or report nothing: the
    /// use is registered already and the other one never was (the common
    /// case, checked before the report's text is built).
    pub fn usage_settled(&self, class: u32, in_hardirq: bool) -> bool {
        let u = &self.usage[class as usize];
        let (mine, other) = if in_hardirq {
            (&u.in_hardirq, &u.hardirq_on)
        } else {
            (&u.hardirq_on, &u.in_hardirq)
        };
        self.off || (mine.is_some() && other.is_none())
    }

    /// `mark_lock()`: `class` is taken in hardirq context (`in_hardirq`) or
    /// in process context with hardirqs enabled, at `site`. Taking it both
    /// ways is a deadlock (the IRQ can come while the lock is held on the
    /// same CPU): returns the report's facts, once.
    pub fn mark_usage(
        &mut self,
        class: u32,
        in_hardirq: bool,
        site: String,
    ) -> Option<Inconsistent> {
        if self.off {
            return None;
        }
        let u = &mut self.usage[class as usize];
        let (mine, other, now, was) = if in_hardirq {
            (
                &mut u.in_hardirq,
                &u.hardirq_on,
                "IN-HARDIRQ-W",
                "HARDIRQ-ON-W",
            )
        } else {
            (
                &mut u.hardirq_on,
                &u.in_hardirq,
                "HARDIRQ-ON-W",
                "IN-HARDIRQ-W",
            )
        };
        if mine.is_none() {
            *mine = Some(site);
        }
        let found = other.clone().map(|was_at| Inconsistent {
            class,
            was,
            was_at,
            now,
        });
        if found.is_some() {
            self.off = true;
        }
        found
    }

    /// `lock_release()`: the innermost hold of `class` by `t` ends.
    pub fn release(&mut self, t: TaskId, class: u32) {
        let held = &mut self.held[t as usize];
        if let Some(i) = held.iter().rposition(|h| h.class == class) {
            // Usually the innermost: no shifting.
            if i + 1 == held.len() {
                held.pop();
            } else {
                held.remove(i);
            }
        }
    }

    /// A path `from -> ... -> to` in the graph (breadth first, so the
    /// shortest), as the links after `from`.
    fn path(&self, from: u32, to: u32) -> Option<Vec<ChainLink>> {
        let n = self.deps.len();
        let mut parent: Vec<Option<(u32, Dep)>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut queue = std::collections::VecDeque::from([from]);
        seen[from as usize] = true;
        while let Some(x) = queue.pop_front() {
            for d in &self.deps[x as usize] {
                if seen[d.to as usize] {
                    continue;
                }
                seen[d.to as usize] = true;
                parent[d.to as usize] = Some((x, *d));
                if d.to == to {
                    let mut links = Vec::new();
                    let mut at = to;
                    while let Some((p, dep)) = parent[at as usize] {
                        links.push(ChainLink {
                            class: dep.to,
                            task: dep.task,
                            pc: dep.to_pc,
                        });
                        if p == from {
                            links.push(ChainLink {
                                class: from,
                                task: dep.task,
                                pc: dep.from_pc,
                            });
                            break;
                        }
                        at = p;
                    }
                    links.reverse();
                    return Some(links);
                }
                queue.push_back(d.to);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abba_is_a_cycle_on_first_sight_and_lockdep_then_turns_off() {
        let mut ld = Lockdep::new(2, 3);
        // Task 0: A then B.
        assert!(ld.acquire(0, 0, false, 1).is_none());
        assert!(ld.acquire(0, 1, false, 2).is_none());
        ld.release(0, 1);
        ld.release(0, 0);
        // Task 1: B then A, long after: no deadlock, still a cycle.
        assert!(ld.acquire(1, 1, false, 7).is_none());
        let c = ld.acquire(1, 0, false, 8).expect("ABBA");
        assert_eq!((c.held, c.new), (1, 0));
        let classes: Vec<u32> = c.existing.iter().map(|l| l.class).collect();
        assert_eq!(classes, vec![0, 1], "A -> B, taken by task 0");
        assert!(c.existing.iter().all(|l| l.task == 0));
        // Off after the first report.
        ld.release(1, 0);
        ld.release(1, 1);
        assert!(ld.acquire(1, 1, false, 7).is_none());
        assert!(ld.acquire(1, 0, false, 8).is_none());
    }

    #[test]
    fn a_consistent_order_and_read_after_read_are_clean() {
        let mut ld = Lockdep::new(2, 3);
        for t in 0..2 {
            assert!(ld.acquire(t, 0, false, 1).is_none());
            assert!(ld.acquire(t, 1, false, 2).is_none());
            assert!(ld.acquire(t, 2, false, 3).is_none());
            for c in [2, 1, 0] {
                ld.release(t, c);
            }
        }
        assert!(ld.acquire(0, 2, true, 1).is_none());
        assert!(ld.acquire(0, 1, true, 2).is_none());
    }

    /// An order seen again adds no edge and searches nothing (its edge
    /// proves there is no way back); the reverse order is still caught.
    #[test]
    fn a_repeated_order_keeps_one_edge_and_its_reverse_is_still_a_cycle() {
        let mut ld = Lockdep::new(2, 2);
        for _ in 0..3 {
            assert!(ld.acquire(0, 0, false, 1).is_none());
            assert!(ld.acquire(0, 1, false, 2).is_none());
            ld.release(0, 1);
            ld.release(0, 0);
        }
        assert_eq!(ld.deps[0].len(), 1);
        assert!(ld.deps[1].is_empty());
        assert!(ld.held[0].is_empty());
        assert!(ld.acquire(1, 1, false, 7).is_none());
        let c = ld.acquire(1, 0, false, 8).expect("B -> A after A -> B");
        assert_eq!((c.held, c.new), (1, 0));
    }

    /// Releasing an outer lock first keeps the inner one held.
    #[test]
    fn release_out_of_order_keeps_the_others() {
        let mut ld = Lockdep::new(1, 3);
        for class in 0..3 {
            ld.acquire(0, class, false, class + 1);
        }
        ld.release(0, 0);
        let held: Vec<u32> = ld.held[0].iter().map(|h| h.class).collect();
        assert_eq!(held, vec![1, 2]);
        ld.release(0, 2);
        let held: Vec<u32> = ld.held[0].iter().map(|h| h.class).collect();
        assert_eq!(held, vec![1]);
    }

    #[test]
    fn a_longer_cycle_shows_the_whole_chain() {
        let mut ld = Lockdep::new(3, 3);
        for (t, a, b) in [(0, 0, 1), (1, 1, 2)] {
            ld.acquire(t, a, false, 1);
            ld.acquire(t, b, false, 2);
            ld.release(t, b);
            ld.release(t, a);
        }
        ld.acquire(2, 2, false, 5);
        let c = ld
            .acquire(2, 0, false, 6)
            .expect("C -> A closes A -> B -> C");
        let classes: Vec<u32> = c.existing.iter().map(|l| l.class).collect();
        assert_eq!(classes, vec![0, 1, 2]);
    }
}
