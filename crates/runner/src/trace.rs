//! `run --trace`: every CPU's timeline as Chrome trace events (the JSON
//! that ui.perfetto.dev and chrome://tracing open, gzipped when the path
//! ends in `.gz`), and the warning for a measured window too short to be
//! a steady state.
//!
//! The trace is a process per variant and a thread per CPU (named by
//! metadata events, so each event carries only the numbers), and one
//! complete event (`"ph":"X"`) per segment the kernel's recorder kept:
//! its name is the task and what it did (`locker/3 (sys)`), a spin naming
//! what it spins on (`locker/3 (spin big_lock)`, `rq_lock[2]` for CPU 2's
//! instance of a per-CPU lock); idle time is the gap between events.
//! Times are microseconds (the format's unit) written with ns precision
//! and no trailing zeros. The file is written whole, atomically, and its
//! bytes depend only on the scenario and seed (the gzip header carries no
//! time and no file name).

use std::fmt::Write as _;
use std::ops::Range;

use smpsim_engine::Nanos;
use smpsim_kernel::trace::{SegKind, SpinOn};
use smpsim_kernel::Spec;

use crate::output::emit_bytes;

/// Writes each variant's timeline (one replica of its compiled `spec`, as
/// `run` runs it) during `window`, at most `limit` segments per variant.
pub fn write_trace(
    variants: &[Option<String>],
    specs: &[Spec],
    limit: usize,
    window: Range<Nanos>,
    path: &std::path::Path,
) -> Result<(), String> {
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push_str(",\n");
        }
    };
    for (pid, (v, spec)) in variants.iter().zip(specs).enumerate() {
        let (_, rec) = smpsim_kernel::simulate_traced(spec, limit, window.clone());
        let vname = v.as_deref().unwrap_or("base");
        sep(&mut out);
        let _ = write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
            json_string(vname)
        );
        for cpu in 0..spec.machine.nr_cpus() {
            sep(&mut out);
            let _ = write!(out, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{cpu},\"args\":{{\"name\":\"CPU {cpu}\"}}}}");
        }
        // Task names: group/index, in task order.
        let tasks: Vec<String> = spec
            .task_groups
            .iter()
            .flat_map(|g| (0..g.placement.len()).map(move |i| format!("{}/{i}", g.name)))
            .collect();
        for seg in &rec.segments {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{},\"ts\":",
                seg.cpu
            );
            push_us(&mut out, seg.start);
            out.push_str(",\"dur\":");
            push_us(&mut out, seg.end - seg.start);
            let name = segment_name(spec, &tasks, seg.task, seg.kind);
            let _ = write!(out, ",\"name\":{}}}", json_string(&name));
        }
        if rec.truncated {
            eprintln!("trace: {vname}: stopped after {limit} segments (--trace-limit)");
        }
    }
    out.push_str("\n]}\n");
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        gzip(out.as_bytes())
    } else {
        out.into_bytes()
    };
    emit_bytes(&bytes, Some(path)).map_err(|e| format!("error: {e}"))
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// `ns` as microseconds, exactly: `1234.5` for 1234500 ns, `7` for 7000.
fn push_us(out: &mut String, ns: Nanos) {
    let _ = write!(out, "{}", ns / 1000);
    let frac = ns % 1000;
    if frac != 0 {
        let digits = format!("{frac:03}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

/// A segment's event name: the task (if it is one of the scenario's) and
/// the kind, and for a spin what it spins on.
fn segment_name(spec: &Spec, tasks: &[String], task: u32, kind: SegKind) -> String {
    let what = match kind {
        SegKind::Spin(SpinOn::Lock { object, instance }) => {
            let obj = &spec.objects[object as usize];
            if obj.per_cpu {
                format!("spin {}[{instance}]", obj.name)
            } else {
                format!("spin {}", obj.name)
            }
        }
        SegKind::Spin(SpinOn::CsdWait) => "spin csd_lock_wait".into(),
        SegKind::Spin(SpinOn::StopMachine) => "spin multi_cpu_stop".into(),
        k => k.name().into(),
    };
    match tasks.get(task as usize) {
        Some(t) => format!("{t} ({what})"),
        None => what,
    }
}

/// Gzip with a fixed header (no modification time, no file name, OS
/// "unknown"), so the same trace gives the same bytes.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes)
        .and_then(|()| gz.finish())
        .expect("compressing into memory cannot fail")
}

/// The `--trace-window A..B` to record (either end may be left out: the
/// run's start, its end), checked against every variant's duration; the
/// whole run without one.
pub fn trace_window(
    arg: Option<&str>,
    variants: &[Option<String>],
    specs: &[Spec],
) -> Result<Range<Nanos>, String> {
    let Some(arg) = arg else {
        return Ok(0..Nanos::MAX);
    };
    let bad = |why: String| format!("error: --trace-window {arg}: {why}");
    let (a, b) = arg.split_once("..").ok_or_else(|| {
        bad("expected START..END, such as 10ms..12ms (either may be left out)".into())
    })?;
    let time = |s: &str, default: Nanos| match s.trim() {
        "" => Ok(default),
        t => parse_time(t).map_err(bad),
    };
    let window = time(a, 0)?..time(b, Nanos::MAX)?;
    if window.start >= window.end {
        return Err(bad("the window must end after it starts".into()));
    }
    for (v, spec) in variants.iter().zip(specs) {
        let ms = spec.duration as f64 / 1e6;
        let vname = v.as_deref().unwrap_or("base");
        if window.start >= spec.duration {
            return Err(bad(format!(
                "starts at or after the run's end ({vname}: duration {ms} ms)"
            )));
        }
        if window.end != Nanos::MAX && window.end > spec.duration {
            return Err(bad(format!(
                "ends after the run ({vname}: duration {ms} ms); leave the end out for the rest of the run"
            )));
        }
    }
    Ok(window)
}

/// A time from the run's start: a number with a unit (`ns`, `us`, `ms`,
/// `s`; `1.5ms`, exact to the ns), or `0`.
fn parse_time(s: &str) -> Result<Nanos, String> {
    let number = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(number);
    let scale: u64 = match unit.trim() {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" if n.chars().all(|c| c == '0') && !n.is_empty() => 1,
        "" => return Err(format!("`{s}` needs a unit: ns, us, ms or s")),
        u => return Err(format!("unknown unit `{u}` in `{s}`; use ns, us, ms or s")),
    };
    let (int, frac) = n.split_once('.').unwrap_or((n, ""));
    let not_a_time = || format!("`{s}` is not a time such as 10ms");
    let int: u64 = int.parse().map_err(|_| not_a_time())?;
    // The fraction in ns: its digits scaled, which must leave no remainder.
    let mut frac_ns = 0u64;
    let mut place = scale;
    for d in frac.bytes() {
        if !d.is_ascii_digit() {
            return Err(not_a_time());
        }
        if !place.is_multiple_of(10) && d != b'0' {
            return Err(format!("`{s}` is finer than a nanosecond"));
        }
        place /= 10;
        frac_ns += u64::from(d - b'0') * place;
    }
    int.checked_mul(scale)
        .and_then(|ns| ns.checked_add(frac_ns))
        .ok_or_else(|| format!("`{s}` is beyond 2^64 ns"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_are_exact_and_short() {
        let us = |ns| {
            let mut s = String::new();
            push_us(&mut s, ns);
            s
        };
        assert_eq!(us(0), "0");
        assert_eq!(us(7_000), "7");
        assert_eq!(us(1_234_500), "1234.5");
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(1), "0.001");
        assert_eq!(us(u64::MAX), "18446744073709551.615");
    }

    #[test]
    fn times_take_a_unit() {
        assert_eq!(parse_time("10ms"), Ok(10_000_000));
        assert_eq!(parse_time("3us"), Ok(3_000));
        assert_eq!(parse_time("2s"), Ok(2_000_000_000));
        assert_eq!(parse_time("0"), Ok(0));
        assert_eq!(parse_time("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_time("0.000001ms"), Ok(1));
        assert_eq!(parse_time("2.50us"), Ok(2_500));
        assert!(parse_time("10").unwrap_err().contains("needs a unit"));
        assert!(parse_time("1.5ns").unwrap_err().contains("finer than"));
        assert!(parse_time("1..5ms").is_err());
        assert!(parse_time(".ms").is_err());
        assert!(parse_time("3 weeks").unwrap_err().contains("unknown unit"));
        assert!(parse_time("ms").is_err());
        assert!(parse_time("99999999999s").unwrap_err().contains("2^64"));
    }

    #[test]
    fn gzip_is_the_same_bytes_every_time_and_round_trips() {
        use std::io::Read;
        let text = b"{\"traceEvents\":[]}\n".repeat(100);
        let (a, b) = (gzip(&text), gzip(&text));
        assert_eq!(a, b);
        assert_eq!(&a[4..8], &[0, 0, 0, 0], "no modification time");
        assert_eq!(a[3] & 0x08, 0, "no file name");
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&a[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, text);
    }
}
