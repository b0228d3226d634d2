//! Disk temperature: from the kernel's hwmon sensors when the driver registers one (`drivetemp`
//! for SATA, `nvme` for NVMe), otherwise from `smartctl -j` when smartmontools is installed.
//! A device with neither (loop, virtio) has no temperature, shown as "-".

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// A temperature and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Degrees Celsius.
    pub celsius: f64,
    /// Where it was read.
    pub source: TempSource,
}

/// Where a temperature was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TempSource {
    /// A hwmon sensor under the device in /sys (`temp1_input`).
    Hwmon,
    /// `smartctl -j -A` (`temperature.current`).
    Smartctl,
}

/// The hwmon directories that belong to a block device, given its /sys/class/block entry.
///
/// `drivetemp` registers under the SCSI device (`device/hwmon/hwmonN`), `nvme` under the
/// controller (`device/hwmonN`); older kernels put NVMe's on the PCI function
/// (`device/device/hwmonN`).
fn hwmon_dirs(block_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in [block_dir.join("device"), block_dir.join("device/device")] {
        let Ok(rd) = std::fs::read_dir(&base) else {
            continue;
        };
        let mut names: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("hwmon"))
            .map(|e| e.path())
            .collect();
        names.sort();
        for p in names {
            if p.file_name().is_some_and(|f| f == "hwmon") {
                // The class directory: one level more.
                if let Ok(rd) = std::fs::read_dir(&p) {
                    let mut inner: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                    inner.sort();
                    out.extend(inner);
                }
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The temperature from a hwmon sensor under a block device's /sys entry.
pub fn hwmon_celsius(block_dir: &Path) -> Option<f64> {
    hwmon_dirs(block_dir).into_iter().find_map(|d| {
        let milli: i64 = crate::system::read_trim(d.join("temp1_input"))?
            .parse()
            .ok()?;
        plausible(milli as f64 / 1000.0)
    })
}

/// Drops readings no working disk reports (sensor errors show up as 0, -273 or 255).
fn plausible(c: f64) -> Option<f64> {
    (c > -40.0 && c < 150.0 && c != 0.0).then_some(c)
}

/// The current temperature in a `smartctl -j` document (ATA, SCSI and NVMe all report
/// `temperature.current`).
pub fn parse_smartctl(json: &[u8]) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    plausible(v.get("temperature")?.get("current")?.as_f64()?)
}

/// The `smartctl` call for one device. `-n standby` leaves a sleeping disk asleep (no
/// temperature then) instead of spinning it up to read a number.
pub fn smartctl_command(dev: &Path) -> Command {
    let mut c = Command::new("smartctl");
    c.args(["-j", "-n", "standby", "-A"]).arg(dev);
    c
}

/// Temperatures of many devices from `smartctl`, asked all at once; `None` where smartctl is
/// not installed, cannot open the device, or reports no temperature.
pub fn smartctl_many(devs: &[PathBuf]) -> Vec<Option<f64>> {
    let cmds = devs.iter().map(|d| smartctl_command(d)).collect();
    super::tools::run_all(cmds, super::tools::TOOL_TIMEOUT)
        .into_iter()
        .map(|o| o.as_deref().and_then(parse_smartctl))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_drivetemp_and_nvme_layouts() {
        let d = tempfile::tempdir().unwrap();
        // drivetemp: sda/device/hwmon/hwmon3/temp1_input
        let sda = d.path().join("sda");
        std::fs::create_dir_all(sda.join("device/hwmon/hwmon3")).unwrap();
        std::fs::write(sda.join("device/hwmon/hwmon3/temp1_input"), "41000\n").unwrap();
        assert_eq!(hwmon_celsius(&sda), Some(41.0));
        // nvme: nvme0n1/device/hwmon1/temp1_input
        let nv = d.path().join("nvme0n1");
        std::fs::create_dir_all(nv.join("device/hwmon1")).unwrap();
        std::fs::write(nv.join("device/hwmon1/temp1_input"), "57850\n").unwrap();
        assert_eq!(hwmon_celsius(&nv), Some(57.85));
        // no sensor
        let lo = d.path().join("loop3");
        std::fs::create_dir_all(lo.join("loop")).unwrap();
        assert_eq!(hwmon_celsius(&lo), None);
    }

    #[test]
    fn smartctl_json_current_temperature() {
        let ata =
            br#"{"smartctl":{"exit_status":0},"temperature":{"current":38,"lifetime_min":20}}"#;
        assert_eq!(parse_smartctl(ata), Some(38.0));
        let none = br#"{"smartctl":{"messages":[{"string":"Unable to detect device type"}],"exit_status":1}}"#;
        assert_eq!(parse_smartctl(none), None);
        assert_eq!(parse_smartctl(b"not json"), None);
        let bogus = br#"{"temperature":{"current":0}}"#;
        assert_eq!(parse_smartctl(bogus), None, "0 C is a sensor error");
    }
}
