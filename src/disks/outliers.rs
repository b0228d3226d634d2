//! The slow-disk finder: devices of the same model and firmware should read alike, so one that
//! reads well below its group's median is worth a look (the 59 vs 83 MB/s pair of
//! `raid-vs-lvm-hdparm-dd.txt`). Also hot disks and disks that failed the read test.
//!
//! Pure functions over figures already measured, so every rule is tested without a disk.

use serde::{Deserialize, Serialize};

/// Default `--tolerance`: a device more than this fraction below its group's median is SLOW.
pub const DEFAULT_TOLERANCE: f64 = 0.15;
/// Default temperature limit of spinning disks, °C (most datasheets allow 55-60 in operation;
/// above 50 shortens their life).
pub const DEFAULT_MAX_TEMP_HDD: f64 = 50.0;
/// Default temperature limit of SSDs and NVMe drives, °C (they throttle from about 70).
pub const DEFAULT_MAX_TEMP_SSD: f64 = 70.0;

/// What a flag says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FlagKind {
    /// Reads more than the tolerance below the median of its model+firmware group.
    Slow,
    /// Hotter than the limit.
    Hot,
    /// The read test failed (IO error, could not open).
    Error,
}

impl FlagKind {
    /// The word in the table.
    pub fn word(self) -> &'static str {
        match self {
            FlagKind::Slow => "SLOW",
            FlagKind::Hot => "HOT",
            FlagKind::Error => "ERROR",
        }
    }
}

/// One finding about one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    /// Kernel name of the device.
    pub device: String,
    /// SLOW, HOT or ERROR.
    pub kind: FlagKind,
    /// One line for people: by how much, against what.
    pub message: String,
    /// The group the device was compared with (SLOW).
    pub group: Option<String>,
    /// How far below the group median, percent (SLOW).
    pub below_pct: Option<f64>,
    /// The device's median read, MB/s (SLOW).
    pub mb_per_sec: Option<f64>,
    /// The group's median read, MB/s (SLOW).
    pub group_median_mb_per_sec: Option<f64>,
    /// Temperature, °C (HOT).
    pub temperature_c: Option<f64>,
    /// The limit it exceeded, °C (HOT).
    pub limit_c: Option<f64>,
}

impl Flag {
    fn new(device: &str, kind: FlagKind, message: String) -> Flag {
        Flag {
            device: device.to_string(),
            kind,
            message,
            group: None,
            below_pct: None,
            mb_per_sec: None,
            group_median_mb_per_sec: None,
            temperature_c: None,
            limit_c: None,
        }
    }

    /// A device whose read test failed.
    pub fn error(device: &str, why: &str) -> Flag {
        Flag::new(device, FlagKind::Error, format!("read test failed: {why}"))
    }

    /// Short text for the table cell: `SLOW -38%`, `HOT 58°C`, `ERROR`.
    pub fn short(&self) -> String {
        match self.kind {
            FlagKind::Slow => format!("SLOW -{}%", pct(self.below_pct.unwrap_or(0.0))),
            FlagKind::Hot => format!("HOT {:.0}C", self.temperature_c.unwrap_or(0.0)),
            FlagKind::Error => "ERROR".to_string(),
        }
    }
}

/// A percentage as people read it: whole numbers, but never "100%" for 99.8%.
fn pct(v: f64) -> String {
    if (99.5..100.0).contains(&v) {
        format!("{:.1}", (v * 10.0).floor() / 10.0)
    } else {
        format!("{v:.0}")
    }
}

/// The group a device is compared within: same model and firmware. Devices without a model
/// (loop, zram, many virtual disks) form one group per transport, so three loop devices are
/// compared with each other.
pub fn group_name(model: Option<&str>, firmware: Option<&str>, transport: Option<&str>) -> String {
    match model {
        Some(m) => format!("{m} fw {}", firmware.unwrap_or("-")),
        None => format!("{} (no model)", transport.unwrap_or("unknown")),
    }
}

/// One device's median read, for grouping.
#[derive(Debug, Clone, PartialEq)]
pub struct Speed {
    /// Kernel name.
    pub device: String,
    /// Its group (see [`group_name`]).
    pub group: String,
    /// Median MB/s over its places.
    pub mb_per_sec: f64,
}

/// Devices of one model and firmware and their median.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Model and firmware, or transport when there is no model.
    pub name: String,
    /// Kernel names, in input order.
    pub devices: Vec<String>,
    /// Median of the devices' median reads, MB/s.
    pub median_mb_per_sec: f64,
}

/// Groups the devices and flags each one more than `tolerance` (a fraction, 0.15 = 15%) below
/// its group's median. Groups of one device are listed but never flag anything.
pub fn slow_flags(speeds: &[Speed], tolerance: f64) -> (Vec<Group>, Vec<Flag>) {
    let mut groups: Vec<Group> = Vec::new();
    for s in speeds {
        match groups.iter_mut().find(|g| g.name == s.group) {
            Some(g) => g.devices.push(s.device.clone()),
            None => groups.push(Group {
                name: s.group.clone(),
                devices: vec![s.device.clone()],
                median_mb_per_sec: 0.0,
            }),
        }
    }
    let mut flags = Vec::new();
    for g in &mut groups {
        let members: Vec<&Speed> = speeds.iter().filter(|s| s.group == g.name).collect();
        let v: Vec<f64> = members.iter().map(|s| s.mb_per_sec).collect();
        g.median_mb_per_sec = crate::report::json::median(&v);
        if members.len() < 2 || g.median_mb_per_sec <= 0.0 {
            continue;
        }
        for s in members {
            let ratio = s.mb_per_sec / g.median_mb_per_sec;
            if ratio < 1.0 - tolerance {
                let below = (1.0 - ratio) * 100.0;
                let mut f = Flag::new(
                    &s.device,
                    FlagKind::Slow,
                    format!(
                        "reads {}% below the median of its group '{}' ({:.1} vs {:.1} MB/s, {} devices)",
                        pct(below),
                        g.name,
                        s.mb_per_sec,
                        g.median_mb_per_sec,
                        g.devices.len()
                    ),
                );
                f.group = Some(g.name.clone());
                f.below_pct = Some(below);
                f.mb_per_sec = Some(s.mb_per_sec);
                f.group_median_mb_per_sec = Some(g.median_mb_per_sec);
                flags.push(f);
            }
        }
    }
    (groups, flags)
}

