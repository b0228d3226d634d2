//! `iolab run [TARGET]`: a suite, a profile, a spec file or one custom workload on a directory,
//! file or block device.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

mod suite;

pub(in crate::cli) use suite::suite_err;
use suite::verify_one_size;
pub use suite::{apply_fio_job, build_suite};

use super::{Context, EXIT_INTERRUPTED, usage};
use crate::runner::suite::{SuiteOptions, VerifyMode};
use crate::spec::{EngineKind, RawWorkload};
use crate::target::TargetRequest;

/// Run a suite, a profile, a spec file or one custom workload.
///
/// With no flags: the default suite (sequential 1 MiB write/read, 4k random read at QD 1 and 32,
/// 4k random write at QD 32, 70/30 8k mix at QD 32, 4k writes with fdatasync each), 3 trials
/// each, on a temporary directory under the current one. Give `--pattern` to run one workload
/// of your own; other workload flags override every workload of the suite.
#[derive(clap::Args, Debug, Default)]
#[command(
    after_help = "Sizes take k/M/G/T (binary, 4k = 4096) or kB/MB/GB/TB (decimal); times take ms/s/m/h.\n\
Examples:\n  iolab run                                   default suite, ~1 minute\n  iolab run --quick /mnt/pool                 ~15 s smoke test\n  iolab run /mnt/x --pattern randread --bs 8k --qd 128 --threads 2 --time 30s\n  iolab run /dev/sdb                          reads only; writes need --destroy /dev/sdb"
)]
pub struct RunArgs {
    /// Directory (a test file is made in it), regular file, or block device. Default: a
    /// temporary directory under the current one, removed afterwards.
    pub target: Option<PathBuf>,

    /// Built-in profile (see `iolab profiles`).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["spec", "quick"])]
    pub profile: Option<String>,
    /// Short for `--profile quick` (about 15 s, one trial).
    #[arg(long)]
    pub quick: bool,
    /// A spec file (TOML list of workloads).
    #[arg(long, value_name = "FILE", conflicts_with = "quick")]
    pub spec: Option<PathBuf>,
    /// A fio job file: its jobs run as iolab workloads (see docs/fio.md).
    #[arg(long, value_name = "FILE.fio", conflicts_with_all = ["spec", "profile", "quick"])]
    pub fio_job: Option<PathBuf>,
    /// With --fio-job: skip options iolab does not support (kept in the run's note).
    #[arg(long, requires = "fio_job")]
    pub lenient: bool,
    /// Fraction of a full-size profile (`mail`: 1 is bonnie++ -n 128:25000:500:16, 131072 files;
    /// default 1/32 = 4096 files, about a minute).
    #[arg(long, value_name = "FRACTION")]
    pub scale: Option<f64>,

