//! Pending events in `(time, order scheduled)` order: a radix heap on
//! the time, 64 buckets a level, whose lowest level is one sorted run.
//!
//! Equal times come out in the order they were scheduled, which is what
//! makes runs reproducible. A discrete-event simulation never schedules
//! into the past, so the times taken out never decrease: a *monotone*
//! priority queue is enough, and a radix heap is the cheapest one.
//!
//! The time is read as 6-bit digits (11 levels). The *current run* is a
//! vector kept sorted by time, taken out from its front, that holds every
//! pending event of an aligned window of time starting at the last time
//! taken out (`last`): usually `last`'s aligned 64 ns (digit 0). A push
//! within the window walks back from the run's end past the later times
//! (a few entries) and inserts there. A later one is filed by the highest
//! digit in which its time differs from `last` (one above the window's,
//! whichever time of the window `last` is), into the bucket named by that
//! digit's level and the event's own value of the digit: an XOR, a
//! leading-zero count and a `Vec::push`. When the run is used up, the
//! lowest non-empty bucket's earliest time becomes `last`. A level-1
//! bucket goes into the run whole, its 64 ns the run's window, in one sort
//! in cache rather than scattered over 64 single-time buckets; so does a
//! level-2 bucket of a few events (a small machine's next 4 us), its
//! 4,096 ns the window, rather than each event moving once more (into
//! level 1) and each level-1 bucket making a run of one. A bigger bucket is
//! redistributed: each event into a strictly lower level or into the run
//! (`last`'s 64 ns), which is then sorted (stably, by time: a counting
//! sort on the lowest digit, or an insertion sort for a few events). An
//! event moves at most once a level, in practice once or twice: a delay
//! of a few microseconds is level 1 or 2.
//!
//! Why equal times stay in schedule order without a sequence number:
//! every bucket is always in the order its events were scheduled. A
//! redistribution only happens when every bucket below the one
//! redistributed and the run are empty, so each receiving bucket (and the
//! run, through its stable sort) gets that bucket's events, in its order,
//! and nothing else; later pushes come after all of them (into the run,
//! after every entry of the same time). So the order is that of a binary
//! heap keyed by (time, sequence), event for event (tested against one).
//! No allocation once the buckets have grown.

use crate::Nanos;

const DIGIT_BITS: u32 = 6;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64_usize.div_ceil(DIGIT_BITS as usize);

/// Pending events, earliest first; equal times in the order scheduled.
pub struct EventQueue<E> {
    /// The current run: the pending events within `last`'s aligned 64 ns
    /// from `head` on, sorted by time (equal times in schedule order);
    /// before `head`, events already taken out.
    current: Vec<(Nanos, E)>,
    head: usize,
    /// Bucket `level * DIGITS + digit` (level 0 unused: that is the run).
    buckets: Vec<Vec<(Nanos, E)>>,
    /// Per level, bit d set: bucket d of the level is not empty.
    occupied: [u64; LEVELS],
    /// Bit l set: level l has a non-empty bucket.
    levels: u32,
    /// The last time taken out (every pending time is at least this).
    last: Nanos,
    /// The last time the run's window covers: `last`'s aligned 64 ns, or
    /// the aligned 4,096 ns of a level-2 bucket taken into the run whole.
    /// A time up to it goes into the run, a later one into a bucket.
    run_last: Nanos,
    len: usize,
    /// Scratch for sorting the run (kept for its capacity).
    spare: Vec<(Nanos, E)>,
}

/// The most events reserved up front in one bucket (4,096 CPUs' worth
/// and less are reserved as before).
const MAX_RESERVE: usize = 1024;

/// An emptied vector keeps at most this many entries' capacity (96 KB).
/// Vectors move between buckets and the run, so without a bound every
/// bucket would come to hold the largest vector it ever met: on a
/// 1,048,576-CPU machine, whose buckets hold hundreds of thousands of
/// events, several times the pending events. Up to 4,096 CPUs a bucket
/// stays below it, so nothing is allocated in a run's steady state.
const RETAIN: usize = 4096;

