//! Cpumask variables (include/linux/cpumask.h): a task builds a CPU set
//! from the kernel's masks at one moment, keeps it, combines it, and uses
//! it later.
//!
//! Lifecycle: a `cpumask` op evaluates a [`MaskExpr`] *when it runs* —
//! `mm_cpumask(mm)`, `cpu_online_mask`, the CPUs running the mm, the lazy
//! ones (`cpu_tlbstate_shared.is_lazy`), a per-CPU flag, one CPU, another
//! mask, and `cpumask_and()`/`cpumask_or()`/`cpumask_andnot()` of them —
//! and stores the bits in the task (a `cpumask_var_t` on its stack). Later
//! ops read the bits as they were, whatever the CPUs did since:
//!
//! - `smp_call_function_many(mask, ...)`: `smp_call_function_many_cond()`
//!   (kernel/smp.c) ands the mask with `cpu_online_mask` and clears the
//!   caller's CPU when it is called, then IPIs the rest;
//! - `flush_tlb_mm_range(..., cpus = mask)`: `native_flush_tlb_multi()`
//!   (arch/x86/mm/tlb.c) handed a mask built earlier, as kernels did while
//!   they computed the lazy CPUs into a mask before sending (before
//!   `on_each_cpu_cond_mask()` evaluated `should_flush_tlb()` per CPU at
//!   send time): a CPU that went lazy since is interrupted for nothing, one
//!   that started running the mm since is not flushed (`mm.rs` counts both);
//! - `for_each_cpu(cpu, mask) { ... }`: a loop over the bits.
//!
//! A mask is a bitmap of `nr_cpu_ids` bits (`Vec<u64>`, 64 CPUs a word).

use crate::env::CoreEnv;
use crate::mechanism::{Flow, MechanismOp};
use crate::program::{CpumaskOp, MaskExpr, MaskSlot};
use crate::task::{Resume, Task, TaskId, NO_TASK};

/// What the cpumask ops need from the rest of the kernel: the tasks (a
/// mask lives in its task), the CPUs' state a mask is built from, an
/// mm's cpumask, a per-CPU flag's values, and the interpreter's
/// expressions. Implemented for the kernel in `sim/rcu_env.rs`.
pub(crate) trait CpumaskEnv: CoreEnv {
    /// CPU `c` is in address space `mm`'s cpumask.
    fn mm_cpumask_has(&self, mm: u32, c: u32) -> bool;
    /// CPU `c`'s value of per-CPU variable `object`.
    fn percpu_value(&self, object: u32, c: u32) -> i64;
}

impl<K: CpumaskEnv> MechanismOp<K> for CpumaskOp {
    fn local(&self) -> bool {
        // The next CPU of a stored mask reads only the task.
        matches!(self, CpumaskOp::CpumaskNext { .. })
    }

    fn run(&self, k: &mut K, _: u32, t: TaskId, _: Resume) -> Flow {
        match self {
            CpumaskOp::CpumaskSet { mask, expr } => {
                // Reads the CPUs' state now: a shared op, at its own time.
                k.cpumask_set(t, *mask, expr);
                k.advance(t);
            }
            CpumaskOp::CpumaskNext { mask, var, exit } => {
                let after = k.task(t).vars[*var as usize];
                let next = next(task_mask(k.task(t), *mask), after);
                let task = k.task_mut(t);
                match next {
                    Some(cpu) => {
                        task.vars[*var as usize] = cpu as i64;
                        task.pc += 1;
                    }
                    None => task.pc = *exit,
                }
            }
        }
        Flow::Next
    }
}

/// One mask: bit `cpu % 64` of word `cpu / 64`.
pub type Mask = Vec<u64>;

/// Whether `cpu` is in `mask`.
pub fn test(mask: &[u64], cpu: u32) -> bool {
    mask.get(cpu as usize / 64)
        .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
}

fn set(mask: &mut Mask, cpu: u32) {
    let w = cpu as usize / 64;
    if mask.len() <= w {
        mask.resize(w + 1, 0);
    }
    mask[w] |= 1 << (cpu % 64);
}

/// The CPUs of `mask` in order.
pub fn cpus(mask: &[u64]) -> impl Iterator<Item = u32> + '_ {
    mask.iter().enumerate().flat_map(|(i, &w)| {
        (0..64u32)
            .filter(move |b| w & (1 << b) != 0)
            .map(move |b| i as u32 * 64 + b)
    })
}

/// The first CPU of `mask` above `after` (`cpumask_next()`).
pub fn next(mask: &[u64], after: i64) -> Option<u32> {
    let from = (after + 1).max(0) as u64;
    cpus(mask).find(|&c| c as u64 >= from)
}

