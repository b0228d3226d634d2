//! `btrfs = { data, metadata, members }`: btrfs's own RAID across the disks, which is also the
//! filesystem.

use super::raw::RawLayout;
use super::section::{Cx, Draft, Raid, Section};
use crate::spec::SpecError;
use crate::stack::{BtrfsProfile, FsKind, RaidLayer};

/// The btrfs RAID layer.
pub(super) struct Btrfs;

impl Section for Btrfs {
    fn raid_table(&self) -> Option<&'static str> {
        Some("btrfs")
    }

    fn stray(&self, raw: &RawLayout) -> Option<&'static str> {
        raw.btrfs.is_some().then_some("btrfs")
    }

    fn parse(&self, cx: &Cx, raw: &RawLayout, draft: &mut Draft) -> Result<(), SpecError> {
        let Some(b) = &raw.btrfs else {
            return Ok(());
        };
        let data_s = b.data.as_deref().ok_or_else(|| {
            cx.err(
                "btrfs",
                "btrfs.data",
                "missing; the data profile (e.g. data = \"raid5\")",
            )
        })?;
        let names = BtrfsProfile::ALL.map(BtrfsProfile::name).join(", ");
        let data = BtrfsProfile::parse(data_s).ok_or_else(|| {
            cx.err(
                "data",
                "btrfs.data",
                format!("unknown profile '{data_s}' (use {names})"),
            )
        })?;
        let members = cx.count(b.members, "btrfs.members", cx.pool)?;
        let metadata = match &b.metadata {
            None => BtrfsProfile::default_metadata(data, members),
            Some(m) => BtrfsProfile::parse(m).ok_or_else(|| {
                cx.err(
                    "metadata",
                    "btrfs.metadata",
                    format!("unknown profile '{m}' (use {names})"),
                )
            })?,
        };
        for (p, k) in [(data, "data"), (metadata, "metadata")] {
            if members < p.min_devices() {
                let (at, field) = if b.members.is_some() {
                    ("members", "btrfs.members")
                } else if k == "data" {
                    (k, "btrfs.data")
                } else {
                    (k, "btrfs.metadata")
                };
                return Err(cx.err(
                    at,
                    field,
                    format!(
                        "btrfs {} needs at least {} devices, the layout has {members}",
                        p.name(),
                        p.min_devices()
                    ),
                ));
            }
        }
        if draft.lvm() {
            return Err(cx.err(
                "lvm",
                "lvm",
                "btrfs RAID sits directly on the disks; put LVM under mdadm or a single disk",
            ));
        }
        if let Some(f) = draft.fs {
            if f != FsKind::Btrfs {
                return Err(cx.err(
                    "fs",
                    "fs",
                    format!(
                        "a btrfs RAID layer is its own filesystem; drop fs = \"{}\"",
                        f.name()
                    ),
                ));
            }
        }
        draft.fs = Some(FsKind::Btrfs);
        draft.raid = Some(Raid {
            layer: RaidLayer::Btrfs { data, metadata },
            members,
            spares: 0,
            section: "btrfs",
        });
        Ok(())
    }
}
