//! `iolab lab SPEC`: build each layout, run the workloads, degrade, rebuild, tear down, report.
//! `iolab lab --cleanup`: remove what a killed lab left behind.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use super::Context;
use crate::lab::{self, LabError, LabEvent, LabOptions, MountedLayout};
use crate::layout::{Runner, state};

/// Output formats of the lab table.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// A Markdown table.
    Md,
    /// The whole report as JSON.
    Json,
}

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

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
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

    /// Print every command as it runs.
    #[arg(short, long)]
    pub verbose: bool,
}

/// `iolab lab`.
pub fn run(_ctx: &Context, a: LabArgs) -> anyhow::Result<ExitCode> {
    if a.cleanup {
        return cleanup(&a);
    }
    let Some(path) = &a.spec else {
        return Err(super::usage(
            "give a lab spec: iolab lab SPEC.toml (or --cleanup)",
        ));
    };
    let mut spec = lab::parse_lab_file(path)?;
    if a.quick {
        spec.quick();
    }
    if let Some(d) = &a.disk_dir {
        let d = if d.is_absolute() {
            d.clone()
        } else {
            std::env::current_dir()?.join(d)
        };
        spec.set_disk_dir(d);
    }
    crate::signals::install();
    let mut opts = LabOptions::new();
    opts.destroy = a.destroy.clone();
    opts.dry_run = a.dry_run;
    opts.verbose = a.verbose;
    if a.dry_run {
        opts.availability = crate::layout::Availability::everything();
    }
    let mut workload = |m: &MountedLayout| -> anyhow::Result<()> {
        // Until the workload runner lands here: prove the layout stores and returns data.
        let bytes = m.usable_bytes.map_or(32 << 20, |u| (u / 16).min(64 << 20)) & !4095;
        lab::probe::smoke(m.path, bytes.max(1 << 20)).map_err(anyhow::Error::msg)
    };
    let mut progress = Progress::new(std::io::stderr().is_terminal());
    let report = match lab::run_lab(&spec, &opts, &mut workload, &mut |e| progress.event(e)) {
        Ok(r) => r,
        Err(LabError::Refused(msg)) => return Err(super::usage(msg)),
        Err(e) => return Err(e.into()),
    };
    match a.format {
        Format::Table => {
            print!("{}", lab::report::render_table(&report));
            if a.dry_run {
                for l in &report.layouts {
                    println!("\n# {}", l.name);
                    for c in &l.commands {
                        println!("{c}");
                    }
                }
            }
        }
        Format::Md => print!("{}", lab::report::render_markdown(&report)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
    }
    if report.interrupted {
        return Err(super::Interrupted.into());
    }
    Ok(if report.any_failed() {
        ExitCode::from(super::EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
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
                if self.on {
                    eprintln!("[{}/{}] {name}: {what}", self.index + 1, self.total);
                }
            }
            LabEvent::LayoutDone { report } => {
                self.done += 1;
                if self.on {
                    eprintln!(
                        "[{}/{}] {}: {}",
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