    /// One custom workload: read, write, randread, randwrite, randrw, smallfile, cached-read.
    #[arg(long, help_heading = "Workload", conflicts_with_all = ["profile", "spec", "quick", "fio_job"])]
    pub pattern: Option<String>,
    /// Name of the custom workload in tables.
    #[arg(long, help_heading = "Workload")]
    pub name: Option<String>,
    /// Block size per IO (e.g. 4k, 1MiB).
    #[arg(long, value_name = "SIZE", help_heading = "Workload")]
    pub bs: Option<String>,
    /// IOs in flight per thread.
    #[arg(long, help_heading = "Workload")]
    pub qd: Option<u32>,
    /// Worker threads.
    #[arg(long, help_heading = "Workload")]
    pub threads: Option<u32>,
    /// Working set (default 1GiB on a directory; the whole device on a device).
    #[arg(long, value_name = "SIZE", help_heading = "Workload")]
    pub size: Option<String>,
    /// Run time per trial, ramp excluded (e.g. 30s, 2m).
    #[arg(long, value_name = "TIME", help_heading = "Workload")]
    pub time: Option<String>,
    /// Stop after this many bytes (all threads together).
    #[arg(long, value_name = "SIZE", help_heading = "Workload")]
    pub io_size: Option<String>,
    /// Warm-up time whose IOs are not counted.
    #[arg(long, value_name = "TIME", help_heading = "Workload")]
    pub ramp: Option<String>,
    /// Go through the page cache (default: O_DIRECT).
    #[arg(long, help_heading = "Workload")]
    pub buffered: bool,
    /// Reads in a randrw mix, percent.
    #[arg(long, value_name = "PCT", help_heading = "Workload")]
    pub read_pct: Option<u32>,
    /// Flush after every N writes.
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub fsync_every: Option<u32>,
    /// Flush once at the end, inside the timing (like `dd conv=fdatasync`).
    #[arg(long, help_heading = "Workload")]
    pub fsync_at_end: bool,
    /// Flush call: fdatasync or fsync.
    #[arg(long, value_name = "CALL", help_heading = "Workload")]
    pub sync: Option<String>,
    /// Written data: random (incompressible, default) or zero (like dd if=/dev/zero).
    #[arg(long, value_name = "KIND", help_heading = "Workload")]
    pub data: Option<String>,
    /// Seed for offsets and data (same seed, same IO sequence).
    #[arg(long, help_heading = "Workload")]
    pub seed: Option<u64>,
    /// IO engine: io_uring (default), psync, null.
    #[arg(long, value_enum, help_heading = "Workload")]
    pub engine: Option<EngineArg>,
    /// How io_uring waits for completions: auto (spinning or sleeping, whichever completes IOs
    /// faster here, timed while running), spin (poll up to 200 us, then sleep), block (always
    /// sleep).
    #[arg(long, value_parser = ["auto", "spin", "block"], help_heading = "Workload")]
    pub wait: Option<String>,
    /// Open loop: issue IOs at this rate whatever the device does, and measure latency from
    /// each IO's scheduled time: 5000 (IOPS in all threads) or 200MiB (bytes per second).
    #[arg(long, help_heading = "Open loop")]
    pub rate: Option<String>,
    /// Open loop: fixed (evenly spaced) or poisson (exponential gaps) arrivals.
    #[arg(long, value_parser = ["fixed", "poisson"], help_heading = "Open loop")]
    pub arrivals: Option<String>,
    /// Open loop: the rate is the total of all threads (default) or each thread's.
    #[arg(long, value_parser = ["total", "thread"], help_heading = "Open loop")]
    pub rate_per: Option<String>,
    /// Find the highest rate that meets latency targets (latency from each IO's scheduled
    /// time): 'p99<=2ms', 'read:p99.9<=10ms,write:p99<=5ms', 'mean<=1ms'.
    #[arg(long, help_heading = "Open loop")]
    pub slo: Option<String>,
    /// Time the --slo search may take in all (default: until --slo-precision is reached).
    #[arg(long, help_heading = "Open loop")]
    pub budget: Option<String>,
    /// The --slo search stops when the capacity is bracketed this closely (default 0.05).
    #[arg(long, help_heading = "Open loop")]
    pub slo_precision: Option<f64>,
    /// Run rounds until the figure is steady by SNIA PTS's rules (over the last 5 rounds,
    /// range within 20% of the mean, the best-fit line's excursion within 10%): iops
    /// (default), bw or lat.
    #[arg(long, value_name = "FIGURE", num_args = 0..=1, default_missing_value = "iops",
          value_parser = ["iops", "bw", "lat"], help_heading = "Steady state")]
    pub steady_state: Option<String>,
    /// One steady-state round's length (default 60s, PTS's; --time sets it too).
    #[arg(long, value_name = "TIME", help_heading = "Steady state")]
    pub round: Option<String>,
    /// Steady-state rounds at most (default 25, PTS's).
    #[arg(long, value_name = "N", help_heading = "Steady state")]
    pub max_rounds: Option<u32>,
    /// Before the workloads, write the whole target twice: seq (128 KiB sequential, the
    /// default) or random (4 KiB random, as PTS before IOPS tests). Needs --destroy on a
    /// block device that holds data.
    #[arg(long, value_name = "KIND", num_args = 0..=1, default_missing_value = "seq",
          value_parser = ["seq", "random"], help_heading = "Steady state")]
    pub precondition: Option<String>,
    /// A block-size mix (fio bssplit): 8k/50:128k/50, or reads,writes: 8k/50:128k/50,4k/100.
    #[arg(long, value_name = "MIX", help_heading = "Workload")]
    pub bssplit: Option<String>,
    /// How random offsets spread (fio random_distribution): random, zipf:1.2, pareto:0.8,
    /// normal:10, zoned:60/10:30/20:10/70.
    #[arg(long, value_name = "DIST", help_heading = "Workload")]
    pub random_distribution: Option<String>,
    /// Pause after each completion before the next IO (fio thinktime), e.g. 200us.
    #[arg(long, value_name = "TIME", help_heading = "Workload")]
    pub thinktime: Option<String>,
    /// Bytes skipped after each sequential IO (fio rw=write:112k): 112k; negative steps back
    /// (-8k with --bs 4k reads backwards).
    #[arg(
        long,
        value_name = "SIZE",
        allow_hyphen_values = true,
        help_heading = "Workload"
    )]
    pub skip: Option<String>,
    /// Passes over the working set per trial (fio loops); with --replay, replays of the trace.
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub loops: Option<u32>,
    /// Replay a trace (`iolab capture`): its IOs at their recorded times, open loop; reports
    /// its own fidelity (issue-time error, duration against the recording, late IOs).
    #[arg(long, value_name = "FILE", help_heading = "Replay", conflicts_with_all = ["profile", "spec", "quick", "fio_job", "pattern"])]
    pub replay: Option<PathBuf>,
    /// Replay speed: 2 is twice as fast as recorded.
    #[arg(long, value_name = "X", help_heading = "Replay", requires = "replay")]
    pub speed: Option<f64>,
    /// Replay in order as fast as the recorded in-flight counts allow, ignoring the times.
    #[arg(
        long,
        help_heading = "Replay",
        requires = "replay",
        conflicts_with = "speed"
    )]
    pub as_fast_as_possible: bool,
    /// How a trace larger than the target is fitted: wrap (offsets wrap around) or scale.
    #[arg(long, value_parser = ["exact", "wrap", "scale"], help_heading = "Replay", requires = "replay")]
    pub replay_map: Option<String>,
    /// Run a trace's workload model (`iolab spec --from-trace`) instead of the trace itself.
    #[arg(long, value_name = "FILE", help_heading = "Replay", conflicts_with_all = ["profile", "spec", "quick", "fio_job", "pattern", "replay"])]
    pub replay_model: Option<PathBuf>,
    /// Small files: how many files (bonnie++ -n N means N*1024).
    #[arg(
        long,
        value_name = "N",
        help_heading = "Small files (--pattern smallfile)"
    )]
    pub files: Option<u64>,
    /// Small files: directories to spread them over.
    #[arg(
        long,
        value_name = "N",
        help_heading = "Small files (--pattern smallfile)"
    )]
    pub dirs: Option<u32>,
    /// Small files: smallest file size.
    #[arg(
        long,
        value_name = "SIZE",
        help_heading = "Small files (--pattern smallfile)"
    )]
    pub min_file_size: Option<String>,
    /// Small files: largest file size.
    #[arg(
        long,
        value_name = "SIZE",
        help_heading = "Small files (--pattern smallfile)"
    )]
    pub max_file_size: Option<String>,
    /// Small files: fsync each file after writing it (bonnie++ -b).
    #[arg(long, help_heading = "Small files (--pattern smallfile)")]
    pub fsync: bool,
    /// Small files: also fsync the directory after each create and delete (durable names).
    #[arg(long, help_heading = "Small files (--pattern smallfile)")]
    pub fsync_dir: bool,

    /// Trials per workload (default 3; 1 with --quick).
    #[arg(long, value_name = "N", help_heading = "Trials")]
    pub repeat: Option<u32>,
    /// Repeat until the 95% CI half-width is within PCT% of the median.
    #[arg(long, value_name = "PCT", help_heading = "Trials")]
    pub until_stable: Option<f64>,
    /// Most trials with --until-stable.
    #[arg(long, value_name = "N", default_value_t = 10, help_heading = "Trials")]
    pub max_repeat: u32,

    /// Check data: every block written carries a header and checksum, every block read is
    /// checked (corrupt, misdirected, lost write, read error). `--verify` alone fills the
    /// working set, runs the workloads and reads everything back; `write` and `read` split that
    /// across two runs with --verify-state.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        default_missing_value = "both",
        help_heading = "Verify"
    )]
    pub verify: Option<VerifyMode>,
    /// Where `--verify write` saves the generations written and `--verify read` loads them.
    #[arg(long, value_name = "FILE", help_heading = "Verify")]
    pub verify_state: Option<PathBuf>,

    /// Allow writes to this block device (must name the target). Its data is destroyed.
    #[arg(long, value_name = "DEVICE")]
    pub destroy: Option<PathBuf>,
    /// Print one JSON document on stdout (diagnostics go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Also print the notes about the engine working as designed (how io_uring waited for
    /// completions), one line each for all trials; the JSON always has them.
    #[arg(short, long)]
    pub verbose: bool,
    /// A label for the run (used to refer to it and as a column header).
    #[arg(long)]
    pub label: Option<String>,
    /// A free-form note kept with the run.
    #[arg(long)]
    pub note: Option<String>,
    /// Do not keep the run in the results store.
    #[arg(long)]
    pub no_save: bool,

    /// Run on these hosts at once (comma-separated; `host` or `host:/target`); any name the
    /// launch command accepts (ssh: `~/.ssh/config` names, `user@host`); `@slurm`: the nodes
    /// of the Slurm allocation this runs in, started with srun. See docs/hosts.md.
    #[arg(long, value_name = "LIST", help_heading = "Many hosts")]
    pub hosts: Option<String>,
    /// Read the hosts from a file (one or more per line, `#` comments).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "hosts",
        help_heading = "Many hosts"
    )]
    pub hosts_file: Option<PathBuf>,
    /// The target on every host that does not name its own (same as TARGET).
    #[arg(
        long = "target",
        value_name = "PATH",
        conflicts_with = "target",
        help_heading = "Many hosts"
    )]
    pub target_all: Option<PathBuf>,
    /// The command that starts an agent on {host}, run by `sh -c` (default: ssh in batch mode
    /// with a shared connection per host; srun with `--hosts @slurm`); e.g. 'kubectl exec -i
    /// {host} -- iolab agent --stdio'.
    #[arg(long, value_name = "TEMPLATE", help_heading = "Many hosts")]
    pub launch: Option<String>,
    /// Copy this binary to each host for the run (a temp path, removed afterwards).
    #[arg(long, help_heading = "Many hosts")]
    pub push: bool,
    /// When a host fails: stop every host (abort), or keep the others going (continue).
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        default_value = "abort",
        help_heading = "Many hosts"
    )]
    pub on_host_failure: crate::hosts::outcome::OnFailure,
    /// Remove what killed runs left in TARGET (default: the current directory and the targets
    /// of the runs the store shows `incomplete` on this host) and exit: their test files and
    /// small-file trees, killed `--hosts` controllers' ssh masters and control-socket
    /// directories, and killed `iolab capture`s' tracing instances.
    #[arg(long)]
    pub cleanup: bool,
}

