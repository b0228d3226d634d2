//! The risk of losing data: disk failures as a Poisson process, repairs that take the time to
//! replace a disk (none with a hot spare) plus the rebuild, and unreadable sectors met while
//! rebuilding the last redundancy. `docs/plan-model.md` writes the model down.

use serde::Serialize;

use super::PlanError;
use super::layout::{Layout, RedundancyUnit};
use super::markov::BirthDeath;
use super::perf::{Caps, DiskPerf};

/// Hours in a (365-day) year: AFRs are per calendar year of power-on time.
pub const HOURS_PER_YEAR: f64 = 8760.0;

/// Default annualized failure rate: Backblaze Drive Stats for 2024, all data drives.
pub const DEFAULT_AFR: f64 = 0.0157;

/// Where [`DEFAULT_AFR`] comes from, as `--help` and reports cite it.
pub const AFR_SOURCE: &str = "Backblaze Drive Stats for 2024: 1.57% annualized failure rate \
     over about 300,000 data drives (4,372 failures in 2024)";

/// Unrecoverable read errors per bit read: the usual desktop-class datasheet figure.
pub const URE_DESKTOP: f64 = 1e-14;

/// Unrecoverable read errors per bit read: the usual enterprise-class datasheet figure.
pub const URE_ENTERPRISE: f64 = 1e-15;

/// Hours from a failure until a replacement disk is in, without a hot spare: the 72 hours of
/// `raid6-vs-raid5-bonnie.txt` ("a couple of days to replace the disk").
pub const DEFAULT_REPLACE_HOURS: f64 = 72.0;

/// Share of a disk's sequential speed a rebuild gets when it has not been measured: rebuilds
/// compete with the normal load and md throttles them under IO.
pub const DEFAULT_REBUILD_FRACTION: f64 = 0.5;

/// Default mission time, years: a typical service life of a disk box.
pub const DEFAULT_MISSION_YEARS: f64 = 5.0;

/// The inputs of the risk model other than the layout and the disk size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RiskParams {
    /// Annualized failure rate of one disk, a fraction in (0, 1).
    pub afr: f64,
    /// Unrecoverable read errors per bit read, in [0, 1).
    pub ure_per_bit: f64,
    /// Hours until a failed disk is replaced when no hot spare is free.
    pub replace_hours: f64,
    /// Mission time, years.
    pub mission_years: f64,
}

impl Default for RiskParams {
    fn default() -> Self {
        RiskParams {
            afr: DEFAULT_AFR,
            ure_per_bit: URE_DESKTOP,
            replace_hours: DEFAULT_REPLACE_HOURS,
            mission_years: DEFAULT_MISSION_YEARS,
        }
    }
}

impl RiskParams {
    /// Refuses values the model cannot mean; the message names the flag and the fix.
    pub fn validate(&self) -> Result<(), PlanError> {
        let bad = |field, why: String| Err(PlanError::Input { field, why });
        if !self.afr.is_finite() || self.afr <= 0.0 {
            return bad(
                "--afr",
                format!("{} must be above 0 (e.g. 0.0157 or 1.57%)", self.afr),
            );
        }
        if self.afr >= 1.0 {
            return bad(
                "--afr",
                format!(
                    "{} is not below 1: give a fraction like 0.0157 or a percentage like 1.57%",
                    self.afr
                ),
            );
        }
        if !self.ure_per_bit.is_finite() || !(0.0..1.0).contains(&self.ure_per_bit) {
            return bad(
                "--ure",
                format!(
                    "{} must be a per-bit rate in [0, 1), e.g. 1e-14 (desktop) or 1e-15 (enterprise)",
                    self.ure_per_bit
                ),
            );
        }
        if !self.replace_hours.is_finite() || self.replace_hours < 0.0 {
            return bad("--replace-time", "must not be negative (e.g. 72h)".into());
        }
        if !self.mission_years.is_finite()
            || self.mission_years <= 0.0
            || self.mission_years > 100.0
        {
            return bad(
                "--years",
                format!("{} must be above 0 and at most 100", self.mission_years),
            );
        }
        Ok(())
    }