/// Gives back an emptied vector's capacity beyond [`RETAIN`] (rare: only
/// a bucket that held more events than that).
#[inline]
fn trim<T>(v: &mut Vec<T>) {
    if v.capacity() > RETAIN {
        v.shrink_to(RETAIN);
    }
}

/// Up to this many events, a run is sorted by insertion, in place.
const SMALL_RUN: usize = 16;

/// Sorts a run by time, equal times kept in their order: by insertion if
/// it is short, else (then it is all within one aligned 64 ns: a longer
/// run is only ever a level-1 bucket's) by counting on the lowest digit
/// through `scratch` (stable, linear, no comparisons).
fn sort_run<E: Copy>(run: &mut [(Nanos, E)], scratch: &mut Vec<(Nanos, E)>) {
    if run.len() <= SMALL_RUN {
        // Few events (a small machine): cheaper than the 64 counters.
        for i in 1..run.len() {
            let e = run[i];
            if run[i - 1].0 <= e.0 {
                continue; // in place already (often: pushes come in time order)
            }
            let mut j = i;
            while j > 0 && run[j - 1].0 > e.0 {
                run[j] = run[j - 1];
                j -= 1;
            }
            run[j] = e;
        }
        return;
    }
    debug_assert!(run
        .iter()
        .all(|e| e.0 >> DIGIT_BITS == run[0].0 >> DIGIT_BITS));
    let mut start = [0u32; DIGITS];
    for e in run.iter() {
        start[e.0 as usize & (DIGITS - 1)] += 1;
    }
    let mut at = 0;
    for s in start.iter_mut() {
        let n = *s;
        *s = at;
        at += n;
    }
    scratch.clear();
    scratch.extend_from_slice(run);
    for &e in scratch.iter() {
        let slot = &mut start[e.0 as usize & (DIGITS - 1)];
        run[*slot as usize] = e;
        *slot += 1;
    }
    scratch.clear();
}

impl<E: Copy> EventQueue<E> {
    pub fn with_capacity(capacity: usize) -> Self {
        let mut buckets: Vec<Vec<(Nanos, E)>> = (0..LEVELS * DIGITS).map(|_| Vec::new()).collect();
        // The levels a busy run uses most: times within a few us of now.
        // At most MAX_RESERVE each: a huge machine's events spread over
        // far fewer buckets than 128 x capacity / 64 (at 1,048,576 CPUs
        // that reserve was 200 MB); the buckets it uses grow as needed.
        for b in buckets.iter_mut().skip(DIGITS).take(2 * DIGITS) {
            b.reserve((capacity / 64).min(MAX_RESERVE));
        }
        EventQueue {
            current: Vec::with_capacity(capacity / 16),
            head: 0,
            buckets,
            occupied: [0; LEVELS],
            levels: 0,
            last: 0,
            run_last: DIGITS as Nanos - 1,
            len: 0,
            spare: Vec::new(),
        }
    }

    /// Files an event relative to `last`. Always inlined: it is most of
    /// a push, and a call would cost as much as its body.
    #[inline(always)]
    fn put(&mut self, at: Nanos, event: E) {
        if at <= self.run_last {
            // In the run, after every entry not later than `at` (all of
            // those before `head` are at most `last`, so the walk stops
            // at `head` at the latest).
            self.current.push((at, event));
            let mut i = self.current.len() - 1;
            while i > self.head && self.current[i - 1].0 > at {
                self.current[i] = self.current[i - 1];
                i -= 1;
            }
            self.current[i] = (at, event);
            return;
        }
        // Past the run's window, so `at` differs from `last` in a digit
        // above the window's: the same bucket whichever time of the window
        // `last` is.
        let diff = at ^ self.last;
        let level = (63 - diff.leading_zeros()) / DIGIT_BITS;
        let digit = (at >> (level * DIGIT_BITS)) as usize & (DIGITS - 1);
        self.buckets[level as usize * DIGITS + digit].push((at, event));
        self.occupied[level as usize] |= 1 << digit;
        self.levels |= 1 << level;
    }

    #[inline]
    pub fn push(&mut self, at: Nanos, event: E) {
        debug_assert!(
            at >= self.last,
            "an event scheduled before the last one taken out"
        );
        self.len += 1;
        self.put(at, event);
    }

