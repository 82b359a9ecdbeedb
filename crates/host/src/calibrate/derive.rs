//! From measurements to a machine profile's costs: each figure checked
//! against what it must satisfy (an IPI round trip costs at least a syscall
//! and two transfers, a context switch more than a syscall, ...), a figure
//! that fails kept from the preset and written `unmeasured: <reason>`.

use super::measure::Measurement;

/// What was measured, before any cost is derived from it: fabricated in
/// the tests of the sanity checks.
#[derive(Clone, Debug)]
pub struct Raw {
    pub cpus: (u32, u32),
    /// How the two measured CPUs are related (`same_llc`, ...).
    pub relation: &'static str,
    pub line: Measurement,
    pub syscall: Measurement,
    /// The IPI round trip (syscall included), or why it has no figure.
    pub ipi: Result<Measurement, String>,
    pub same_cpu: Measurement,
    pub cross_cpu: Measurement,
}

/// One cost of the profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// The key under `[costs]` (`line_transfer.same_llc`, `syscall`, ...).
    pub field: String,
    pub ns: f64,
    pub source: String,
    /// Why this cost is not from a measurement of this host (its value is
    /// then the fallback preset's, or 0 where presets leave it out).
    pub unmeasured: Option<String>,
}

/// The preset whose values stand in for costs that could not be measured.
pub fn fallback_preset() -> &'static str {
    if cfg!(target_arch = "powerpc64") {
        "power8-192"
    } else {
        "generic-x86"
    }
}

// Physical sanity. Each check names the law a figure broke; a figure that
// breaks one says the measurement did not see what it meant to (no IPI
// was sent, a thread was preempted), so it is refused, never clamped.

/// A cache-line transfer between two CPUs is slower than an L1 hit (~1 ns)
/// and far below a scheduler tick: beyond 5 us a side was preempted.
pub fn check_line(line: f64) -> Result<(), String> {
    if !(2.0..=5_000.0).contains(&line) {
        return Err(format!("a cache-line transfer of {line:.0} ns is outside 2..5000 ns (faster than an L1 hit, or a side was preempted)"));
    }
    Ok(())
}

/// Syscall entry and exit take tens of cycles at the very least.
pub fn check_syscall(sc: f64) -> Result<(), String> {
    if !(10.0..=50_000.0).contains(&sc) {
        return Err(format!(
            "a syscall round trip of {sc:.0} ns is outside 10..50000 ns"
        ));
    }
    Ok(())
}

/// An IPI round trip from a syscall includes the syscall, the request's
/// and the completion's cache lines crossing to the target and back, and
/// an interrupt on the target: it cannot cost a syscall or less.
pub fn check_ipi(ipi: f64, sc: f64, line: f64) -> Result<(), String> {
    let floor = sc + 2.0 * line;
    if ipi < floor {
        return Err(format!(
            "an IPI round trip of {ipi:.0} ns is below the syscall that sends it ({sc:.0} ns) plus two cache-line transfers ({line:.0} ns each): no IPI was sent"
        ));
    }
    Ok(())
}

/// A same-CPU pipe round trip is four syscalls and two context switches;
/// a context switch does a syscall's entry and exit and more.
pub fn check_switch(same_cpu: f64, sc: f64) -> Result<f64, String> {
    let switch = (same_cpu - 4.0 * sc) / 2.0;
    if switch <= sc {
        return Err(format!(
            "a context switch of {switch:.0} ns ((same-CPU round trip {same_cpu:.0} - 4 x syscall {sc:.0}) / 2) is not dearer than a syscall ({sc:.0} ns)"
        ));
    }
    Ok(switch)
}

/// A round trip across CPUs does what one on a CPU does plus a wakeup of
/// the other CPU each way; it cannot be cheaper.
pub fn check_cross(cross: f64, same: f64) -> Result<(), String> {
    if cross < same {
        return Err(format!(
            "the cross-CPU pipe round trip ({cross:.0} ns) is cheaper than the same-CPU one ({same:.0} ns)"
        ));
    }
    Ok(())
}

