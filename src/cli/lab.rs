//! `iolab lab SPEC`: build each layout, run the workloads, degrade, rebuild, tear down, report.
//! `iolab lab --cleanup`: remove what a killed lab left behind.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use super::Context;
use crate::lab::{self, ConductOptions, LabError, LabEvent, LabOptions, LabOutcome, LabSpec};
use crate::layout::{Runner, state};
use crate::output::Format;

/// The formats `iolab lab` (and `iolab lab --vm`) renders.
pub(super) const FORMATS: &[Format] = &[Format::Text, Format::Md, Format::Json];

/// Arguments of `iolab lab`.
#[derive(clap::Args, Debug)]
pub struct LabArgs {
    /// The lab spec (TOML): disks, layouts, workloads.
    #[arg(value_name = "SPEC", required_unless_present = "cleanup")]
    pub spec: Option<PathBuf>,

    /// Replace the spec's workloads with the quick profile and one trial: a smoke test of the
    /// layouts.
    #[arg(long)]
    pub quick: bool,

    /// Allow erasing these real devices; must name exactly the spec's `disks.devices`
    /// (repeat the flag or separate with commas).
    #[arg(long, value_name = "DEV", value_delimiter = ',')]
    pub destroy: Vec<PathBuf>,

    /// Output format: the lab table (`table` is read as `text` too), Markdown, or the whole
    /// report as JSON.
    #[arg(long, default_value = "text", value_parser = Format::only(FORMATS))]
    pub format: Format,

    /// Remove everything a killed lab left behind (mounts, arrays, volume groups, loop devices,
    /// backing files), using the state files labs write before touching anything.
    #[arg(long, conflicts_with_all = ["quick", "destroy", "dry_run", "disk_dir"])]
    pub cleanup: bool,

    /// Put loop disks' backing files in DIR instead of the spec's `disks.loop.dir`.
    #[arg(long, value_name = "DIR")]
    pub disk_dir: Option<PathBuf>,

    /// Print the commands each layout would run; build nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print every command as it runs, and a table with every detail (mkfs and mount options,
    /// rebuild bytes, expected capacity) instead of one that fits 120 columns.
    #[arg(short, long)]
    pub verbose: bool,

    /// Working set of every workload (overrides the spec's `workloads.size`).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Run time per trial (overrides the spec's `workloads.time`).
    #[arg(long, value_name = "TIME")]
    pub time: Option<String>,
    /// Trials per workload (overrides the spec's `workloads.repeat`).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,

    /// Do not keep the lab's runs in the results store.
    #[arg(long)]
    pub no_save: bool,

    /// Run the whole lab inside a throwaway virtual machine (qemu, the installed Debian
    /// kernel, one emulated disk per loop disk): builds md and LVM layouts this kernel cannot.
    /// Speeds are emulated; behaviour and integrity are the point.
    #[arg(long, conflicts_with_all = ["cleanup", "destroy", "dry_run"])]
    pub vm: bool,

    /// Inside the VM only: the share directory where power cuts keep their state across the
    /// cuts (`iolab lab --vm` passes it to the guest's lab).
    #[arg(long, value_name = "DIR", hide = true)]
    pub powercut_dir: Option<PathBuf>,

    /// Needs to decide by at the end (laid over the spec's `[decide]` table).
    #[command(flatten)]
    pub decide: super::decide::DecideFlags,

    /// Keep the `[decide]` needs with the runs but print no decision (the VM's guest: the
    /// host decides once the runs are labelled emulated).
    #[arg(long, hide = true)]
    pub no_decide: bool,
}

