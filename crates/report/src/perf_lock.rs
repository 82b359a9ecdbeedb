//! `perf lock contention`'s table (tools/perf/builtin-lock.c), what people
//! paste into LKML today: per lock class, the contentions, total, max and
//! average wait, its type and name, sorted by total wait. Only contended
//! classes are listed, as perf only sees contention events.

use std::fmt::Write;

use smpsim_kernel::spec::Spec;

use crate::VariantRun;

/// Each lock object's type as perf names it, by name: from its kind's
/// registry entry, so that every kind has one.
pub fn lock_types(spec: &Spec) -> Vec<(String, String)> {
    spec.objects
        .iter()
        .filter_map(|o| {
            let t = smpsim_kernel::locking::perf_lock_type(&o.kind)?;
            Some((o.name.clone(), t.to_string()))
        })
        .collect()
}

/// A time as perf prints it in a column of `len` (`lock_stat_key_print_time()`):
/// two decimals in the largest unit it reaches, whole nanoseconds below 1 us.
pub fn perf_time(ns: u64, len: usize) -> String {
    let w = len - 3;
    for (base, unit) in [
        (3600e9, "h "),
        (60e9, "m "),
        (1e9, "s "),
        (1e6, "ms"),
        (1e3, "us"),
    ] {
        if ns as f64 >= base {
            return format!("{:>w$.2} {unit}", ns as f64 / base);
        }
    }
    format!("{ns:>w$} ns")
}

/// perf's header (`print_header_stdio()`), with a blank line after it.
const HEADER: &str = " contended   total wait     max wait     avg wait         type   name\n\n";

/// One contended class: name, type, contentions, total wait, max wait.
struct Row {
    name: String,
    kind: String,
    contended: u64,
    total: u64,
    max: u64,
}

/// The table of every variant, one block each, as `perf lock contention`
/// prints it (`-b`, aggregated by lock).
pub fn contention(runs: &[VariantRun], types: &[(String, String)]) -> String {
    let mut out = String::new();
    for (i, r) in runs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "# perf lock contention [{}]", r.variant);
        let type_of = |name: &str| {
            types
                .iter()
                .find(|(n, _)| n == name)
                .map_or("-", |(_, t)| t.as_str())
        };
        let mut rows = Vec::new();
        for l in &r.result.locks {
            let name = if l.instances > 1 {
                format!("{}[{}]", l.name, l.instances)
            } else {
                l.name.clone()
            };
            let kind = type_of(&l.name);
            if let Some(read) = l.read.filter(|s| s.contentions > 0) {
                rows.push(Row {
                    name: name.clone(),
                    kind: format!("{kind}:R"),
                    contended: read.contentions,
                    total: read.wait_total_ns,
                    max: read.wait_max_ns,
                });
            }
            if l.contentions > 0 {
                rows.push(Row {
                    name,
                    kind: if l.read.is_some() {
                        format!("{kind}:W")
                    } else {
                        kind.to_string()
                    },
                    contended: l.contentions,
                    total: l.wait_total_ns,
                    max: l.wait_max_ns,
                });
            }
        }
        // Sorted by total wait, the largest first (perf's default key);
        // ties by name, so the order is the same on every host.
        rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
        out.push_str(HEADER);
        for row in &rows {
            let _ = writeln!(
                out,
                "{:>10} {} {} {}   {:>10}   {}",
                row.contended,
                perf_time(row.total, 12),
                perf_time(row.max, 12),
                perf_time(row.total / row.contended.max(1), 12),
                row.kind,
                row.name
            );
        }
        if rows.is_empty() {
            out.push_str("(no lock was contended)\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_perf_prints_them() {
        assert_eq!(perf_time(15_450_000, 12), "    15.45 ms");
        assert_eq!(perf_time(57_370, 12), "    57.37 us");
        assert_eq!(perf_time(892, 12), "      892 ns");
        assert_eq!(perf_time(2_500_000_000, 12), "     2.50 s ");
    }

    /// Every registered lock kind, spinning or sleeping, has the type perf
    /// shows for it: the column is never `-` for a lock.
    #[test]
    fn every_lock_kind_has_its_perf_type() {
        use smpsim_kernel::locking::{LOCK_KINDS, SLEEPING_KINDS};
        use smpsim_kernel::spec::{ObjectDecl, ObjectKind};
        let mut spec = smpsim_kernel::testkit::spec(smpsim_kernel::testkit::flat_machine(2), 1);
        let kinds = LOCK_KINDS
            .iter()
            .map(|k| {
                (
                    k.name,
                    ObjectKind::Spinlock {
                        kind: k.handle(),
                        options: Default::default(),
                    },
                )
            })
            .chain(SLEEPING_KINDS.iter().map(|k| {
                (
                    k.name,
                    ObjectKind::Sleeping {
                        kind: k.handle(),
                        spin: false,
                    },
                )
            }));
        for (name, kind) in kinds {
            spec.objects.push(ObjectDecl {
                name: name.into(),
                kind,
                per_cpu: false,
            });
        }
        let types = lock_types(&spec);
        assert_eq!(types.len(), LOCK_KINDS.len() + SLEEPING_KINDS.len());
        let type_of = |n: &str| types.iter().find(|(o, _)| o == n).map(|(_, t)| t.as_str());
        assert_eq!(type_of("qrwlock"), Some("rwlock"));
        assert_eq!(type_of("qspinlock"), Some("spinlock"));
        assert_eq!(type_of("rt_mutex"), Some("rt-mutex"));
        assert_eq!(type_of("percpu_rwsem"), Some("pcpu-sem"));
        assert_eq!(type_of("rwsem"), Some("rwsem"));
    }
}
