//! `run --trace`: every CPU's timeline as Chrome trace events, and the
//! warning for a measured window too short to be a steady state.

use crate::output::emit;

/// Writes each variant's timeline (one replica) as trace events: a process
/// per variant, a thread per CPU, a complete event per segment.
pub fn write_trace(
    scenario: &smpsim_scenario::Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
    limit: usize,
    path: &std::path::Path,
) -> Result<(), String> {
    use std::fmt::Write;
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push_str(",\n");
        }
    };
    for (pid, v) in variants.iter().enumerate() {
        let spec = scenario
            .compile(v.as_deref(), sets)
            .map_err(|e| e.to_string())?;
        let (_, rec) = smpsim_kernel::simulate_traced(&spec, limit);
        let vname = v.clone().unwrap_or_else(|| "base".into());
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
            serde_json::to_string(&vname).unwrap()
        );
        for cpu in 0..spec.machine.nr_cpus() {
            sep(&mut out);
            let _ = write!(out, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{cpu},\"args\":{{\"name\":\"CPU {cpu}\"}}}}");
        }
        // Task names: group/index, in task order.
        let names: Vec<String> = spec
            .task_groups
            .iter()
            .flat_map(|g| (0..g.placement.len()).map(move |i| format!("{}/{i}", g.name)))
            .collect();
        for seg in &rec.segments {
            if seg.kind == smpsim_kernel::trace::SegKind::Idle {
                continue;
            }
            let kind = serde_json::to_string(&seg.kind).unwrap();
            let name = match names.get(seg.task as usize) {
                Some(n) => format!("{n} ({})", kind.trim_matches('"')),
                None => kind.trim_matches('"').to_string(),
            };
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"X\",\"name\":{},\"cat\":{kind},\"pid\":{pid},\"tid\":{},\"ts\":{:.3},\"dur\":{:.3}}}",
                serde_json::to_string(&name).unwrap(),
                seg.cpu,
                seg.start as f64 / 1e3,
                (seg.end - seg.start) as f64 / 1e3
            );
        }
        if rec.truncated {
            eprintln!("trace: {vname}: stopped after {limit} segments (--trace-limit)");
        }
    }
    out.push_str("\n]}\n");
    emit(&out, Some(path)).map_err(|e| format!("error: {e}"))
}

/// A measured window too short for the periodic machinery (the tick, and
/// CFS bandwidth periods) to run a few times is not a steady state: say so.
pub fn short_window(spec: &smpsim_kernel::Spec) -> Option<String> {
    let measured = spec.duration.saturating_sub(spec.warmup);
    let tick = 1_000_000_000 / u64::from(spec.knobs.hz.max(1));
    let period = spec
        .cgroups
        .iter()
        .filter_map(|c| c.bandwidth.as_ref().map(|b| b.period))
        .max()
        .unwrap_or(0);
    let ms = |ns: u64| ns as f64 / 1e6;
    if measured < 2 * period {
        return Some(format!(
            "the measured window ({} ms) is shorter than two CFS bandwidth periods ({} ms each): throttling has not reached a steady state; lengthen `duration`",
            ms(measured),
            ms(period)
        ));
    }
    if measured < 2 * tick {
        return Some(format!(
            "the measured window ({} ms) is shorter than two scheduler ticks ({} ms at HZ={}): the tick, load balancing and RCU have barely run, so the figures are not a steady state; lengthen `duration`",
            ms(measured),
            ms(tick),
            spec.knobs.hz
        ));
    }
    None
}
