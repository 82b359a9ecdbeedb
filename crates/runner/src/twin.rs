//! `smpsim host compare`'s simulated side: a host test's twin scenario on
//! the calibrated profile, its simulated figure, the sensitivity of that
//! figure to each cost (each doubled alone), and the verdict text.

use std::fmt::Write;

use smpsim_host::HostResult;
use smpsim_report::{fmt_rate, text::Table};

/// The simulated twin of a host test, as scenario text on `profile`.
pub fn twin(
    test: &str,
    profile: &std::path::Path,
    real: &HostResult,
    cpus: usize,
) -> Result<(String, String, f64), String> {
    let machine = format!("[machine]\nprofile = {:?}\n", profile.display().to_string());
    let head = |name: &str, dur: &str| {
        format!("[scenario]\nname = \"host-{name}\"\nduration = \"{dur}\"\nwarmup = \"20ms\"\n\n{machine}\n[kernel]\nhz = 250   # assumed: the host's CONFIG_HZ (250 on the VM this was written on)\n\n")
    };
    match test {
        "ctxswitch" => {
            let s = head("ctxswitch", "300ms")
                + r#"[objects]
ab = { type = "semaphore" }
ba = { type = "semaphore" }

[[tasks]]
name = "ping"
count = 1
cpus = "0"
mm = "bench"
code = [ { op = "loop", count = "forever", body = [
  { op = "syscall", name = "write", body = [ { op = "up", obj = "ab" } ] },
  { op = "syscall", name = "read", body = [ { op = "down", obj = "ba" } ] },
] } ]

[[tasks]]
name = "pong"
count = 1
cpus = "1"
mm = "bench"
code = [ { op = "loop", count = "forever", body = [
  { op = "syscall", name = "read", body = [ { op = "down", obj = "ab" } ] },
  { op = "syscall", name = "write", body = [ { op = "up", obj = "ba" } ] },
] } ]
"#;
            let real_rate = real
                .rate_of("switches_per_s_threads_cross_cpu")
                .unwrap_or(0.0);
            Ok((s, "switches_per_s".into(), real_rate))
        }
        "membarrier" => {
            let s = head("membarrier", "300ms")
                + &format!(
                    r#"[objects]
membarrier_ipi_mutex = {{ type = "mutex" }}   # the host kernel's global mutex

[[tasks]]
name = "burner"
per_cpu = 1
mm = "test"
code = [ {{ op = "loop", count = "forever", body = [ {{ op = "work", time = "1ms" }} ] }} ]

[[tasks]]
name = "hammer"
per_cpu = 1
mm = "test"
vars = {{ target = "(this_cpu() + 1) % {cpus}" }}
code = [ {{ op = "loop", count = "forever", body = [
  {{ op = "syscall", name = "membarrier", body = [
    {{ op = "mutex_guard", lock = "membarrier_ipi_mutex", body = [
      {{ op = "if", cond = "cpu_curr_shares_mm(target)", then = [
        {{ op = "smp_call_function_single", cpu = "target", func = "50ns" }},
      ] }},
    ] }},
  ] }},
  {{ op = "count", counter = "calls" }},
] }} ]
"#
                );
            Ok((
                s,
                "calls_per_s".into(),
                real.rate_of("calls_per_s").unwrap_or(0.0),
            ))
        }
        "ipi-latency" => {
            let alone = real
                .histograms
                .iter()
                .find(|h| h.name == "munmap_1page_alone")
                .map(|h| h.p50)
                .unwrap_or(1500);
            let s = head("ipi-latency", "300ms")
                + &format!(
                    r#"[[tasks]]
name = "sibling"
count = 1
cpus = "1"
mm = "storm"
code = [ {{ op = "loop", count = "forever", body = [ {{ op = "work", time = "1ms" }} ] }} ]

[[tasks]]
name = "storm"
count = 1
cpus = "0"
mm = "storm"
code = [ {{ op = "loop", count = "forever", body = [
  {{ op = "syscall", name = "munmap", body = [
    {{ op = "work", time = "{alone}ns" }},   # measured on this host: munmap of one page with no other CPU in the mm
    {{ op = "smp_call_function_many", cpus = "mm_cpumask", func = "cost.tlb_flush_page" }},
  ] }},
  {{ op = "count", counter = "munmaps" }},
] }} ]
"#
                );
            Ok((
                s,
                "munmap_per_s".into(),
                real.rate_of("munmap_per_s").unwrap_or(0.0),
            ))
        }
        other => Err(format!(
            "error: host compare supports membarrier, ctxswitch and ipi-latency, not `{other}`"
        )),
    }
}

