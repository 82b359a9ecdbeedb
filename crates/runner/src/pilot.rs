//! The pilot cost model: what a simulation will cost, from running its
//! start. A simulated second of 384 CPUs costs thousands of times one of
//! 16, and a reproduction mixes both, so the progress and the job pool
//! weigh each simulation by its pilot's cost per simulated nanosecond.

use std::time::Instant;

/// A pilot of `spec`: the simulated time it plans (all replicas) and its
/// cost per simulated nanosecond, from one replica run for a hundredth of
/// the duration. A pilot that ends early (every task exited) tells the
/// run's real length, which a single replica shares.
pub fn pilot(spec: &smpsim_kernel::Spec) -> (u64, f64) {
    let replicas = spec.replicas.max(1) as u64;
    let mut planned = spec.duration.saturating_mul(replicas);
    let mut s = spec.clone();
    s.replicas = 1;
    s.duration = (spec.duration / 100).max(1);
    s.warmup = s.warmup.min(s.duration / 2);
    s.max_events = spec.max_events.map(|m| (m / 100).max(1));
    let start = Instant::now();
    let r = smpsim_kernel::simulate(&s);
    let wall = start.elapsed().as_secs_f64();
    let reached = r.stats.simulated_ns.max(1);
    if replicas == 1 && reached < s.duration && spec.max_events.is_none() {
        planned = reached;
    }
    (planned, wall / reached as f64)
}

/// A simulation priced by running its own start: the simulated time it
/// plans, its estimated cost per simulated ns, and the simulation stopped
/// where the pilot left it (with what the pilot simulated and its host
/// time), to be run on from there at no cost.
pub struct Piloted<'s> {
    pub planned: u64,
    pub cost_per_ns: f64,
    pub head: (u64, f64),
    pub sim: smpsim_kernel::Simulation<'s>,
}

/// Host time a resumable pilot may spend going on past its horizon.
const PILOT_HOST_BUDGET: f64 = 2.0;

/// How far a resumable pilot runs at least: a hundredth of the run, and past the
/// first period of the run's longest periodic machinery plus five
/// hundredths (a CFS bandwidth pool refills its quota first at one period:
/// from then on the run throttles and unthrottles, and costs what it will
/// cost); at most half the run.
pub fn pilot_horizon(spec: &smpsim_kernel::Spec) -> u64 {
    let step = (spec.duration / 100).max(1);
    let period = spec
        .cgroups
        .iter()
        .filter_map(|c| c.bandwidth.as_ref().map(|b| b.period))
        .max()
        .unwrap_or(0);
    let through_a_period = if period > 0 {
        period.saturating_add(5 * step)
    } else {
        0
    };
    step.max(through_a_period.min(spec.duration / 2))
}

/// Runs the start of `spec` (one replica: `None` for a spec of several,
/// which [`pilot`] prices) to [`pilot_horizon`] in hundredths, and on while
/// it is cheap (see `PILOT_HOST_BUDGET`), and prices
/// the rest at the cost per simulated ns of the pilot's latest steps: what
/// a run costs once under way predicts what is left of it better than its
/// start does.
pub fn pilot_resumable(spec: &smpsim_kernel::Spec) -> Option<Piloted<'_>> {
    if spec.replicas > 1 {
        return None;
    }
    let step = (spec.duration / 100).max(1);
    let horizon = pilot_horizon(spec);
    let mut sim = smpsim_kernel::Simulation::new(spec);
    let start = Instant::now();
    // (simulated time reached, host seconds) after each step.
    let mut steps = vec![(0u64, 0.0f64)];
    let over = loop {
        let over = sim.advance(sim.reached().saturating_add(step));
        let (reached, secs) = (sim.reached(), start.elapsed().as_secs_f64());
        steps.push((reached, secs));
        // Past the horizon, a pilot goes on while it is cheap: up to a
        // quarter of the run within its host budget. Nothing is lost, the
        // run goes on from here; what is gained is a cost measured later
        // in the run, past slow starts the horizon does not know of.
        let cheap = secs < PILOT_HOST_BUDGET && reached < spec.duration / 4;
        if over || (reached >= horizon && !cheap) {
            break over;
        }
    };
    let &(reached, secs) = steps.last().expect("one step at least");
    // The latest steps that took a tenth of the pilot's host time (two at
    // least): the freshest cost.
    let from = steps
        .iter()
        .rposition(|&(_, t)| secs - t >= secs / 10.0)
        .unwrap_or(0)
        .min(steps.len().saturating_sub(3));
    let (r0, t0) = steps[from];
    let cost_per_ns = (secs - t0) / (reached - r0).max(1) as f64;
    let planned = if over && reached < spec.duration {
        // It ended early (every task exited): that is its length.
        reached
    } else {
        spec.duration
    };
    Some(Piloted {
        planned,
        cost_per_ns,
        head: (reached, secs),
        sim,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pilot that is the start of its run: run on from where the pilot
    /// stopped, the result is the run's, to the byte; the pilot goes at
    /// least past the first CFS bandwidth period plus five hundredths.
    #[test]
    fn a_resumable_pilot_is_the_start_of_its_run() {
        use smpsim_kernel::testkit::*;
        let mut s = lock_scaling(
            flat_machine(8),
            "qspinlock",
            Default::default(),
            8,
            1_000,
            5_000,
            20_000_000,
        );
        assert_eq!(pilot_horizon(&s), 200_000);
        s.cgroups.push(smpsim_kernel::CgroupDecl {
            name: "limited".into(),
            parent: None,
            bandwidth: Some(smpsim_kernel::Bandwidth {
                quota: 1_000_000,
                period: 5_000_000,
                phase: 0,
            }),
            generated_descendants: 0,
        });
        assert_eq!(pilot_horizon(&s), 5_000_000 + 5 * 200_000);
        let p = pilot_resumable(&s).expect("one replica");
        assert!(p.head.0 >= pilot_horizon(&s), "{:?}", p.head);
        assert_eq!(p.planned, s.duration);
        assert!(p.cost_per_ns > 0.0);
        let mut sim = p.sim;
        sim.advance(u64::MAX);
        assert_eq!(sim.finish(), smpsim_kernel::simulate(&s));
    }
}
