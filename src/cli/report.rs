//! `iolab report` (placeholder until its issue lands).

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct ReportArgs {}

/// `iolab report`.
pub fn run(_ctx: &Context, _a: ReportArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("report")
}
