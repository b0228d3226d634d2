//! Writing a command's result: standard output that tolerates a closed pipe, JSON, files.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

/// Writes to standard output; a closed pipe (`| head`) ends quietly instead of panicking.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to standard output")
        }
        _ => Ok(()),
    }
}

/// Pretty JSON with a final newline, as every `--json` and JSON export prints it.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(v).context("cannot encode JSON")? + "\n")
}

/// Writes a whole file, naming it in the error.
pub(crate) fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
