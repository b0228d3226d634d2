//! fio's job-file format: an ini file of `[global]` and job sections, `include FILE`,
//! `${ENV}` expansion, comments after `;` or `#`. Every option keeps the file and line it came
//! from, so a refusal can point at it.
//!
//! Parsing only reads the structure; what an option means is decided in [`super::map`].

use std::path::{Path, PathBuf};

use super::FioError;

/// Most nested `include`s followed before giving up (a file including itself).
const MAX_INCLUDE_DEPTH: usize = 16;

/// One `key=value` (or bare `key`) line of a job file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOption {
    /// Option name, lower case, as written (aliases are resolved later).
    pub key: String,
    /// Value after `=`, trimmed and with `${ENV}` expanded; `None` for a bare flag.
    pub value: Option<String>,
    /// File the line is in (the included file for an `include`).
    pub file: String,
    /// 1-based line number in that file.
    pub line: usize,
}

impl JobOption {
    /// `FILE:LINE`, the prefix of every message about this option.
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// One job section with the `[global]` options in force where it was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSection {
    /// The section name (`[name]`).
    pub name: String,
    /// File and line of the section header.
    pub file: String,
    /// Line of the header.
    pub line: usize,
    /// Global options in force for this job, in order.
    pub globals: Vec<JobOption>,
    /// The job's own options, in order (they override globals).
    pub options: Vec<JobOption>,
}

impl JobSection {
    /// The effective options: globals first, then the job's own; the last one of a key wins.
    pub fn effective(&self) -> Vec<&JobOption> {
        let mut out: Vec<&JobOption> = Vec::new();
        for o in self.globals.iter().chain(&self.options) {
            out.retain(|p| p.key != o.key);
            out.push(o);
        }
        out
    }
}

/// A parsed job file: its jobs in order, each with its globals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobFile {
    /// The jobs, in file order.
    pub jobs: Vec<JobSection>,
    /// `${VAR}`s that were not set in the environment, with where they were used.
    pub unset_env: Vec<(String, String)>,
}

/// Reads and parses a job file (following `include`s relative to the including file).
pub fn parse_job_file(path: &Path) -> Result<JobFile, FioError> {
    let mut p = Parser::default();
    p.file(path, 0)?;
    p.finish(path)
}

/// Parses job-file text; `name` is used in messages and `include`s resolve against `dir`.
pub fn parse_job_text(text: &str, name: &str, dir: &Path) -> Result<JobFile, FioError> {
    let mut p = Parser::default();
    p.text(text, name, dir, 0)?;
    p.finish(Path::new(name))
}

#[derive(Default)]
struct Parser {
    globals: Vec<JobOption>,
    current: Option<JobSection>,
    in_global: bool,
    out: JobFile,
}

