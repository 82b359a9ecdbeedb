//! Pending events in `(time, sequence)` order: a radix heap.
//!
//! The sequence number makes ordering total and FIFO among equal times,
//! which is what makes runs reproducible. Keys are packed into one `u128`
//! (time in the high half) so a comparison is a single integer compare.
//!
//! A discrete-event simulation never schedules into the past, so the keys
//! taken out never decrease: a *monotone* priority queue is enough, and a
//! radix heap is the cheapest one. Every pending key sits in the bucket of
//! the highest bit in which it differs from the last key taken out
//! (bucket 0: equal to it). Pushing is an XOR, a leading-zero count and a
//! `Vec::push`. Taking out: if bucket 0 is empty, the lowest non-empty
//! bucket's minimum becomes the new last key and that bucket's keys are
//! redistributed, each into a strictly lower bucket, so a key moves at most
//! 128 times in its life and usually a few. The order is exactly that of
//! the keys (they are unique), so results are those of a binary heap, byte
//! for byte. No allocation once the buckets have grown.

use crate::Nanos;

const BUCKETS: usize = 129;

/// Pending events, earliest first; equal times in insertion order.
pub struct EventQueue<E> {
    buckets: Vec<Vec<(u128, E)>>,
    /// Bit b set: bucket b is not empty.
    occupied: [u64; 3],
    /// The last key taken out (every pending key is at least this).
    last: u128,
    len: usize,
    next_seq: u64,
}

#[inline]
fn bucket(key: u128, last: u128) -> usize {
    (128 - (key ^ last).leading_zeros()) as usize
}

impl<E> EventQueue<E> {
    pub fn with_capacity(capacity: usize) -> Self {
        let mut buckets: Vec<Vec<(u128, E)>> = (0..BUCKETS).map(|_| Vec::new()).collect();
        // The buckets a busy run uses most: times within a few us of now.
        for b in buckets.iter_mut().skip(64).take(24) {
            b.reserve(capacity / 16);
        }
        EventQueue {
            buckets,
            occupied: [0; 3],
            last: 0,
            len: 0,
            next_seq: 0,
        }
    }

    #[inline]
    fn put(&mut self, key: u128, event: E) {
        let b = bucket(key, self.last);
        self.buckets[b].push((key, event));
        self.occupied[b / 64] |= 1 << (b % 64);
    }

    #[inline]
    pub fn push(&mut self, at: Nanos, event: E) {
        let key = ((at as u128) << 64) | self.next_seq as u128;
        debug_assert!(
            key >= self.last,
            "an event scheduled before the last one taken out"
        );
        self.next_seq += 1;
        self.len += 1;
        self.put(key, event);
    }

    /// The lowest non-empty bucket.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        self.occupied
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// Moves the minimum into bucket 0 (if anything is pending) and
    /// returns its key.
    #[inline]
    fn settle(&mut self) -> Option<u128> {
        let b = self.lowest()?;
        if b == 0 {
            return Some(self.buckets[0][0].0);
        }
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.occupied[b / 64] &= !(1 << (b % 64));
        let min = moving.iter().map(|e| e.0).min().expect("occupied");
        self.last = min;
        for (key, event) in moving.drain(..) {
            self.put(key, event);
        }
        // Keep the emptied vector's capacity for the next time.
        self.buckets[b] = moving;
        Some(min)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.settle()?;
        let (key, event) = self.buckets[0].pop().expect("settled");
        self.occupied[0] &= !1;
        self.len -= 1;
        Some(((key >> 64) as Nanos, event))
    }

    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.settle().map(|key| (key >> 64) as Nanos)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the interleaving of pushes (never before the last taken
    /// out) and pops, events come out in (time, push order), as a binary
    /// heap of the same keys gives them.
    #[test]
    fn pops_in_key_order_like_a_binary_heap() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut rng = crate::Rng::seed_from_u64(7);
        let mut q = EventQueue::with_capacity(16);
        let mut reference = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..20_000u32 {
            let pushes = rng.next_u64() % 4;
            for _ in 0..pushes {
                // Mostly near now, sometimes far, sometimes exactly now.
                let delta = match rng.next_u64() % 4 {
                    0 => 0,
                    1 => rng.next_u64() % 100,
                    2 => rng.next_u64() % 100_000,
                    _ => rng.next_u64() % (1 << 40),
                };
                q.push(now + delta, round);
                reference.push(Reverse((now + delta, seq, round)));
                seq += 1;
            }
            if !rng.next_u64().is_multiple_of(3) {
                let want = reference.pop().map(|Reverse((t, _, r))| (t, r));
                assert_eq!(q.peek_time(), want.map(|w| w.0));
                let got = q.pop();
                assert_eq!(got, want);
                if let Some((t, _)) = got {
                    now = t;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(Reverse((t, _, r))) = reference.pop() {
            assert_eq!(q.pop(), Some((t, r)));
        }
        assert!(q.is_empty());
    }
}
