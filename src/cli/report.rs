//! `iolab report RUN... [--baseline RUN] [--lab LAB] -o FILE.html`: a self-contained HTML
//! report with charts, or Markdown with SVG charts next to it (`--format md` or a `.md` file).
//!
//! Runs are referred to as in `iolab compare`: id, unique id prefix, label, `last`, `last~N`;
//! `--lab LAB` (an id, a prefix, `last`, `last~N`) adds every run of a lab, oldest first.
//! Files are written whole (a temporary file renamed into place), so a failed report never
//! leaves half a page.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use super::db::{load_all, open_existing, select_runs};
use crate::output::Format;
use crate::report::html::{self, ReportOptions};
use crate::report::markdown;
use crate::sample::now_unix_ms;

/// Arguments of `iolab report`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iolab report last~1 last -o report.html\n  iolab report raid5 raid6 raid10 --baseline raid5 -o raids.html\n  iolab report --lab 3f2a9c1e -o lab.html\n  iolab report raid5 raid6 -o post.md          Markdown + post-charts/*.svg"
)]
pub struct ReportArgs {
    /// Runs to report on: id, unique id prefix, label, `last` or `last~N`.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// The run the others are divided by (default: the first run); added first when it is not
    /// among RUN.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Every run (layout) of this lab, oldest first, after any RUN given: its id, a unique
    /// prefix of it, `last` or `last~N`.
    #[arg(long, value_name = "LAB")]
    pub lab: Option<String>,
    /// The file to write (`.html`, or `.md` for Markdown).
    #[arg(long, short = 'o', value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Output format (default: from the file's extension, else html): one self-contained HTML
    /// file (inline SVG charts, no script, no network), or Markdown with its charts as SVG files
    /// in `<name>-charts/` next to it.
    #[arg(long, value_parser = Format::only(FORMATS))]
    pub format: Option<Format>,
    /// Heading of the report (default: made from the run names or the lab).
    #[arg(long)]
    pub title: Option<String>,
}

/// The formats `iolab report` renders.
const FORMATS: &[Format] = &[Format::Html, Format::Md];

/// The format asked for, else the one the file name implies (html when it implies none); a
/// file named for a format the report cannot render (`report.csv`) is refused, not written
/// as HTML.
fn format_for(a: &ReportArgs) -> anyhow::Result<Format> {
    if let Some(f) = a.format {
        return Ok(f);
    }
    let ext = a
        .output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let implied = match ext.as_deref() {
        Some("md" | "markdown") => Format::Md,
        Some("txt" | "text") => Format::Text,
        Some("json") => Format::Json,
        Some("csv") => Format::Csv,
        _ => Format::Html,
    };
    if FORMATS.contains(&implied) {
        return Ok(implied);
    }
    Err(super::usage(format!(
        "-o {}: names a {} file, which iolab report does not render; give --format html or --format md, or a .html or .md file",
        a.output.display(),
        implied.name()
    )))
}

/// Refuses an output path that cannot be written before any work is done.
fn check_output(p: &Path) -> anyhow::Result<()> {
    if p.as_os_str().is_empty() {
        return Err(super::usage("-o: give a file name such as report.html"));
    }
    if p.is_dir() {
        return Err(super::usage(format!(
            "-o {}: is a directory; give a file name such as {}/report.html",
            p.display(),
            p.display()
        )));
    }
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = parent {
        if !d.is_dir() {
            return Err(super::usage(format!(
                "-o {}: directory {} does not exist; create it or choose another path",
                p.display(),
                d.display()
            )));
        }
    }
    Ok(())
}

/// Writes a file whole: into a temporary file beside it, then renamed over it.
fn write_whole(path: &Path, text: &str) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let r = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.with_context(|| format!("cannot write {}", path.display()))
}

/// Whether a file name is one `--format md` writes: `NN-<slug>-<kind>[-<op>].svg`.
fn is_our_chart(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".svg") else {
        return false;
    };
    let b = stem.as_bytes();
    b.len() > 3
        && b[0].is_ascii_digit()
        && b[1].is_ascii_digit()
        && b[2] == b'-'
        && stem
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && ["-bars", "-series", "-capacity", "-latency", "-hosts-p99"]
            .iter()
            .any(|k| stem.ends_with(k) || stem.contains(&format!("{k}-")))
}

