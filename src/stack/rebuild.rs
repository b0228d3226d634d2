//! A rebuild as plain data: the members that replaced failed ones, how long it took, what it
//! wrote, what had to be converted back or retried, and whether the lab's data set read back
//! intact after it. One description: the layout stage returns it, the lab completes and
//! reports it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What rebuilding did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rebuild {
    /// The device that replaced the failed member (the first, when several were replaced).
    pub new_member: PathBuf,
    /// Every device that replaced a failed member, in the order of the failed members.
    #[serde(default)]
    pub new_members: Vec<PathBuf>,
    /// Time to rebuild to completion, seconds (md with a spare: from the failure).
    pub seconds: f64,
    /// Bytes written to the new members: btrfs' allocated chunks on them, md's component size
    /// per member.
    pub bytes: u64,
    /// The whole data set read back intact after the rebuild: the lab's check, `false` until
    /// the lab has made it.
    #[serde(default)]
    pub data_verified: bool,
    /// btrfs block groups holding data that were not in the layout's profiles after the
    /// replace (written while degraded, as `single`), converted back by a balance:
    /// `System single 16KiB used`.
    #[serde(default)]
    pub converted: Vec<String>,
    /// Seconds that balance took (on top of `seconds`).
    #[serde(default)]
    pub balance_seconds: Option<f64>,
    /// Replaces that first failed with ENOSPC and worked after the half-empty data block
    /// groups were packed (`btrfs balance start -dusage=50`): the first failure's message.
    #[serde(default)]
    pub retried: Vec<String>,
}

impl Rebuild {
    /// A rebuild onto `new_members` that took `seconds` and wrote `bytes`, with nothing
    /// converted or retried, and not yet verified (md and ZFS; btrfs adds what it converted).
    pub fn onto(new_members: Vec<PathBuf>, seconds: f64, bytes: u64) -> Rebuild {
        Rebuild {
            new_member: new_members.first().cloned().unwrap_or_default(),
            new_members,
            seconds,
            bytes,
            data_verified: false,
            converted: Vec::new(),
            balance_seconds: None,
            retried: Vec::new(),
        }
    }
}