/// `--engine` values (the spec's engine names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    /// io_uring: one ring per thread, batched submission, registered file and buffers.
    #[value(name = "io_uring", alias = "io-uring")]
    IoUring,
    /// pread/pwrite, one IO at a time per thread.
    Psync,
    /// Completes every IO at once: iolab's own cost per IO.
    Null,
}

impl From<EngineArg> for EngineKind {
    fn from(e: EngineArg) -> EngineKind {
        match e {
            EngineArg::IoUring => EngineKind::IoUring,
            EngineArg::Psync => EngineKind::Psync,
            EngineArg::Null => EngineKind::Null,
        }
    }
}

impl RunArgs {
    /// `--hosts` or `--hosts-file` without `--cleanup` (which sweeps this machine): the CLI
    /// hands the run to `hosts::run`.
    pub fn on_hosts(&self) -> bool {
        !self.cleanup && (self.hosts.is_some() || self.hosts_file.is_some())
    }

    /// The workload flags as a raw workload (unset fields stay `None`).
    fn flags(&self) -> RawWorkload {
        use crate::spec::{SizeValue, TimeValue};
        RawWorkload {
            name: self.name.clone(),
            pattern: self.pattern.clone(),
            bs: self.bs.clone().map(SizeValue::Text),
            qd: self.qd,
            threads: self.threads,
            size: self.size.clone().map(SizeValue::Text),
            time: self.time.clone().map(TimeValue::Text),
            io_size: self.io_size.clone().map(SizeValue::Text),
            ramp: self.ramp.clone().map(TimeValue::Text),
            direct: self.buffered.then_some(false),
            read_pct: self.read_pct,
            fsync_every: self.fsync_every,
            fsync_at_end: self.fsync_at_end.then_some(true),
            sync: self.sync.clone(),
            data: self.data.clone(),
            seed: self.seed,
            engine: self.engine.map(|e| EngineKind::from(e).name().to_string()),
            wait: self.wait.clone(),
            rate: self.rate.clone(),
            arrivals: self.arrivals.clone(),
            rate_per: self.rate_per.clone(),
            slo: self.slo.clone(),
            budget: self.budget.clone().map(TimeValue::Text),
            slo_precision: self.slo_precision,
            files: self.files,
            dirs: self.dirs,
            min_file_size: self.min_file_size.clone().map(SizeValue::Text),
            max_file_size: self.max_file_size.clone().map(SizeValue::Text),
            fsync: self.fsync.then_some(true),
            fsync_dir: self.fsync_dir.then_some(true),
            drop_caches: None,
            bssplit: self.bssplit.clone(),
            random_distribution: self.random_distribution.clone(),
            thinktime: self.thinktime.clone().map(TimeValue::Text),
            skip: self.skip.clone().map(SizeValue::Text),
            loops: self.loops,
            replay: self.replay.as_ref().map(|p| p.display().to_string()),
            speed: self.speed,
            as_fast_as_possible: self.as_fast_as_possible.then_some(true),
            replay_map: self.replay_map.clone(),
            steady_state: self
                .steady_state
                .clone()
                .map(crate::spec::SteadyValue::Figure),
            round: self.round.clone().map(TimeValue::Text),
            max_rounds: self.max_rounds,
        }
    }
}

