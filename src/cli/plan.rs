//! `iolab plan` (placeholder until its issue lands).

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct PlanArgs {}

/// `iolab plan`.
pub fn run(_ctx: &Context, _a: PlanArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("plan")
}
