//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
pub use smpsim_report::format::{ReportFormat, ReproduceFormat, RunFormat, SweepFormat};
pub use smpsim_report::plot::{Format as PlotFormat, Kind as PlotKind};

/// Bounds of the numeric options: each refused beyond with clap's error
/// (exit 2), before anything is allocated or run.
mod bounds {
    /// A host test's length: up to a day.
    pub const MAX_SECONDS: f64 = 86_400.0;
    /// `bench --millis`: simulated milliseconds per point, up to an hour.
    pub const MAX_BENCH_MILLIS: u64 = 3_600_000;
    /// The most CPUs a machine has.
    pub const MAX_CPUS: u32 = 1 << 20;

    /// Seconds: a finite number above 0, at most [`MAX_SECONDS`].
    pub fn seconds(s: &str) -> Result<f64, String> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number of seconds"))?;
        if v.is_finite() && v > 0.0 && v <= MAX_SECONDS {
            Ok(v)
        } else {
            Err(format!(
                "{s} seconds: give a number above 0 and at most {MAX_SECONDS} (a day)"
            ))
        }
    }

    /// A finite number (a plot's x value).
    pub fn finite(s: &str) -> Result<f64, String> {
        match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("`{s}` is not a finite number")),
        }
    }
}

#[derive(Parser)]
#[command(
    name = "smpsim",
    version,
    about = "Simulate Linux kernel SMP synchronization on large machines"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a scenario; with several variants, print them side by side.
    Run(RunArgs),
    /// Reproduce the published seed cases, simulated next to the published figures.
    Reproduce(ReproduceArgs),
    /// Run the cross product of CPU counts, variants, settings and seeds
    /// into a resumable JSON Lines file.
    Sweep(SweepArgs),
    /// Plot a sweep's results as SVG.
    Plot(PlotArgs),
    /// A sweep's results as one self-contained HTML page (or CSV, or LKML
    /// text).
    Report(ReportArgs),
    /// Measure the engine's speed (model events per second).
    Bench(BenchArgs),
    /// Show a machine preset with the source of every cost.
    Machine(MachineArgs),
    /// Real stress tests on this host's kernel: list, run, compare.
    Host(HostArgs),
    /// Measure this host's costs into a machine profile (TOML).
    Calibrate(CalibrateArgs),
    /// Rewrite a scenario's code paths as C-like text (or back to TOML
    /// arrays of ops), checking that the program IR stays the same.
    Fmt(FmtArgs),
}

#[derive(clap::Args)]
pub struct FmtArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// The form to write code paths in.
    #[arg(long, value_enum, default_value_t = CodeForm::Code)]
    pub to: CodeForm,
    /// Rewrite the file in place instead of printing it.
    #[arg(long, short = 'w')]
    pub write: bool,
    /// Let the scenario also read files under DIR (an `include` or a
    /// machine `profile` outside the scenario's own directory, which is
    /// all it may read otherwise); repeatable.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CodeForm {
    /// `code = '''...'''`: statements in C call syntax.
    Code,
    /// `code = [ { op = "...", ... } ]` (comments inside code are dropped).
    Toml,
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// Scenario file (TOML).
    #[arg(required = true)]
    pub scenario: Option<PathBuf>,
    /// CPU counts: a list (`1,2,4,8`) or a range (`1..384:x2`, `2..16:+2`);
    /// each restricts every task group to CPUs 0..N.
    #[arg(long)]
    pub cpus: Option<String>,
    /// Variant (repeatable; default: every variant).
    #[arg(long = "variant", short = 'v')]
    pub variants: Vec<String>,
    /// KEY=V1,V2,...: a scenario value and the values it takes (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUES")]
    pub sets: Vec<String>,
    /// The machine preset every point runs on (`smpsim machine` lists
    /// them); the same as `--set machine.preset=NAME`.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Seeds per point (scenario seed, seed+1, ...).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
    /// Each point's counter rates and histogram p99s with their bands
    /// (`band` in the point's line): seeds, assumed values over their
    /// ranges, the model's stated error; about twice the sweep's time.
    #[arg(long)]
    pub band: bool,
    #[command(flatten)]
    pub band_size: BandSize,
    /// The JSON Lines file the points stream to; an existing one is resumed.
    #[arg(long, short = 'o', required = true)]
    pub output: Option<PathBuf>,
    /// Run only shard K of N (1 <= K <= N): the points whose index in the
    /// sweep's fixed order is K-1 modulo N, the same on every machine.
    /// `sweep merge` joins the shards' files into the whole sweep's.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Also print the results on stdout once every point is in.
    #[arg(long, value_enum)]
    pub format: Option<SweepFormat>,
    /// No progress or summary on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Let the scenario also read files under DIR (an `include` or a
    /// machine `profile` outside the scenario's own directory, which is
    /// all it may read otherwise); repeatable.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
}