/// Removes charts an earlier report left in `dir` that this one does not write, so the
/// directory holds exactly what the Markdown links to; other files are left alone.
fn remove_stale_charts(dir: &Path, keep: &[String]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if is_our_chart(&name) && !keep.contains(&name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A lab's report opens with its decision, made by the needs the lab ran with (none:
/// the Pareto front and the safest layout); a decision that cannot be made is a note instead.
fn lab_decision(
    ctx: &Context,
    lab: &str,
    runs: &[crate::sample::RunRecord],
    report: &mut html::Report,
) {
    let mine: Vec<crate::sample::RunRecord> = runs
        .iter()
        .filter(|r| r.lab_id.as_deref() == Some(lab))
        .cloned()
        .collect();
    let spec = crate::decide::from_runs(lab, &mine)
        .decide
        .unwrap_or_default();
    let made = super::decide::disk_measured(ctx, &spec).and_then(|disk| {
        // A report reads the store and builds nothing: usable at the real size is the
        // planner's model there (within 1% of what the layouts report: tests/capacity.rs).
        super::decide::decide_runs(
            lab,
            &mine,
            &spec,
            disk.as_ref(),
            super::decide::AtRealSize::Model,
        )
    });
    match made {
        Ok(d) => report.decision = Some(d),
        Err(e) => report.notes.push(html::model::Note {
            severity: html::model::Severity::Warning,
            text: format!("no decision for lab {lab}: {}", super::one_line(&e)),
        }),
    }
}

/// `iolab report`.
pub fn run(ctx: &Context, a: ReportArgs) -> anyhow::Result<ExitCode> {
    if a.runs.is_empty() && a.lab.is_none() {
        return Err(super::usage(
            "give the runs to report on (id, label, `last`...) or --lab ID; `iolab list` shows them",
        ));
    }
    check_output(&a.output)?;
    let format = format_for(&a)?;
    let what = a
        .runs
        .first()
        .cloned()
        .or_else(|| a.lab.clone())
        .unwrap_or_default();
    let store = open_existing(ctx, &what)?;
    let lab = (a.lab.as_deref())
        .map(|l| super::db::resolve_lab(&store, l))
        .transpose()?;
    let (ids, baseline) = select_runs(&store, &a.runs, lab.as_deref(), a.baseline.as_deref())?;
    let runs = load_all(&store, &ids)?;
    let opts = ReportOptions {
        baseline: baseline.and_then(|b| crate::report::compare::index_of(&runs, &b)),
        title: a.title.clone(),
        generated_unix_ms: now_unix_ms(),
    };
    let mut report = html::build(&runs, &opts);
    if let Some(lab) = &lab {
        lab_decision(ctx, lab, &runs, &mut report);
    }
    // An aggregate of `--hosts` alone still gets its per-host charts: its host runs are
    // loaded for them (not made columns of the comparison).
    let siblings = html::hosts::sibling_ids(&runs);
    if !siblings.is_empty() {
        let mut all = runs.clone();
        all.extend(siblings.iter().filter_map(|id| store.load_run(id).ok()));
        report.hosts = html::hosts::build(&all);
    }
    let (bytes, extra) = match format {
        f @ (Format::Text | Format::Json | Format::Csv) => {
            return Err(super::usage(f.unsupported("report", FORMATS).to_string()));
        }
        Format::Html => {
            let page = html::render(&report);
            write_whole(&a.output, &page)?;
            (page.len(), String::new())
        }
        Format::Md => {
            let stem = a
                .output
                .file_stem()
                .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
            let dir_name = format!("{stem}-charts");
            let dir = a.output.with_file_name(&dir_name);
            let md = markdown::render(&report, &dir_name);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for (name, svg) in &md.files {
                write_whole(&dir.join(name), svg)?;
            }
            let names: Vec<String> = md.files.iter().map(|(n, _)| n.clone()).collect();
            remove_stale_charts(&dir, &names);
            write_whole(&a.output, &md.text)?;
            (
                md.text.len(),
                format!(" and {} charts in {}", md.files.len(), dir.display()),
            )
        }
    };
    println!(
        "wrote {} ({} runs, {} workloads, {}){extra}",
        a.output.display(),
        report.runs.len(),
        report.workloads.len(),
        crate::units::format_bytes(bytes as u64)
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_chart_names_are_cleaned_up() {
        for ours in [
            "01-seq-write-1m-bars.svg",
            "02-mix-latency-write.svg",
            "03-w-series.svg",
            "00-lab-capacity.svg",
        ] {
            assert!(is_our_chart(ours), "{ours}");
        }
        for theirs in [
            "logo.svg",
            "01-bars.png",
            "notes.md",
            "1-x-bars.svg",
            "01-My-bars.svg",
        ] {
            assert!(!is_our_chart(theirs), "{theirs}");
        }
    }
}