impl Parser {
    fn file(&mut self, path: &Path, depth: usize) -> Result<(), FioError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| FioError::Read {
            file: name.clone(),
            why: e.to_string(),
        })?;
        let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        self.text(&text, &name, &dir, depth)
    }

    fn text(&mut self, text: &str, name: &str, dir: &Path, depth: usize) -> Result<(), FioError> {
        let syntax = |line: usize, why: String| FioError::Syntax {
            at: format!("{name}:{line}"),
            why,
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = strip_comment(raw).trim();
            if l.is_empty() {
                continue;
            }
            if let Some(rest) = l.strip_prefix('[') {
                let Some(sect) = rest.strip_suffix(']') else {
                    return Err(syntax(
                        line,
                        format!("section header '{l}' has no closing ']'"),
                    ));
                };
                let sect = sect.trim();
                if sect.is_empty() {
                    return Err(syntax(line, "empty section name '[]'".into()));
                }
                self.close_job();
                if sect == "global" {
                    self.in_global = true;
                } else {
                    self.in_global = false;
                    self.current = Some(JobSection {
                        name: sect.to_string(),
                        file: name.to_string(),
                        line,
                        globals: self.globals.clone(),
                        options: Vec::new(),
                    });
                }
                continue;
            }
            if let Some(inc) = l.strip_prefix("include ") {
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(syntax(
                        line,
                        "includes nest too deep (a file includes itself?)".into(),
                    ));
                }
                let target = dir.join(inc.trim());
                self.file(&target, depth + 1)?;
                continue;
            }
            let (key, value) = match l.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (l, None),
            };
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(syntax(
                    line,
                    format!("'{l}' is not `option=value` or `option`"),
                ));
            }
            let value = value.map(|v| self.expand_env(v, &format!("{name}:{line}")));
            let opt = JobOption {
                key: key.to_ascii_lowercase(),
                value,
                file: name.to_string(),
                line,
            };
            if self.in_global {
                self.globals.push(opt);
            } else if let Some(job) = &mut self.current {
                job.options.push(opt);
            } else {
                return Err(syntax(
                    line,
                    format!(
                        "option '{key}' comes before any [section]; put it under [global] or a job"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn expand_env(&mut self, v: &str, at: &str) -> String {
        let mut out = String::new();
        let mut rest = v;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return out;
            };
            let var = &after[..end];
            if let Ok(val) = std::env::var(var) {
                out.push_str(&val);
            } else {
                self.out.unset_env.push((var.to_string(), at.to_string()));
                out.push_str(&rest[start..start + 3 + end]);
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn close_job(&mut self) {
        if let Some(j) = self.current.take() {
            self.out.jobs.push(j);
        }
    }

    fn finish(mut self, path: &Path) -> Result<JobFile, FioError> {
        self.close_job();
        if self.out.jobs.is_empty() {
            return Err(FioError::Syntax {
                at: path.display().to_string(),
                why: "no job section: add a [name] section with the job's options".into(),
            });
        }
        Ok(self.out)
    }
}

/// The line without a comment: a line starting with `;` or `#`, or the rest of a line after
/// whitespace followed by `;` or `#`.
fn strip_comment(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with(';') || t.starts_with('#') {
        return "";
    }
    let b = line.as_bytes();
    for i in 1..b.len() {
        if (b[i] == b';' || b[i] == b'#') && b[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

/// Parses one of fio's integers with a data unit (`4k`, `1m`, `0x1000`, `1gi`): with fio's
/// default `kb_base=1024`, `k`/`kb` are 1024 and `ki`/`kib` are 1000, the opposite of SI.
pub fn parse_fio_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, suffix) = split_number(s)?;
    let suffix = suffix.to_ascii_lowercase();
    let suffix = suffix.strip_suffix('b').unwrap_or(&suffix);
    let mult: u64 = match suffix {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        "ki" => 1_000,
        "mi" => 1_000_000,
        "gi" => 1_000_000_000,
        "ti" => 1_000_000_000_000,
        "pi" => 1_000_000_000_000_000,
        _ => return None,
    };
    num.checked_mul(mult)
}

/// Parses one of fio's times; a bare number is in `default_unit_ns` (seconds for runtime).
pub fn parse_fio_time_ns(s: &str, default_unit_ns: u64) -> Option<u64> {
    let (num, suffix) = split_number(s.trim())?;
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => default_unit_ns,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    num.checked_mul(mult)
}

fn split_number(s: &str) -> Option<(u64, &str)> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        let n = u64::from_str_radix(&hex[..end], 16).ok()?;
        return Some((n, &hex[end..]));
    }
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_globals_comments_and_lines() {
        let text = "; top\n[global]\nbs=4k\n# c\nioengine=psync ; trailing\n[a]\nrw=read\n[global]\nbs=8k\n[b]\nstonewall\n";
        let f = parse_job_text(text, "t.fio", Path::new(".")).unwrap();
        assert_eq!(f.jobs.len(), 2);
        let a = f.jobs[0].effective();
        assert_eq!(
            a.iter().find(|o| o.key == "bs").unwrap().value.as_deref(),
            Some("4k")
        );
        assert_eq!(
            a.iter()
                .find(|o| o.key == "ioengine")
                .unwrap()
                .value
                .as_deref(),
            Some("psync")
        );
        let b = f.jobs[1].effective();
        let bs = b.iter().find(|o| o.key == "bs").unwrap();
        assert_eq!((bs.value.as_deref(), bs.line), (Some("8k"), 9));
        assert_eq!(b.iter().find(|o| o.key == "stonewall").unwrap().value, None);
    }

    #[test]
    fn env_is_expanded_and_unset_is_reported() {
        let text = "[a]\nfilename=${HOME}/x\nsize=${IOLAB_SURELY_UNSET_VAR}\n";
        let f = parse_job_text(text, "e.fio", Path::new(".")).unwrap();
        let home = std::env::var("HOME").unwrap_or_default();
        assert_eq!(
            f.jobs[0].options[0].value.as_deref(),
            Some(format!("{home}/x").as_str())
        );
        assert_eq!(f.unset_env[0].0, "IOLAB_SURELY_UNSET_VAR");
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let e = parse_job_text("[a\nbs=4k\n", "s.fio", Path::new(".")).unwrap_err();
        assert!(e.to_string().starts_with("s.fio:1:"), "{e}");
        let e = parse_job_text("bs=4k\n[a]\n", "s.fio", Path::new(".")).unwrap_err();
        assert!(e.to_string().starts_with("s.fio:1:"), "{e}");
        let e = parse_job_text("[global]\nbs=4k\n", "s.fio", Path::new(".")).unwrap_err();
        assert!(e.to_string().contains("no job section"), "{e}");
    }

    #[test]
    fn fio_units() {
        assert_eq!(parse_fio_size("4k"), Some(4096));
        assert_eq!(parse_fio_size("4KB"), Some(4096));
        assert_eq!(parse_fio_size("1mi"), Some(1_000_000));
        assert_eq!(parse_fio_size("0x1000"), Some(4096));
        assert_eq!(parse_fio_size("1G"), Some(1 << 30));
        assert_eq!(parse_fio_size("50%"), None);
        assert_eq!(parse_fio_time_ns("30", 1_000_000_000), Some(30_000_000_000));
        assert_eq!(
            parse_fio_time_ns("2m", 1_000_000_000),
            Some(120_000_000_000)
        );
        assert_eq!(parse_fio_time_ns("500ms", 1_000_000_000), Some(500_000_000));
    }
}
