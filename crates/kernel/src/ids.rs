//! Ids of the model's things and their "none" sentinels: a leaf module
//! every other one may use, importing nothing of the crate.

/// A task (`struct task_struct`), by index.
pub type TaskId = u32;
/// No task (an idle CPU's `curr`, a free lock's owner).
pub const NO_TASK: TaskId = u32::MAX;

/// A CPU, as Linux numbers it.
pub type CpuId = u32;

/// An address space (`struct mm_struct`), by index.
pub type MmId = u32;
/// No mm: `init_mm`, what kernel threads and idle run on.
pub const NO_MM: MmId = u32::MAX;

/// An instance of a declared kernel object (one element of a per-CPU
/// array counts as one instance), by index in its kind's table.
pub type ObjId = u32;

/// The first lock-holder id of a `[hooks]` run: the hook running on CPU
/// `c` holds and waits for spinlocks as `HOOK_HOLDER + c`, an id no task
/// has (the kernel's hook has no task of its own either: it is the CPU in
/// `__schedule()` or in the tick's hardirq that holds the lock).
pub const HOOK_HOLDER: TaskId = 0x8000_0000;

/// The lock-holder id of the hook running on CPU `c`.
pub fn hook_holder(c: CpuId) -> TaskId {
    HOOK_HOLDER + c
}

/// The CPU whose hook `holder` is, if it is a hook's id and not a task's.
pub fn hook_holder_cpu(holder: TaskId) -> Option<CpuId> {
    (HOOK_HOLDER..NO_TASK)
        .contains(&holder)
        .then(|| holder - HOOK_HOLDER)
}
