//! A binary min-heap of `(time, sequence)` keys.
//!
//! The sequence number makes ordering total and FIFO among equal times,
//! which is what makes runs reproducible. Keys are packed into one `u128`
//! so a comparison is a single integer compare.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::Nanos;

struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        other.key.cmp(&self.key)
    }
}

/// Pending events, earliest first; equal times in insertion order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E> EventQueue<E> {
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, at: Nanos, event: E) {
        let key = ((at as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        self.heap.push(Entry { key, event });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.heap
            .pop()
            .map(|entry| ((entry.key >> 64) as Nanos, entry.event))
    }

    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|entry| (entry.key >> 64) as Nanos)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
