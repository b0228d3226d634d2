//! What a decision is made against: the real disks the lab's layouts stand for, the
//! needs that rule layouts out, and what to maximise among those left — written as a lab
//! spec's `[decide]` table or as `iolab decide` flags, read here into one [`DecideSpec`].
//!
//! ```toml
//! [decide]
//! disk_size = "8TB"                      # the real disks (the lab's are small)
//! disk_write_mbps = 180                  # their speed, when the lab could not measure it
//! min_usable = "70TB"
//! max_loss_5y = "0.1%"
//! min = { "seq-write-1m" = "400MB/s" }   # any stored workload's headline
//! min_capacity_at_slo = 2000             # IOPS, where [workloads] slo searched it
//! prefer = "safety"                      # usable | safety | speed | capacity_at_slo
//! ```
//!
//! Every value parses here once, whether it came from TOML or a flag, so `"0.1%"` and `400MB/s`
//! mean the same everywhere; what needs the lab (does that workload exist, did it search a
//! latency target) is checked by the lab spec and by `decide` against the stored runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::locate::{SizeValue, TimeValue};
use crate::units;

/// What to maximise among the layouts that meet every need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prefer {
    /// Most usable capacity at the real disk size.
    Usable,
    /// Lowest probability of losing data in 5 years (the default: the one figure a wrong
    /// choice cannot buy back later).
    #[default]
    Safety,
    /// Fastest on the decision's workload (its headline).
    Speed,
    /// Highest rate meeting the lab's latency target.
    CapacityAtSlo,
}

impl Prefer {
    /// Every value, as written.
    pub const ALL: [Prefer; 4] = [
        Prefer::Usable,
        Prefer::Safety,
        Prefer::Speed,
        Prefer::CapacityAtSlo,
    ];

    /// The word as written in specs and flags.
    pub fn name(self) -> &'static str {
        match self {
            Prefer::Usable => "usable",
            Prefer::Safety => "safety",
            Prefer::Speed => "speed",
            Prefer::CapacityAtSlo => "capacity_at_slo",
        }
    }

    /// Reads `usable`, `safety`, `speed`, `capacity_at_slo` (`capacity-at-slo` too).
    pub fn parse(text: &str) -> Result<Prefer, String> {
        let t = text.trim().to_ascii_lowercase().replace('-', "_");
        Prefer::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                format!(
                    "'{text}' is not a preference (use {})",
                    Prefer::ALL.map(Prefer::name).join(", ")
                )
            })
    }
}

/// The unit a speed need is written in; it must be the unit of the workload's headline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeedUnit {
    /// 10^6 bytes per second (`400MB/s`; `1.2GB/s` and `400MiB/s` are converted).
    MBps,
    /// IOs per second (`2000IOPS`).
    Iops,
    /// Metadata operations per second (`1500ops/s`).
    OpsPerSec,
}

impl SpeedUnit {
    /// The label printed after a value.
    pub fn label(self) -> &'static str {
        match self {
            SpeedUnit::MBps => "MB/s",
            SpeedUnit::Iops => "IOPS",
            SpeedUnit::OpsPerSec => "ops/s",
        }
    }
}

/// The unit of a workload's headline figure (see `sample::headline`): MB/s for sequential IO
/// and large blocks, IOPS for random IO, ops/s for small files.
pub fn headline_unit(w: &super::Workload) -> SpeedUnit {
    match &w.kind {
        super::WorkloadKind::Io(io) if io.headline_is_bandwidth() => SpeedUnit::MBps,
        super::WorkloadKind::Io(_) => SpeedUnit::Iops,
        _ => SpeedUnit::OpsPerSec,
    }
}

/// A workload's headline must reach at least this (`min = { "seq-write-1m" = "400MB/s" }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MinSpeed {
    /// The workload, by name.
    pub workload: String,
    /// The least median, in `unit`.
    pub value: f64,
    /// The unit written (`None`: a bare number, in the headline's own unit).
    pub unit: Option<SpeedUnit>,
}

