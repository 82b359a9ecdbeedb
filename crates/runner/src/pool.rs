//! The job pool: simulations registered with the progress (priced by
//! their pilots) and run in parallel, the dearest first; the results come
//! back in the jobs' order, whatever the number of threads.

use std::time::Instant;

use rayon::prelude::*;
use smpsim_report::VariantRun;

use crate::pilot::pilot;
use crate::progress::{Item, Progress};

/// Compiles the variants of a scenario, each spec passed through `adjust`.
pub fn compile_variants(
    scenario: &smpsim_scenario::Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
    adjust: &(dyn Fn(smpsim_kernel::Spec) -> Result<smpsim_kernel::Spec, String> + Sync),
) -> Result<Vec<smpsim_kernel::Spec>, String> {
    variants
        .iter()
        .map(|v| {
            scenario
                .compile(v.as_deref(), sets)
                .map_err(|e| e.to_string())
                .and_then(adjust)
        })
        .collect()
}

/// Registers simulations with `progress`, their costs from pilots run in
/// parallel (none when nothing is shown).
pub fn register(progress: &Progress, specs: &[&smpsim_kernel::Spec]) -> Vec<Item> {
    register_costed(progress, specs)
        .into_iter()
        .map(|(item, _)| item)
        .collect()
}

/// As [`register`], with each simulation's estimated host cost (its pilot's
/// cost per simulated ns times the time it plans; without pilots, the time
/// it plans times its CPUs), for running the dearest first.
pub fn register_costed(progress: &Progress, specs: &[&smpsim_kernel::Spec]) -> Vec<(Item, f64)> {
    let costs: Vec<(u64, f64)> = if progress.quiet() {
        specs
            .iter()
            .map(|s| (s.duration.saturating_mul(s.replicas.max(1) as u64), 1.0))
            .collect()
    } else {
        specs.par_iter().map(|s| pilot(s)).collect()
    };
    costs
        .into_iter()
        .zip(specs)
        .map(|((planned, cost), spec)| {
            let estimate = if progress.quiet() {
                planned as f64 * spec.machine.nr_cpus() as f64
            } else {
                planned as f64 * cost
            };
            let lanes = lanes(spec);
            (
                progress.add_piloted(planned, cost, (0, 0.0), Some(lanes)),
                estimate,
            )
        })
        .collect()
}

/// Runs compiled variants in parallel, reporting to `progress` through
/// their `items`; the results do not depend on the number of threads.
pub fn run_specs(
    scenario: &smpsim_scenario::Scenario,
    variants: &[Option<String>],
    specs: &[smpsim_kernel::Spec],
    progress: &Progress,
    items: &[Item],
) -> Vec<VariantRun> {
    variants
        .par_iter()
        .zip(specs.par_iter())
        .zip(items.par_iter())
        .map(|((v, spec), item)| run_one(scenario, v, spec, progress, item))
        .collect()
}

/// Registers simulations with `progress` as [`register_costed`] does, each
/// priced by a pilot that is its own start where it can be
/// ([`crate::pilot::pilot_resumable`]): the simulation comes back
/// stopped where its pilot left it.
///
/// Quiet or not: the prices order the jobs ([`run_dearest_first`]), and a
/// resumable pilot costs nothing (a replicated spec's pilot, a hundredth
/// of one replica, next to nothing). Without them the order would rank by
/// simulated time times CPUs, which puts 100 replicas of 16 CPUs far
/// ahead of one run of 384 CPUs that costs more than either, and so
/// starts the dearest single run last.
pub fn register_resumable<'s>(
    progress: &Progress,
    specs: &[&'s smpsim_kernel::Spec],
) -> Vec<(Item, f64, Option<smpsim_kernel::Simulation<'s>>)> {
    let piloted: Vec<_> = specs
        .par_iter()
        .map(|s| match crate::pilot::pilot_resumable(s) {
            Some(p) => (p.planned, p.cost_per_ns, p.head, Some(p.sim)),
            None => {
                let (planned, cost) = pilot(s);
                (planned, cost, (0, 0.0), None)
            }
        })
        .collect();
    piloted
        .into_iter()
        .zip(specs)
        .map(|((planned, cost, head, sim), spec)| {
            let left = planned.saturating_sub(head.0) as f64 * cost;
            let item = progress.add_piloted(planned, cost, head, Some(lanes(spec)));
            (item, left, sim)
        })
        .collect()
}

/// Threads a simulation of `spec` can use: its replicas run in parallel.
fn lanes(spec: &smpsim_kernel::Spec) -> u32 {
    spec.replicas
        .max(1)
        .min(rayon::current_num_threads() as u32)
}

