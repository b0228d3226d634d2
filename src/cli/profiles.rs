//! `iolab profiles`: the built-in profiles with what each is for and its exact parameters;
//! `--show NAME` prints one as a spec file to copy and edit.

use std::process::ExitCode;

use super::{Context, usage};
use crate::spec::profiles::{PROFILES, ProfileScale, profile, profile_names};

/// List the built-in profiles, or print one as a spec file.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "bonnie++ mapping (the mail profile): -n N:max:min:dirs = N*1024 files, sizes uniform in\n\
[min, max] bytes, spread over dirs directories; -b = fsync each file. `-b -n 128:25000:500:16` is\n\
files = 131072, max_file_size = 25000, min_file_size = 500, dirs = 16, fsync = true (--scale 1)."
)]
pub struct ProfilesArgs {
    /// Print this profile as a TOML spec (for `iolab run --spec`).
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    /// Scale for profiles that have one (mail).
    #[arg(long, value_name = "FRACTION")]
    pub scale: Option<f64>,
}

/// `iolab profiles`.
pub fn run(_ctx: &Context, a: ProfilesArgs) -> anyhow::Result<ExitCode> {
    let scale = ProfileScale {
        scale: a.scale,
        ..Default::default()
    };
    if let Some(name) = &a.show {
        let s = profile(name, scale).ok_or_else(|| {
            usage(format!(
                "--show: unknown profile '{name}' (known: {})",
                profile_names().join(", ")
            ))
        })?;
        print!(
            "# iolab profile '{name}': run it with `iolab run --spec FILE`\n{}",
            crate::spec::suite_to_toml(&s)
        );
        return Ok(ExitCode::SUCCESS);
    }
    for p in PROFILES {
        println!("{:<8} {}", p.name, p.about);
        if let Some(s) = profile(p.name, scale) {
            for w in &s.workloads {
                println!("           {:<28} {}", w.name, w.describe());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