fn combine(a: Mask, b: Mask, f: impl Fn(u64, u64) -> u64) -> Mask {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            f(
                a.get(i).copied().unwrap_or(0),
                b.get(i).copied().unwrap_or(0),
            )
        })
        .collect()
}

/// Task `t`'s mask `slot` as stored (empty if never set).
pub(crate) fn task_mask(task: &Task, slot: MaskSlot) -> &[u64] {
    task.smp
        .masks
        .get(slot as usize)
        .map_or(&[], |m| m.as_slice())
}

/// The cpumask ops' work, for any kernel.
pub(crate) trait Cpumask: CpumaskEnv {
    /// Evaluates `e` for task `t` now.
    fn eval_mask(&mut self, t: TaskId, e: &MaskExpr) -> Mask {
        let mut out = Mask::new();
        match e {
            MaskExpr::MmCpumask => {
                let mm = self.task(t).mm;
                for c in 0..self.nr_cpus() {
                    if self.mm_cpumask_has(mm, c) {
                        set(&mut out, c);
                    }
                }
            }
            MaskExpr::Online => {
                for c in 0..self.nr_cpus() {
                    if self.cpu(c).online {
                        set(&mut out, c);
                    }
                }
            }
            MaskExpr::MmRunning => {
                let mm = self.task(t).mm;
                for c in 0..self.nr_cpus() {
                    let curr = self.cpu(c).curr;
                    if curr != NO_TASK && self.task(curr).mm == mm {
                        set(&mut out, c);
                    }
                }
            }
            MaskExpr::Lazy => {
                for c in 0..self.nr_cpus() {
                    if self.cpu(c).lazy {
                        set(&mut out, c);
                    }
                }
            }
            MaskExpr::Flag(object) => {
                for c in 0..self.nr_cpus() {
                    if self.percpu_value(*object, c) != 0 {
                        set(&mut out, c);
                    }
                }
            }
            MaskExpr::Cpu(e) => {
                let c = self.eval(t, e);
                if (0..self.nr_cpus() as i64).contains(&c) {
                    set(&mut out, c as u32);
                }
            }
            MaskExpr::Var(slot) => {
                out = task_mask(self.task(t), *slot).to_vec();
            }
            MaskExpr::And(a, b) => {
                let (a, b) = (self.eval_mask(t, a), self.eval_mask(t, b));
                out = combine(a, b, |x, y| x & y);
            }
            MaskExpr::Or(a, b) => {
                let (a, b) = (self.eval_mask(t, a), self.eval_mask(t, b));
                out = combine(a, b, |x, y| x | y);
            }
            MaskExpr::AndNot(a, b) => {
                let (a, b) = (self.eval_mask(t, a), self.eval_mask(t, b));
                out = combine(a, b, |x, y| x & !y);
            }
        }
        out
    }

    /// The `cpumask` op: stores `e`, evaluated now, in mask `slot`.
    fn cpumask_set(&mut self, t: TaskId, slot: MaskSlot, e: &MaskExpr) {
        let mask = self.eval_mask(t, e);
        let masks = &mut self.task_mut(t).smp.masks;
        if masks.len() <= slot as usize {
            masks.resize(slot as usize + 1, Mask::new());
        }
        masks[slot as usize] = mask;
    }
}
impl<K: CpumaskEnv + ?Sized> Cpumask for K {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_iterate_in_order_across_words() {
        let mut m = Mask::new();
        for c in [130, 3, 64, 0] {
            set(&mut m, c);
        }
        assert_eq!(cpus(&m).collect::<Vec<_>>(), vec![0, 3, 64, 130]);
        assert!(test(&m, 64) && !test(&m, 65) && !test(&m, 1000));
        assert_eq!(next(&m, -1), Some(0));
        assert_eq!(next(&m, 3), Some(64));
        assert_eq!(next(&m, 130), None);
    }

    #[test]
    fn andnot_keeps_only_the_first_operands_bits() {
        let (mut a, mut b) = (Mask::new(), Mask::new());
        for c in [1, 2, 70] {
            set(&mut a, c);
        }
        set(&mut b, 2);
        let r = combine(a.clone(), b.clone(), |x, y| x & !y);
        assert_eq!(cpus(&r).collect::<Vec<_>>(), vec![1, 70]);
        let r = combine(b, a, |x, y| x | y);
        assert_eq!(cpus(&r).collect::<Vec<_>>(), vec![1, 2, 70]);
    }
}