#[derive(Subcommand)]
pub enum SweepCommand {
    /// Join the results files of a sharded sweep (`--shard K/N`) into the
    /// file the whole sweep writes on one machine, byte for byte; refuses
    /// files of different scenarios or sweeps, and points in two files.
    Merge(MergeArgs),
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The shards' results files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The merged file (written atomically).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// Merge even if points of the sweep are missing (a shard not given
    /// or not finished); without it such a merge is refused.
    #[arg(long)]
    pub partial: bool,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A results file written by `sweep`.
    pub results: PathBuf,
    /// The file to write (atomically); stdout if not given.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
}

#[derive(clap::Args)]
pub struct PlotArgs {
    /// A results file written by `sweep`.
    pub results: PathBuf,
    /// The x axis: `cpus`, `seed`, or a swept setting's key.
    #[arg(long, default_value = "cpus")]
    pub x: String,
    /// The y axis: `counter.NAME.rate`, `counter.NAME.count`,
    /// `histogram.NAME.p50` (or p90, p99, mean, max).
    #[arg(long, default_value = "")]
    pub y: String,
    /// One curve per value of: `variant` (default), or a setting's key.
    #[arg(long, default_value = "variant")]
    pub by: String,
    /// `scaling`: the y value against x, mean over seeds with error bars.
    /// `percentiles`: a latency histogram's tail (`--y histogram.NAME`):
    /// p50, p90, p99, p99.9 and max on a log scale, one curve per series,
    /// over the points at `--at`. `cputime`: where the CPUs' time went
    /// (user, sys, spin, irq, idle), a stacked bar per series. `heatmap`:
    /// the longest preempt-off (`--y irq_off`: IRQ-off) section of each
    /// CPU in each window, a panel per series (a point at `--at` with a
    /// section; without `--at`, the largest swept x that has one).
    #[arg(long, value_enum, default_value_t = PlotKind::Scaling)]
    pub kind: PlotKind,
    /// With `--kind percentiles`, `cputime` or `heatmap`: the x value whose
    /// points (seeds) are drawn (e.g. `--x cpus --at 16`); default: the
    /// largest swept, which the caption says.
    #[arg(long, value_parser = bounds::finite)]
    pub at: Option<f64>,
    /// With `--kind scaling` of a rate: leave out the dashed ideal-scaling
    /// line (each curve's first point, scaled linearly with x).
    #[arg(long)]
    pub no_ideal: bool,
    /// With `--kind scaling` and `--x cpus`: each y divided by the CPU
    /// count, will-it-scale's per-task plot (its tasks are one per CPU);
    /// the ideal line is then flat at the first point's rate.
    #[arg(long)]
    pub per_task: bool,
    /// The file to write: the plot as SVG, as PNG (`--format png`, or a
    /// name ending in `.png`), or (`--format csv`) its data, one row per
    /// series and x: mean, min and max over seeds. `-` is stdout, where
    /// `--format csv` goes without `-o`; an SVG or PNG needs `-o`.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = PlotFormat::Svg)]
    pub format: PlotFormat,
}