/// The temperature limit of a device: `max` when given, else by kind of drive.
pub fn temp_limit(rotational: Option<bool>, max: Option<f64>) -> f64 {
    max.unwrap_or(if rotational == Some(false) {
        DEFAULT_MAX_TEMP_SSD
    } else {
        DEFAULT_MAX_TEMP_HDD
    })
}

/// A HOT flag when the device's temperature is known and above its limit.
pub fn hot_flag(
    device: &str,
    temperature_c: Option<f64>,
    rotational: Option<bool>,
    max: Option<f64>,
) -> Option<Flag> {
    let t = temperature_c?;
    let limit = temp_limit(rotational, max);
    (t > limit).then(|| {
        let mut f = Flag::new(
            device,
            FlagKind::Hot,
            format!("{t:.0}°C, above the limit of {limit:.0}°C"),
        );
        f.temperature_c = Some(t);
        f.limit_c = Some(limit);
        f
    })
}

/// Parses `--tolerance` as a fraction: `15` and `15%` both mean 15% (a bare number is a
/// percentage, as people say it). Must be between 0 and 100.
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage; give e.g. 15 or 15%"))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(format!(
            "'{s}' is out of range; give a percentage between 0 and 100, e.g. 15"
        ));
    }
    Ok(v / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(d: &str, g: &str, v: f64) -> Speed {
        Speed {
            device: d.into(),
            group: g.into(),
            mb_per_sec: v,
        }
    }

    #[test]
    fn the_59_vs_83_pair_is_flagged_within_its_group() {
        // The seed post: same model and firmware, 59 and 83 MB/s; plus a third like the fast one.
        let g = group_name(Some("ST3500418AS"), Some("CC38"), Some("sata"));
        let speeds = [
            sp("sda", &g, 83.0),
            sp("sdb", &g, 59.0),
            sp("sdc", &g, 82.0),
        ];
        let (groups, flags) = slow_flags(&speeds, DEFAULT_TOLERANCE);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].median_mb_per_sec, 82.0);
        assert_eq!(flags.len(), 1);
        assert_eq!(flags[0].device, "sdb");
        assert_eq!(flags[0].kind, FlagKind::Slow);
        let below = flags[0].below_pct.unwrap();
        assert!((below - 28.0488).abs() < 0.01, "{below}");
        assert_eq!(flags[0].short(), "SLOW -28%");
        assert!(flags[0].message.contains("ST3500418AS fw CC38"));
    }

    #[test]
    fn different_models_are_not_compared_and_singletons_never_flag() {
        let speeds = [
            sp("sda", "A fw 1", 200.0),
            sp("sdb", "B fw 1", 50.0),
            sp("sdc", "A fw 2", 100.0),
        ];
        let (groups, flags) = slow_flags(&speeds, DEFAULT_TOLERANCE);
        assert_eq!(groups.len(), 3);
        assert!(flags.is_empty());
    }

    #[test]
    fn tolerance_is_the_boundary() {
        let speeds = [sp("a", "g", 100.0), sp("b", "g", 100.0), sp("c", "g", 86.0)];
        assert!(
            slow_flags(&speeds, 0.15).1.is_empty(),
            "14% below: within 15%"
        );
        let speeds = [sp("a", "g", 100.0), sp("b", "g", 100.0), sp("c", "g", 84.0)];
        assert_eq!(slow_flags(&speeds, 0.15).1.len(), 1, "16% below");
        assert!(slow_flags(&speeds, 0.20).1.is_empty());
    }

    #[test]
    fn no_model_groups_by_transport() {
        assert_eq!(group_name(None, None, Some("loop")), "loop (no model)");
        assert_eq!(group_name(Some("X"), None, Some("sata")), "X fw -");
    }

    #[test]
    fn hot_limits_by_kind_and_override() {
        assert!(hot_flag("sda", Some(52.0), Some(true), None).is_some());
        assert!(hot_flag("nvme0n1", Some(52.0), Some(false), None).is_none());
        assert!(hot_flag("nvme0n1", Some(52.0), Some(false), Some(45.0)).is_some());
        assert!(
            hot_flag("loop0", None, Some(false), Some(0.0)).is_none(),
            "unknown is not hot"
        );
        let f = hot_flag("sda", Some(58.0), Some(true), None).unwrap();
        assert_eq!(f.short(), "HOT 58C");
        assert_eq!(f.limit_c, Some(50.0));
    }

    #[test]
    fn tolerance_parsing() {
        assert_eq!(parse_tolerance("15"), Ok(0.15));
        assert_eq!(parse_tolerance("15%"), Ok(0.15));
        assert_eq!(parse_tolerance("2.5%"), Ok(0.025));
        assert!(parse_tolerance("0").is_err());
        assert!(parse_tolerance("100").is_err());
        assert!(parse_tolerance("fast").is_err());
    }
}
