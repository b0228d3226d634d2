//! `iolab profiles` (placeholder until its issue lands).

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct ProfilesArgs {}

/// `iolab profiles`.
pub fn run(_ctx: &Context, _a: ProfilesArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("profiles")
}