    /// Makes the current run hold the earliest events (if anything is
    /// pending) and returns the earliest time.
    #[inline]
    fn settle(&mut self) -> Option<Nanos> {
        if self.head < self.current.len() {
            return Some(self.current[self.head].0);
        }
        if self.levels == 0 {
            return None;
        }
        self.refill();
        Some(self.current[0].0)
    }

    /// The run is used up: takes the lowest non-empty bucket into the run
    /// whole (a level-1 one, or a level-2 one of a few events) or
    /// redistributes it.
    #[inline(never)]
    fn refill(&mut self) {
        self.current.clear();
        self.head = 0;
        let level = self.levels.trailing_zeros() as usize;
        let digit = self.occupied[level].trailing_zeros() as usize;
        self.occupied[level] &= !(1 << digit);
        if self.occupied[level] == 0 {
            self.levels &= !(1 << level);
        }
        let b = level * DIGITS + digit;
        if level == 1 || (level == 2 && self.buckets[b].len() <= SMALL_RUN) {
            // The bucket's aligned window (64 ns, or 4,096 ns) becomes the
            // run's: every other pending event is past it. Its events go
            // in whole, in the bucket's order, sorted below; the bucket
            // keeps the old run's vector (and capacity).
            std::mem::swap(&mut self.current, &mut self.buckets[b]);
            trim(&mut self.buckets[b]);
            self.run_last = self.current[0].0 | ((1 << (level as u32 * DIGIT_BITS)) - 1);
            sort_run(&mut self.current, &mut self.spare);
            trim(&mut self.spare);
            self.last = self.current[0].0;
            return;
        }
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.last = moving.iter().map(|e| e.0).min().expect("occupied");
        self.run_last = self.last | (DIGITS as Nanos - 1);
        for &(at, event) in &moving {
            if at <= self.run_last {
                // Appended in the bucket's order, sorted below.
                self.current.push((at, event));
            } else {
                self.put(at, event);
            }
        }
        sort_run(&mut self.current, &mut self.spare);
        trim(&mut self.spare);
        // Keep the emptied vector's capacity for the next time.
        moving.clear();
        trim(&mut moving);
        self.buckets[b] = moving;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.settle()?;
        Some(self.pop_peeked())
    }

    /// Takes out the earliest event, which [`Self::peek_time`] has just
    /// returned (the run holds it: no second look at the buckets). Panics
    /// if nothing was peeked.
    #[inline]
    pub fn pop_peeked(&mut self) -> (Nanos, E) {
        let e = self.current[self.head];
        self.head += 1;
        self.last = e.0;
        self.len -= 1;
        e
    }