    /// Per-disk failure rate per hour.
    pub fn lambda(&self) -> f64 {
        failure_rate_per_hour(self.afr)
    }
}

/// The constant failure rate per hour whose one-year failure probability is `afr`:
/// `lambda = -ln(1 - afr) / 8760`.
pub fn failure_rate_per_hour(afr: f64) -> f64 {
    -(-afr).ln_1p() / HOURS_PER_YEAR
}

/// Probability of at least one unrecoverable error while reading `bits` bits:
/// `1 - (1 - ure)^bits`, computed without cancellation.
pub fn ure_probability(bits: f64, ure_per_bit: f64) -> f64 {
    if bits <= 0.0 || ure_per_bit <= 0.0 {
        return 0.0;
    }
    -(bits * (-ure_per_bit).ln_1p()).exp_m1()
}

/// Hours to rewrite a whole disk of `disk_bytes` at `mbps` (10^6 bytes/s).
pub fn rebuild_hours(disk_bytes: u64, mbps: f64) -> f64 {
    disk_bytes as f64 / (mbps * 1e6) / 3600.0
}

/// How fast a rebuild goes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RebuildSpeed {
    /// Measured or known, MB/s written to the new disk (`--rebuild-mbps`, or `iolab lab`).
    Mbps(f64),
    /// A share of the slower of the disk's sequential read and write speed.
    Fraction(f64),
}

impl Default for RebuildSpeed {
    fn default() -> Self {
        RebuildSpeed::Fraction(DEFAULT_REBUILD_FRACTION)
    }
}

impl RebuildSpeed {
    /// Refuses a speed that is not a positive number or a fraction outside (0, 1].
    pub fn validate(&self) -> Result<(), PlanError> {
        match *self {
            RebuildSpeed::Mbps(v) if !(v.is_finite() && v > 0.0) => Err(PlanError::Input {
                field: "--rebuild-mbps",
                why: format!("{v} must be above 0"),
            }),
            RebuildSpeed::Fraction(f) if !(f.is_finite() && f > 0.0 && f <= 1.0) => {
                Err(PlanError::Input {
                    field: "--rebuild-fraction",
                    why: format!("{f} must be in (0, 1], e.g. 0.5"),
                })
            }
            _ => Ok(()),
        }
    }

    /// MB/s of one rebuild on this layout: a measured speed as given; a fraction of the disk's
    /// speed, lowered when the controller cap cannot carry the rebuild's traffic (a parity
    /// rebuild reads every survivor of the group to write one disk). The flag says whether
    /// the cap bound.
    pub fn mbps(&self, unit: &RedundancyUnit, perf: &DiskPerf, caps: &Caps) -> (f64, bool) {
        match *self {
            RebuildSpeed::Mbps(v) => (v, false),
            RebuildSpeed::Fraction(f) => {
                let disk = f * perf.seq_read_mbps.min(perf.seq_write_mbps);
                match caps.mbps {
                    Some(cap) if unit.rebuild_traffic > 0 => {
                        let bus = cap / f64::from(unit.rebuild_traffic);
                        if bus < disk {
                            (bus, true)
                        } else {
                            (disk, false)
                        }
                    }
                    _ => (disk, false),
                }
            }
        }
    }
}

/// What the risk model says about one layout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Risk {
    /// Hours to rebuild one failed disk; `None` for layouts without redundancy.
    pub rebuild_hours: Option<f64>,
    /// Hours from a first failure until redundancy is back (waiting for a disk, unless a spare
    /// is free, plus the rebuild); `None` without redundancy.
    pub exposure_hours: Option<f64>,
    /// Chance that rebuilding the last tolerated failure meets an unreadable sector.
    pub ure_probability: f64,
    /// Mean time to data loss, hours.
    pub mttdl_hours: f64,
    /// Probability of losing data within one year.
    pub loss_1y: f64,
    /// Probability of losing data within the mission time.
    pub loss_mission: f64,
}

