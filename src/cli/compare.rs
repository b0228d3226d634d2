//! `iolab compare`: stored runs side by side, with ratios and significance.
//!
//! Runs are referred to as `cli::db` describes (id, prefix, label, `last`, `last~N`); `--lab LAB`
//! (an id, a prefix, `last`, `last~N`) adds every run of a lab.

use std::process::ExitCode;

use super::Context;
use super::db::{load_all, open_for, resolve_lab, select_runs};
use super::out::emit;
use crate::output::Format;
use crate::report::compare::{self as cmp, CompareOptions};

/// The formats `iolab compare` renders.
const FORMATS: &[Format] = &[Format::Text, Format::Md, Format::Json, Format::Csv];

/// Arguments of `iolab compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Runs to compare: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN", required_unless_present = "lab")]
    pub runs: Vec<String>,
    /// Every run of this lab (`iolab lab` prints its id; a unique prefix, `last` or `last~N`
    /// too), in the order they ran.
    #[arg(long, value_name = "LAB")]
    pub lab: Option<String>,
    /// The run the others are divided by (default: the first RUN); added as the first column
    /// when it is not among RUN.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Output format: an aligned table, a Markdown table, every statistic as JSON, or one CSV
    /// line per cell with every statistic.
    #[arg(long, default_value = "text", value_parser = Format::only(FORMATS))]
    pub format: Format,
    /// Only these metrics: a full name (`read.iops`), a figure (`iops`, `mbps`, `lat_p99_us`)
    /// or an operation (`read`, `create`). Repeatable.
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
}

/// `iolab compare`.
pub fn compare(ctx: &Context, a: CompareArgs) -> anyhow::Result<ExitCode> {
    let refs: Vec<String> = if a.runs.is_empty() {
        a.lab.iter().cloned().collect()
    } else {
        a.runs.clone()
    };
    let store = open_for(ctx, &refs)?;
    let lab = a
        .lab
        .as_deref()
        .map(|l| resolve_lab(&store, l))
        .transpose()?;
    let (ids, baseline) = select_runs(&store, &a.runs, lab.as_deref(), a.baseline.as_deref())?;
    if ids.len() < 2 {
        return Err(super::usage(
            "compare needs at least two different runs: give two RUNs, or one RUN and --baseline RUN",
        ));
    }
    let runs = load_all(&store, &ids)?;
    let opts = CompareOptions {
        baseline: baseline.and_then(|b| cmp::index_of(&runs, &b)),
        metrics: a.metrics.clone(),
    };
    let c = cmp::build(&runs, &opts);
    if c.rows.is_empty() && !a.metrics.is_empty() {
        return Err(super::usage(format!(
            "no metric matches --metric {}; names look like read.iops, write.mbps, create.ops, read.lat_p99_us",
            a.metrics.join(", --metric ")
        )));
    }
    let text = match a.format {
        Format::Md => cmp::render_markdown(&c),
        Format::Json => cmp::render_json(&c),
        Format::Csv => cmp::render_csv(&c),
        Format::Text => cmp::render_text(&c),
        f @ Format::Html => {
            return Err(super::usage(f.unsupported("compare", FORMATS).to_string()));
        }
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}