/// Reads a speed: `400MB/s`, `1.2GB/s`, `400MiB/s`, `2000IOPS`, `1500ops/s`, or a bare number
/// (in the headline's own unit).
pub fn parse_speed(text: &str) -> Result<(f64, Option<SpeedUnit>), String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let number = |s: &str| -> Result<f64, String> {
        let v: f64 = s.trim().replace('_', "").parse().map_err(|_| {
            format!("'{text}' is not a speed (write e.g. 400MB/s, 2000IOPS, 1500ops/s)")
        })?;
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("'{text}' must be above 0"))
        }
    };
    if let Some(n) = lower.strip_suffix("iops") {
        return Ok((number(n)?, Some(SpeedUnit::Iops)));
    }
    if let Some(n) = lower
        .strip_suffix("ops/s")
        .or_else(|| lower.strip_suffix("op/s"))
    {
        return Ok((number(n)?, Some(SpeedUnit::OpsPerSec)));
    }
    if let Some(bytes) = t.strip_suffix("/s").or_else(|| t.strip_suffix("ps")) {
        let b = units::parse_bytes(bytes).map_err(|e| {
            format!("'{text}': {e}; write a rate like 400MB/s (decimal) or 400MiB/s")
        })?;
        if b == 0 {
            return Err(format!("'{text}' must be above 0"));
        }
        return Ok((b as f64 / 1e6, Some(SpeedUnit::MBps)));
    }
    Ok((number(t)?, None))
}

/// Reads `WORKLOAD=SPEED` (the `--min` flag).
pub fn parse_min(text: &str) -> Result<MinSpeed, String> {
    let (w, v) = text.split_once('=').ok_or_else(|| {
        format!("'{text}' is not WORKLOAD=SPEED (e.g. --min seq-write-1m=400MB/s)")
    })?;
    let workload = w.trim().to_string();
    if workload.is_empty() {
        return Err(format!(
            "'{text}' names no workload (e.g. seq-write-1m=400MB/s)"
        ));
    }
    let (value, unit) = parse_speed(v).map_err(|e| format!("{workload}: {e}"))?;
    Ok(MinSpeed {
        workload,
        value,
        unit,
    })
}

/// Reads a probability: `0.1%` or `0.001`, in [0, 1].
pub fn parse_probability(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a probability (write e.g. 0.1% or 0.001)"))?;
    let p = v / scale;
    if !p.is_finite() || !(0.0..=1.0).contains(&p) {
        return Err(format!(
            "'{text}' is not between 0 and 1 (write e.g. 0.1% or 0.001)"
        ));
    }
    Ok(p)
}

/// Reads an unrecoverable-read-error rate: `desktop` (1e-14), `enterprise` (1e-15) or a number
/// per bit in [0, 1).
pub fn parse_ure(text: &str) -> Result<f64, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "desktop" | "consumer" => Ok(1e-14),
        "enterprise" => Ok(1e-15),
        t => t
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..1.0).contains(v))
            .ok_or_else(|| {
                format!("'{text}' is not a per-bit rate (use desktop, enterprise or e.g. 1e-14)")
            }),
    }
}

/// The needs: a layout missing any is rejected, with the need named.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Needs {
    /// Least usable bytes at the real disk size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_usable: Option<u64>,
    /// Highest probability of losing data within one year.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_loss_1y: Option<f64>,
    /// Highest probability of losing data within five years.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_loss_5y: Option<f64>,
    /// Least IOPS meeting the lab's latency target (healthy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_capacity_at_slo: Option<f64>,
    /// Least headline per workload.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub min: Vec<MinSpeed>,
    /// Losses the user accepts, which then rule no layout out (`--accept silent-corruption`:
    /// the application checks its own data, so wrong bytes without an error are its to find).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept: Vec<Accept>,
}

/// A loss a decision may be told to accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accept {
    /// Files a lab fault returned with wrong bytes and no error (md without dm-integrity
    /// under a corrupt fault): the layout is not rejected for it.
    SilentCorruption,
}

impl Accept {
    /// The word as written (`silent-corruption`).
    pub fn word(self) -> &'static str {
        match self {
            Accept::SilentCorruption => "silent-corruption",
        }
    }

    /// Parses the word (`silent-corruption`, or with an underscore).
    pub fn parse(text: &str) -> Result<Accept, String> {
        match text.trim().replace('_', "-").as_str() {
            "silent-corruption" => Ok(Accept::SilentCorruption),
            _ => Err(format!(
                "'{text}' is not a loss one can accept (known: silent-corruption)"
            )),
        }
    }
}

impl Needs {
    /// True when no need is set.
    pub fn is_empty(&self) -> bool {
        self.min_usable.is_none()
            && self.max_loss_1y.is_none()
            && self.max_loss_5y.is_none()
            && self.min_capacity_at_slo.is_none()
            && self.min.is_empty()
    }
}

/// The speed of one real disk, as far as it is stated (`None`: measured or defaulted later).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskSpeeds {
    /// Sequential read, MB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_mbps: Option<f64>,
    /// Sequential write, MB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_mbps: Option<f64>,
    /// Random read IOPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    /// Random write IOPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<f64>,
}

