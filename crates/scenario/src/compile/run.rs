//! `[scenario]`: what is simulated, for how long, from which seed.

use smpsim_engine::Nanos;
use smpsim_kernel::program::MAX_SPAN;

use super::durations::Durations;
use crate::error::{DResult, Diag};
use crate::raw::{RawScenario, S};

/// Upper bound on `replicas`: each one is a whole simulation.
pub(super) const MAX_REPLICAS: u32 = 100_000;

/// `[scenario] replicas`: how many independent runs are merged.
pub(super) fn replicas(v: &Option<S<i64>>) -> DResult<u32> {
    let Some(v) = v else { return Ok(1) };
    match u32::try_from(*v.get_ref()) {
        Ok(n) if (1..=MAX_REPLICAS).contains(&n) => Ok(n),
        _ => Err(Diag::new(
            v.span(),
            format!(
                "`replicas` must be between 1 and {MAX_REPLICAS}, not {}",
                v.get_ref()
            ),
        )),
    }
}

/// Default bound on the tasks of a scenario, all groups together: every
/// task holds its state (about 400 bytes) for the whole run, so a few
/// lines of TOML must not ask for gigabytes. Two per CPU of the largest
/// machine (1,048,576 CPUs), about 0.8 GB.
pub const DEFAULT_MAX_TASKS: u64 = 1 << 21;
/// Default bound on the kernel objects of a scenario, counted by instance
/// (a `per_cpu` object is one per CPU): four per CPU of the largest machine.
pub const DEFAULT_MAX_OBJECTS: u64 = 1 << 22;

/// `[scenario]`: what is simulated for how long.
pub(super) struct Run {
    pub duration: Nanos,
    pub warmup: Nanos,
    pub seed: u64,
    pub max_events: Option<u64>,
    pub replicas: u32,
    /// Bounds on all tasks and all object instances (`max_tasks`,
    /// `max_objects`), and the span of the key that set each, if any.
    pub max_tasks: Bound,
    pub max_objects: Bound,
}

/// A `[scenario]` bound: its value, and where it was given (if it was).
pub(super) struct Bound {
    pub value: u64,
    pub key: &'static str,
}

fn bound(v: &Option<S<i64>>, key: &'static str, default: u64) -> DResult<Bound> {
    let value = match v {
        None => default,
        Some(v) => match u64::try_from(*v.get_ref()) {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(Diag::new(
                    v.span(),
                    format!("`{key}` must be a positive number, not {}", v.get_ref()),
                ))
            }
        },
    };
    Ok(Bound { value, key })
}

pub(super) fn run(sc: &RawScenario, dur: &Durations<'_>) -> DResult<Run> {
    let duration = dur.get(&sc.duration)?;
    if duration == 0 {
        return Err(Diag::new(
            sc.duration.span(),
            "`duration` must be greater than zero",
        ));
    }
    if duration > MAX_SPAN {
        return Err(Diag::new(
            sc.duration.span(),
            format!("`duration` is longer than a run can be ({MAX_SPAN}ns, about 36 years)"),
        ));
    }
    let max_events = match &sc.max_events {
        None => None,
        Some(v) if *v.get_ref() > 0 => Some(*v.get_ref() as u64),
        Some(v) => {
            return Err(Diag::new(
                v.span(),
                "`max_events` must be a positive number of events",
            ))
        }
    };
    let replicas = replicas(&sc.replicas)?;
    let warmup = dur.opt(&sc.warmup, 0)?;
    if warmup >= duration {
        let warmup_text = sc.warmup.as_ref().map_or("0s", |w| w.get_ref().as_str());
        let message = format!(
            "`warmup` ({warmup_text}) must be shorter than `duration` ({})",
            sc.duration.get_ref()
        );
        let warmup_set = sc
            .warmup
            .as_ref()
            .is_some_and(|w| dur.srcs.set_key(&w.span()).is_some());
        if let Some(key) = dur
            .srcs
            .set_key(&sc.duration.span())
            .filter(|_| !warmup_set)
        {
            // A shorter run asked for on the command line: say what else to set.
            let warmup_key = match key.strip_suffix("duration") {
                Some(prefix) => format!("{prefix}warmup"),
                None => "scenario.warmup".to_string(),
            };
            return Err(Diag::new(sc.duration.span(), message).help(format!(
                "the scenario's warm-up is {warmup_text}; shorten it too, e.g. `--set {warmup_key}=0s`"
            )));
        }
        let at = sc.warmup.as_ref().map_or(sc.duration.span(), |w| w.span());
        return Err(Diag::new(at, message));
    }
    let seed = match &sc.seed {
        None => 1,
        Some(s) => u64::try_from(*s.get_ref())
            .map_err(|_| Diag::new(s.span(), "`seed` cannot be negative"))?,
    };
    Ok(Run {
        duration,
        warmup,
        seed,
        max_events,
        replicas,
        max_tasks: bound(&sc.max_tasks, "max_tasks", DEFAULT_MAX_TASKS)?,
        max_objects: bound(&sc.max_objects, "max_objects", DEFAULT_MAX_OBJECTS)?,
    })
}