#[derive(clap::Args)]
pub struct HostArgs {
    #[command(subcommand)]
    pub command: HostCommand,
}

#[derive(Subcommand)]
pub enum HostCommand {
    /// Which tests can run here, and why not.
    List {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run one test against the running kernel.
    Run(HostRunArgs),
    /// Run a test for real and as a simulation on a calibrated profile.
    Compare(HostCompareArgs),
}

#[derive(clap::Args, Clone)]
pub struct HostRunArgs {
    /// membarrier, ipi-latency, mutex-readers, hotplug or ctxswitch.
    pub test: String,
    /// How long the test runs.
    #[arg(long, default_value_t = 3.0, value_parser = bounds::seconds)]
    pub seconds: f64,
    /// Allow the hotplug test to take CPUs offline (they are brought back).
    #[arg(long)]
    pub allow_hotplug: bool,
    /// Concurrent readers (mutex-readers).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub readers: u32,
    /// Throttled cgroup tree for the membarrier burners: CHILDRENxDEPTH.
    #[arg(long, value_name = "CxD")]
    pub cgroup: Option<String>,
    /// Latency window (ipi-latency), seconds.
    #[arg(long, default_value_t = 1.0, value_parser = bounds::seconds)]
    pub window: f64,
    /// Offline/online repetitions (hotplug).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub reps: u32,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct HostCompareArgs {
    /// membarrier, ctxswitch or ipi-latency.
    pub test: String,
    /// A profile from `smpsim calibrate` (default: calibrate now, into a
    /// temporary file removed at exit).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Keep the profile calibrated now in this file.
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub profile_out: Option<PathBuf>,
    #[arg(long, default_value_t = 3.0, value_parser = bounds::seconds)]
    pub seconds: f64,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// Where to write the profile (with --contention: the rows).
    #[arg(
        long,
        short = 'o',
        default_value = "host-profile.toml",
        default_value_if("contention", "true", "host-contention.csv")
    )]
    pub output: PathBuf,
    /// The profile's machine name (with --contention: the rows' machine id).
    #[arg(long, default_value = "host")]
    pub name: String,
    /// Measure this host's contended one-line curves and idle transfers
    /// instead, as rows of data/contention's curves.csv and idle.csv
    /// (docs/contention.md).
    #[arg(long)]
    pub contention: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Format {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Variant to run (repeatable; default: every variant, or the base if none).
    #[arg(long = "variant", short = 'v')]
    pub variants: Vec<String>,
    /// Override a scenario value: KEY=VALUE with a dotted KEY (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Seed (overrides scenario.seed).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Also write every CPU's timeline (first replica) as a Chrome/Perfetto
    /// trace-event JSON file (open it in ui.perfetto.dev or chrome://tracing);
    /// gzipped if FILE ends in .gz.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Most segments recorded per variant in a trace.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..=u32::MAX as u64))]
    pub trace_limit: u64,
    /// Trace only this part of the run: START..END from the run's start
    /// (10ms..12ms; either end may be left out).
    #[arg(long, value_name = "START..END", requires = "trace")]
    pub trace_window: Option<String>,
    /// Explore N seeds (seed, seed+1, ...) in parallel and report which
    /// ones made a detector fire, with the command that replays each.
    #[arg(long, value_name = "N")]
    pub seeds: Option<u64>,
    /// Explore N perturbed schedules (random delays before shared-state
    /// ops) in parallel; shrink the first that makes a detector fire and
    /// print the command that replays it.
    #[arg(long, value_name = "N")]
    pub explore: Option<u64>,
    /// The largest delay an explored schedule inserts.
    #[arg(long, value_name = "DURATION", default_value = "10us")]
    pub explore_delay: String,
    /// With --explore: run every schedule, not only up to the first failure.
    #[arg(long)]
    pub keep_going: bool,
    /// Replay one explored schedule, as `--explore` prints it: K:I,J,...
    #[arg(long, value_name = "K:DELAYS")]
    pub schedule: Option<String>,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Each counter's rate (and, with several variants, each later
    /// variant's over the first) with its band: seeds, assumed values over
    /// their ranges, the model's stated error (text and json).
    #[arg(long)]
    pub band: bool,
    #[command(flatten)]
    pub band_size: BandSize,
    /// Also print the per-CPU rows in text (each CPU's preempt-off
    /// windows, the CPUs with sections over 1 ms); off by default.
    #[arg(long)]
    pub per_cpu: bool,
    /// `lkml`: 72-column before/after text (with `--seeds`, means and
    /// `±N%` over them); `csv`: the per-window series
    /// (longest preempt-off and IRQ-off section per CPU and window).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Let the scenario also read files under DIR (an `include` or a
    /// machine `profile` outside the scenario's own directory, which is
    /// all it may read otherwise); repeatable.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct ReproduceArgs {
    /// Cases to run (default: all). `list` prints them.
    pub cases: Vec<String>,
    /// Short runs (the case's `quick` overrides) for CI and a first look.
    #[arg(long)]
    pub quick: bool,
    /// Number of seeds per variant (overrides the case's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub seeds: Option<u32>,
    /// `lkml`: 72-column published / %change / simulated text.
    #[arg(long, value_enum, default_value_t = ReproduceFormat::Text)]
    pub format: ReproduceFormat,
    /// Exit with status 1 if any metric misses its pass rule.
    #[arg(long)]
    pub check: bool,
    /// Also print the per-CPU rows of each case's runs in text (each CPU's
    /// preempt-off windows, the CPUs with sections over 1 ms).
    #[arg(long)]
    pub per_cpu: bool,
    /// Override a value in every case's scenario (for sensitivity sweeps).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Also write a self-contained HTML report (table, plots, machine,
    /// assumed values, lock_stat, findings) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Directory holding the scenario files (default: ./scenarios).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Leave out each figure's band (seeds, assumed values over their
    /// ranges, the model's stated error), which is on by default.
    #[arg(long)]
    pub no_band: bool,
    #[command(flatten)]
    pub band_size: BandSize,
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Let the scenario also read files under DIR (an `include` or a
    /// machine `profile` outside the scenario's own directory, which is
    /// all it may read otherwise); repeatable.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// CPU counts of the global-mutex benchmark.
    #[arg(long, value_delimiter = ',', default_values_t = vec![16, 384, 4096],
          value_parser = clap::value_parser!(u32).range(1..=bounds::MAX_CPUS as i64))]
    pub cpus: Vec<u32>,
    /// Simulated milliseconds per benchmark point.
    #[arg(long, default_value_t = 200,
          value_parser = clap::value_parser!(u64).range(1..=bounds::MAX_BENCH_MILLIS))]
    pub millis: u64,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(clap::Args)]
pub struct MachineArgs {
    /// Preset name (omit to list them).
    pub name: Option<String>,
}

/// How big a band's design may be (with `--band`, or `reproduce`'s bands).
#[derive(Args, Debug, Clone)]
pub struct BandSize {
    /// The band's design runs cost about X times the nominal run (they are
    /// shortened to fit, down to 1/40 of its length): larger is slower and
    /// narrows the seeds' part a short run inflates.
    #[arg(long, value_name = "X", default_value_t = 0.75, value_parser = positive_factor)]
    pub band_budget: f64,
    /// At most N design points (each runs every variant); the assumed
    /// values past the cap are not varied, and the band's note names them.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(8..=4096))]
    pub band_points: u64,
}

impl BandSize {
    pub fn options(&self) -> smpsim_runner::band::Options {
        smpsim_runner::band::Options {
            budget: self.band_budget,
            max_points: self.band_points as usize,
            ..Default::default()
        }
    }
}

/// A finite factor above 0 and at most 100.
fn positive_factor(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if x.is_finite() && x > 0.0 && x <= 100.0 {
        Ok(x)
    } else {
        Err(format!("`{s}`: give a factor above 0 and at most 100"))
    }
}
