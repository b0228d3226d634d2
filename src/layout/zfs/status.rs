//! What `zpool status` says: the pool's state, its scan line (resilver or scrub: bytes,
//! errors, progress), every device with its vdev, role and error counters, and whether data
//! errors were found. Written for `zpool status -p -P` (exact numbers, full paths) and reads
//! the human forms (`1.20G`) too; `iolab disks` reads `zpool status -P -L` of every pool.

use serde::{Deserialize, Serialize};

/// What a device does in its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VdevRole {
    /// In a data vdev.
    Data,
    /// In the special (metadata, small blocks) class.
    Special,
    /// In the dedup class.
    Dedup,
    /// A separate intent log (SLOG).
    Log,
    /// L2ARC.
    Cache,
    /// A hot spare.
    Spare,
}

impl VdevRole {
    /// The word shown in the census.
    pub fn name(self) -> &'static str {
        match self {
            VdevRole::Data => "data",
            VdevRole::Special => "special",
            VdevRole::Dedup => "dedup",
            VdevRole::Log => "log",
            VdevRole::Cache => "cache",
            VdevRole::Spare => "spare",
        }
    }

    fn from_section(word: &str) -> Option<VdevRole> {
        match word {
            "special" => Some(VdevRole::Special),
            "dedup" => Some(VdevRole::Dedup),
            "logs" => Some(VdevRole::Log),
            "cache" => Some(VdevRole::Cache),
            "spares" => Some(VdevRole::Spare),
            _ => None,
        }
    }
}

/// One leaf device of a pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// The name as printed (`/dev/vdb` with `-P`, `/dev/vdb1` with `-L` when partitioned).
    pub name: String,
    /// The top-level vdev it belongs to (`raidz2-0`, `mirror-1`); the device itself when it is
    /// a top-level vdev alone (a single-disk log, a cache device, a spare).
    pub vdev: String,
    /// Its role.
    pub role: VdevRole,
    /// `ONLINE`, `OFFLINE`, `DEGRADED`, `FAULTED`, `REMOVED`, `UNAVAIL`, `AVAIL`, `INUSE`.
    pub state: String,
    /// Read errors.
    pub read: u64,
    /// Write errors.
    pub write: u64,
    /// Checksum errors.
    pub cksum: u64,
}

impl Device {
    /// `vdb1: 12 checksum errors, 1 read error`, or `None` when every counter is 0: what the
    /// fault line says ZFS counted on the device.
    pub fn describe(&self) -> Option<String> {
        let name = self.name.rsplit('/').next().unwrap_or(&self.name);
        let parts: Vec<String> = [
            (self.cksum, "checksum error"),
            (self.read, "read error"),
            (self.write, "write error"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}{}", if *n == 1 { "" } else { "s" }))
        .collect();
        (!parts.is_empty()).then(|| format!("{name}: {}", parts.join(", ")))
    }
}

/// Scrub or resilver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanKind {
    /// `scrub repaired ...` / `scrub in progress`.
    Scrub,
    /// `resilvered ...` / `resilver in progress`.
    Resilver,
}

/// The scan line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scan {
    /// Scrub or resilver.
    pub kind: ScanKind,
    /// Still running.
    pub in_progress: bool,
    /// Bytes resilvered, or repaired by a scrub (so far, while running).
    pub bytes: u64,
    /// Errors counted (`with N errors`).
    pub errors: u64,
    /// Percent done while running.
    pub done_pct: Option<f64>,
}

/// One pool's status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PoolStatus {
    /// Pool name.
    pub pool: String,
    /// Pool state (`ONLINE`, `DEGRADED`...).
    pub state: String,
    /// The last or running scan.
    pub scan: Option<Scan>,
    /// Leaf devices in the order printed.
    pub devices: Vec<Device>,
    /// `errors:` says data errors were found (anything but "No known data errors").
    pub data_errors: bool,
    /// `errors: N data errors` (without `-v`): N.
    #[serde(default)]
    pub data_error_count: u64,
    /// The files and objects listed under `errors: Permanent errors ...` (with `-v`).
    #[serde(default)]
    pub permanent: Vec<String>,
}

impl PoolStatus {
    /// Files and objects with permanent errors: the `-v` list, else the count, else 1 when
    /// `errors:` says there are some.
    pub fn permanent_errors(&self) -> u64 {
        let listed = self.permanent.len() as u64;
        listed
            .max(self.data_error_count)
            .max(u64::from(self.data_errors))
    }

    /// Read, write and checksum errors summed over the leaf devices.
    pub fn error_totals(&self) -> (u64, u64, u64) {
        self.devices.iter().fold((0, 0, 0), |(c, r, w), d| {
            (c + d.cksum, r + d.read, w + d.write)
        })
    }
}

/// A number as zpool prints it: `1234` (with `-p`), `0B`, `1.20G`, `512K`.
pub fn parse_size(t: &str) -> Option<u64> {
    let t = t.trim().trim_end_matches('B');
    if t.is_empty() {
        return Some(0);
    }
    let (num, mult) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1u64 << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        'T' => (&t[..t.len() - 1], 1 << 40),
        'P' => (&t[..t.len() - 1], 1 << 50),
        _ => (t, 1),
    };
    if mult == 1 {
        return num.parse().ok();
    }
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * mult as f64).round() as u64)
}

