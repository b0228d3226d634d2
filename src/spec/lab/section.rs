//! The seam every part of a `[[layout]]` plugs into: a [`Section`] owns some fields of the
//! table, reads them into the [`Draft`] and checks them, alone, against the disks, and against
//! the stack once it is built. `layout.rs` runs the sections in phases; a new layer (ZFS, a VM)
//! is one file implementing [`Section`] plus its line in `layout::SECTIONS`.

use super::Disks;
use super::raw::RawLayout;
use crate::spec::SpecError;
use crate::spec::locate::Locator;
use crate::stack::{FsKind, Layer, RaidLayer, Stack};

/// Where one layout sits in the file and what it is built on: every error a section makes goes
/// through here, so all of them read `file:line: layout[NAME].field: message`.
pub(super) struct Cx<'a> {
    /// The spec text and file.
    pub(super) loc: &'a Locator<'a>,
    /// First byte of the `[[layout]]` table.
    pub(super) start: usize,
    /// The layout's (checked) name.
    pub(super) name: &'a str,
    /// The lab's disks.
    pub(super) disks: &'a Disks,
    /// How many disks the lab has.
    pub(super) pool: usize,
}

impl Cx<'_> {
    /// The line of `key = ` in this layout's table (the table's first line when absent).
    pub(super) fn at(&self, key: &str) -> Option<usize> {
        Some(self.loc.line_of_key(self.start, "layout", key))
    }

    /// The layout's first line.
    pub(super) fn first_line(&self) -> Option<usize> {
        Some(self.loc.line_of(self.start))
    }

    /// The full name of a field: `layout[NAME].field`.
    pub(super) fn key(&self, field: &str) -> String {
        format!("layout[{}].{field}", self.name)
    }

    /// An error about `field`, on the line of the key `at`.
    pub(super) fn err(&self, at: &str, field: &str, msg: impl Into<String>) -> SpecError {
        self.loc.err(self.at(at), self.key(field), msg)
    }

    /// An error about `field`, on `line`.
    pub(super) fn err_on(
        &self,
        line: Option<usize>,
        field: &str,
        msg: impl Into<String>,
    ) -> SpecError {
        self.loc.err(line, self.key(field), msg)
    }

    /// A count of disks (`members`, `spares`): `default` when unset, else 0..=1024.
    pub(super) fn count(
        &self,
        v: Option<i64>,
        field: &str,
        default: usize,
    ) -> Result<usize, SpecError> {
        let at = field.rsplit('.').next().unwrap_or(field);
        match v {
            None => Ok(default),
            Some(n) if (0..=1024).contains(&n) => Ok(n as usize),
            Some(_) => Err(self.err(at, field, "must be between 0 and 1024")),
        }
    }
}

/// The RAID layer a section read: one per layout.
pub(super) struct Raid {
    /// The layer.
    pub(super) layer: RaidLayer,
    /// Disks holding data.
    pub(super) members: usize,
    /// Hot spares on top.
    pub(super) spares: usize,
    /// The section's table (`btrfs`), naming `members` in errors about the disk count.
    pub(super) section: &'static str,
}

/// What the sections have read so far; becomes the [`Stack`] and the layout's test plan.
pub(super) struct Draft {
    /// The filesystem, once named (or implied by the RAID layer).
    pub(super) fs: Option<FsKind>,
    /// The RAID layer, when the layout has one.
    pub(super) raid: Option<Raid>,
    /// The layers a section adds around the pooling layer (LVM, an SSD cache, dm-integrity
    /// or LUKS under each member), one of each kind: the stack's builder puts each in its
    /// place, so a section adding a layer names no other.
    pub(super) layers: Vec<Layer>,
    /// Extra mkfs arguments.
    pub(super) mkfs_options: Vec<String>,
    /// Mount options.
    pub(super) mount_options: Vec<String>,
    /// Read-ahead of the filesystem's device, bytes (`read_ahead`).
    pub(super) read_ahead: Option<u64>,
    /// Fail a member after the healthy runs.
    pub(super) degrade: bool,
    /// Replace it and time the rebuild.
    pub(super) rebuild: bool,
    /// Run the workloads again while the rebuild runs.
    pub(super) during_rebuild: bool,
    /// Members failed at once (1 or 2).
    pub(super) failures: u8,
    /// Bytes of the verification data set.
    pub(super) fill: Option<u64>,
    /// Faults to inject.
    pub(super) faults: Vec<crate::stack::fault::Fault>,
    /// Power cuts (VM lab only).
    pub(super) powercut: Option<super::PowerCutSpec>,
    /// How the layers are aligned to the array (`alignment`).
    pub(super) alignment: crate::stack::Alignment,
}