/// The chain of one redundancy unit (see `docs/plan-model.md`). From state k (k failed disks):
/// failures at `(n-k) lambda`, up one state, except that the failure which leaves the unit on
/// its last redundancy (k = m-1) loses data at once with probability p (an unreadable sector
/// on the survivors that nothing can correct any more); repairs at
/// `mu_k = 1 / (rebuild + replace if k > spares)`, down one state.
pub fn unit_chain(
    unit: &RedundancyUnit,
    spares: u32,
    lambda: f64,
    rebuild_h: f64,
    replace_h: f64,
    p_ure: f64,
) -> BirthDeath {
    let m = unit.tolerates;
    let n = f64::from(unit.members);
    let len = m as usize + 1;
    let (mut up, mut down, mut kill) = (
        Vec::with_capacity(len),
        Vec::with_capacity(len),
        Vec::with_capacity(len),
    );
    for k in 0..=m {
        let fail = (n - f64::from(k)) * lambda;
        let mu = if k == 0 {
            0.0
        } else {
            let wait = if k <= spares { 0.0 } else { replace_h };
            1.0 / (rebuild_h + wait)
        };
        if k + 1 == m {
            up.push(fail * (1.0 - p_ure));
            kill.push(fail * p_ure);
        } else {
            up.push(fail);
            kill.push(0.0);
        }
        down.push(mu);
    }
    BirthDeath::with_kill(up, down, kill)
}

/// Assesses one placed layout with disks of `disk_bytes` rebuilt at `rebuild_mbps`.
pub fn assess(layout: &Layout, disk_bytes: u64, params: &RiskParams, rebuild_mbps: f64) -> Risk {
    assess_with(layout, disk_bytes, 1.0, params, rebuild_mbps)
}

