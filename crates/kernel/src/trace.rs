//! Recording what every CPU did, interval by interval, for a timeline
//! viewer (the runner writes it in the Chrome trace-event format that
//! Perfetto opens).
//!
//! Recording hooks into time accounting (`Kernel::settle`): every stretch
//! of time charged to a CPU is one segment, idle time aside (a timeline
//! shows it as the gap between segments). Consecutive stretches of the same
//! kind and task are merged into one, a spin only with a spin on the same
//! lock instance. It costs nothing when off; when on, it keeps only what
//! overlaps its window (clipped to it) and stops at a segment limit.

use smpsim_engine::Nanos;

/// What a spinning task spins on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinOn {
    /// A lock: instance `instance` (the CPU's, for a per-CPU object; else
    /// 0) of declared object `object` (its index in `Spec::objects`).
    Lock { object: u32, instance: u32 },
    /// `csd_lock_wait()`: its cross-CPU calls to complete.
    CsdWait,
    /// A stopper thread in `multi_cpu_stop()`.
    StopMachine,
}

/// What a CPU was doing during a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    User,
    Sys,
    Spin(SpinOn),
    Irq,
    Switch,
}

impl SegKind {
    /// The kind's name in a timeline (the `cpu.times` field it is charged
    /// to, `switch` for the context switch).
    pub fn name(&self) -> &'static str {
        match self {
            SegKind::User => "user",
            SegKind::Sys => "sys",
            SegKind::Spin(_) => "spin",
            SegKind::Irq => "irq",
            SegKind::Switch => "switch",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub cpu: u32,
    pub start: Nanos,
    pub end: Nanos,
    pub kind: SegKind,
    /// The task (for user, sys and spin), else `u32::MAX`.
    pub task: u32,
}

pub struct Recorder {
    pub segments: Vec<Segment>,
    /// Index of each CPU's last segment, for merging.
    last: Vec<usize>,
    limit: usize,
    /// Only what happens in `[window.start, window.end)` is kept.
    window: std::ops::Range<Nanos>,
    pub truncated: bool,
}

impl Recorder {
    /// A recorder of at most `limit` segments, clipped to `window`.
    pub fn new(nr_cpus: usize, limit: usize, window: std::ops::Range<Nanos>) -> Self {
        Recorder {
            segments: Vec::new(),
            last: vec![usize::MAX; nr_cpus],
            limit,
            window,
            truncated: false,
        }
    }

    pub fn push(&mut self, cpu: u32, start: Nanos, end: Nanos, kind: SegKind, task: u32) {
        let (start, end) = (start.max(self.window.start), end.min(self.window.end));
        if start >= end {
            return;
        }
        let li = self.last[cpu as usize];
        if li != usize::MAX {
            let last = &mut self.segments[li];
            if last.kind == kind && last.task == task && last.end == start {
                last.end = end;
                return;
            }
        }
        if self.segments.len() >= self.limit {
            self.truncated = true;
            return;
        }
        self.last[cpu as usize] = self.segments.len();
        self.segments.push(Segment {
            cpu,
            start,
            end,
            kind,
            task,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(object: u32, instance: u32) -> SegKind {
        SegKind::Spin(SpinOn::Lock { object, instance })
    }

    #[test]
    fn merges_only_contiguous_segments_of_one_kind_task_and_lock() {
        let mut rec = Recorder::new(2, 100, 0..Nanos::MAX);
        rec.push(0, 0, 10, SegKind::Sys, 1);
        rec.push(0, 10, 20, SegKind::Sys, 1); // merged
        rec.push(0, 20, 30, spin(0, 0), 1);
        rec.push(0, 30, 40, spin(0, 0), 1); // merged
        rec.push(0, 40, 50, spin(0, 1), 1); // another instance
        rec.push(0, 50, 60, spin(1, 1), 1); // another lock
        rec.push(0, 70, 80, spin(1, 1), 1); // not contiguous
        rec.push(1, 80, 90, spin(1, 1), 1); // another CPU
        let spans: Vec<_> = rec
            .segments
            .iter()
            .map(|s| (s.cpu, s.start, s.end))
            .collect();
        assert_eq!(
            spans,
            [
                (0, 0, 20),
                (0, 20, 40),
                (0, 40, 50),
                (0, 50, 60),
                (0, 70, 80),
                (1, 80, 90)
            ]
        );
    }

    #[test]
    fn keeps_the_window_clipped_and_stops_at_the_limit() {
        let mut rec = Recorder::new(1, 2, 15..45);
        rec.push(0, 0, 10, SegKind::User, 0); // before the window
        rec.push(0, 10, 20, SegKind::Sys, 0); // clipped at its start
        rec.push(0, 20, 30, SegKind::User, 0);
        rec.push(0, 30, 50, SegKind::Irq, u32::MAX); // over the limit
        let spans: Vec<_> = rec.segments.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(spans, [(15, 20), (20, 30)]);
        assert!(rec.truncated);
        let mut rec = Recorder::new(1, 10, 15..45);
        rec.push(0, 30, 50, SegKind::Irq, u32::MAX);
        rec.push(0, 50, 60, SegKind::User, 0); // after the window
        assert_eq!(rec.segments.len(), 1);
        assert_eq!(rec.segments[0].end, 45);
        assert!(!rec.truncated);
    }
}