/// A run that could not start, as the command line reports it: a target error keeps its type
/// (exit 2 when the user can fix it, [`crate::target::TargetError::is_usage`]); the rest are
/// usage errors (exit 2) naming what to change.
pub(super) fn not_started(e: crate::session::PrepareError) -> anyhow::Error {
    match e {
        crate::session::PrepareError::Target(t) => t.into(),
        other => usage(other.to_string()),
    }
}

/// `iolab run`.
pub fn run(ctx: &Context, a: RunArgs) -> anyhow::Result<ExitCode> {
    let json = a.json;
    super::json_on_error(json, run_inner(ctx, a))
}

/// The suite options the flags ask for, with `--verify` checked against the target.
fn suite_options(a: &RunArgs, repeat: u32) -> anyhow::Result<SuiteOptions> {
    let verify = a.verify;
    if matches!(verify, Some(VerifyMode::Write | VerifyMode::Read)) && a.verify_state.is_none() {
        return Err(usage(
            "--verify write/read: give --verify-state FILE to keep the generations between the two runs",
        ));
    }
    if verify.is_some()
        && a.target.as_ref().is_none_or(|t| t.is_dir())
        && verify != Some(VerifyMode::Both)
    {
        return Err(usage(
            "--verify write/read needs a file or device target (a directory's test file is removed after each run)",
        ));
    }
    Ok(SuiteOptions {
        verify,
        verify_state: a.verify_state.clone(),
        repeat,
        until_stable: a.until_stable,
        max_repeat: a.max_repeat.max(repeat),
        drop_caches: true,
        default_size: 1 << 30,
        space_reserve: true,
        precondition: a
            .precondition
            .as_deref()
            .and_then(crate::spec::Precondition::parse),
    })
}

