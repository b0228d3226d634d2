//! `iolab run`.

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct RunArgs {}

/// `iolab run`.
pub fn run(_ctx: &Context, _a: RunArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("run")
}