impl DiskSpeeds {
    /// True when some figure is stated.
    pub fn any(&self) -> bool {
        self.read_mbps.is_some()
            || self.write_mbps.is_some()
            || self.read_iops.is_some()
            || self.write_iops.is_some()
    }
}

/// The risk model's inputs a decision may set (`None`: the planner's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RiskInputs {
    /// Annualized failure rate of one disk, a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub afr: Option<f64>,
    /// Unrecoverable read errors per bit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ure: Option<f64>,
    /// Hours until a failed disk is replaced when no hot spare is free.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_hours: Option<f64>,
}

/// Everything a decision is made against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecideSpec {
    /// Bytes of one real disk (`None`: the lab's own disks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
    /// The real disks' speed, as stated.
    pub disk: DiskSpeeds,
    /// A stored run (or JSON run file) of one real disk to take its speed from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_from: Option<String>,
    /// What rules layouts out.
    pub needs: Needs,
    /// What to maximise among the layouts left (`None`: [`Prefer::Safety`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefer: Option<Prefer>,
    /// The workload whose headline is "the speed" (`None`: the first `min` workload, else the
    /// lab's first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Failure, unreadable-sector and replacement inputs.
    pub risk: RiskInputs,
}

impl DecideSpec {
    /// Lays `over` (flags) on top of `self` (a spec's table): every value `over` sets wins;
    /// a `min` for a workload replaces that workload's.
    pub fn merge(&mut self, over: &DecideSpec) {
        fn set<T: Clone>(a: &mut Option<T>, b: &Option<T>) {
            if b.is_some() {
                a.clone_from(b);
            }
        }
        set(&mut self.disk_bytes, &over.disk_bytes);
        set(&mut self.disk.read_mbps, &over.disk.read_mbps);
        set(&mut self.disk.write_mbps, &over.disk.write_mbps);
        set(&mut self.disk.read_iops, &over.disk.read_iops);
        set(&mut self.disk.write_iops, &over.disk.write_iops);
        set(&mut self.disk_from, &over.disk_from);
        set(&mut self.needs.min_usable, &over.needs.min_usable);
        set(&mut self.needs.max_loss_1y, &over.needs.max_loss_1y);
        set(&mut self.needs.max_loss_5y, &over.needs.max_loss_5y);
        set(
            &mut self.needs.min_capacity_at_slo,
            &over.needs.min_capacity_at_slo,
        );
        for m in &over.needs.min {
            self.needs.min.retain(|x| x.workload != m.workload);
            self.needs.min.push(m.clone());
        }
        for a in &over.needs.accept {
            if !self.needs.accept.contains(a) {
                self.needs.accept.push(*a);
            }
        }
        set(&mut self.prefer, &over.prefer);
        set(&mut self.workload, &over.workload);
        set(&mut self.risk.afr, &over.risk.afr);
        set(&mut self.risk.ure, &over.risk.ure);
        set(&mut self.risk.replace_hours, &over.risk.replace_hours);
    }

    /// True when the spec asks for a decision: some need, a preference or a real disk size.
    pub fn asks(&self) -> bool {
        !self.needs.is_empty() || self.prefer.is_some() || self.disk_bytes.is_some()
    }
}

/// A number or a string (`0.001` or `"0.1%"`; `2000` or `"2000IOPS"`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum NumOrText {
    /// A number.
    Num(f64),
    /// A string with a unit.
    Text(String),
}

impl NumOrText {
    fn text(&self) -> String {
        match self {
            NumOrText::Num(n) => n.to_string(),
            NumOrText::Text(s) => s.clone(),
        }
    }
}

/// The `[decide]` table as written; unknown keys are refused with the known ones listed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDecide {
    disk_size: Option<SizeValue>,
    disk_read_mbps: Option<f64>,
    disk_write_mbps: Option<f64>,
    disk_read_iops: Option<f64>,
    disk_write_iops: Option<f64>,
    disk_from: Option<String>,
    min_usable: Option<SizeValue>,
    max_loss_1y: Option<NumOrText>,
    max_loss_5y: Option<NumOrText>,
    min_capacity_at_slo: Option<NumOrText>,
    min: Option<BTreeMap<String, NumOrText>>,
    prefer: Option<String>,
    workload: Option<String>,
    afr: Option<NumOrText>,
    ure: Option<NumOrText>,
    replace_time: Option<TimeValue>,
    accept: Option<Vec<String>>,
}

/// A value of `[decide]` that is wrong: the key (`min.seq-write-1m`) and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadKey {
    /// The key under `decide`.
    pub key: String,
    /// What is wrong and the fix.
    pub msg: String,
}

