//! `iolab lab SPEC --vm`: the command-line edge of [`crate::vm`] — the guest's flags, the
//! console shown while it runs, its output relayed with the environment stated, the exit code.

use std::io::IsTerminal;
use std::process::ExitCode;

use super::Context;
use super::lab::LabArgs;
use crate::decide::Decision;
use crate::output::Format;
use crate::vm::{VmError, VmOptions, VmOutcome};

/// The guest's `iolab lab` flags: everything that shapes the lab itself.
fn guest_args(a: &LabArgs) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    if a.quick {
        v.push("--quick".into());
    }
    for (flag, val) in [("--size", &a.size), ("--time", &a.time)] {
        if let Some(x) = val {
            v.push(flag.into());
            v.push(x.clone());
        }
    }
    if let Some(r) = a.repeat {
        v.push("--repeat".into());
        v.push(r.to_string());
    }
    v.push("--format".into());
    v.push(a.format.name().into());
    if a.verbose {
        v.push("--verbose".into());
    }
    // The host decides once the runs are labelled emulated.
    v.push("--no-decide".into());
    v
}

/// The text of a console line without terminal escape sequences (cursor moves, colours).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'[') {
            it.next();
            // Parameters and intermediates, then one final byte in @..~.
            for d in it.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
        }
    }
    out
}

/// The document `iolab lab --vm --format json` prints: the guest's JSON output (or its text,
/// as `guest_output`, when it is not JSON) with the environment, the VM's figures and the
/// decision added.
fn json_doc(
    out: &VmOutcome,
    env: &str,
    shown: Option<&Decision>,
) -> anyhow::Result<serde_json::Value> {
    let mut doc: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|_| serde_json::json!({ "guest_output": out.stdout }));
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("environment".into(), env.into());
        obj.insert(
            "vm".into(),
            serde_json::json!({
                "accel": out.accel.name(),
                "prepare_seconds": out.prepare_seconds,
                "boot_seconds": out.boot_seconds.iter().map(|b| b.1).collect::<Vec<_>>(),
                "kvm_try_seconds": out.kvm_try_seconds,
                "lab_seconds": out.lab_seconds,
                "runs_copied": out.copied,
                "exit_code": out.exit_code,
            }),
        );
        if let Some(d) = shown {
            obj.insert("decision".into(), serde_json::to_value(d)?);
        }
    }
    Ok(doc)
}

/// Prints what the lab in the VM did in `format`: a summary of the VM's run (how it booted,
/// how long the lab took, the runs copied), the guest's own report and the decision.
fn print_outcome(format: Format, out: &VmOutcome, shown: Option<&Decision>) -> anyhow::Result<()> {
    let env = out.accel.environment();
    let boots: Vec<String> = out
        .boot_seconds
        .iter()
        .map(|(acc, s)| format!("{s:.1} s ({})", acc.name()))
        .collect();
    let summary = format!(
        "environment: {env}: every layout was built in a virtual machine; speeds are emulated, not this machine's disks (behaviour and integrity are what count). Boot {}; lab {:.0} s in the guest; {} runs copied into the results store.",
        boots.join(", then "),
        out.lab_seconds,
        out.copied.len()
    );
    match format {
        Format::Json => {
            let doc = json_doc(out, &env, shown)?;
            println!("{}", serde_json::to_string_pretty(&doc)?);
        }
        Format::Md => {
            println!("> {summary}\n");
            print!("{}", out.stdout);
            if let Some(d) = shown {
                print!("\n{}", crate::report::text::decide::render_markdown(d));
            }
        }
        f @ (Format::Csv | Format::Html) => {
            return Err(super::usage(
                f.unsupported("lab", super::lab::FORMATS).to_string(),
            ));
        }
        Format::Text => {
            println!("{summary}\n");
            print!("{}", out.stdout);
            if let Some(d) = shown {
                print!("\n{}", crate::report::text::decide::render_table(d));
            }
        }
    }
    Ok(())
}

/// `iolab lab --vm`: runs the lab in a VM and prints what the guest printed, labelled.
pub fn run(ctx: &Context, a: &LabArgs) -> anyhow::Result<ExitCode> {
    let mut spec = super::lab::load_spec(a)?;
    let disk = super::lab::decide_needs(ctx, a, &mut spec)?;
    let (spec, disk) = (&spec, disk.as_ref());
    crate::signals::install();
    let opts = VmOptions {
        lab_args: guest_args(a),
        ..VmOptions::default()
    };
    let mut store = if a.no_save {
        None
    } else {
        Some(super::db::open_store(ctx)?)
    };
    let show = std::io::stderr().is_terminal() || a.verbose;
    let mut console = |line: &str, lab_started: bool| {
        // After a progress bar's redraws only the last state of the line matters.
        let text = strip_ansi(line.rsplit('\r').next().unwrap_or(line));
        let text = text.as_str();
        if (show && lab_started && !text.starts_with("iolab-guest: done"))
            || (a.verbose && !lab_started)
        {
            eprintln!("  vm| {text}");
        }
    };
    let out = match crate::vm::run_lab_in_vm(spec, &opts, store.as_mut(), &mut console) {
        Ok(o) => o,
        Err(VmError::Interrupted) => return Err(super::Interrupted.into()),
        Err(e) if e.is_usage() => return Err(super::usage(e.to_string())),
        Err(e) => return Err(anyhow::Error::new(e).context("iolab lab --vm")),
    };
    for n in &out.notes {
        eprintln!("note: {n}");
    }
    // The decision, from the runs as the host stored them (labelled emulated).
    let decision = match (&spec.decide, store.as_ref()) {
        (Some(d), Some(st)) if !out.copied.is_empty() => {
            let runs = super::db::load_all(st, &out.copied)?;
            let lab = runs
                .iter()
                .find_map(|r| r.lab_id.clone())
                .unwrap_or_default();
            Some(super::decide::decide_runs(
                &lab,
                &runs,
                d,
                disk,
                super::decide::AtRealSize::Build,
            ))
        }
        _ => None,
    };
    let shown = decision.as_ref().and_then(|d| d.as_ref().ok());
    print_outcome(a.format, &out, shown)?;
    if let Some(Err(e)) = decision {
        return Err(e);
    }
    match out.exit_code {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(c) => Ok(ExitCode::from(
            u8::try_from(c).unwrap_or(super::EXIT_FAILED),
        )),
        None => Err(anyhow::anyhow!(
            "iolab lab --vm: the VM ended without the lab's exit code (see the console lines above with --verbose)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_dropped() {
        assert_eq!(
            strip_ansi("\u{1b}[2K\u{1b}[1A[1/1] md5: degrading"),
            "[1/1] md5: degrading"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }
}