/// The run as a JSON document, or as the table (`verbose`: with every note) with where it was
/// saved.
fn print_run(record: &crate::sample::RunRecord, json: bool, verbose: bool) -> anyhow::Result<()> {
    if json {
        let doc = crate::report::json::run_document(record);
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).context("cannot render JSON")?
        );
    } else if record.workloads.iter().any(|w| !w.trials.is_empty()) {
        print!("{}", crate::report::terminal::run_table(record, verbose));
        if !record.id.is_empty() {
            println!(
                "saved as run {} (iolab show {}; iolab compare {} ...)",
                record.id, record.id, record.id
            );
        }
    }
    Ok(())
}

/// `--cleanup`: what killed runs left in TARGET (default: the current directory); without a
/// TARGET also in the targets of the runs the store holds as killed on this host;
/// and killed `--hosts` controllers' ssh masters and control-socket directories.
fn cleanup(ctx: &Context, a: &RunArgs) -> anyhow::Result<ExitCode> {
    let dir = a.target.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut removed = crate::runner::leftovers::clean(&dir)
        .map_err(|e| usage(format!("--cleanup {}: {e}", dir.display())))?;
    let mut killed = Vec::new();
    if a.target.is_none() {
        match super::db::db_location(ctx).map(|l| crate::store::Store::open_location_existing(&l)) {
            Ok(Ok(store)) => killed = super::db::killed_runs(&store)?,
            Ok(Err(crate::store::StoreError::Missing(_))) => {}
            Ok(Err(e)) => eprintln!(
                "iolab: warning: cannot read the store ({e}): only {} was swept",
                dir.display()
            ),
            Err(e) => eprintln!("iolab: warning: {e}: only {} was swept", dir.display()),
        }
        removed.extend(
            crate::runner::leftovers::clean_killed(&killed)
                .map_err(|e| usage(format!("--cleanup: a killed run's target: {e}")))?,
        );
    }
    // Killed `--hosts` controllers: their ssh masters and control-socket directories.
    removed.extend(
        crate::runner::leftovers::clean_ssh_controls(&std::env::temp_dir())
            .map_err(|e| usage(format!("--cleanup: ssh control directories: {e}")))?,
    );
    // Killed `iolab capture`s: their tracing instances (instances/iolab-PID), then the tracefs
    // mount iolab made for them.
    let swept = crate::capture::tracefs::sweep();
    removed.extend(swept.instances);
    for p in &removed {
        println!("removed {}", p.display());
    }
    if let Some(m) = &swept.unmounted {
        println!(
            "unmounted {} (tracefs, mounted by a killed capture)",
            m.display()
        );
    }
    if removed.is_empty() && swept.unmounted.is_none() {
        let stored = match killed.len() {
            0 => String::new(),
            1 => " or in the target of the store's killed run".to_string(),
            n => format!(" or in the targets of the store's {n} killed runs"),
        };
        println!("nothing left by killed runs in {}{stored}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The flags turned into the inputs of [`crate::session`] (suite, options, target request,
/// meta), the run done there, its record printed and its exit code chosen. Between the two
/// halves of the run ([`crate::session::run`] says why it is two calls here) the label is
/// checked and the store opened.
fn run_inner(ctx: &Context, a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.cleanup {
        return cleanup(ctx, &a);
    }
    let a = apply_fio_job(a)?;
    let mut suite = build_suite(&a)?;
    verify_one_size(&a, &suite)?;
    if a.target_all.is_some() || a.launch.is_some() || a.push {
        return Err(usage(
            "--target, --launch and --push go with --hosts; for one local run give TARGET",
        ));
    }
    let repeat = a
        .repeat
        .unwrap_or(if a.quick || a.profile.as_deref() == Some("quick") {
            1
        } else {
            3
        });
    if repeat == 0 {
        return Err(usage("--repeat: must be at least 1"));
    }
    if let Some(p) = a.until_stable {
        if !(p > 0.0 && p < 100.0) {
            return Err(usage(
                "--until-stable: give a percentage between 0 and 100, e.g. 5",
            ));
        }
    }
    let opts = suite_options(&a, repeat)?;
    let request = TargetRequest {
        path: a.target.clone(),
        writes: crate::session::suite_writes(&suite)
            || opts.precondition.is_some()
            || matches!(a.verify, Some(VerifyMode::Both | VerifyMode::Write)),
        destroy: a.destroy.clone(),
    };
    let json = a.json;
    let target = crate::session::prepare_fitting_replays(&mut suite, &opts, &request, &mut |f| {
        if !json {
            eprintln!(
                "iolab: replay '{}': {} IOs, {}",
                f.workload, f.ios, f.mapping
            );
        }
    })
    .map_err(not_started)?;
    crate::pause::at("target resolved");
    if let Some(l) = &a.label {
        crate::store::check_label(l).map_err(|e| usage(format!("--label: {e}")))?;
    }
    let mut store = if a.no_save {
        None
    } else {
        Some(super::db::open_store(ctx)?)
    };
    crate::signals::install();
    let progress =
        crate::progress::Progress::new(!a.json, crate::runner::suite::estimate(&suite, &opts));
    let meta = crate::session::RunMeta {
        command_line: crate::cli::command_line(),
        label: a.label.clone(),
        note: a.note.clone(),
        lab_id: None,
        layout: None,
    };
    let result = crate::session::run_session(
        &target,
        &suite,
        &opts,
        meta,
        store.as_mut(),
        &progress,
        a.json,
    );
    progress.finish();
    drop(target);
    let crate::session::SessionResult {
        record,
        error,
        interrupted,
    } = result?;
    print_run(&record, a.json, a.verbose)?;
    match (error, interrupted) {
        (Some(e), _) => {
            let code = super::exit_code_for(&e);
            eprintln!("iolab: error: {}", super::one_line(&e));
            Ok(ExitCode::from(code))
        }
        (None, true) => {
            eprintln!("iolab: interrupted: finished trials are kept");
            Ok(ExitCode::from(EXIT_INTERRUPTED))
        }
        (None, false) => Ok(ExitCode::SUCCESS),
    }
}