/// The scan line's text (after `scan:`) with its continuation lines joined by spaces.
fn parse_scan(text: &str) -> Option<Scan> {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !(w.starts_with('(') && w.ends_with(')')))
        .collect();
    let first = *words.first()?;
    let kind = match first {
        "scrub" => ScanKind::Scrub,
        "resilvered" | "resilver" => ScanKind::Resilver,
        _ => return None,
    };
    let in_progress = words.windows(2).any(|w| w == ["in", "progress"]);
    let errors = words
        .windows(3)
        .find(|w| w[0] == "with" && w[2].starts_with("error"))
        .and_then(|w| w[1].parse().ok())
        .unwrap_or(0);
    let bytes = if in_progress {
        // `300M resilvered,` / `0B repaired,`
        words
            .windows(2)
            .find(|w| w[1].starts_with("resilvered") || w[1].starts_with("repaired"))
            .and_then(|w| parse_size(w[0]))
            .unwrap_or(0)
    } else {
        // `resilvered 1234 in ...` / `scrub repaired 0B in ...`
        let at = words
            .iter()
            .position(|w| *w == "resilvered" || *w == "repaired");
        at.and_then(|i| words.get(i + 1))
            .and_then(|w| parse_size(w))
            .unwrap_or(0)
    };
    let done_pct = words
        .windows(2)
        .find(|w| w[1].starts_with("done"))
        .and_then(|w| w[0].trim_end_matches('%').parse().ok());
    Some(Scan {
        kind,
        in_progress,
        bytes,
        errors,
        done_pct,
    })
}

/// One line of the config table.
struct Node<'a> {
    indent: usize,
    name: &'a str,
    state: &'a str,
    counters: [u64; 3],
    role: VdevRole,
}

/// Parses every pool in `zpool status` output, in order.
pub fn parse_all(text: &str) -> Vec<PoolStatus> {
    let mut out: Vec<PoolStatus> = Vec::new();
    let mut chunk = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("pool:") && !chunk.trim().is_empty() {
            out.push(parse_status(&chunk));
            chunk.clear();
        }
        chunk.push_str(line);
        chunk.push('\n');
    }
    if !chunk.trim().is_empty() {
        out.push(parse_status(&chunk));
    }
    out.retain(|p| !p.pool.is_empty());
    out
}

/// Parses one pool's `zpool status` output.
pub fn parse_status(text: &str) -> PoolStatus {
    let mut st = PoolStatus::default();
    let mut scan_text: Option<String> = None;
    let mut in_scan = false;
    let mut in_config = false;
    let mut in_errors = false;
    let mut nodes: Vec<Node> = Vec::new();
    let mut role = VdevRole::Data;
    for line in text.lines() {
        let t = line.trim();
        if let Some((key, val)) = t.split_once(':').filter(|(k, _)| {
            !line.starts_with('\t') && k.chars().all(|c| c.is_ascii_lowercase()) && !k.is_empty()
        }) {
            in_scan = key == "scan";
            in_errors = key == "errors";
            match key {
                "pool" => st.pool = val.trim().to_string(),
                "state" => st.state = val.trim().to_string(),
                "scan" => scan_text = Some(val.trim().to_string()),
                "config" => in_config = true,
                "errors" => {
                    in_config = false;
                    let val = val.trim();
                    st.data_errors = !val.starts_with("No known data errors");
                    st.data_error_count = val
                        .split_whitespace()
                        .next()
                        .and_then(|w| w.parse().ok())
                        .unwrap_or(0);
                }
                _ => in_config = false,
            }
            continue;
        }
        if in_errors {
            if !t.is_empty() {
                st.permanent.push(t.to_string());
            }
            continue;
        }
        if in_scan {
            if let Some(s) = scan_text.as_mut() {
                s.push(' ');
                s.push_str(t);
            }
            continue;
        }
        if !in_config || t.is_empty() {
            continue;
        }
        let body = line.strip_prefix('\t').unwrap_or(line);
        let indent = body.len() - body.trim_start().len();
        let words: Vec<&str> = t.split_whitespace().collect();
        if words.first() == Some(&"NAME") {
            continue;
        }
        if indent == 0 && words.len() == 1 {
            if let Some(r) = VdevRole::from_section(words[0]) {
                role = r;
                continue;
            }
        }
        if indent == 0 {
            role = VdevRole::Data;
        }
        let num = |i: usize| words.get(i).and_then(|w| parse_size(w)).unwrap_or(0);
        nodes.push(Node {
            indent,
            name: words[0],
            state: words.get(1).copied().unwrap_or(""),
            counters: [num(2), num(3), num(4)],
            role,
        });
    }
    st.scan = scan_text.as_deref().and_then(parse_scan);
    st.devices = leaves(&nodes);
    st
}

/// The leaves of the config tree, each with its top-level vdev (indent 2; the pool line and
/// the section headers are at 0).
fn leaves(nodes: &[Node]) -> Vec<Device> {
    let mut out = Vec::new();
    let mut top = "";
    for (i, n) in nodes.iter().enumerate() {
        if n.indent == 0 {
            continue;
        }
        if n.indent <= 2 {
            top = n.name;
        }
        let has_child = nodes.get(i + 1).is_some_and(|m| m.indent > n.indent);
        if has_child {
            continue;
        }
        out.push(Device {
            name: n.name.to_string(),
            vdev: top.to_string(),
            role: n.role,
            state: n.state.to_string(),
            read: n.counters[0],
            write: n.counters[1],
            cksum: n.counters[2],
        });
    }
    out
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