/// One simulation of a job list for [`run_dearest_first`].
pub struct Job<'a> {
    pub scenario: &'a smpsim_scenario::Scenario,
    pub variant: &'a Option<String>,
    pub spec: &'a smpsim_kernel::Spec,
    pub item: Item,
    /// Estimated host cost, any unit: only the order matters.
    pub estimate: f64,
    /// The simulation already started by its pilot, if it was.
    pub started: std::sync::Mutex<Option<smpsim_kernel::Simulation<'a>>>,
}

/// Runs every job on the thread pool, the dearest first (longest
/// processing time first: the last job to end is then a short one, and the
/// progress sees the dear runs' real cost early), and returns the results
/// in the jobs' order: what each job computes does not depend on when it
/// ran.
pub fn run_dearest_first(jobs: &[Job], progress: &Progress) -> Vec<VariantRun> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        jobs[b]
            .estimate
            .total_cmp(&jobs[a].estimate)
            .then(a.cmp(&b))
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<VariantRun>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let workers = rayon::current_num_threads().min(jobs.len()).max(1);
    rayon::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|_| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let job = &jobs[i];
                let started = job.started.lock().expect("no panic holding it").take();
                let run = match started {
                    Some(sim) => run_on(job.scenario, job.variant, sim, progress, &job.item),
                    None => run_one(job.scenario, job.variant, job.spec, progress, &job.item),
                };
                *slots[i].lock().expect("no panic holding it") = Some(run);
            });
        }
    });
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .expect("no panic holding it")
                .expect("every job ran")
        })
        .collect()
}

/// Runs a simulation its pilot started to its end, in hundredths of its
/// duration for the progress.
fn run_on(
    scenario: &smpsim_scenario::Scenario,
    v: &Option<String>,
    mut sim: smpsim_kernel::Simulation,
    progress: &Progress,
    item: &Item,
) -> VariantRun {
    progress.start(item);
    let start = Instant::now();
    let step = (sim.duration() / 100).max(1);
    loop {
        let was = sim.reached();
        let over = sim.advance(was.saturating_add(step));
        item.reached
            .fetch_add(sim.reached() - was, std::sync::atomic::Ordering::Relaxed);
        if over {
            break;
        }
    }
    let mut result = sim.finish();
    result.stats.wall_seconds = start.elapsed().as_secs_f64();
    progress.finish(item);
    variant_run(scenario, v, result)
}

/// A variant's result with its name and the scenario's description of it.
pub fn variant_run(
    scenario: &smpsim_scenario::Scenario,
    v: &Option<String>,
    result: smpsim_kernel::RunResult,
) -> VariantRun {
    let description = v
        .as_ref()
        .and_then(|name| scenario.variants.iter().find(|x| &x.name == name))
        .map(|x| x.description.clone())
        .unwrap_or_else(|| "base scenario".into());
    VariantRun {
        variant: v.clone().unwrap_or_else(|| "base".into()),
        description,
        result,
    }
}

fn run_one(
    scenario: &smpsim_scenario::Scenario,
    v: &Option<String>,
    spec: &smpsim_kernel::Spec,
    progress: &Progress,
    item: &Item,
) -> VariantRun {
    progress.start(item);
    let start = Instant::now();
    let mut result = smpsim_kernel::simulate_with_progress(spec, &item.reached);
    result.stats.wall_seconds = start.elapsed().as_secs_f64();
    progress.finish(item);
    variant_run(scenario, v, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Quiet, the jobs are still priced by pilots (the order of the pool
    /// depends on it): a single run comes back started by its pilot, a
    /// replicated one priced by a separate pilot.
    #[test]
    fn quiet_runs_are_priced_by_their_pilots() {
        use smpsim_kernel::testkit::*;
        let single = lock_scaling(
            flat_machine(8),
            "qspinlock",
            Default::default(),
            8,
            1_000,
            5_000,
            2_000_000,
        );
        let mut replicated = single.clone();
        replicated.replicas = 4;
        let progress = Progress::new("test", "runs", true);
        let priced = register_resumable(&progress, &[&single, &replicated]);
        assert!(priced[0].2.is_some(), "the single run starts in its pilot");
        assert!(priced[1].2.is_none());
        for (_, estimate, _) in &priced {
            // A pilot's price is in host seconds; the stand-in it replaced
            // (simulated ns x CPUs) would be 1.6e7 and more here.
            assert!(*estimate < 1e3, "{estimate}");
        }
    }
}
