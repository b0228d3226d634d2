//! What many trials say together: medians, spread, confidence intervals, cliffs and ratios.

/// Placeholder until the statistics land: stable once there are 3 values within `pct` of the median.
pub fn is_stable(values: &[f64], pct: f64) -> bool {
    if values.len() < 3 {
        return false;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let med = v[v.len() / 2];
    v.iter().all(|x| (x - med).abs() <= med.abs() * pct / 100.0)
}