/// The twin's main figure, simulated with `sets` (cost overrides) applied.
pub fn simulated(
    scenario: &smpsim_scenario::Scenario,
    test: &str,
    sets: &[(String, String)],
) -> Result<(f64, smpsim_kernel::Spec), String> {
    let spec = scenario
        .compile(None, sets)
        .map_err(|e| format!("error: {e}"))?;
    let sim = smpsim_kernel::simulate(&spec);
    let measured = (sim.stats.simulated_ns.saturating_sub(sim.warmup_ns)).max(1) as f64 / 1e9;
    let v = match test {
        "ctxswitch" => sim.context_switches as f64 / measured,
        "membarrier" => sim.counter("calls").map_or(0.0, |c| c.rate),
        _ => sim.counter("munmaps").map_or(0.0, |c| c.rate),
    };
    Ok((v, spec))
}

/// How the simulated figure moves when one kind of cost is doubled.
#[derive(serde::Serialize)]
pub struct Sensitivity {
    pub cost: &'static str,
    pub ns: f64,
    /// `measured`, `unmeasured`, `assumed` or `published` (a preset's
    /// cited figure): where the profile's figure is from.
    pub origin: String,
    pub figure_doubled: f64,
    /// figure_doubled / figure - 1.
    pub change: f64,
}

/// One-at-a-time sensitivity: each cost kind doubled alone, the twin
/// simulated again; sorted by how far the figure moves, largest first. A
/// cost of 0 (an idle exit the profile leaves out) cannot be doubled and is
/// left out.
pub fn sensitivity(
    scenario: &smpsim_scenario::Scenario,
    test: &str,
    c: &smpsim_machine::Costs,
    base: f64,
) -> Result<Vec<Sensitivity>, String> {
    let lt = &c.line_transfer;
    let kinds: Vec<(&'static str, Vec<(&str, &smpsim_machine::Cost)>)> = vec![
        (
            "line_transfer",
            vec![
                ("line_transfer.smt_sibling", &lt.smt_sibling),
                ("line_transfer.same_llc", &lt.same_llc),
                ("line_transfer.same_node", &lt.same_node),
                ("line_transfer.same_socket", &lt.same_socket),
                ("line_transfer.cross_socket", &lt.cross_socket),
            ],
        ),
        ("ipi_send", vec![("ipi_send", &c.ipi_send)]),
        ("ipi_latency", vec![("ipi_latency", &c.ipi_latency)]),
        (
            "irq_entry_exit",
            vec![("irq_entry_exit", &c.irq_entry_exit)],
        ),
        ("syscall", vec![("syscall", &c.syscall)]),
        (
            "context_switch",
            vec![("context_switch", &c.context_switch)],
        ),
        ("wakeup", vec![("wakeup", &c.wakeup)]),
        (
            "tlb_flush_page",
            vec![("tlb_flush_page", &c.tlb_flush_page)],
        ),
        (
            "tlb_flush_full",
            vec![("tlb_flush_full", &c.tlb_flush_full)],
        ),
    ];
    let mut kinds = kinds;
    if let Some(idle) = c.idle_exit.as_ref().filter(|i| i.ns > 0.0) {
        kinds.push(("idle_exit", vec![("idle_exit", idle)]));
    }
    let mut out = Vec::new();
    for (kind, fields) in kinds {
        if smpsim_host::cleanup::should_stop() {
            break;
        }
        let sets: Vec<(String, String)> = fields
            .iter()
            .map(|(f, cost)| {
                (
                    format!("machine.costs.{f}.ns"),
                    format!("{}", cost.ns * 2.0),
                )
            })
            .collect();
        let (v, _) = simulated(scenario, test, &sets)?;
        // The field the host measured, if any, speaks for the kind (one
        // line-transfer distance is measured, the others copied from it).
        let (_, shown) = fields
            .iter()
            .find(|(_, c)| origin(&c.source) == "measured")
            .unwrap_or(&fields[0]);
        out.push(Sensitivity {
            cost: kind,
            ns: shown.ns,
            origin: origin(&shown.source).into(),
            figure_doubled: v,
            change: v / base.max(1e-9) - 1.0,
        });
    }
    out.sort_by(|a, b| b.change.abs().total_cmp(&a.change.abs()));
    Ok(out)
}

