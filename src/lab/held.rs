//! What the range a fault struck held: files of the data set (which, how many of their bytes,
//! and what became of each in the read-back that followed), md parity, or nothing the lab
//! wrote. A URE where no file is and a URE under a file are different questions; every fault
//! line says which one the run answered.

use serde::{Deserialize, Serialize};

use crate::layout::fault::{Fault, FaultKind, MdObservation};
use crate::units::format_bytes;

/// Files named per fault (all are counted).
pub const MAX_HELD_LISTED: usize = 8;

/// One file of the data set with bytes in a struck range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldFile {
    /// Path relative to the layout's root.
    pub path: String,
    /// Its bytes in the range.
    pub bytes: u64,
    /// In the read-back after the fault's step: `intact`, or what was wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Read again after md's `repair`: `intact`, or what was wrong (`None`: no repair ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_repair: Option<String>,
}

/// What a struck range on a member held when the fault struck, found through the files'
/// extent maps and md's layout (and checked against the member's own bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// Bytes of the range under files of the data set.
    pub file_bytes: u64,
    /// Bytes of md parity (P or Q).
    pub parity_bytes: u64,
    /// Bytes holding neither: free space, filesystem metadata, md's own area.
    pub other_bytes: u64,
    /// Files of the data set with bytes in the range.
    pub files: u64,
    /// The first of them (at most [`MAX_HELD_LISTED`]).
    pub listed: Vec<HeldFile>,
    /// How many of those files did not read back intact after the fault's step (`None`
    /// until read back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// How many of those files did not read back intact after md's `repair` (`None`: no
    /// repair ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_after_repair: Option<u64>,
    /// The map checked against the member: which file's bytes were found where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<String>,
    /// The parity `copies = "all"` struck beside the range, checked against the members: on
    /// md RAID4/5/6 and btrfs RAID5/6, P (and Q) of each stripe found equal to what the data
    /// columns compute, then found changed once struck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parity_checked: Option<String>,
    /// Why what the range held is not known (not md, a layout iolab cannot map, no data set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmapped: Option<String>,
    /// [`Held::line`] as it read once the fault's step was observed (for JSON readers).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub says: String,
    /// Every held file's index in the data set (for the read-back; not serialized).
    #[serde(skip)]
    pub indexes: Vec<usize>,
}

impl Held {
    /// A range whose content is not known, and why.
    pub fn unknown(why: impl Into<String>) -> Held {
        Held {
            unmapped: Some(why.into()),
            ..Held::default()
        }
    }

