//! The model's properties over many inputs: more parity, a hot spare, a lower AFR or a shorter
//! wait never increase the risk; more disks in raid0 never decrease it; capacities are exact.

use iolab::plan::{
    Caps, DiskPerf, LayoutSpec, PlanInput, RebuildSpeed, RiskParams, parse_layouts, plan, risk,
};
use proptest::prelude::*;

fn input(
    disks: u32,
    layouts: &str,
    disk_bytes: u64,
    risk: RiskParams,
    rebuild_mbps: f64,
) -> PlanInput {
    PlanInput {
        disks,
        disk_bytes,
        chunk_bytes: 512 * 1024,
        layouts: parse_layouts(layouts).unwrap(),
        perf: DiskPerf::default(),
        caps: Caps::default(),
        risk,
        rebuild: RebuildSpeed::Mbps(rebuild_mbps),
        zfs: iolab::plan::ZfsParams::default(),
        over: iolab::plan::Over::default(),
    }
}

/// (loss within 1 year, loss within the mission, MTTDL) of each layout, in order.
fn risks(i: &PlanInput) -> Vec<(f64, f64, f64)> {
    plan(i, "test")
        .unwrap()
        .layouts
        .iter()
        .map(|r| {
            (
                r.data_loss_probability_1y,
                r.data_loss_probability_mission,
                r.mttdl_hours.unwrap_or(f64::INFINITY),
            )
        })
        .collect()
}

/// `a` is no riskier than `b`, allowing for rounding.
fn no_riskier(a: (f64, f64, f64), b: (f64, f64, f64)) -> bool {
    let le = |x: f64, y: f64| x <= y * (1.0 + 1e-9) + 1e-300;
    le(a.0, b.0) && le(a.1, b.1) && a.2 >= b.2 * (1.0 - 1e-9)
}

fn risk_params() -> impl Strategy<Value = RiskParams> {
    (
        0.001f64..0.2,
        prop_oneof![Just(0.0), 1e-16f64..1e-13],
        0.0f64..200.0,
        0.5f64..10.0,
    )
        .prop_map(|(afr, ure, replace, years)| RiskParams {
            afr,
            ure_per_bit: ure,
            replace_hours: replace,
            mission_years: years,
        })
}

