//! Recording what every CPU did, interval by interval, for a timeline
//! viewer (the CLI writes it in the Chrome trace-event format that
//! Perfetto opens).
//!
//! Recording hooks into time accounting: every stretch of time charged to a
//! CPU is one segment; consecutive stretches of the same kind and task are
//! merged. It costs nothing when off, and stops at a segment limit.

use serde::Serialize;
use smpsim_engine::Nanos;

/// What a CPU was doing during a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegKind {
    User,
    Sys,
    Spin,
    Irq,
    Switch,
    Idle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
    pub truncated: bool,
}

impl Recorder {
    pub fn new(nr_cpus: usize, limit: usize) -> Self {
        Recorder {
            segments: Vec::new(),
            last: vec![usize::MAX; nr_cpus],
            limit,
            truncated: false,
        }
    }

    pub fn push(&mut self, cpu: u32, start: Nanos, end: Nanos, kind: SegKind, task: u32) {
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