fn bad(key: &str, msg: impl Into<String>) -> BadKey {
    BadKey {
        key: key.to_string(),
        msg: msg.into(),
    }
}

fn positive(key: &str, v: Option<f64>) -> Result<Option<f64>, BadKey> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(bad(key, format!("{x} must be above 0"))),
        v => Ok(v),
    }
}

impl RawDecide {
    /// Reads every value; the first wrong one is named.
    pub fn validate(&self) -> Result<DecideSpec, BadKey> {
        let size = |key: &str, v: &Option<SizeValue>| -> Result<Option<u64>, BadKey> {
            v.as_ref()
                .map(|s| match s.bytes() {
                    Ok(0) => Err(bad(key, "must be above 0 (e.g. \"8TB\")")),
                    Ok(b) => Ok(b),
                    Err(e) => Err(bad(key, e)),
                })
                .transpose()
        };
        let prob = |key: &str, v: &Option<NumOrText>| -> Result<Option<f64>, BadKey> {
            v.as_ref()
                .map(|x| parse_probability(&x.text()).map_err(|e| bad(key, e)))
                .transpose()
        };
        let mut min = Vec::new();
        for (w, v) in self.min.iter().flatten() {
            let (value, unit) = parse_speed(&v.text()).map_err(|e| bad(&format!("min.{w}"), e))?;
            min.push(MinSpeed {
                workload: w.clone(),
                value,
                unit,
            });
        }
        let slo = match &self.min_capacity_at_slo {
            None => None,
            Some(v) => match parse_speed(&v.text()) {
                Ok((x, None | Some(SpeedUnit::Iops))) => Some(x),
                Ok(_) => return Err(bad("min_capacity_at_slo", "is in IOPS (e.g. 2000)")),
                Err(e) => return Err(bad("min_capacity_at_slo", e)),
            },
        };
        let afr = match &self.afr {
            None => None,
            Some(v) => {
                let p = parse_probability(&v.text()).map_err(|e| bad("afr", e))?;
                if p <= 0.0 || p >= 1.0 {
                    return Err(bad("afr", "must be above 0 and below 1 (e.g. \"1.57%\")"));
                }
                Some(p)
            }
        };
        Ok(DecideSpec {
            disk_bytes: size("disk_size", &self.disk_size)?,
            disk: DiskSpeeds {
                read_mbps: positive("disk_read_mbps", self.disk_read_mbps)?,
                write_mbps: positive("disk_write_mbps", self.disk_write_mbps)?,
                read_iops: positive("disk_read_iops", self.disk_read_iops)?,
                write_iops: positive("disk_write_iops", self.disk_write_iops)?,
            },
            disk_from: self.disk_from.clone(),
            needs: Needs {
                min_usable: size("min_usable", &self.min_usable)?,
                max_loss_1y: prob("max_loss_1y", &self.max_loss_1y)?,
                max_loss_5y: prob("max_loss_5y", &self.max_loss_5y)?,
                min_capacity_at_slo: slo,
                min,
                accept: self
                    .accept
                    .iter()
                    .flatten()
                    .map(|a| Accept::parse(a).map_err(|e| bad("accept", e)))
                    .collect::<Result<_, _>>()?,
            },
            prefer: self
                .prefer
                .as_deref()
                .map(Prefer::parse)
                .transpose()
                .map_err(|e| bad("prefer", e))?,
            workload: self.workload.clone(),
            risk: RiskInputs {
                afr,
                ure: self
                    .ure
                    .as_ref()
                    .map(|v| parse_ure(&v.text()))
                    .transpose()
                    .map_err(|e| bad("ure", e))?,
                replace_hours: self
                    .replace_time
                    .as_ref()
                    .map(|t| t.duration().map(|d| d.as_secs_f64() / 3600.0))
                    .transpose()
                    .map_err(|e| bad("replace_time", e))?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_read_in_the_headline_units() {
        assert_eq!(
            parse_speed("400MB/s").unwrap(),
            (400.0, Some(SpeedUnit::MBps))
        );
        assert_eq!(
            parse_speed("1.2GB/s").unwrap(),
            (1200.0, Some(SpeedUnit::MBps))
        );
        let (v, _) = parse_speed("100MiB/s").unwrap();
        assert!((v - 104.8576).abs() < 1e-9);
        assert_eq!(
            parse_speed("2000 IOPS").unwrap(),
            (2000.0, Some(SpeedUnit::Iops))
        );
        assert_eq!(
            parse_speed("1500ops/s").unwrap(),
            (1500.0, Some(SpeedUnit::OpsPerSec))
        );
        assert_eq!(parse_speed("250").unwrap(), (250.0, None));
        for bad in ["fast", "400furlongs/s", "-3", "0", "0MB/s", ""] {
            assert!(parse_speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn probabilities_and_min_flags() {
        assert!((parse_probability("0.1%").unwrap() - 0.001).abs() < 1e-15);
        assert_eq!(parse_probability("0.002").unwrap(), 0.002);
        for bad in ["150%", "-1%", "a lot", "2"] {
            assert!(parse_probability(bad).is_err(), "{bad}");
        }
        let m = parse_min("seq-write-1m=400MB/s").unwrap();
        assert_eq!(
            (m.workload.as_str(), m.value, m.unit),
            ("seq-write-1m", 400.0, Some(SpeedUnit::MBps))
        );
        assert!(
            parse_min("seq-write-1m")
                .unwrap_err()
                .contains("WORKLOAD=SPEED")
        );
        assert!(parse_min("=4").is_err());
        assert!(parse_min("w=quick").unwrap_err().starts_with("w: "));
    }

    #[test]
    fn a_table_reads_whole_and_flags_win() {
        let raw: RawDecide = toml::from_str(
            "disk_size = \"8TB\"\nmin_usable = \"70TB\"\nmax_loss_5y = \"0.1%\"\n\
             min = { \"seq-write-1m\" = \"400MB/s\", \"rr\" = 2000 }\nprefer = \"speed\"\n\
             replace_time = \"3d\"\nafr = \"2%\"\nure = \"enterprise\"\n",
        )
        .unwrap();
        let mut d = raw.validate().unwrap();
        assert_eq!(d.disk_bytes, Some(8_000_000_000_000));
        assert_eq!(d.needs.min_usable, Some(70_000_000_000_000));
        assert_eq!(d.needs.min.len(), 2);
        assert_eq!(d.prefer, Some(Prefer::Speed));
        assert_eq!(d.risk.replace_hours, Some(72.0));
        assert_eq!(d.risk.ure, Some(1e-15));
        assert!(d.asks());
        let flags = DecideSpec {
            needs: Needs {
                min: vec![parse_min("rr=3000").unwrap()],
                max_loss_5y: Some(0.01),
                ..Needs::default()
            },
            ..DecideSpec::default()
        };
        d.merge(&flags);
        assert_eq!(d.needs.max_loss_5y, Some(0.01));
        assert_eq!(d.needs.min_usable, Some(70_000_000_000_000));
        let rr: Vec<f64> = d
            .needs
            .min
            .iter()
            .filter(|m| m.workload == "rr")
            .map(|m| m.value)
            .collect();
        assert_eq!(rr, [3000.0]);
        assert!(!DecideSpec::default().asks());
    }

    #[test]
    fn wrong_values_name_their_key() {
        for (text, key) in [
            ("min_usable = \"lots\"", "min_usable"),
            ("max_loss_5y = \"5\"", "max_loss_5y"),
            ("min = { w = \"fast\" }", "min.w"),
            ("prefer = \"cheap\"", "prefer"),
            ("min_capacity_at_slo = \"4MB/s\"", "min_capacity_at_slo"),
            ("disk_write_mbps = -5.0", "disk_write_mbps"),
            ("afr = \"100%\"", "afr"),
            ("ure = \"often\"", "ure"),
            ("disk_size = 0", "disk_size"),
            ("accept = [\"bitrot\"]", "accept"),
        ] {
            let raw: RawDecide = toml::from_str(text).unwrap();
            assert_eq!(raw.validate().unwrap_err().key, key, "{text}");
        }
        assert!(toml::from_str::<RawDecide>("min_usuable = \"1TB\"").is_err());
    }

    /// `accept` reads as the flag does, and flags add to the table's list without repeats.
    #[test]
    fn accepted_losses_read_from_the_table_and_add_up_with_flags() {
        let raw: RawDecide = toml::from_str("accept = [\"silent_corruption\"]").unwrap();
        let mut d = raw.validate().unwrap();
        assert_eq!(d.needs.accept, [Accept::SilentCorruption]);
        assert!(!d.asks(), "accepting a loss is not a need");
        let flags = DecideSpec {
            needs: Needs {
                accept: vec![Accept::parse("silent-corruption").unwrap()],
                ..Needs::default()
            },
            ..DecideSpec::default()
        };
        d.merge(&flags);
        assert_eq!(d.needs.accept, [Accept::SilentCorruption]);
        assert_eq!(
            Accept::parse("bitrot").unwrap_err(),
            "'bitrot' is not a loss one can accept (known: silent-corruption)"
        );
    }
}