/// `iolab lab` on this machine (with `--vm` the CLI runs `vm::run` instead).
pub fn run(ctx: &Context, a: LabArgs) -> anyhow::Result<ExitCode> {
    if a.cleanup {
        return cleanup(&a);
    }
    let mut spec = load_spec(&a)?;
    if a.powercut_dir.is_none() {
        if let Some(l) = spec.layouts.iter().find(|l| l.powercut.is_some()) {
            return Err(super::usage(format!(
                "{}: layout[{}].powercut: power cuts need the VM lab, where iolab owns the power switch (it cannot cut this machine's power); run with --vm",
                spec.file, l.name
            )));
        }
    }
    let disk = decide_needs(ctx, &a, &mut spec)?;
    if let Some(s) = spec
        .slow_disks
        .iter()
        .find(|s| s.bandwidth.is_some() || s.iops.is_some())
    {
        return Err(super::usage(format!(
            "{}: disks.slow (disk {}): bandwidth and iops limits are emulated by the VM's disks; run with --vm (latency alone works wherever device-mapper does)",
            spec.file, s.disk
        )));
    }
    crate::signals::install();
    let mut lab = LabOptions::new();
    lab.destroy = a.destroy.clone();
    lab.dry_run = a.dry_run;
    lab.verbose = a.verbose;
    lab.powercut_dir = a.powercut_dir.clone();
    if a.dry_run {
        lab.availability = crate::layout::Availability::everything();
    }
    let mut store = if a.no_save || a.dry_run {
        None
    } else {
        Some(super::db::open_store(ctx)?)
    };
    let terminal = std::io::stderr().is_terminal();
    let opts = ConductOptions {
        lab,
        command_line: crate::cli::command_line(),
        show_progress: terminal && a.format == Format::Text,
        decide: !a.no_decide && !a.dry_run,
        disk,
    };
    let mut progress = Progress::new(terminal);
    let outcome = match lab::conduct(&spec, &opts, store.as_mut(), &mut |e| progress.event(e)) {
        Ok(o) => o,
        Err(LabError::Refused(msg)) => return Err(super::usage(msg)),
        Err(e) => return Err(e.into()),
    };
    print_report(&a, &spec, &outcome)?;
    let LabOutcome {
        report,
        decision,
        saved,
        ..
    } = outcome;
    saved?;
    decision.transpose().map_err(super::decide::decide_err)?;
    if report.interrupted {
        return Err(super::Interrupted.into());
    }
    // A layout that lost data failed the check the lab exists for: exit 1 like a failure.
    Ok(if report.any_failed() || report.any_data_lost() {
        ExitCode::from(super::EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The lab spec `iolab lab` runs: the file with the flags' overrides (`--size`, `--time`,
/// `--repeat`, `--quick`, `--disk-dir`) applied, here or in a VM alike.
pub fn load_spec(a: &LabArgs) -> anyhow::Result<LabSpec> {
    let Some(path) = &a.spec else {
        return Err(super::usage(
            "give a lab spec: iolab lab SPEC.toml (or --cleanup)",
        ));
    };
    let mut spec = lab::parse_lab_file(path)?;
    let size = a
        .size
        .as_deref()
        .map(crate::units::parse_bytes)
        .transpose()
        .map_err(|e| super::usage(format!("--size: {e}")))?;
    let time = a
        .time
        .as_deref()
        .map(crate::units::parse_duration)
        .transpose()
        .map_err(|e| super::usage(format!("--time: {e}")))?;
    if a.repeat == Some(0) {
        return Err(super::usage("--repeat: must be at least 1"));
    }
    crate::runner::request::add_trace_models(&mut spec.workloads).map_err(super::run::suite_err)?;
    spec.override_workloads(size, time, a.repeat);
    if a.quick {
        spec.quick();
        if let Some(r) = a.repeat {
            spec.workloads.repeat = r;
        }
    }
    if let Some(d) = &a.disk_dir {
        let d = if d.is_absolute() {
            d.clone()
        } else {
            std::env::current_dir()?.join(d)
        };
        spec.set_disk_dir(d);
    }
    Ok(spec)
}

/// Lays the need flags over the spec's `[decide]` table and checks them against the lab, and
/// reads the real disks' speed (`disk_from`) — before anything is built, so a need the lab
/// cannot answer fails now, not at the end.
pub(super) fn decide_needs(
    ctx: &Context,
    a: &LabArgs,
    spec: &mut lab::LabSpec,
) -> anyhow::Result<Option<crate::decide::DiskMeasured>> {
    let over = a.decide.spec()?;
    if spec.decide.is_some() || over != crate::spec::decide::DecideSpec::default() {
        let mut d = spec.decide.take().unwrap_or_default();
        d.merge(&over);
        spec.decide = Some(d);
    }
    spec.check_decide()
        .map_err(|e| super::usage(format!("{}: {e}", spec.file)))?;
    match &spec.decide {
        Some(d) if !a.no_decide && !a.dry_run => super::decide::disk_measured(ctx, d),
        _ => Ok(None),
    }
}

/// Prints the lab's outcome in the chosen format: the table, the comparison, the decision
/// when one was made, the runs' notes (the CPU waits on every screen, how the engine waited
/// with `--verbose` and in the JSON), and where the runs were saved when they all were.
fn print_report(a: &LabArgs, spec: &lab::LabSpec, outcome: &LabOutcome) -> anyhow::Result<()> {
    match a.format {
        Format::Text => print_text(a, spec, outcome),
        Format::Md => print_markdown(spec, outcome),
        Format::Json => print_json(spec, outcome)?,
        f @ (Format::Csv | Format::Html) => {
            return Err(super::usage(f.unsupported("lab", FORMATS).to_string()));
        }
    }
    Ok(())
}

/// The lab's outcome for a terminal: the table, the comparison and the sweeps' answers, the
/// decision with its tunables' commands, the notes, where the runs were saved.
fn print_text(a: &LabArgs, spec: &lab::LabSpec, outcome: &LabOutcome) {
    let report = &outcome.report;
    let comparison = outcome.comparison.as_ref();
    let decision = outcome.decision.as_ref().and_then(|d| d.as_ref().ok());
    let saved = outcome.saved.is_ok();
    let notes = &outcome.notes;
    let detail = if a.verbose {
        crate::report::text::lab::Detail::Full
    } else {
        crate::report::text::lab::Detail::Short
    };
    print!("{}", crate::report::text::lab::render_table(report, detail));
    if let Some(c) = comparison {
        println!();
        print!(
            "{}",
            crate::report::text::lab_summary::render_summary(report, c, &spec.workloads.suite)
        );
        print!(
            "{}",
            crate::report::text::lab_sweep::render(&sweeps(spec, c))
        );
    }
    if let Some(d) = decision {
        println!();
        print!("{}", crate::report::text::decide::render_table(d));
        if let Some(name) = &d.recommended {
            let cmds = tunable_commands(spec, report, name);
            print!("{}", crate::decide::tunables::render(name, &cmds));
        }
    }
    for p in &notes.precondition {
        println!("{p}");
    }
    for s in &notes.steady {
        println!("steady state: {}", s.line());
    }
    let shown = notes.as_designed.iter().filter(|_| a.verbose);
    for n in notes.cpu_wait.iter().chain(shown) {
        println!("note: {n}");
    }
    if saved && !report.runs.is_empty() {
        println!(
            "lab {} saved: iolab list --lab {}; iolab report --lab {} -o lab.html",
            report.lab_id, report.lab_id, report.lab_id
        );
    }
    if a.dry_run {
        for l in &report.layouts {
            println!("\n# {}", l.name);
            for c in &l.commands {
                println!("{c}");
            }
        }
    }
}

/// The lab's outcome as Markdown: the table, the comparison, the sweeps, the decision.
fn print_markdown(spec: &lab::LabSpec, outcome: &LabOutcome) {
    let report = &outcome.report;
    let comparison = outcome.comparison.as_ref();
    let decision = outcome.decision.as_ref().and_then(|d| d.as_ref().ok());
    print!("{}", crate::report::text::lab::render_markdown(report));
    if let Some(c) = comparison {
        println!();
        print!("{}", crate::report::compare::render_markdown(c));
        let text = crate::report::text::lab_sweep::render(&sweeps(spec, c));
        if !text.is_empty() {
            print!("\n```text{text}```\n");
        }
    }
    if let Some(d) = decision {
        println!();
        print!("{}", crate::report::text::decide::render_markdown(d));
    }
}

/// The lab's outcome as one JSON document: the report with the comparison, the sweeps, the
/// notes and the decision with its tunables' commands.
fn print_json(spec: &lab::LabSpec, outcome: &LabOutcome) -> anyhow::Result<()> {
    let report = &outcome.report;
    let comparison = outcome.comparison.as_ref();
    let decision = outcome.decision.as_ref().and_then(|d| d.as_ref().ok());
    let notes = &outcome.notes;
    let mut doc = serde_json::to_value(report)?;
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("comparison".into(), serde_json::to_value(comparison)?);
        let answers = comparison.map(|c| sweeps(spec, c)).unwrap_or_default();
        obj.insert("sweeps".into(), serde_json::to_value(answers)?);
        obj.insert(
            "cpu_wait_notes".into(),
            serde_json::to_value(&notes.cpu_wait)?,
        );
        obj.insert(
            "as_designed_notes".into(),
            serde_json::to_value(&notes.as_designed)?,
        );
        obj.insert("steady".into(), serde_json::to_value(&notes.steady)?);
        obj.insert(
            "precondition".into(),
            serde_json::to_value(&notes.precondition)?,
        );
        if let Some(d) = decision {
            obj.insert("decision".into(), serde_json::to_value(d)?);
            let cmds = d
                .recommended
                .as_ref()
                .map(|n| tunable_commands(spec, report, n))
                .unwrap_or_default();
            obj.insert("tunable_commands".into(), serde_json::to_value(cmds)?);
        }
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

/// The answer of each sweep among the lab's layouts, judged on each workload's headline.
fn sweeps(
    spec: &lab::LabSpec,
    c: &crate::stats::compare::Comparison,
) -> Vec<crate::stats::sweep::Sweep> {
    let rows = crate::stats::sweep::headline_rows(c, &spec.workloads.suite.workloads);
    crate::stats::sweep::answer(c, &rows)
}

/// The commands that set the layout `name`'s runtime tunables on the real array: from its
/// stack as the spec wrote it and what the kernel held after the lab's build.
fn tunable_commands(spec: &lab::LabSpec, report: &lab::LabReport, name: &str) -> Vec<String> {
    let Some(lab::LayoutKind::Stack(s)) = spec
        .layouts
        .iter()
        .find(|l| l.name == name)
        .map(|l| &l.kind)
    else {
        return Vec::new();
    };
    let held = report
        .layouts
        .iter()
        .find(|l| l.name == name)
        .and_then(|l| l.md_tunables.as_deref());
    crate::decide::tunables::commands(&crate::sample::layout_record::Layer::of_stack(s), held)
}

fn cleanup(a: &LabArgs) -> anyhow::Result<ExitCode> {
    let dir = state::state_dir();
    let runner = Runner::real().with_echo(a.verbose);
    let outcomes = state::cleanup(&runner, &dir)?;
    let mut failed = false;
    if a.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&outcomes)?);
    } else if outcomes.is_empty() {
        println!("nothing to clean up (no lab state in {})", dir.display());
    }
    for o in &outcomes {
        failed |= !o.failed.is_empty();
        if a.format == Format::Json {
            continue;
        }
        if o.still_running {
            println!("lab {}: still running, left alone", o.lab_id);
            continue;
        }
        println!(
            "lab {}: removed {} object{}",
            o.lab_id,
            o.removed.len(),
            if o.removed.len() == 1 { "" } else { "s" }
        );
        for r in &o.removed {
            println!("  removed {r}");
        }
        for f in &o.failed {
            println!("  could not remove {f}");
        }
    }
    Ok(if failed {
        ExitCode::from(super::EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Progress lines on stderr when it is a terminal: which layout, which step, an ETA from the
/// layouts done so far.
struct Progress {
    on: bool,
    start: Instant,
    done: usize,
    total: usize,
    index: usize,
}

impl Progress {
    fn new(on: bool) -> Progress {
        Progress {
            on,
            start: Instant::now(),
            done: 0,
            total: 0,
            index: 0,
        }
    }

    fn eta(&self) -> String {
        if self.done == 0 || self.total <= self.done {
            return String::new();
        }
        let per = self.start.elapsed().as_secs_f64() / self.done as f64;
        let left = per * (self.total - self.done) as f64;
        format!(
            ", ETA {}",
            crate::units::format_duration(std::time::Duration::from_secs_f64(left))
        )
    }

    fn event(&mut self, e: LabEvent) {
        match e {
            LabEvent::LayoutStart { index, total, name } => {
                self.index = index;
                self.total = total;
                if self.on {
                    eprintln!("[{}/{}{}] {name}", index + 1, total, self.eta());
                }
            }
            LabEvent::Step { name, what } => {
                if self.on && self.total == 0 {
                    // Power cuts come before the first layout starts.
                    eprintln!("{name}: {what}");
                } else if self.on {
                    eprintln!("[{}/{}] {name}: {what}", self.index + 1, self.total);
                }
            }
            LabEvent::LayoutDone { report } => {
                self.done += 1;
                if self.on {
                    let retuned = report
                        .reused_build_of
                        .as_ref()
                        .map_or_else(String::new, |of| {
                            format!(" (re-tuned, not rebuilt: the build of {of})")
                        });
                    eprintln!(
                        "[{}/{}] {}: {}{retuned}",
                        self.index + 1,
                        self.total,
                        report.name,
                        report.status_text()
                    );
                }
            }
        }
    }
}
