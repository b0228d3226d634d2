//! What many trials say together: medians, spread, confidence intervals, cliffs and ratios.