impl Draft {
    /// Adds `layer`, replacing one of the same kind a section added before.
    pub(super) fn add(&mut self, layer: Layer) {
        let kind = |l: &Layer| match l {
            Layer::Member(m) => (std::mem::discriminant(l), m.rank()),
            _ => (std::mem::discriminant(l), 0),
        };
        self.layers.retain(|l| kind(l) != kind(&layer));
        self.layers.push(layer);
    }

    /// Whether a section added an LVM volume (asked by the pooling layers that refuse one).
    pub(super) fn lvm(&self) -> bool {
        self.layers.iter().any(|l| matches!(l, Layer::Lvm))
    }

    /// Disks the SSD cache a section added takes (0 without one).
    pub(super) fn cache_disks(&self) -> usize {
        self.layers
            .iter()
            .map(|l| match l {
                Layer::Cache(c) => c.disks,
                _ => 0,
            })
            .sum()
    }
}

impl Default for Draft {
    fn default() -> Self {
        Draft {
            fs: None,
            raid: None,
            layers: Vec::new(),
            mkfs_options: Vec::new(),
            mount_options: Vec::new(),
            read_ahead: None,
            degrade: false,
            rebuild: false,
            during_rebuild: false,
            failures: 1,
            fill: None,
            faults: Vec::new(),
            powercut: None,
            alignment: crate::stack::Alignment::Auto,
        }
    }
}

/// One part of a `[[layout]]`: its fields, read and checked by itself. Every phase has a
/// default that does nothing, so a section implements only the phases it has rules for. The
/// phases run in this order, each over all sections in `layout::SECTIONS` order, and the first
/// error ends the layout.
pub(super) trait Section: Sync {
    /// The table name (`btrfs`) when this section is a RAID layer: a layout has at most one.
    fn raid_table(&self) -> Option<&'static str> {
        None
    }

    /// The first of this section's fields the layout sets, if any: a `dir` layout refuses it,
    /// and for a RAID layer it says the layer is given.
    fn stray(&self, raw: &RawLayout) -> Option<&'static str>;

    /// Rules every layout obeys, `dir` layouts too, before anything is read.
    fn early(&self, _cx: &Cx, _raw: &RawLayout, _draft: &mut Draft) -> Result<(), SpecError> {
        Ok(())
    }

    /// Reads this section's fields into the draft, checking them alone and against the disks
    /// (non-RAID sections first, then the one RAID layer, which sees what they read).
    fn parse(&self, _cx: &Cx, _raw: &RawLayout, _draft: &mut Draft) -> Result<(), SpecError> {
        Ok(())
    }

    /// Checks the built stack's shape (can it lose a member?).
    fn check(
        &self,
        _cx: &Cx,
        _raw: &RawLayout,
        _stack: &Stack,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        Ok(())
    }

    /// Checks bytes: `member_size` is the smallest member's size, when known.
    fn size(
        &self,
        _cx: &Cx,
        _raw: &RawLayout,
        _stack: &Stack,
        _member_size: Option<u64>,
        _draft: &mut Draft,
    ) -> Result<(), SpecError> {
        Ok(())
    }
}

/// Usable bytes of `stack` on members of `size` bytes, saturating instead of overflowing on
/// absurd sizes (the spec does not cap a loop disk's size).
pub(super) fn usable(stack: &Stack, size: u64) -> u64 {
    let n = stack.members.max(1) as u64;
    if size > u64::MAX / n {
        u64::MAX
    } else {
        stack.expected_usable(size)
    }
}
