//! The alignment check of a built layout: it reads what several layers left (md's array,
//! LVM's volume group, bcache's backing device, the filesystem) and asks the tools how each
//! sits on the array's stripe, so it crosses layers by design and lives beside the walkers,
//! not in one.

use super::super::state::Owned;
use super::{Built, Session};

impl Session {
    /// How `b`'s layers sit on the array's stripe, as the tools report them after the build
    /// (md's sysfs, `pvs`/`vgs`, `bcache-super-show`, `xfs_spaceman -c info`, `dumpe2fs -h`): a
    /// warning with the fix
    /// per misaligned layer. The commands it runs are in the layout's command list.
    pub fn alignment(&self, b: &Built) -> super::super::align::AlignmentReport {
        let bcache = self.objects[b.mark..].iter().find_map(|o| match o {
            Owned::Bcache { backing, .. } => Some(backing.as_path()),
            _ => None,
        });
        let md = b.md_array();
        super::super::align::probe(
            &self.runner,
            b.stack.alignment,
            &super::super::align::Placed {
                md: md.as_deref(),
                vg: b.volume_group(),
                bcache,
                fs: b.stack.fs(),
                fs_device: &b.fs_device,
                mount: &b.mount_point,
            },
        )
    }
}