/// [`assess`] for a layout whose rebuild copies only `fraction` of a disk (ZFS resilvers
/// allocated data only: the pool's fill): the rebuild time and the bytes read with no
/// redundancy left scale with it. dRAID's distributed spares count as hot spares.
pub fn assess_with(
    layout: &Layout,
    disk_bytes: u64,
    fraction: f64,
    params: &RiskParams,
    rebuild_mbps: f64,
) -> Risk {
    let disk_bytes = (disk_bytes as f64 * fraction.clamp(0.0, 1.0)) as u64;
    let spares = layout.spec.spares
        + match layout.level() {
            super::layout::Level::Draid { spares, .. } => spares,
            _ => 0,
        };
    let unit = layout.redundancy();
    let lambda = params.lambda();
    let (rebuild, exposure, p_ure) = if unit.tolerates == 0 {
        (None, None, 0.0)
    } else {
        let r = rebuild_hours(disk_bytes, rebuild_mbps);
        let wait = if spares > 0 {
            0.0
        } else {
            params.replace_hours
        };
        let bits = f64::from(unit.disks_read_unprotected) * disk_bytes as f64 * 8.0;
        (
            Some(r),
            Some(r + wait),
            ure_probability(bits, params.ure_per_bit),
        )
    };
    let chain = unit_chain(
        &unit,
        spares,
        lambda,
        rebuild.unwrap_or(0.0),
        params.replace_hours,
        p_ure,
    );
    // Losses of one unit arrive at `rate`; the units are independent, so the layout's arrive
    // at `units x rate`.
    let rate = chain.loss_rate() * f64::from(unit.units);
    let within = |hours: f64| -(-rate * hours).exp_m1();
    let mttdl = 1.0 / rate;
    let p1 = within(HOURS_PER_YEAR);
    let pm = within(params.mission_years * HOURS_PER_YEAR);
    Risk {
        rebuild_hours: rebuild,
        exposure_hours: exposure,
        ure_probability: p_ure,
        mttdl_hours: mttdl,
        loss_1y: p1,
        loss_mission: pm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::layout::LayoutSpec;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn afr_to_hourly_rate() {
        // -ln(1 - 0.0157) / 8760 = 0.015824568 / 8760 = 1.806457e-6 per hour.
        assert!(close(failure_rate_per_hour(0.0157), 1.806_457e-6, 1e-6));
        // One year at that rate fails exactly the AFR.
        let l = failure_rate_per_hour(0.0157);
        assert!(close(1.0 - (-l * HOURS_PER_YEAR).exp(), 0.0157, 1e-12));
    }

    #[test]
    fn ure_probability_by_hand() {
        // Three 1 TB disks read: 2.4e13 bits at 1e-14: 1 - e^{-0.24} = 0.213_372.
        assert!(close(ure_probability(2.4e13, 1e-14), 0.213_372, 1e-5));
        // 44 disks of 2 TB (a 45-disk raid5 rebuild): 7.04e14 bits, 1 - e^{-7.04} = 0.999_124.
        assert!(close(ure_probability(7.04e14, 1e-14), 0.999_124, 1e-5));
        assert_eq!(ure_probability(1e15, 0.0), 0.0);
    }

    #[test]
    fn rebuild_time_by_hand() {
        // 2 TB at 75 MB/s: 26_666.7 s = 7.407 h.
        assert!(close(
            rebuild_hours(2_000_000_000_000, 75.0),
            7.407_407,
            1e-6
        ));
    }

    fn raid5_unit() -> RedundancyUnit {
        RedundancyUnit {
            members: 4,
            tolerates: 1,
            units: 1,
            disks_read_unprotected: 3,
            rebuild_traffic: 4,
        }
    }

    #[test]
    fn raid5_loss_rate_by_hand() {
        // n lambda (p + (1-p) (n-1) lambda / ((n-1) lambda + mu)) with n = 4, lambda = 1e-5,
        // rebuild 20 h + replace 80 h (mu = 0.01), p = 0.2:
        // 3e-5 / 0.01003 = 0.002_991_027; 0.2 + 0.8 * 0.002_991_027 = 0.202_392_822;
        // x 4e-5 = 8.095_713e-6 per hour, MTTDL 123_522.2 h.
        let c = unit_chain(&raid5_unit(), 0, 1e-5, 20.0, 80.0, 0.2);
        assert!(
            close(c.loss_rate(), 8.095_712_86e-6, 1e-8),
            "{}",
            c.loss_rate()
        );
        // A spare removes the wait: mu = 0.05, 3e-5 / 0.05003 = 0.000_599_640;
        // (0.2 + 0.8 * 0.000_599_640) * 4e-5 = 8.019_188e-6.
        let c = unit_chain(&raid5_unit(), 1, 1e-5, 20.0, 80.0, 0.2);
        assert!(
            close(c.loss_rate(), 8.019_188_49e-6, 1e-8),
            "{}",
            c.loss_rate()
        );
        // No URE: the textbook n (n-1) lambda^2 / ((n-1) lambda + mu) = 1.2e-9 / 0.01003.
        let c = unit_chain(&raid5_unit(), 0, 1e-5, 20.0, 80.0, 0.0);
        assert!(close(c.loss_rate(), 1.2e-9 / 0.01003, 1e-12));
        // p = 1: every failure loses data, rate n lambda.
        let c = unit_chain(&raid5_unit(), 0, 1e-5, 20.0, 80.0, 1.0);
        assert!(close(c.loss_rate(), 4e-5, 1e-12));
    }

    #[test]
    fn raid6_loss_rate_by_hand() {
        // n = 6, lambda = 1e-4, mu = 0.1 in both states (spares), p = 0.5 on the last one:
        // g2 = 4e-4 / (4e-4 + 0.1) = 0.003_984_064;
        // g1 = (5e-4 * 0.5 + 5e-4 * 0.5 * g2) / (same + 0.1) = 2.509_96e-4 / 0.100_250_996
        //    = 0.002_503_676; rate = 6e-4 * g1 = 1.502_206e-6 per hour.
        let unit = RedundancyUnit {
            members: 6,
            tolerates: 2,
            units: 1,
            disks_read_unprotected: 4,
            rebuild_traffic: 6,
        };
        let c = unit_chain(&unit, 2, 1e-4, 10.0, 72.0, 0.5);
        assert!(
            close(c.loss_rate(), 1.502_206e-6, 1e-6),
            "{}",
            c.loss_rate()
        );
    }

    #[test]
    fn the_rate_agrees_with_the_exact_chain() {
        // The Poisson approximation leaves out the time spent degraded: for the raid5 above,
        // MTTDL 1/rate = 123_522.2 h against 123_916.3 h for the whole chain (0.3%), and the
        // one-year loss probabilities agree to better than 1%.
        let c = unit_chain(&raid5_unit(), 0, 1e-5, 20.0, 80.0, 0.2);
        assert!(close(
            1.0 / c.loss_rate(),
            c.mean_time_to_absorption(),
            0.004
        ));
        let approx = -(-c.loss_rate() * HOURS_PER_YEAR).exp_m1();
        assert!(close(approx, c.absorbed_by(HOURS_PER_YEAR), 0.01));
        // The 45-disk raid6 with the defaults: 0.445% against 0.438% a year. The approximation
        // errs on the safe side by about window / year (79 h / 8760 h = 0.9%): the whole chain
        // cannot lose data before a failure and a window have passed.
        let l = LayoutSpec::parse("raid6").unwrap().on_disks(45).unwrap();
        let p = RiskParams::default();
        let unit = l.redundancy();
        let r = rebuild_hours(2_000_000_000_000, 75.0);
        let bits = 43.0 * 2e12 * 8.0;
        let c = unit_chain(
            &unit,
            0,
            p.lambda(),
            r,
            72.0,
            ure_probability(bits, p.ure_per_bit),
        );
        let approx = -(-c.loss_rate() * HOURS_PER_YEAR).exp_m1();
        let exact = c.absorbed_by(HOURS_PER_YEAR);
        assert!(
            close(approx, exact, 0.02) && approx > exact,
            "{approx} vs {exact}"
        );
    }

    #[test]
    fn groups_combine_as_independent_units() {
        // 3 raid6 groups of 15 lose data when any does: 1 - (1 - P15)^3.
        let p = RiskParams::default();
        let one = LayoutSpec::parse("raid6").unwrap().on_disks(15).unwrap();
        let three = LayoutSpec::parse("3xraid6").unwrap().on_disks(45).unwrap();
        let p1 = assess(&one, 2_000_000_000_000, &p, 75.0).loss_1y;
        let p3 = assess(&three, 2_000_000_000_000, &p, 75.0).loss_1y;
        assert!(close(p3, 1.0 - (1.0 - p1).powi(3), 1e-9), "{p3} vs {p1}");
    }

    #[test]
    fn raid0_risk_is_any_disk_failing() {
        let l = LayoutSpec::parse("raid0").unwrap().on_disks(10).unwrap();
        let r = assess(&l, 1_000_000_000_000, &RiskParams::default(), 100.0);
        // 1 - (1 - 0.0157)^10 = 0.146_301.
        assert!(
            close(r.loss_1y, 1.0 - 0.9843f64.powi(10), 1e-9),
            "{}",
            r.loss_1y
        );
        assert_eq!(r.rebuild_hours, None);
    }

    #[test]
    fn rebuild_speed_respects_the_bus_cap() {
        let perf = DiskPerf::default();
        let unit = LayoutSpec::parse("raid6")
            .unwrap()
            .on_disks(45)
            .unwrap()
            .redundancy();
        let caps = Caps {
            mbps: Some(1000.0),
            iops: None,
        };
        // Half of 150 MB/s = 75, but a 45-disk parity rebuild moves 45 bytes per byte rebuilt:
        // 1000 / 45 = 22.2 MB/s.
        let (v, capped) = RebuildSpeed::default().mbps(&unit, &perf, &caps);
        assert!(capped && close(v, 1000.0 / 45.0, 1e-12));
        let (v, capped) = RebuildSpeed::default().mbps(&unit, &perf, &Caps::default());
        assert!(!capped && close(v, 75.0, 1e-12));
    }
}
