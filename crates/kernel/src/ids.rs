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
