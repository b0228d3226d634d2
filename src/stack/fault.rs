//! A layout's planned faults as plain data: when in the lab flow each strikes, what goes wrong
//! (a dead member, unreadable sectors, silent corruption, a slow disk) and where. Parsed from the
//! lab spec, carried out through device-mapper by `layout::fault`, stored with the runs.

use serde::{Deserialize, Serialize};

/// When in the lab flow a fault strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultStep {
    /// After the data set is written and the healthy workloads ran, before a member is failed
    /// (before the scrub on a layout that is not degraded). `healthy` in a spec says the same
    /// where the layout is never degraded: what a layout does with a fault while whole.
    BeforeDegrade,
    /// While degraded: after a member is failed (and the degraded read-back and workloads),
    /// before any rebuild — the redundancy is gone, so the loss must be reported, never silent.
    Degraded,
    /// While the replacement is being rebuilt (right after recovery starts, or at a chosen
    /// percent of md's recovery; a zfs resilver is held at its start while it strikes).
    Rebuild,
    /// After the rebuild and its read-back, before the scrub.
    AfterRebuild,
}

impl FaultStep {
    /// The spec's word for it.
    pub fn name(self) -> &'static str {
        match self {
            FaultStep::BeforeDegrade => "before_degrade",
            FaultStep::Degraded => "degraded",
            FaultStep::Rebuild => "rebuild",
            FaultStep::AfterRebuild => "after_rebuild",
        }
    }

    /// Parses the spec's word.
    pub fn parse(s: &str) -> Option<FaultStep> {
        match s {
            "before_degrade" | "healthy" => Some(FaultStep::BeforeDegrade),
            "degraded" | "while_degraded" => Some(FaultStep::Degraded),
            "rebuild" | "during_rebuild" => Some(FaultStep::Rebuild),
            "after_rebuild" => Some(FaultStep::AfterRebuild),
            _ => None,
        }
    }
}

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum FaultKind {
    /// Reads and writes of `length` bytes from `offset` fail with EIO (a latent sector error,
    /// the URE of the rebuild-window question).
    Unreadable {
        /// First byte of the range on the member.
        offset: u64,
        /// Bytes.
        length: u64,
    },
    /// The whole member stops answering (every IO fails), as a dead disk.
    Fail,
    /// `length` bytes from `offset` are overwritten with garbage, under the filesystem and the
    /// RAID layer, without any error: silent corruption.
    Corrupt {
        /// First byte of the range on the member.
        offset: u64,
        /// Bytes.
        length: u64,
    },
}

impl FaultKind {
    /// The range `(offset, length)` of an unreadable or corrupt fault.
    pub fn range(self) -> Option<(u64, u64)> {
        match self {
            FaultKind::Unreadable { offset, length } | FaultKind::Corrupt { offset, length } => {
                Some((offset, length))
            }
            FaultKind::Fail => None,
        }
    }

    /// The same fault moved to start at `offset`.
    #[must_use]
    pub fn at_offset(self, offset: u64) -> FaultKind {
        match self {
            FaultKind::Unreadable { length, .. } => FaultKind::Unreadable { offset, length },
            FaultKind::Corrupt { length, .. } => FaultKind::Corrupt { offset, length },
            FaultKind::Fail => FaultKind::Fail,
        }
    }

    /// The same fault with `length` bytes.
    #[must_use]
    pub fn with_length(self, length: u64) -> FaultKind {
        match self {
            FaultKind::Unreadable { offset, .. } => FaultKind::Unreadable { offset, length },
            FaultKind::Corrupt { offset, .. } => FaultKind::Corrupt { offset, length },
            FaultKind::Fail => FaultKind::Fail,
        }
    }

    /// The spec's word for it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Unreadable { .. } => "unreadable",
            FaultKind::Fail => "fail",
            FaultKind::Corrupt { .. } => "corrupt",
        }
    }

    /// Whether the member must sit on a dm device to take this fault.
    pub fn needs_dm(self) -> bool {
        !matches!(self, FaultKind::Corrupt { .. })
    }
}

