//! `iolab lab` (placeholder until its issue lands).

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct LabArgs {}

/// `iolab lab`.
pub fn run(_ctx: &Context, _a: LabArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("lab")
}