/// Where a cost's figure is from, in one word, from its source.
pub fn origin(source: &str) -> &'static str {
    ["unmeasured", "measured", "assumed"]
        .into_iter()
        .find(|w| source.starts_with(w))
        .unwrap_or("published")
}

/// The verdict and the sensitivity table, for the text report.
pub fn verdict_text(ratio: f64, dominant: Option<&Sensitivity>, sens: &[Sensitivity]) -> String {
    let mut s = String::new();
    if (0.5..=2.0).contains(&ratio) {
        let _ = writeln!(s, "\nverdict: within x2 (sim/real {ratio:.2})");
    } else {
        let (factor, way) = if ratio > 1.0 {
            (ratio, "faster")
        } else {
            (1.0 / ratio.max(1e-9), "slower")
        };
        let _ = writeln!(
            s,
            "\nverdict: NOT within x2: the simulation is {factor:.1}x {way} than the real kernel"
        );
    }
    match dominant {
        Some(d) => {
            let _ = writeln!(
                s,
                "dominant cost: {} ({:.0} ns, {}): doubling it moves the simulated figure {:+.0}%{}",
                d.cost,
                d.ns,
                d.origin,
                d.change * 100.0,
                if (0.5..=2.0).contains(&ratio) {
                    ""
                } else {
                    "; the first suspect"
                }
            );
        }
        None => {
            let _ = writeln!(
                s,
                "dominant cost: none (no cost moves the simulated figure)"
            );
        }
    }
    let mut t = Table::new(
        ["cost doubled", "ns", "from", "simulated", "change"]
            .map(String::from)
            .to_vec(),
    );
    for x in sens.iter().filter(|x| x.change.abs() >= 0.005) {
        t.row(vec![
            x.cost.to_string(),
            format!("{:.0}", x.ns),
            x.origin.clone(),
            fmt_rate(x.figure_doubled),
            format!("{:+.1}%", x.change * 100.0),
        ]);
    }
    t.render(&mut s);
    let still: Vec<&str> = sens
        .iter()
        .filter(|x| x.change.abs() < 0.005)
        .map(|x| x.cost)
        .collect();
    if !still.is_empty() {
        let _ = writeln!(s, "no effect (< 0.5%): {}", still.join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sens(cost: &'static str, change: f64) -> Sensitivity {
        Sensitivity {
            cost,
            ns: 100.0,
            origin: "unmeasured".into(),
            figure_doubled: 1.0,
            change,
        }
    }

    #[test]
    fn the_verdict_says_within_x2_or_how_far_and_names_the_suspect() {
        let s = [sens("context_switch", -0.4), sens("tlb_flush_full", 0.0)];
        let t = verdict_text(38.59, s.first(), &s);
        assert!(
            t.contains("verdict: NOT within x2: the simulation is 38.6x faster"),
            "{t}"
        );
        assert!(
            t.contains("dominant cost: context_switch (100 ns, unmeasured)"),
            "{t}"
        );
        assert!(t.contains("the first suspect"), "{t}");
        assert!(t.contains("no effect (< 0.5%): tlb_flush_full"), "{t}");
        let t = verdict_text(0.11, s.first(), &s);
        assert!(t.contains("9.1x slower"), "{t}");
        let t = verdict_text(1.04, s.first(), &s);
        assert!(
            t.contains("verdict: within x2 (sim/real 1.04)") && !t.contains("suspect"),
            "{t}"
        );
    }
}
