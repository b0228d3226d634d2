//! `iolab run --hosts ...` (the controller) and `iolab agent --stdio` (the far side).

use std::process::ExitCode;

use anyhow::Context as _;

use super::run::RunArgs;
use super::{Context, EXIT_FAILED, EXIT_INTERRUPTED, usage};
use crate::hosts::launch::Launch;
use crate::hosts::outcome::Options;
use crate::spec::{Suite, WorkloadKind};

/// The agent of `iolab run --hosts`: speaks the line protocol on stdin/stdout. Started by the
/// controller's launch command, not by people (see docs/hosts.md).
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// Speak the protocol on stdin/stdout (the only transport; diagnostics go to stderr).
    #[arg(long, required = true)]
    pub stdio: bool,
    /// Delete this binary once started (a copy pushed by `--push`: nothing is left on the
    /// host even when the controller is killed). Only a file named `iolab-push-*` is deleted.
    #[arg(long, hide = true)]
    pub remove_self: bool,
}

/// `iolab agent --stdio`.
pub fn agent(_ctx: &Context, a: AgentArgs) -> anyhow::Result<ExitCode> {
    if a.remove_self {
        crate::hosts::agent::remove_pushed_self();
    }
    Ok(ExitCode::from(crate::hosts::agent::run_stdio()))
}

/// Flags a multi-host run cannot honour, refused up front.
fn check_flags(a: &RunArgs, suite: &Suite) -> anyhow::Result<()> {
    if a.verify.is_some() {
        return Err(usage(
            "--verify is not available with --hosts yet; run it on each host on its own",
        ));
    }
    if a.until_stable.is_some() {
        return Err(usage(
            "--until-stable is not available with --hosts; give --repeat N",
        ));
    }
    if let Some(w) = suite
        .workloads
        .iter()
        .find(|w| !matches!(w.kind, WorkloadKind::Io(_)))
    {
        return Err(usage(format!(
            "--hosts runs block-IO workloads; '{}' is not one (pick a profile or --pattern of read/write/randread/randwrite/randrw)",
            w.name
        )));
    }
    Ok(())
}

/// The hosts of `--hosts`/`--hosts-file` (`@slurm`: the allocation's nodes) and the launch
/// command that reaches them (`--launch`; inside a Slurm allocation srun, else ssh).
fn hosts_and_launch(a: &RunArgs) -> anyhow::Result<(Vec<crate::hosts::HostSpec>, Launch)> {
    use crate::hosts::slurm;
    let allocation = a.hosts.as_deref().and_then(slurm::names_allocation);
    let hosts = match (&a.hosts, &a.hosts_file) {
        (Some(_), _) if let Some(target) = &allocation => slurm::allocation_hosts(
            slurm::nodelist_from_env().as_deref(),
            target.clone(),
            &crate::layout::cmd::Runner::real(),
        )?,
        (Some(list), _) => crate::hosts::parse_hosts(list)?,
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f).map_err(|source| {
                crate::hosts::HostsError::HostsFile {
                    path: f.clone(),
                    source,
                }
            })?;
            crate::hosts::parse_hosts(&text)?
        }
        (None, None) => unreachable!("checked by the caller"),
    };
    // Inside a Slurm allocation the agents are job steps: srun, unless --launch says otherwise.
    let template = match (&a.launch, &allocation) {
        (Some(t), _) => Some(t.as_str()),
        (None, Some(_)) => Some(slurm::SRUN_LAUNCH),
        (None, None) => None,
    };
    Ok((hosts, Launch::new(template)?))
}

/// `iolab run --hosts`: the suite of the flags (or of `--fio-job`) on every host, a
/// `--json` failure printed as one JSON document as for a local run.
pub fn run(ctx: &Context, a: RunArgs) -> anyhow::Result<ExitCode> {
    let json = a.json;
    super::json_on_error(json, run_with_flags(ctx, a))
}

fn run_with_flags(ctx: &Context, a: RunArgs) -> anyhow::Result<ExitCode> {
    let a = super::run::apply_fio_job(a)?;
    let suite = super::run::build_suite(&a)?;
    run_hosts(ctx, &a, suite)
}

fn run_hosts(ctx: &Context, a: &RunArgs, suite: Suite) -> anyhow::Result<ExitCode> {
    check_flags(a, &suite)?;
    let (hosts, launch) = hosts_and_launch(a)?;
    let repeat = a.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err(usage("--repeat: must be at least 1"));
    }
    if let Some(l) = &a.label {
        crate::store::check_label(l).map_err(|e| usage(format!("--label: {e}")))?;
    }
    if a.push {
        launch.command("x", Some("x"))?;
    }
    let mut store = if a.no_save {
        None
    } else {
        Some(super::db::open_store(ctx)?)
    };
    let mut opts = Options::new(suite.clone());
    opts.repeat = repeat;
    opts.default_target = a.target_all.clone().or_else(|| a.target.clone());
    opts.destroy = a.destroy.clone();
    opts.push = a.push;
    opts.on_failure = a.on_host_failure;
    crate::signals::install();
    eprintln!(
        "iolab: {} on {} host(s): {}",
        suite.name,
        hosts.len(),
        hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let meta = crate::hosts::save::SaveMeta {
        command_line: std::env::args().collect(),
        label: a.label.clone(),
        note: a.note.clone(),
    };
    // Stored first, owned by this process: a controller killed at any step leaves a run that
    // reads `incomplete`; replaced by the real runs at the end.
    let pending = store
        .as_mut()
        .map(|s| {
            let rec =
                crate::hosts::save::pending(&hosts, opts.default_target.as_deref(), &suite, &meta);
            s.begin_run(&rec)
        })
        .transpose()
        .context("cannot store the multi-host run")?;
    let outcome = crate::hosts::controller::run(&hosts, &launch, &opts);
    let summaries =
        crate::hosts::merge::summarize(&outcome, &suite, crate::disks::outliers::DEFAULT_TOLERANCE);
    let saved = match store.as_mut() {
        Some(s) => {
            let p = pending.as_deref();
            crate::hosts::save::save(s, &outcome, &summaries, &suite, &meta, p)
                .context("cannot store the multi-host run")?
        }
        None => None,
    };
    if a.json {
        let doc = crate::hosts::render::json(&outcome, &summaries, saved.as_ref());
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).context("cannot render JSON")?
        );
    } else {
        print!("{}", crate::hosts::render::table(&outcome, &summaries));
        if let Some(s) = &saved {
            println!(
                "saved as run {} (aggregate) and {} host run(s), hosts-group {}",
                s.aggregate,
                s.hosts.len(),
                s.group
            );
        }
    }
    let failed = outcome.hosts.iter().filter(|h| h.failed.is_some()).count();
    if let Some(e) = &outcome.error {
        eprintln!("iolab: error: {e}");
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    if outcome.interrupted {
        eprintln!("iolab: interrupted: finished trials are kept");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if failed > 0 {
        eprintln!(
            "iolab: {failed} of {} hosts failed; the aggregate covers {} of {}",
            outcome.hosts.len(),
            outcome.hosts.len() - failed,
            outcome.hosts.len()
        );
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
