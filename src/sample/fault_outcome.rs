//! What one injected fault did to a layout's data set, in the shape the store keeps and every
//! reader of a lab (`decide`, `compare`, the HTML report) weighs alike: the files read back
//! intact, repaired (the layer counted errors and the files still came back right), unreadable
//! (an error the application sees) and silently wrong (wrong bytes, no error anywhere), beside
//! what the layer itself counted (md's `mismatch_cnt` and what its repair left, btrfs's
//! checksum errors and scrub, ZFS's CKSUM column).
//!
//! The silently wrong files are the finding users fear most: the application trusts the bytes.
//! Built by the lab at its end (`lab::outcomes`) from its fault reports and read-backs.

use serde::{Deserialize, Serialize};

/// One fault's outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultOutcome {
    /// `corrupt`, `unreadable` or `fail` (the spec's word).
    pub kind: String,
    /// The member struck (index into the layout's members).
    pub member: usize,
    /// First byte of the struck range on the member (`None`: a whole-disk fault).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Bytes struck.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// `one` (one copy or column of the struck blocks) or `all`, when the lab recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copies: Option<String>,
    /// The fault in one line (`corrupt 1MiB at 16MiB (under file data) on member 0 before
    /// degrading`).
    pub description: String,
    /// Why it could not be injected (`None`: it was; then no file counts below mean anything).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files in the data set at the read-back that followed the fault.
    pub files: u64,
    /// Files read back right that the fault did not touch, or that the layer did not have to
    /// mend.
    pub intact: u64,
    /// Files under the struck range that read back right while the layer counted errors: it
    /// noticed and mended them.
    pub repaired: u64,
    /// Files that could not be read, or were gone: the application saw an error.
    pub read_error: u64,
    /// Files that read back with wrong bytes and no error.
    pub silently_wrong: u64,
    /// md's `mismatch_cnt` from its check (sectors whose copies or parity disagreed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub md_mismatch_cnt: Option<u64>,
    /// Files under the struck range still wrong after md's `repair` (`None`: no repair ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub md_after_repair: Option<u64>,
    /// btrfs's checksum errors (`btrfs device stats` corruption_errs, summed over devices)
    /// right after the fault's read-back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btrfs_csum_errors: Option<u64>,
    /// Errors btrfs's scrub corrected from a good copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btrfs_corrected: Option<u64>,
    /// Errors btrfs's scrub could not correct.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btrfs_uncorrectable: Option<u64>,
    /// ZFS's CKSUM column summed over the pool's leaf devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zfs_cksum: Option<u64>,
}

impl FaultOutcome {
    /// True when files came back with wrong bytes and no error.
    pub fn silent(&self) -> bool {
        self.silently_wrong > 0
    }

    /// `intact`, `read error (2 files)`, `silently wrong (1 file)`, or both losses joined.
    pub fn verdict(&self) -> String {
        let n = |k: u64| format!("{k} file{}", if k == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if self.read_error > 0 {
            parts.push(format!("read error ({})", n(self.read_error)));
        }
        if self.silently_wrong > 0 {
            parts.push(format!("silently wrong ({})", n(self.silently_wrong)));
        }
        if parts.is_empty() {
            if self.error.is_some() {
                "not injected".into()
            } else if self.repaired > 0 {
                format!("repaired ({})", n(self.repaired))
            } else {
                "intact".into()
            }
        } else {
            parts.join(", ")
        }
    }

    /// What the layer counted, one line: `md mismatch_cnt 8, 1 file still wrong after
    /// repair`, `btrfs 16 checksum errors, scrub 0 corrected 0 uncorrectable`, `zfs CKSUM 4`;
    /// empty when the layer keeps no counters.
    pub fn counted(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.md_mismatch_cnt {
            let mut s = format!("md mismatch_cnt {m}");
            if let Some(a) = self.md_after_repair {
                s.push_str(&format!(
                    ", {a} file{} still wrong after repair",
                    if a == 1 { "" } else { "s" }
                ));
            }
            parts.push(s);
        }
        if let Some(c) = self.btrfs_csum_errors {
            let mut s = format!("btrfs {c} checksum error{}", if c == 1 { "" } else { "s" });
            if let (Some(k), Some(u)) = (self.btrfs_corrected, self.btrfs_uncorrectable) {
                s.push_str(&format!(", scrub {k} corrected {u} uncorrectable"));
            }
            parts.push(s);
        }
        if let Some(z) = self.zfs_cksum {
            parts.push(format!("zfs CKSUM {z}"));
        }
        parts.join("; ")
    }
}

/// A layout's outcome over all its faults, for a comparison's verdict line: `intact`,
/// `repaired (3 files)`, `read error (2 files)`, `silently wrong (1 file)` (the most files any
/// one fault's read-back saw of each); `None` when the lab injected no fault.
pub fn layout_verdict(faults: &[FaultOutcome]) -> Option<String> {
    if faults.is_empty() {
        return None;
    }
    let most = |f: fn(&FaultOutcome) -> u64| faults.iter().map(f).max().unwrap_or(0);
    let all = FaultOutcome {
        repaired: most(|f| f.repaired),
        read_error: most(|f| f.read_error),
        silently_wrong: most(|f| f.silently_wrong),
        error: faults.iter().all(|f| f.error.is_some()).then(String::new),
        ..FaultOutcome::default()
    };
    Some(all.verdict())
}

/// The files silently wrong over a layout's faults (the most any one fault's read-back saw,
/// as faults at one step share their read-back), and the kinds of fault behind them.
pub fn silently_wrong(faults: &[FaultOutcome]) -> Option<(u64, Vec<&str>)> {
    let worst = faults.iter().map(|f| f.silently_wrong).max().unwrap_or(0);
    if worst == 0 {
        return None;
    }
    let mut kinds: Vec<&str> = faults
        .iter()
        .filter(|f| f.silent())
        .map(|f| f.kind.as_str())
        .collect();
    kinds.dedup();
    Some((worst, kinds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_each_loss_apart_and_the_counters_say_what_the_layer_saw() {
        let mut f = FaultOutcome {
            kind: "corrupt".into(),
            files: 40,
            intact: 39,
            silently_wrong: 1,
            md_mismatch_cnt: Some(8),
            md_after_repair: Some(1),
            ..FaultOutcome::default()
        };
        assert_eq!(f.verdict(), "silently wrong (1 file)");
        assert_eq!(
            f.counted(),
            "md mismatch_cnt 8, 1 file still wrong after repair"
        );
        f.read_error = 2;
        assert_eq!(f.verdict(), "read error (2 files), silently wrong (1 file)");
        let healed = FaultOutcome {
            repaired: 3,
            btrfs_csum_errors: Some(16),
            btrfs_corrected: Some(16),
            btrfs_uncorrectable: Some(0),
            ..FaultOutcome::default()
        };
        assert_eq!(healed.verdict(), "repaired (3 files)");
        assert_eq!(
            healed.counted(),
            "btrfs 16 checksum errors, scrub 16 corrected 0 uncorrectable"
        );
        assert_eq!(FaultOutcome::default().verdict(), "intact");
        assert_eq!(layout_verdict(&[]), None);
        assert_eq!(
            layout_verdict(&[healed.clone(), f.clone()]).as_deref(),
            Some("read error (2 files), silently wrong (1 file)")
        );
        assert_eq!(
            layout_verdict(std::slice::from_ref(&healed)).as_deref(),
            Some("repaired (3 files)")
        );
        assert_eq!(silently_wrong(std::slice::from_ref(&healed)), None);
        assert_eq!(silently_wrong(&[healed, f]), Some((1, vec!["corrupt"])));
    }
}
