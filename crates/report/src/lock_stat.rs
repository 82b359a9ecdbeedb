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

/// The `lock_stat` rows of every variant, class by class: a class no
/// variant took is left out, and a sleeping reader-writer lock's read side
/// is a class of its own (`NAME-R` beside `NAME-W`), as `/proc/lock_stat`
/// shows it.
pub fn lock_stat_rows(runs: &[VariantRun]) -> Vec<Vec<String>> {
    let t = lock_stat_time;
    let mut rows = Vec::new();
    for (i, l) in runs[0].result.locks.iter().enumerate() {
        for r in runs {
            let Some(l2) = r.result.locks.get(i) else {
                continue;
            };
            let mut name = if l.instances > 1 {
                format!("{}[{}]", l.name, l.instances)
            } else {
                l.name.clone()
            };
            if let Some(read) = l2.read.filter(|r| r.acquisitions + r.contentions > 0) {
                rows.push(vec![
                    format!("{name}-R"),
                    r.variant.clone(),
                    read.con_bounces.to_string(),
                    read.contentions.to_string(),
                    t(read.wait_min_ns),
                    t(read.wait_max_ns),
                    t(read.wait_total_ns),
                    lock_stat_avg(read.wait_total_ns, read.contentions),
                    read.acq_bounces.to_string(),
                    read.acquisitions.to_string(),
                    t(read.hold_min_ns),
                    t(read.hold_max_ns),
                    t(read.hold_total_ns),
                    lock_stat_avg(read.hold_total_ns, read.acquisitions),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
            }
            if l2.acquisitions == 0 && l2.contentions == 0 {
                continue;
            }
            if l2.read.is_some() {
                name.push_str("-W");
            }
            rows.push(vec![
                name,
                r.variant.clone(),
                l2.con_bounces.to_string(),
                l2.contentions.to_string(),
                t(l2.wait_min_ns),
                t(l2.wait_max_ns),
                t(l2.wait_total_ns),
                lock_stat_avg(l2.wait_total_ns, l2.contentions),
                l2.acq_bounces.to_string(),
                l2.acquisitions.to_string(),
                t(l2.hold_min_ns),
                t(l2.hold_max_ns),
                t(l2.hold_total_ns),
                lock_stat_avg(l2.hold_total_ns, l2.acquisitions),
                l2.bounces.to_string(),
                t(l2.spin_total_ns),
                l2.handoffs.to_string(),
            ]);
        }
    }
    rows
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
