//! `iolab compare` (placeholder until its issue lands).

use std::process::ExitCode;

use super::Context;

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct CompareArgs {}

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct ListArgs {}

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct ShowArgs {}

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct ExportArgs {}

/// Arguments (placeholder).
#[derive(clap::Args, Debug)]
pub struct RmArgs {}

/// `iolab compare`.
pub fn compare(_ctx: &Context, _a: CompareArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("compare")
}
/// `iolab list`.
pub fn list(_ctx: &Context, _a: ListArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("list")
}
/// `iolab show`.
pub fn show(_ctx: &Context, _a: ShowArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("show")
}
/// `iolab export`.
pub fn export(_ctx: &Context, _a: ExportArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("export")
}
/// `iolab rm`.
pub fn rm(_ctx: &Context, _a: RmArgs) -> anyhow::Result<ExitCode> {
    super::not_yet("rm")
}
