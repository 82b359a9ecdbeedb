//! `[[cgroup]]`: the cgroup tree and its CPU bandwidth (`cpu.max`,
//! `cpu.max.burst`).

use smpsim_engine::Nanos;
use smpsim_kernel::{Bandwidth, CgroupDecl};

use super::durations::Durations;
use crate::error::{list, DResult, Diag};
use crate::raw::{RawCgroup, RawCpuMax, RawGenerate, S};

/// `[[cgroup]]`, in order: a parent comes before its children.
pub(super) fn cgroups(dur: &Durations<'_>, raw: &[S<RawCgroup>]) -> DResult<Vec<CgroupDecl>> {
    let mut cgroups: Vec<CgroupDecl> = Vec::new();
    for cg in raw {
        let c = cgroup(dur, cg.get_ref(), &cgroups)?;
        cgroups.push(c);
    }
    Ok(cgroups)
}

/// Each cgroup's `cpu_max.burst` (`cpu.max.burst`), by index; empty if
/// none has one. `tg_set_cfs_bandwidth()` refuses a burst above the quota.
pub(super) fn bursts(
    dur: &Durations<'_>,
    raw: &[S<RawCgroup>],
    cgroups: &[CgroupDecl],
) -> DResult<Vec<Nanos>> {
    let mut out = vec![0; raw.len()];
    for (i, cg) in raw.iter().enumerate() {
        let Some(m) = &cg.get_ref().cpu_max else {
            continue;
        };
        let Some(b) = &m.get_ref().burst else {
            continue;
        };
        let burst = dur.get(b)?;
        let quota = cgroups[i].bandwidth.map_or(0, |bw| bw.quota);
        if burst > quota {
            return Err(Diag::new(
                b.span(),
                "`burst` cannot be more than `quota` (the kernel's cpu.max.burst refuses it with -EINVAL)",
            ));
        }
        out[i] = burst;
    }
    if out.iter().all(|&b| b == 0) {
        out.clear();
    }
    Ok(out)
}

pub(super) fn cgroup(
    dur: &Durations<'_>,
    c: &RawCgroup,
    earlier: &[CgroupDecl],
) -> DResult<CgroupDecl> {
    let name = c.name.get_ref();
    if earlier.iter().any(|g| &g.name == name) {
        return Err(Diag::new(
            c.name.span(),
            format!("a cgroup named `{name}` is already declared"),
        ));
    }
    let parent = match &c.parent {
        None => None,
        Some(p) => Some(
            earlier
                .iter()
                .position(|g| &g.name == p.get_ref())
                .ok_or_else(|| {
                    Diag::new(p.span(), format!("unknown parent cgroup `{}`", p.get_ref())).help(
                        format!(
                            "a parent must be declared before its children; declared so far: {}",
                            list(earlier.iter().map(|g| &g.name))
                        ),
                    )
                })?,
        ),
    };
    let bandwidth = match &c.cpu_max {
        None => None,
        Some(m) => Some(bandwidth(dur, m.get_ref())?),
    };
    let generated_descendants = match &c.generate {
        None => 0,
        Some(g) => generated_descendants(g.get_ref())?,
    };
    Ok(CgroupDecl {
        name: name.clone(),
        parent,
        bandwidth,
        generated_descendants,
    })
}

/// A cgroup's `cpu_max`.
pub(super) fn bandwidth(dur: &Durations<'_>, m: &RawCpuMax) -> DResult<Bandwidth> {
    let quota = dur.get(&m.quota)?;
    let period = dur.get(&m.period)?;
    if quota == 0 {
        return Err(Diag::new(
            m.quota.span(),
            "`quota` must be greater than zero",
        ));
    }
    if period == 0 {
        return Err(Diag::new(
            m.period.span(),
            "`period` must be greater than zero",
        ));
    }
    let phase = match &m.phase {
        None => 0,
        Some(p) => {
            let phase = dur.get(p)?;
            if phase >= period {
                return Err(
                    Diag::new(p.span(), "`phase` must be less than `period`").help(
                        "the period timer fires at `phase`, then every `period`: \
                     write the phase modulo the period",
                    ),
                );
            }
            phase
        }
    };
    Ok(Bandwidth {
        quota,
        period,
        phase,
    })
}

/// How many descendants a cgroup's `generate` makes.
pub(super) fn generated_descendants(g: &RawGenerate) -> DResult<u64> {
    let children = u64::try_from(*g.children.get_ref())
        .map_err(|_| Diag::new(g.children.span(), "`children` cannot be negative"))?;
    let depth = match &g.depth {
        None => 0,
        Some(d) => u64::try_from(*d.get_ref())
            .map_err(|_| Diag::new(d.span(), "`depth` cannot be negative"))?,
    };
    children
        .checked_mul(depth + 1)
        .filter(|n| *n <= 1 << 40)
        .ok_or_else(|| Diag::new(g.children.span(), "too many generated cgroups"))
}