/// The profile's costs from what was measured, every figure checked; a
/// figure that fails a check is not used and the preset's value stands,
/// marked unmeasured with the reason.
pub fn derive(raw: &Raw, preset: &smpsim_machine::Machine) -> Vec<Derived> {
    let pname = &preset.name;
    let c = &preset.costs;
    let measured = |field: &str, ns: f64, source: String| Derived {
        field: field.into(),
        ns,
        source,
        unmeasured: None,
    };
    let unmeasured = |field: &str, fallback: &smpsim_machine::Cost, why: &str| Derived {
        field: field.into(),
        ns: fallback.ns,
        source: format!(
            "unmeasured: {why}; value of preset {pname}: {}",
            fallback.source
        ),
        unmeasured: Some(why.to_string()),
    };
    let (a, b) = raw.cpus;
    let rel = raw.relation;
    let mut out = vec![measured(
        "line_transfer.local",
        1.0,
        "assumed: L1 hit".into(),
    )];
    let lt = &c.line_transfer;
    let line_ok = check_line(raw.line.median_ns);
    for (field, fallback) in [
        ("smt_sibling", &lt.smt_sibling),
        ("same_llc", &lt.same_llc),
        ("same_node", &lt.same_node),
        ("same_socket", &lt.same_socket),
        ("cross_socket", &lt.cross_socket),
    ] {
        let key = format!("line_transfer.{field}");
        out.push(match &line_ok {
            Err(why) => unmeasured(&key, fallback, why),
            Ok(()) if field == rel => measured(&key, raw.line.median_ns, raw.line.source()),
            Ok(()) => measured(
                &key,
                raw.line.median_ns,
                format!(
                    "assumed: only CPUs {a} and {b} ({rel}) were measured; {field} taken from them"
                ),
            ),
        });
    }
    let sc = raw.syscall.median_ns;
    let sc_ok = check_syscall(sc);
    out.push(match &sc_ok {
        Ok(()) => measured("syscall", sc, raw.syscall.source()),
        Err(why) => unmeasured("syscall", &c.syscall, why),
    });
    // The IPI round trip beyond the syscall, split between send, delivery
    // and handler (assumed split: 10% / 60% / 30%).
    let ipi = raw.ipi.as_ref().map_err(|e| e.clone()).and_then(|m| {
        sc_ok
            .clone()
            .map_err(|e| format!("the syscall it includes was not measured ({e})"))?;
        let line = if line_ok.is_ok() {
            raw.line.median_ns
        } else {
            0.0
        };
        check_ipi(m.median_ns, sc, line)?;
        Ok(m)
    });
    let mut latency = None;
    for (field, share, fallback) in [
        ("ipi_send", 0.1, &c.ipi_send),
        ("ipi_latency", 0.6, &c.ipi_latency),
        ("irq_entry_exit", 0.3, &c.irq_entry_exit),
    ] {
        out.push(match &ipi {
            Ok(m) => {
                let ns = (m.median_ns - sc) * share;
                if field == "ipi_latency" {
                    latency = Some(ns);
                }
                measured(field, ns, format!("{}; {:.0}% of the round trip beyond the syscall (split assumed 10% send / 60% delivery / 30% handler)", m.source(), share * 100.0))
            }
            Err(why) => unmeasured(field, fallback, &format!("IPI round trip: {why}")),
        });
    }
    out.push(
        match sc_ok
            .clone()
            .and_then(|()| check_switch(raw.same_cpu.median_ns, sc))
        {
            Ok(switch) => measured(
                "context_switch",
                switch,
                format!("{}; (round trip - 4 syscalls) / 2", raw.same_cpu.source()),
            ),
            Err(why) => unmeasured("context_switch", &c.context_switch, &why),
        },
    );
    for (field, fallback) in [
        ("wakeup", &c.wakeup),
        ("tlb_flush_page", &c.tlb_flush_page),
        ("tlb_flush_full", &c.tlb_flush_full),
    ] {
        out.push(Derived {
            field: field.into(),
            ns: fallback.ns,
            source: format!(
                "assumed: not measured by calibrate; value of preset {pname}: {}",
                fallback.source
            ),
            unmeasured: None,
        });
    }
    // Across CPUs each half round trip adds a wakeup IPI to an idle CPU and
    // the idle exit: what is left beyond the IPI delivery is the idle exit.
    let (same, cross) = (raw.same_cpu.median_ns, raw.cross_cpu.median_ns);
    let no_idle_exit = smpsim_machine::Cost::assumed(0.0, "presets leave the idle exit out");
    let fallback_idle = c.idle_exit.as_ref().unwrap_or(&no_idle_exit);
    out.push(match check_cross(cross, same) {
        Err(why) => unmeasured("idle_exit", fallback_idle, &why),
        Ok(()) => {
            let (lat, lat_src) = match latency {
                Some(l) => (l, "ipi_latency".to_string()),
                None => (
                    c.ipi_latency.ns,
                    format!("the ipi_latency of preset {pname} (the IPI was not measured)"),
                ),
            };
            let idle = (cross - same) / 2.0 - lat;
            if idle < 0.0 {
                unmeasured(
                    "idle_exit",
                    fallback_idle,
                    &format!("(cross-CPU - same-CPU round trip) / 2 = {:.0} ns is less than {lat_src} ({lat:.0} ns)", (cross - same) / 2.0),
                )
            } else {
                measured(
                    "idle_exit",
                    idle,
                    format!(
                        "{}; (cross-CPU - same-CPU round trip) / 2 - {lat_src}",
                        raw.cross_cpu.source()
                    ),
                )
            }
        }
    });
    out
}
