//! fio, met where its users are: read fio's JSON results into runs (`iolab import`), and read
//! fio job files into iolab workloads (`iolab run --fio-job`, `iolab spec --from-fio`).
//!
//! `json` reads fio's output, `jobfile` reads the ini format, `map` decides what each job
//! option means in iolab (`reporting` lists the options that change only fio's own reports
//! and clocks, `rate` turns fio's rate caps into an open loop), and `record` turns fio's results into a stored run. No fio code is
//! used: only its documented formats.

pub mod geometry;
pub mod jobfile;
pub mod json;
pub mod map;
pub mod rate;
pub mod record;
pub mod reporting;

pub use jobfile::{JobFile, JobOption, JobSection, parse_job_file, parse_job_text};
pub use json::{FioOutput, parse_output};
pub use map::{Conversion, convert};
pub use record::{ImportMeta, to_run_record};

/// Why a fio file could not be used. Every message starts with the file (and line) it is
/// about; the CLI exits 2 for all of them.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// The file could not be read.
    #[error("{file}: cannot read: {why}")]
    Read {
        /// The file.
        file: String,
        /// The OS error.
        why: String,
    },
    /// Not usable fio output (text output, truncated, errored jobs...).
    #[error("{file}: {why}")]
    BadOutput {
        /// The file.
        file: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// A job file that is not fio's ini format.
    #[error("{at}: syntax error: {why}")]
    Syntax {
        /// `FILE:LINE`.
        at: String,
        /// What is wrong.
        why: String,
    },
    /// Options iolab cannot honour, one line each (`FILE:LINE: option 'X' is not supported by
    /// iolab`); nothing runs.
    #[error("{}", lines.join("\n"))]
    Unsupported {
        /// One line per option.
        lines: Vec<String>,
    },
}
