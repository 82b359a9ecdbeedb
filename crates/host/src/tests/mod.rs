//! The host stress tests, one module each.

pub mod ctxswitch;
pub mod hotplug;
pub mod ipi_latency;
pub mod membarrier;
pub mod mutex_readers;
