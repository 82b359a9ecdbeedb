//! The `lock_stat` table as `/proc/lock_stat` prints it
//! (`kernel/locking/lockdep_proc.c`): its columns in `seq_header()`'s
//! order, its times (`snprint_time()`), its rows (`seq_stats()`: a
//! reader-writer class as `NAME-W` and `NAME-R`). The text and HTML
//! reports render these rows; the kernel crate's `lock_stat` books them.

use crate::VariantRun;

/// The columns of the `lock_stat` table: the kernel's
/// (`kernel/locking/lockdep_proc.c` `seq_header()`), in its order, with
/// the variant after the class name, then the model's own: `bounces` (the
/// lock's cache-line transfers, every miss including spinners'
/// re-fetches, where `con-bounces` and `acq-bounces` count one per event
/// on an instance last acquired on another CPU), time spent spinning, and
/// handoffs.
pub const LOCK_STAT_COLUMNS: [&str; 17] = [
    "class name",
    "variant",
    "con-bounces",
    "contentions",
    "waittime-min",
    "waittime-max",
    "waittime-total",
    "waittime-avg",
    "acq-bounces",
    "acquisitions",
    "holdtime-min",
    "holdtime-max",
    "holdtime-total",
    "holdtime-avg",
    "bounces",
    "spin-total",
    "handoffs",
];

/// Nanoseconds as `/proc/lock_stat` prints them (`snprint_time()`):
/// microseconds with two decimals, rounded at 5 ns.
pub fn lock_stat_time(ns: u64) -> String {
    let nr = ns + 5;
    format!("{}.{:02}", nr / 1000, (nr % 1000) / 10)
}

/// `lock_stat`'s average: total over the number of samples, in whole
/// nanoseconds, 0 without samples.
fn lock_stat_avg(total: u64, nr: u64) -> String {
    lock_stat_time(total.checked_div(nr).unwrap_or(0))
}

/// One class's figures as `/proc/lock_stat` has them (`seq_stats()`): a
/// lock's write (or only) side, or a reader-writer lock's read side.
struct Class {
    con_bounces: u64,
    contentions: u64,
    /// Waittime min, max, total (ns).
    wait: [u64; 3],
    acq_bounces: u64,
    acquisitions: u64,
    /// Holdtime min, max, total (ns).
    hold: [u64; 3],
}

/// The kernel's columns of a class, from con-bounces to holdtime-avg.
fn class_cells(c: Class) -> [String; 12] {
    let [wait_min, wait_max, wait_total] = c.wait;
    let [hold_min, hold_max, hold_total] = c.hold;
    [
        c.con_bounces.to_string(),
        c.contentions.to_string(),
        lock_stat_time(wait_min),
        lock_stat_time(wait_max),
        lock_stat_time(wait_total),
        lock_stat_avg(wait_total, c.contentions),
        c.acq_bounces.to_string(),
        c.acquisitions.to_string(),
        lock_stat_time(hold_min),
        lock_stat_time(hold_max),
        lock_stat_time(hold_total),
        lock_stat_avg(hold_total, c.acquisitions),
    ]
}

