//! Usable capacity at the real disk size, measured where this host can build the stack: the
//! layout is built again on sparse files of the real disks' size (`layout::probe`: seconds,
//! metadata only), what it reports is read, and everything is torn down. What btrfs, xfs and
//! ext4 keep for themselves is mostly fixed, so the lab's small disks cannot be scaled up;
//! this is the figure itself. md, LVM, caches and ZFS are built in the VM lab only: their
//! usable bytes come from the planner's model of the same overheads (`plan::usable`).
//!
//! The one part of a decision that touches disks; [`super::decide`] stays a pure function of
//! what this fills in.

use std::collections::BTreeMap;
use std::path::Path;

use super::{AtSize, LabFacts};
use crate::layout::{Availability, probe};
use crate::sample::layout_record::Layer;
use crate::stack::{BtrfsProfile, FsKind, FsLayer, RaidLayer, Stack};
use crate::units::format_bytes_si;

/// The stack a layout record describes, when it is one this host may build on loop disks of
/// any size: btrfs profiles, or one disk with xfs, ext4 or btrfs. `None` for md, LVM, caches
/// and ZFS (the VM lab's), and for an existing directory.
pub fn buildable_stack(layers: &[Layer]) -> Option<Stack> {
    let fs_of = |kind: FsKind| {
        layers
            .iter()
            .find_map(|l| match l {
                Layer::Fs {
                    mkfs_options,
                    mount_options,
                    read_ahead,
                    ..
                } => Some(FsLayer {
                    kind,
                    mkfs_options: mkfs_options.clone(),
                    mount_options: mount_options.clone(),
                    read_ahead: *read_ahead,
                }),
                _ => None,
            })
            .unwrap_or_else(|| FsLayer::plain(kind))
    };
    match layers {
        [
            Layer::Btrfs {
                data,
                metadata,
                members,
            },
            rest @ ..,
        ] if rest
            .iter()
            .all(|l| matches!(l, Layer::Fs { fs, .. } if fs == "btrfs")) =>
        {
            let n = usize::try_from(*members).ok().filter(|n| *n > 0)?;
            let data = BtrfsProfile::parse(data)?;
            let metadata = if metadata.is_empty() {
                BtrfsProfile::default_metadata(data, n)
            } else {
                BtrfsProfile::parse(metadata)?
            };
            Some(Stack::over(RaidLayer::Btrfs { data, metadata }, n).fs(fs_of(FsKind::Btrfs)))
        }
        [Layer::Disk, Layer::Fs { fs, .. }] => {
            let kind = FsKind::parse(fs)?;
            Some(Stack::over(RaidLayer::None, 1).fs(fs_of(kind)))
        }
        _ => None,
    }
}

/// Builds every layout of `lab` this host can build again on sparse files of `disk_bytes`
/// each and records what it reports (`usable_at_size`); a stack is built once for all the
/// layouts that share it. Layouts whose lab disks were already that size, and those this
/// host cannot build, are left to the lab's figure and the model. Returns what the decision's
/// notes must say (a build that failed, why none could be made).
pub fn at_real_size(lab: &mut LabFacts, disk_bytes: u64, state_dir: &Path) -> Vec<String> {
    let avail = Availability::detect();
    let mut built: BTreeMap<String, Result<u64, String>> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut refused: Vec<(String, String)> = Vec::new();
    for l in &mut lab.layouts {
        if l.member_bytes == Some(disk_bytes) {
            continue;
        }
        let Some(stack) = buildable_stack(&l.stack) else {
            continue;
        };
        if let Err(why) = avail.check(&stack, true) {
            refused.push((l.name.clone(), why));
            continue;
        }
        if crate::signals::stop_requested() {
            break;
        }
        let key = stack.describe();
        let got = built.entry(key).or_insert_with(|| {
            probe::usable_at(&stack, disk_bytes, state_dir).map_err(|e| e.to_string())
        });
        match got {
            Ok(u) => {
                l.usable_at_size = Some(AtSize {
                    disk_bytes,
                    usable_bytes: *u,
                });
            }
            Err(e) => notes.push(format!(
                "{}: not built at {} here ({e}): its usable is the planner's model",
                l.name,
                format_bytes_si(disk_bytes)
            )),
        }
    }
    if let Some((_, why)) = refused.first() {
        let names: Vec<&str> = refused.iter().map(|(n, _)| n.as_str()).collect();
        notes.push(format!(
            "{}: usable is the planner's model, not built at {} here ({why})",
            names.join(", "),
            format_bytes_si(disk_bytes)
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(name: &str) -> Layer {
        Layer::Fs {
            fs: name.into(),
            mkfs_options: vec!["-K".into()],
            mount_options: vec!["noatime".into()],
            read_ahead: None,
        }
    }

    #[test]
    fn btrfs_and_one_disk_are_built_again_the_rest_is_modelled() {
        let b = buildable_stack(&[
            Layer::Btrfs {
                data: "raid6".into(),
                metadata: String::new(),
                members: 4,
            },
            fs("btrfs"),
        ])
        .unwrap();
        assert_eq!(
            b.raid(),
            &RaidLayer::Btrfs {
                data: BtrfsProfile::Raid6,
                metadata: BtrfsProfile::Raid1c3
            }
        );
        assert_eq!((b.members, b.mkfs_options()), (4, &["-K".to_string()][..]));
        let x = buildable_stack(&[Layer::Disk, fs("ext4")]).unwrap();
        assert_eq!(
            (x.fs(), x.mount_options()),
            (FsKind::Ext4, &["noatime".to_string()][..])
        );
        let md = Layer::Md {
            level: "raid6".into(),
            members: 4,
            spares: 0,
            chunk_bytes: None,
            bitmap: None,
            bitmap_chunk_bytes: None,
            consistency_policy: None,
            stripe_cache_size: None,
            group_thread_cnt: None,
        };
        assert_eq!(buildable_stack(&[md, fs("xfs")]), None);
        assert_eq!(buildable_stack(&[Layer::Disk, Layer::Lvm, fs("xfs")]), None);
        assert_eq!(buildable_stack(&[]), None);
    }
}
