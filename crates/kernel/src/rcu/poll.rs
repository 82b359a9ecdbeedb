//! Polled grace periods (kernel/rcu/tree.c): `get_state_synchronize_rcu()`,
//! `poll_state_synchronize_rcu()` and `cond_synchronize_rcu()`, on the
//! normal grace-period sequence number.
//!
//! The sequence (`rcu_state.gp_seq_polled`, kernel/rcu/rcu.h's `rcu_seq_*`
//! helpers) counts grace periods in its upper bits, `RCU_SEQ_CTR_SHIFT`
//! (2) up, and has the low bits set while one runs: `rcu_seq_start()` in
//! `rcu_gp_init()`, `rcu_seq_end()` in `rcu_gp_cleanup()`. Here it is
//! derived from the model's own count: `completed << 2`, plus 1 from the
//! end of `rcu_gp_init()` to the end of `rcu_gp_cleanup()` (the phase
//! `Running`). It starts at 0 (the kernel starts it 300 grace periods
//! short of wrapping, to exercise the wrap; nothing here wraps).
//!
//! `get_state_synchronize_rcu()` is `rcu_seq_snap()`: the value the
//! sequence will have when the first grace period that starts after the
//! call has ended (the next one when none runs, the one after the running
//! one otherwise). `poll_state_synchronize_rcu()` is
//! `rcu_seq_done_exact()` of it. Neither starts a grace period
//! (`start_poll_synchronize_rcu()` does; not modelled); both cost nothing
//! here: their `smp_mb()`s are a `work` beside them
//! (scenarios/lib/rcu.toml). Not modelled: an expedited grace period
//! also moves `gp_seq_polled` when no normal one runs
//! (`rcu_poll_gp_seq_start_unlocked()`, tree_exp.h).

use super::{GpPhase, Rcu};

/// `RCU_SEQ_CTR_SHIFT` (kernel/rcu/rcu.h).
const RCU_SEQ_CTR_SHIFT: u32 = 2;
/// `RCU_SEQ_STATE_MASK` (kernel/rcu/rcu.h).
const RCU_SEQ_STATE_MASK: u64 = (1 << RCU_SEQ_CTR_SHIFT) - 1;
/// `RCU_GET_STATE_COMPLETED` (include/linux/rcupdate.h): a state that is
/// always done, `get_completed_synchronize_rcu()`'s.
pub const RCU_GET_STATE_COMPLETED: i64 = 0x1;

/// `ULONG_CMP_GE()` (include/linux/rcupdate.h).
fn ulong_cmp_ge(a: u64, b: u64) -> bool {
    u64::MAX / 2 >= a.wrapping_sub(b)
}

/// `ULONG_CMP_LT()` (include/linux/rcupdate.h).
fn ulong_cmp_lt(a: u64, b: u64) -> bool {
    u64::MAX / 2 < a.wrapping_sub(b)
}

impl Rcu {
    /// `rcu_state.gp_seq_polled`: grace periods completed, shifted, with
    /// the low bit set while one runs.
    pub(crate) fn gp_seq(&self) -> u64 {
        (self.completed << RCU_SEQ_CTR_SHIFT) | (self.phase == GpPhase::Running) as u64
    }

    /// `get_state_synchronize_rcu()`: `rcu_seq_snap(&gp_seq_polled)`.
    pub(crate) fn get_state_synchronize_rcu(&self) -> i64 {
        let s = (self.gp_seq() + 2 * RCU_SEQ_STATE_MASK + 1) & !RCU_SEQ_STATE_MASK;
        s as i64
    }

    /// `poll_state_synchronize_rcu(oldstate)`: the completed state, or
    /// `rcu_seq_done_exact()`: the sequence has reached `oldstate`, or is
    /// so far behind it that `oldstate` must be from before a wrap.
    pub(crate) fn poll_state_synchronize_rcu(&self, oldstate: i64) -> bool {
        let (cur, s) = (self.gp_seq(), oldstate as u64);
        oldstate == RCU_GET_STATE_COMPLETED
            || ulong_cmp_ge(cur, s)
            || ulong_cmp_lt(cur, s.wrapping_sub(3 * RCU_SEQ_STATE_MASK + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_names_the_end_of_the_next_grace_period_to_start() {
        let mut rcu = Rcu::new(2);
        // Idle: the next grace period (1) is the first to start.
        assert_eq!(rcu.get_state_synchronize_rcu(), 4);
        rcu.phase = GpPhase::Starting;
        assert_eq!(rcu.get_state_synchronize_rcu(), 4);
        // Grace period 1 running: it began before the call, so it is 2.
        rcu.phase = GpPhase::Running;
        assert_eq!(rcu.gp_seq(), 1);
        assert_eq!(rcu.get_state_synchronize_rcu(), 8);
    }

    #[test]
    fn a_state_is_done_only_once_its_grace_period_has_ended() {
        let mut rcu = Rcu::new(2);
        rcu.phase = GpPhase::Running;
        let s = rcu.get_state_synchronize_rcu();
        assert!(!rcu.poll_state_synchronize_rcu(s));
        // Grace period 1 ends: not enough, it had begun before the call.
        rcu.completed = 1;
        rcu.phase = GpPhase::Idle;
        assert!(!rcu.poll_state_synchronize_rcu(s));
        rcu.phase = GpPhase::Running;
        assert!(!rcu.poll_state_synchronize_rcu(s));
        rcu.completed = 2;
        rcu.phase = GpPhase::Idle;
        assert!(rcu.poll_state_synchronize_rcu(s));
        assert!(rcu.poll_state_synchronize_rcu(RCU_GET_STATE_COMPLETED));
    }
}