/// The `lock_stat` rows of every variant, class by class: a class no
/// variant took is left out, and a sleeping reader-writer lock's read side
/// is a class of its own (`NAME-R` beside `NAME-W`), as `/proc/lock_stat`
/// shows it. Objects are matched by name, so a lock only one variant has
/// shows in that variant's row. An object lockdep does not track (an
/// atomic, a semaphore) has no classes: its row, if its line moved, shows `-` in
/// lockdep's columns and its line's bounces.
pub fn lock_stat_rows(runs: &[VariantRun]) -> Vec<Vec<String>> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for l in &r.result.locks {
            if !names.contains(&l.name.as_str()) {
                names.push(&l.name);
            }
        }
    }
    let mut rows = Vec::new();
    for name in names {
        for r in runs {
            let Some(l2) = r.result.locks.iter().find(|l| l.name == name) else {
                continue;
            };
            let mut name = if l2.instances > 1 {
                format!("{}[{}]", l2.name, l2.instances)
            } else {
                l2.name.clone()
            };
            if let Some(read) = l2.read.filter(|r| r.acquisitions + r.contentions > 0) {
                let mut row = vec![format!("{name}-R"), r.variant.clone()];
                row.extend(class_cells(Class {
                    con_bounces: read.con_bounces,
                    contentions: read.contentions,
                    wait: [read.wait_min_ns, read.wait_max_ns, read.wait_total_ns],
                    acq_bounces: read.acq_bounces,
                    acquisitions: read.acquisitions,
                    hold: [read.hold_min_ns, read.hold_max_ns, read.hold_total_ns],
                }));
                // The model's own columns are the lock's, on its write row.
                row.extend(["-", "-", "-"].map(String::from));
                rows.push(row);
            }
            if l2.acquisitions == 0 && l2.contentions == 0 {
                if l2.bounces > 0 && l2.read.is_none() {
                    // No acquisitions booked, yet its line moved: an
                    // atomic, or a semaphore (which lockdep does not
                    // track either).
                    let mut row = vec![name, r.variant.clone()];
                    row.extend(std::iter::repeat_n("-".to_string(), 12));
                    row.extend([l2.bounces.to_string(), "-".into(), "-".into()]);
                    rows.push(row);
                }
                continue;
            }
            if l2.read.is_some() {
                name.push_str("-W");
            }
            let mut row = vec![name, r.variant.clone()];
            row.extend(class_cells(Class {
                con_bounces: l2.con_bounces,
                contentions: l2.contentions,
                wait: [l2.wait_min_ns, l2.wait_max_ns, l2.wait_total_ns],
                acq_bounces: l2.acq_bounces,
                acquisitions: l2.acquisitions,
                hold: [l2.hold_min_ns, l2.hold_max_ns, l2.hold_total_ns],
            }));
            row.extend([
                l2.bounces.to_string(),
                lock_stat_time(l2.spin_total_ns),
                l2.handoffs.to_string(),
            ]);
            rows.push(row);
        }
    }
    rows
}

/// What the table says under it when it has rows of objects lockdep does
/// not track.
pub const UNTRACKED_NOTE: &str =
    "(-: an object lockdep does not track, such as an atomic or a semaphore: only its cache line's bounces)";

/// The failed compare-and-exchange attempts of each object that had any
/// (a retry loop's `atomic_try_cmpxchg()`), per variant: `cmpxchg
/// failures: hits [no_relax] 1234, hits [cpu_relax] 567`; `None` if no
/// attempt failed anywhere.
pub fn cmpxchg_fails_line(runs: &[VariantRun]) -> Option<String> {
    let parts: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.result
                .locks
                .iter()
                .filter(|l| l.cmpxchg_fails > 0)
                .map(|l| format!("{} [{}] {}", l.name, r.variant, l.cmpxchg_fails))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("cmpxchg failures: {}", parts.join(", ")))
}

/// The OSQ head-role passes of each mutex that had any, per variant:
/// `osq passes (within node / across nodes): big_lock [osq] 10477 /
/// 11945, big_lock [numa-osq] 32954 / 4`; `None` if no OSQ passed its
/// head role anywhere.
pub fn osq_passes_line(runs: &[VariantRun]) -> Option<String> {
    let parts: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.result
                .locks
                .iter()
                .filter(|l| l.osq_within_node + l.osq_across_nodes > 0)
                .map(|l| {
                    format!(
                        "{} [{}] {} / {}",
                        l.name, r.variant, l.osq_within_node, l.osq_across_nodes
                    )
                })
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "osq passes (within node / across nodes): {}",
            parts.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_stat_times_are_microseconds_with_two_decimals() {
        // snprint_time(): (ns + 5) / 1000 "." ((ns + 5) % 1000) / 10.
        assert_eq!(lock_stat_time(0), "0.00");
        assert_eq!(lock_stat_time(892), "0.89");
        assert_eq!(lock_stat_time(22_900), "22.90");
        assert_eq!(lock_stat_time(269_680_000), "269680.00");
        assert_eq!(lock_stat_time(1_995), "2.00");
        assert_eq!(lock_stat_avg(10, 0), "0.00");
        assert_eq!(lock_stat_avg(3_000, 2), "1.50");
    }
}