fn disk_bytes() -> impl Strategy<Value = u64> {
    100_000_000_000u64..30_000_000_000_000
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn more_parity_never_increases_risk(
        n in 4u32..60, spares in 0u32..3, d in disk_bytes(), r in risk_params(), mbps in 10.0f64..500.0,
    ) {
        let total = n + spares;
        let s = if spares > 0 { format!("+{spares}spares") } else { String::new() };
        let list = format!("raid5{s},raid6{s}");
        let v = risks(&input(total, &list, d, r, mbps));
        prop_assert!(no_riskier(v[1], v[0]), "raid6 {:?} vs raid5 {:?}", v[1], v[0]);
        // No parity at all is riskier still (raid0 on the same active disks).
        let z = risks(&input(n, "raid0", d, r, mbps));
        prop_assert!(no_riskier(v[0], z[0]), "raid5 {:?} vs raid0 {:?}", v[0], z[0]);
        // More copies in btrfs, and btrfs raid6 over raid5.
        let b = risks(&input(n, "btrfs-raid1,btrfs-raid1c3,btrfs-raid1c4,btrfs-raid5,btrfs-raid6", d, r, mbps));
        prop_assert!(no_riskier(b[1], b[0]) && no_riskier(b[2], b[1]), "{b:?}");
        prop_assert!(no_riskier(b[4], b[3]), "{b:?}");
    }

    #[test]
    fn more_parity_per_group_never_increases_risk(
        groups in 2u32..5, per in 4u32..16, d in disk_bytes(), r in risk_params(), mbps in 10.0f64..500.0,
    ) {
        let v = risks(&input(groups * per, &format!("{groups}xraid5,{groups}xraid6"), d, r, mbps));
        prop_assert!(no_riskier(v[1], v[0]), "{v:?}");
    }

    #[test]
    fn a_hot_spare_never_increases_risk(
        active in 4u32..50, spares in 0u32..3, d in disk_bytes(), r in risk_params(), mbps in 10.0f64..500.0,
        level in prop::sample::select(vec!["raid1", "raid5", "raid6", "raid10", "2xraid6"]),
    ) {
        let active = if level == "raid10" || level == "2xraid6" { active * 2 } else { active };
        let active = if level == "2xraid6" { active.max(8) } else { active };
        let with_s = |k: u32| if k == 0 { level.to_string() } else { format!("{level}+{k}spares") };
        // Adding a spare to the same data disks.
        let a = risks(&input(active + spares, &with_s(spares), d, r, mbps))[0];
        let b = risks(&input(active + spares + 1, &with_s(spares + 1), d, r, mbps))[0];
        prop_assert!(no_riskier(b, a), "{level}: +{} {b:?} vs +{spares} {a:?}", spares + 1);
        // Turning a data disk into a spare, same box (raid5/raid6 only: counts stay valid).
        if level == "raid5" || level == "raid6" {
            let min = if level == "raid5" { 3 } else { 4 };
            if active > min {
                let c = risks(&input(active + spares, &with_s(spares + 1), d, r, mbps))[0];
                prop_assert!(no_riskier(c, a), "{level} same box: {c:?} vs {a:?}");
            }
        }
    }

    #[test]
    fn more_disks_in_raid0_never_decrease_the_risk(
        n in 2u32..200, extra in 1u32..10, d in disk_bytes(), r in risk_params(),
    ) {
        let a = risks(&input(n, "raid0", d, r, 100.0))[0];
        let b = risks(&input(n + extra, "raid0", d, r, 100.0))[0];
        prop_assert!(no_riskier(a, b), "{n}: {a:?} vs {}: {b:?}", n + extra);
        // And for raid0 the figure is exactly "any disk fails": 1 - (1 - AFR)^n.
        let want = 1.0 - (1.0 - r.afr).powi(n as i32);
        prop_assert!((a.0 - want).abs() <= 1e-9 * want, "{} vs {want}", a.0);
    }

    #[test]
    fn risk_grows_with_afr_and_waiting(
        n in 4u32..40, d in disk_bytes(), r in risk_params(), mbps in 10.0f64..500.0,
        level in prop::sample::select(vec!["raid5", "raid6", "raid10", "btrfs-raid1"]),
    ) {
        let n = if level == "raid10" { n * 2 } else { n };
        let base = risks(&input(n, level, d, r, mbps))[0];
        let worse_afr = RiskParams { afr: (r.afr * 1.5).min(0.99), ..r };
        let worse_wait = RiskParams { replace_hours: r.replace_hours + 24.0, ..r };
        prop_assert!(no_riskier(base, risks(&input(n, level, d, worse_afr, mbps))[0]));
        prop_assert!(no_riskier(base, risks(&input(n, level, d, worse_wait, mbps))[0]));
        prop_assert!(base.0 <= base.1 * (1.0 + 1e-9) || r.mission_years < 1.0);
        prop_assert!((0.0..=1.0).contains(&base.0) && (0.0..=1.0).contains(&base.1));
    }

    #[test]
    fn capacities_are_exact_for_every_level(
        groups in 1u32..5, per in 1u32..30, spares in 0u32..4, d in 1u64..40_000_000_000_000,
        level in prop::sample::select(iolab::plan::layout::ALL_LEVELS.to_vec()),
    ) {
        let groups = if level.is_btrfs() { 1 } else { groups };
        let spares = if level.is_btrfs() || matches!(level, iolab::plan::Level::Raid0 | iolab::plan::Level::Single) { 0 } else { spares };
        let name = format!(
            "{}{}{}",
            if groups > 1 { format!("{groups}x") } else { String::new() },
            level.name(),
            if spares > 0 { format!("+{spares}spares") } else { String::new() },
        );
        let spec = LayoutSpec::parse(&name).unwrap();
        let disks = groups * per + spares;
        let Ok(l) = spec.on_disks(disks) else {
            // Refused only for a reason the grammar states.
            prop_assert!(
                per < level.min_disks()
                    || (level == iolab::plan::Level::Raid10 && per % 2 == 1)
                    || (level == iolab::plan::Level::Single && (groups, per) != (1, 1))
            );
            return Ok(());
        };
        let (g, n, s, dd) = (u128::from(groups), u128::from(per), u128::from(spares), u128::from(d));
        let usable = u128::from(l.usable_bytes(d).unwrap());
        let raw = u128::from(l.raw_bytes(d).unwrap());
        prop_assert_eq!(raw, (g * n + s) * dd);
        use iolab::plan::Level::*;
        match level {
            // Nothing spent on redundancy.
            Raid0 | Single | BtrfsSingle | BtrfsRaid0 => prop_assert_eq!(usable + s * dd, raw),
            // Parity: exactly p disks per group.
            Raid5 | BtrfsRaid5 => prop_assert_eq!(usable + g * dd + s * dd, raw),
            Raid6 | BtrfsRaid6 => prop_assert_eq!(usable + 2 * g * dd + s * dd, raw),
            // An n-way mirror keeps one disk of each group.
            Raid1 => prop_assert_eq!(usable, g * dd),
            // c copies of everything: usable * c is the data disks' bytes, to the byte.
            Raid10 | BtrfsRaid1 | BtrfsRaid10 | BtrfsRaid1c3 | BtrfsRaid1c4 => {
                let c = match level { BtrfsRaid1c3 => 3, BtrfsRaid1c4 => 4, _ => 2 };
                let data = g * n * dd;
                prop_assert!(usable * c <= data && data - usable * c < c, "{usable} x {c} vs {data}");
            }
            // ZFS: labels, metaslab rounding, padding and slop only ever take away from the
            // parity-only figure.
            ZfsMirror => prop_assert!(usable <= g * dd),
            Raidz1 | Raidz2 | Raidz3 | Draid { .. } => {
                let p = u128::from(level.parity().unwrap_or(0));
                prop_assert!(usable <= g * (n - p) * dd, "{usable} vs {}", g * (n - p) * dd);
            }
        }
        prop_assert!(usable <= raw);
    }
}

#[test]
fn risk_constants_are_the_documented_ones() {
    assert!((risk::DEFAULT_AFR - 0.0157).abs() < 1e-15);
    assert!(risk::AFR_SOURCE.contains("Backblaze"));
    assert!((risk::DEFAULT_REPLACE_HOURS - 72.0).abs() < 1e-15);
}