/// Where a range fault is placed when the spec does not give a byte offset: under the data
/// set's files, found through the filesystem's extent map and md's layout when the fault is
/// about to strike (a range written as bytes may hold no file at all, and then the lab answers
/// a question nobody asked: what does a URE where no data is do?).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Under {
    /// `offset = "data"`: where the range holds the most file data on the member.
    Data,
    /// `offset = "file:PATH"`: at the first block of this file (relative to the layout's root)
    /// on the member.
    File(String),
}

/// Which copies of the struck blocks a corrupt fault placed under file data overwrites.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Copies {
    /// The range on its member only: one copy or column, what redundancy should heal.
    #[default]
    One,
    /// Every copy of the file bytes the range holds (every mirror, every DVA) and the parity
    /// that covers them: nothing can heal it, and the layout must say so.
    All,
}

impl Copies {
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if takes a reference
    fn is_one(&self) -> bool {
        *self == Copies::One
    }
}

/// One fault of a layout's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// Index into the layout's members (0 is md's RaidDevice 0).
    pub member: usize,
    /// When.
    pub at: FaultStep,
    /// What.
    #[serde(flatten)]
    pub kind: FaultKind,
    /// For a fault during an md rebuild: the percent of the recovery done when it strikes
    /// (held there with `md/sync_max`); `None`: as soon as the recovery has started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<u8>,
    /// Placed under file data rather than at a written offset; the range's `offset` is known
    /// once `placed` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under: Option<Under>,
    /// The lab has found the range's offset for `under`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub placed: bool,
    /// `copies = "all"`: every copy of the struck file bytes is overwritten too.
    #[serde(default, skip_serializing_if = "Copies::is_one")]
    pub copies: Copies,
}

impl Fault {
    /// One line: `unreadable 1MiB at 32MiB on member 0 during the rebuild`.
    pub fn describe(&self) -> String {
        let when = match (self.at, self.progress) {
            (FaultStep::BeforeDegrade, _) => "before degrading".to_string(),
            (FaultStep::Degraded, _) => "while degraded".to_string(),
            (FaultStep::Rebuild, None) => "during the rebuild".to_string(),
            (FaultStep::Rebuild, Some(p)) => format!("at {p}% of the rebuild"),
            (FaultStep::AfterRebuild, _) => "after the rebuild".to_string(),
        };
        let range = |offset: u64, length: u64| {
            let len = crate::units::format_bytes(length);
            let at = crate::units::format_bytes(offset);
            match (&self.under, self.placed) {
                (None, _) => format!("{len} at {at}"),
                (Some(Under::Data), false) => format!("{len} under file data"),
                (Some(Under::Data), true) => format!("{len} at {at} (under file data)"),
                (Some(Under::File(p)), false) => format!("{len} under {p}"),
                (Some(Under::File(p)), true) => format!("{len} at {at} (under {p})"),
            }
        };
        let what = match self.kind {
            FaultKind::Unreadable { offset, length } => {
                format!("unreadable {}", range(offset, length))
            }
            FaultKind::Corrupt { offset, length } => format!("corrupt {}", range(offset, length)),
            FaultKind::Fail => "whole-disk failure".into(),
        };
        let every = if self.copies == Copies::All {
            ", every copy"
        } else {
            ""
        };
        format!("{what} on member {}{every} {when}", self.member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `healthy` is the word for a fault on the whole layout: the step before any member fails.
    #[test]
    fn healthy_is_the_step_before_degrade() {
        assert_eq!(FaultStep::parse("healthy"), Some(FaultStep::BeforeDegrade));
        assert_eq!(
            FaultStep::parse("before_degrade"),
            Some(FaultStep::BeforeDegrade)
        );
        assert_eq!(FaultStep::parse("whole"), None);
    }
}
