//! A host test's result (`smpsim host run`) as text: stress-ng's
//! `--metrics-brief` table first, then the rates, latency percentiles and
//! per-thread times in the simulator's table style.

use std::fmt::Write;

use smpsim_host::HostResult;

use crate::text::Table;
use crate::{fmt_rate, percentile_cells};

/// A host result as text tables, in the simulator's style.
pub fn format_result(r: &HostResult) -> String {
    let mut out = String::new();
    if r.stopped_early {
        let _ = writeln!(
            out,
            "host test {} ({} asked): STOPPED EARLY by a signal; partial results",
            r.test,
            r.asked()
        );
    } else {
        let _ = writeln!(out, "host test {} ({})", r.test, r.asked());
    }
    for (k, v) in &r.params {
        let _ = writeln!(out, "  {k} = {v}");
    }
    out.push('\n');
    // First what a reviewer pastes: stress-ng's --metrics-brief table.
    out.push_str(&r.metrics_brief());
    if !r.bogo_op.is_empty() {
        let _ = writeln!(out, "  (a bogo op: one {})", r.bogo_op);
    }
    out.push('\n');
    let mut t = Table::new(vec!["metric".into(), "value".into(), "unit".into()]);
    for m in &r.rates {
        let v = if m.unit.ends_with("/s") {
            fmt_rate(m.value)
        } else {
            format!("{:.3}", m.value)
        };
        t.row(vec![m.name.clone(), v, m.unit.clone()]);
    }
    t.render(&mut out);
    if !r.histograms.is_empty() {
        out.push('\n');
        let mut t = Table::new(
            ["latency", "count", "p50", "p90", "p99", "p99.9", "max"]
                .map(String::from)
                .to_vec(),
        );
        for h in &r.histograms {
            let mut row = vec![h.name.clone(), h.count.to_string()];
            row.extend(percentile_cells(h));
            t.row(row);
        }
        t.render(&mut out);
    }
    for th in &r.threads {
        let s = |ns: u64| format!("{:.3}s", ns as f64 / 1e9);
        let _ = writeln!(
            out,
            "  {}: real {}  user {}  sys {}",
            th.name,
            s(th.real_ns),
            s(th.user_ns),
            s(th.sys_ns)
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// `smpsim host list`'s text: each test, whether it can run here, and what
/// it misses (with how to get it).
pub fn list_text(statuses: &[smpsim_host::TestStatus]) -> String {
    let mut s = String::new();
    for st in statuses {
        let _ = writeln!(
            s,
            "{:<14} {:<4} {}",
            st.test,
            if st.runnable { "yes" } else { "no" },
            st.description
        );
        for c in &st.missing {
            let _ = writeln!(
                s,
                "    missing {}: {}; to run it: {}",
                c.name, c.detail, c.fix
            );
        }
        for c in &st.optional_missing {
            let _ = writeln!(
                s,
                "    without {}: {} (runs anyway; {})",
                c.name, c.detail, c.fix
            );
        }
    }
    s
}

/// What a calibration measured, refused and could not measure, one line
/// each, each after `who: ` (for stderr).
pub fn calibration_text(who: &str, c: &smpsim_host::calibrate::Calibration) -> String {
    let mut s = String::new();
    for m in &c.measurements {
        let _ = writeln!(s, "{who}: {}: {}", m.name, m.source());
    }
    for n in &c.notes {
        let _ = writeln!(s, "{who}: {n}");
    }
    let mut any = false;
    for (field, why) in c.unmeasured() {
        any = true;
        let _ = writeln!(s, "{who}: NOT MEASURED {field}: {why}; the profile keeps the value of preset {} and says so in its source", smpsim_host::calibrate::fallback_preset());
    }
    if !any {
        let _ = writeln!(s, "{who}: every measured cost passed the sanity checks");
    }
    s
}
