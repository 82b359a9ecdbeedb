//! CPU lists as the kernel writes them (`0-3,8`, `cpus = [0, 2]`), checked
//! against the machine.

use smpsim_machine::CpuId;

use crate::error::{DResult, Diag, Sources};
use crate::raw::{RawCpus, S};

/// Parses a CPU list against a machine of `nr` CPUs.
pub(super) fn cpus(srcs: &Sources, v: Option<&S<RawCpus>>, nr: usize) -> DResult<Vec<CpuId>> {
    let all = || (0..nr as CpuId).collect();
    let Some(v) = v else { return Ok(all()) };
    let mut out: Vec<(i64, std::ops::Range<usize>)> = Vec::new();
    match v.get_ref() {
        RawCpus::List(items) => {
            for i in items {
                out.push((*i.get_ref(), i.span()));
            }
        }
        RawCpus::Text(t) if t.trim() == "all" => return Ok(all()),
        RawCpus::Text(t) => cpu_list(srcs, v.span(), t, &mut out)?,
    }
    if out.is_empty() {
        return Err(Diag::new(v.span(), "the CPU list is empty"));
    }
    let mut seen = vec![false; nr];
    let mut cpus = Vec::with_capacity(out.len());
    for (c, span) in out {
        if c < 0 || c as u64 >= nr as u64 {
            return Err(Diag::new(
                span,
                format!("CPU {c} does not exist: the machine has CPUs 0-{}", nr - 1),
            ));
        }
        if std::mem::replace(&mut seen[c as usize], true) {
            return Err(Diag::new(span, format!("CPU {c} is listed twice")));
        }
        cpus.push(c as CpuId);
    }
    Ok(cpus)
}

/// A CPU list string such as `"0,2,4-7"`, written at `span`: its CPUs,
/// each with the span of the piece naming it, appended to `out`.
pub(super) fn cpu_list(
    srcs: &Sources,
    span: std::ops::Range<usize>,
    t: &str,
    out: &mut Vec<(i64, std::ops::Range<usize>)>,
) -> DResult<()> {
    let err = |r: std::ops::Range<usize>, m: String| Diag::new(srcs.sub_span(&span, t, r), m);
    let mut at = 0;
    for piece in t.split(',') {
        let range = at..at + piece.len();
        at += piece.len() + 1;
        let num = |s: &str| s.trim().parse::<i64>().ok();
        let (lo, hi) = match piece.split_once('-') {
            Some((a, b)) => (num(a), num(b)),
            None => (num(piece), num(piece)),
        };
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Err(err(
                range,
                format!(
                    "expected a CPU number or range such as `4-7`, found `{}`",
                    piece.trim()
                ),
            )
            .help("write \"all\", \"0-15\", \"0,2,4-7\" or an array of CPU numbers"));
        };
        if lo > hi {
            return Err(err(
                range,
                format!("CPU range `{}` is backwards", piece.trim()),
            ));
        }
        if hi - lo >= 1 << 21 {
            return Err(err(range, "CPU range is too large".into()));
        }
        for c in lo..=hi {
            out.push((c, srcs.sub_span(&span, t, range.clone())));
        }
    }
    Ok(())
}
