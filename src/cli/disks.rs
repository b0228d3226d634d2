//! `iolab disks` (placeholder until its issue lands).

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct DisksArgs {}

/// `iolab disks`.
pub fn run(_ctx: &Context, _a: DisksArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("disks")
}