    /// One clause for the fault line: `held no file of the data set: 1MiB of the array is now
    /// unreadable, bad blocks on 2 members`, or `held 768KiB of 3 files of the data set
    /// (.iolab-data/d1/f00012 ...) and 256KiB of parity; 3 of them did not read back`.
    pub fn line(&self, fault: &Fault, md: Option<&MdObservation>) -> String {
        if let Some(why) = &self.unmapped {
            return format!("whether it held file data is not known: {why}");
        }
        let length = fault.kind.range().map_or(0, |r| r.1);
        let parity = if self.parity_bytes > 0 {
            format!(" and {} of parity", format_bytes(self.parity_bytes))
        } else {
            String::new()
        };
        if self.files == 0 {
            let mut s = format!("held no file of the data set{parity}");
            let bad: Vec<u64> = md
                .map(|o| {
                    o.members
                        .iter()
                        .map(|m| m.bad_blocks.iter().map(|b| b.1).sum::<u64>())
                        .filter(|&n| n > 0)
                        .collect()
                })
                .unwrap_or_default();
            match fault.kind {
                FaultKind::Unreadable { .. } if !bad.is_empty() => s.push_str(&format!(
                    ": {} of the array is now unreadable, bad blocks on {} member{} ({} sectors), and no file noticed",
                    format_bytes(length),
                    bad.len(),
                    if bad.len() == 1 { "" } else { "s" },
                    bad.iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" + ")
                )),
                FaultKind::Corrupt { .. } => {
                    s.push_str(": the garbage lies where no file is, and no file can notice");
                }
                _ => {}
            }
            return s;
        }
        let names: Vec<&str> = self.listed.iter().map(|f| f.path.as_str()).collect();
        let more = if self.files > names.len() as u64 {
            format!(" and {} more", self.files - names.len() as u64)
        } else {
            String::new()
        };
        let mut s = format!(
            "held {} of {} file{} of the data set ({}{more}){parity}",
            format_bytes(self.file_bytes),
            self.files,
            if self.files == 1 { "" } else { "s" },
            names.join(", ")
        );
        match self.lost {
            Some(0) => s.push_str(if self.files == 1 {
                "; it read back intact"
            } else {
                "; every one read back intact"
            }),
            Some(n) if n == self.files && n == 1 => s.push_str("; it did not read back"),
            Some(n) if n == self.files => s.push_str("; none of them read back"),
            Some(n) => s.push_str(&format!("; {n} of them did not read back")),
            None => {}
        }
        match self.lost_after_repair {
            Some(0) => s.push_str("; after md's repair every one read back intact"),
            Some(n) => s.push_str(&format!(
                "; after md's repair {n} still did not read back (md made its copies agree with the wrong bytes)"
            )),
            None => {}
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::fault::{FaultStep, MdMember};

    fn fault() -> Fault {
        Fault {
            member: 0,
            at: FaultStep::Rebuild,
            kind: FaultKind::Unreadable {
                offset: 16 << 20,
                length: 1 << 20,
            },
            progress: None,
            under: None,
            placed: false,
            copies: crate::stack::fault::Copies::One,
        }
    }

    #[test]
    fn a_range_under_no_file_says_what_the_array_lost() {
        let md = MdObservation {
            array_state: "clean".into(),
            degraded: 0,
            sync_action: "idle".into(),
            members: ["dm-0", "vdd", "vdb"]
                .iter()
                .zip([vec![(100, 2048)], vec![(100, 1024), (2000, 1024)], vec![]])
                .map(|(d, b)| MdMember {
                    device: (*d).into(),
                    state: "in_sync".into(),
                    bad_blocks: b,
                    errors: 0,
                })
                .collect(),
        };
        let h = Held {
            other_bytes: 1 << 20,
            ..Held::default()
        };
        assert_eq!(
            h.line(&fault(), Some(&md)),
            "held no file of the data set: 1MiB of the array is now unreadable, bad blocks on 2 members (2048 + 2048 sectors), and no file noticed"
        );
        assert_eq!(h.line(&fault(), None), "held no file of the data set");
        assert!(
            Held::unknown("zfs")
                .line(&fault(), None)
                .ends_with("not known: zfs")
        );
    }

    #[test]
    fn a_range_under_files_names_them_and_what_became_of_them() {
        let mut h = Held {
            file_bytes: 768 << 10,
            parity_bytes: 256 << 10,
            files: 3,
            listed: vec![
                HeldFile {
                    path: "a".into(),
                    bytes: 1,
                    after: None,
                    after_repair: None,
                },
                HeldFile {
                    path: "b".into(),
                    bytes: 1,
                    after: None,
                    after_repair: None,
                },
            ],
            ..Held::default()
        };
        assert_eq!(
            h.line(&fault(), None),
            "held 768KiB of 3 files of the data set (a, b and 1 more) and 256KiB of parity"
        );
        h.lost = Some(3);
        assert!(h.line(&fault(), None).ends_with("; none of them read back"));
        h.lost = Some(1);
        assert!(
            h.line(&fault(), None)
                .ends_with("; 1 of them did not read back")
        );
        h.lost = Some(0);
        assert!(
            h.line(&fault(), None)
                .ends_with("every one read back intact")
        );
        // md's repair made its copies agree: with the wrong bytes, or with the right ones.
        h.lost = Some(3);
        h.lost_after_repair = Some(3);
        assert!(
            h.line(&fault(), None).ends_with(
                "; after md's repair 3 still did not read back (md made its copies agree with the wrong bytes)"
            ),
            "{}",
            h.line(&fault(), None)
        );
        h.lost_after_repair = Some(0);
        assert!(
            h.line(&fault(), None)
                .ends_with("; after md's repair every one read back intact")
        );
    }
}
