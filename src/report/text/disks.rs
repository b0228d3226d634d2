//! The terminal tables of `iolab disks`: the census and the read test. Missing facts are "-".

use std::fmt::Write as _;

use crate::disks::bench::BenchReport;
use crate::disks::census::DiskInfo;
use crate::disks::outliers::Flag;
use crate::units::format_bytes;

/// Lays out rows under headers; columns whose flag in `right` is true are right-aligned.
pub fn table(headers: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let n = headers.len();
    let mut w: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut s = String::new();
        for (i, width) in w.iter().enumerate() {
            let c = cells.get(i).map_or("", String::as_str);
            let pad = width.saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < n {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(
        &headers
            .iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>(),
    );
    for r in rows {
        line(r);
    }
    out
}

fn dash(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty()).unwrap_or("-").to_string()
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.join(",")
    }
}

fn temp(t: Option<f64>) -> String {
    t.map_or("-".into(), |c| format!("{c:.0}C"))
}

fn mbps(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn flags_of(device: &str, flags: &[Flag]) -> String {
    let v: Vec<String> = flags
        .iter()
        .filter(|f| f.device == device)
        .map(Flag::short)
        .collect();
    if v.is_empty() {
        String::new()
    } else {
        v.join(" ")
    }
}

/// The layers' error counters below the census table, one line per member and layer (every
/// counter with `all`, else only those above zero; nothing when none is above zero).
pub fn counter_lines(counters: &[crate::disks::counters::DeviceCounters], all: bool) -> String {
    let mut out = String::new();
    if counters.is_empty() {
        if all {
            out.push_str("\nerror counters: no layer keeps any for these devices\n");
        }
        return out;
    }
    out.push_str("\nerror counters (what the storage layer noticed on each member):\n");
    for c in counters {
        out.push_str(&format!("  {}\n", c.line(all)));
    }
    out
}

/// The census table.
pub fn census_table(devs: &[DiskInfo], flags: &[Flag]) -> String {
    let headers = [
        "NAME", "TYPE", "MODEL", "SERIAL", "FW", "SIZE", "LOG/PHYS", "ROT", "TRAN", "SCHED", "QD",
        "TEMP", "FS", "HOLDERS", "MOUNTS", "MEMBER", "FLAG",
    ];
    let right = [
        false, false, false, false, false, true, true, false, false, false, true, true,
    ];
    let rows: Vec<Vec<String>> = devs
        .iter()
        .map(|d| {
            let b = &d.device;
            vec![
                b.name.clone(),
                d.kind.name().to_string(),
                dash(b.model.as_deref()),
                dash(b.serial.as_deref()),
                dash(b.firmware.as_deref()),
                format_bytes(b.size_bytes),
                format!("{}/{}", b.logical_block_size, b.physical_block_size),
                match b.rotational {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                },
                dash(b.transport.as_deref()),
                dash(b.scheduler.as_deref()),
                b.queue_depth.map_or("-".into(), |q| q.to_string()),
                temp(d.temperature_c),
                dash(d.signature.as_ref().and_then(|s| s.short())),
                list(&d.used_by),
                list(
                    &d.mountpoints
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>(),
                ),
                list(
                    &d.membership
                        .iter()
                        .map(crate::disks::membership::Membership::short)
                        .collect::<Vec<_>>(),
                ),
                flags_of(&b.name, flags),
            ]
        })
        .collect();
    let mut out = table(&headers, &rows, &right);
    for f in flags {
        let _ = writeln!(out, "{} {}: {}", f.kind.word(), f.device, f.message);
    }
    out
}

/// The read-test tables: per device alone, groups, and all at once with `--parallel`.
pub fn bench_table(r: &BenchReport, notes: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "read test: O_DIRECT {} sequential reads, QD {}, {:.1}s per place; MB/s (10^6 bytes/s)",
        format_bytes(r.block_size),
        r.queue_depth,
        r.runtime_s
    );
    let headers = [
        "DEVICE", "MODEL", "FW", "TEMP", "START", "MIDDLE", "END", "MEDIAN", "FLAG",
    ];
    let right = [false, false, false, true, true, true, true, true, false];
    let rows: Vec<Vec<String>> = r
        .devices
        .iter()
        .map(|d| {
            let place = |i: usize| d.places.get(i).map_or("-".into(), |p| mbps(p.mb_per_sec));
            vec![
                d.device.clone(),
                dash(d.model.as_deref()),
                dash(d.firmware.as_deref()),
                temp(d.temperature_c),
                place(0),
                place(1),
                place(2),
                d.median_mb_per_sec.map_or("-".into(), mbps),
                flags_of(&d.device, &r.flags),
            ]
        })
        .collect();
    out.push_str(&table(&headers, &rows, &right));
    for g in &r.groups {
        let _ = writeln!(
            out,
            "group '{}': {} device{} ({}), median {} MB/s{}",
            g.name,
            g.devices.len(),
            if g.devices.len() == 1 { "" } else { "s" },
            g.devices.join(", "),
            mbps(g.median_mb_per_sec),
            if g.devices.len() < 2 {
                " (nothing to compare with)"
            } else {
                ""
            }
        );
    }
    if !r.parallel.is_empty() {
        let _ = writeln!(out, "\nall at once (--parallel), MB/s:");
        let mut headers = vec!["DEVICE".to_string()];
        headers.extend(r.parallel.iter().map(|p| p.place.to_uppercase()));
        let rows: Vec<Vec<String>> = r
            .devices
            .iter()
            .filter(|d| d.places.iter().any(|p| p.parallel_mb_per_sec.is_some()))
            .map(|d| {
                let mut row = vec![d.device.clone()];
                for pp in &r.parallel {
                    row.push(
                        d.places
                            .iter()
                            .find(|p| p.place == pp.place)
                            .and_then(|p| p.parallel_mb_per_sec)
                            .map_or("-".into(), mbps),
                    );
                }
                row
            })
            .chain([
                std::iter::once("sum at once".to_string())
                    .chain(r.parallel.iter().map(|p| mbps(p.parallel_sum_mb_per_sec)))
                    .collect(),
                std::iter::once("sum alone".to_string())
                    .chain(r.parallel.iter().map(|p| mbps(p.solo_sum_mb_per_sec)))
                    .collect(),
                std::iter::once("at once / alone".to_string())
                    .chain(
                        r.parallel
                            .iter()
                            .map(|p| format!("{:.0}%", p.ratio * 100.0)),
                    )
                    .collect(),
            ])
            .collect();
        let h: Vec<&str> = headers.iter().map(String::as_str).collect();
        let right: Vec<bool> = (0..h.len()).map(|i| i > 0).collect();
        out.push_str(&table(&h, &rows, &right));
    }
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["A", "NUM", "C"],
            &[
                vec!["x".into(), "1".into(), "y".into()],
                vec!["long".into(), "100".into(), "-".into()],
            ],
            &[false, true, false],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "A     NUM  C");
        assert_eq!(lines[1], "x       1  y");
        assert_eq!(lines[2], "long  100  -");
    }
}