    /// True if no pending event is at or before `at` (at least `last`).
    /// Unlike [`Self::peek_time`] it moves nothing (a refill would move
    /// `last` past `at`, and later pushes before it would be misfiled),
    /// so it may be asked between pushes; it may answer false when it
    /// cannot tell cheaply.
    #[inline]
    pub fn none_until(&self, at: Nanos) -> bool {
        if self.head < self.current.len() {
            return self.current[self.head].0 > at;
        }
        // Every bucketed event is past the run's window.
        if self.levels == 0 || at <= self.run_last {
            return true;
        }
        // The lowest non-empty bucket holds the earliest event: its
        // window's start bounds it, else a short scan finds it.
        let level = self.levels.trailing_zeros();
        let digit = self.occupied[level as usize].trailing_zeros() as u64;
        let shift = level * DIGIT_BITS;
        let above = (self.last >> (shift + DIGIT_BITS)) << (shift + DIGIT_BITS);
        if at < above | (digit << shift) {
            return true;
        }
        let bucket = &self.buckets[level as usize * DIGITS + digit as usize];
        bucket.len() <= SMALL_RUN && bucket.iter().all(|e| e.0 > at)
    }

    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.settle()
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
        for round in 0..200_000u32 {
            let pushes = rng.next_u64() % 4;
            for _ in 0..pushes {
                // Mostly near now, sometimes far, sometimes exactly now.
                let delta = match rng.next_u64() % 6 {
                    0 | 1 => 0,
                    2 => rng.next_u64() % 100,
                    3 => rng.next_u64() % 100_000,
                    4 => rng.next_u64() % (1 << 40),
                    // Up to the end of time (a horizon of `u64::MAX`).
                    _ => rng.next_u64() % (u64::MAX - now),
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

    /// A small machine's pattern: a few pending events microseconds apart,
    /// so the run takes level-2 buckets whole (a 4,096 ns window), and
    /// pushes land in that window (walked into the run) as well as past
    /// it; the order is still the binary heap's.
    #[test]
    fn small_level_2_buckets_taken_whole_pop_in_key_order() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut rng = crate::Rng::seed_from_u64(5);
        let mut q = EventQueue::with_capacity(16);
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        for cpu in 0..16u32 {
            let at = rng.next_u64() % 20_000;
            q.push(at, cpu);
            reference.push(Reverse((at, seq, cpu)));
            seq += 1;
        }
        let mut wide_runs = 0;
        for _ in 0..200_000 {
            let Reverse((t, _, cpu)) = reference.pop().expect("pending");
            assert_eq!(q.peek_time(), Some(t));
            if q.run_last - t >= DIGITS as Nanos {
                // Only a level-2 window reaches 64 ns past what it holds.
                wide_runs += 1;
            }
            assert_eq!(q.pop(), Some((t, cpu)));
            // Mostly past the window, sometimes within it or at `t` itself.
            let delay = match rng.next_u64() % 4 {
                0 => 0,
                1 => rng.next_u64() % 2_000,
                _ => rng.exp(10_000),
            };
            q.push(t + delay, cpu);
            reference.push(Reverse((t + delay, seq, cpu)));
            seq += 1;
        }
        assert!(wide_runs > 1_000, "{wide_runs} pops from a 4,096 ns run");
    }

    /// Bursts of many events within a few microseconds (level-1 buckets
    /// of dozens of events, sorted by counting; level-2 ones split into
    /// the run and level 1) come out in (time, push order) too.
    #[test]
    fn bursts_pop_in_key_order_like_a_binary_heap() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut rng = crate::Rng::seed_from_u64(11);
        let mut q = EventQueue::with_capacity(16);
        let mut reference = BinaryHeap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..300u32 {
            let burst = 1 + rng.next_u64() % 2_000;
            let span = 1 + rng.next_u64() % 20_000;
            for _ in 0..burst {
                let at = now + rng.next_u64() % span;
                q.push(at, round);
                reference.push(Reverse((at, seq, round)));
                seq += 1;
            }
            let pops = rng.next_u64() % (reference.len() as u64 + 1);
            for _ in 0..pops {
                let want = reference.pop().map(|Reverse((t, _, r))| (t, r));
                let got = q.pop();
                assert_eq!(got, want);
                now = got.expect("pending").0;
            }
        }
        while let Some(Reverse((t, _, r))) = reference.pop() {
            assert_eq!(q.pop(), Some((t, r)));
        }
        assert!(q.is_empty());
    }

    /// A huge machine's pattern: tens of thousands of events in a few
    /// buckets. They still pop in (time, push order), and no emptied
    /// vector keeps more than `RETAIN` entries' capacity afterwards.
    #[test]
    fn huge_buckets_pop_in_key_order_and_give_their_capacity_back() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut rng = crate::Rng::seed_from_u64(3);
        let mut q = EventQueue::with_capacity(16);
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        for cpu in 0..40_000u32 {
            let at = rng.next_u64() % 30_000;
            q.push(at, cpu);
            reference.push(Reverse((at, seq, cpu)));
            seq += 1;
        }
        for _ in 0..200_000 {
            let Reverse((t, _, cpu)) = reference.pop().expect("pending");
            assert_eq!(q.pop(), Some((t, cpu)));
            let at = t + rng.exp(20_000);
            q.push(at, cpu);
            reference.push(Reverse((at, seq, cpu)));
            seq += 1;
        }
        while let Some(Reverse((t, _, cpu))) = reference.pop() {
            assert_eq!(q.pop(), Some((t, cpu)));
        }
        assert!(q.buckets.iter().all(|b| b.capacity() <= RETAIN));
        assert!(q.spare.capacity() <= RETAIN);
    }
}
