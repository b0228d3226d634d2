//! Layers under each member: a device-mapper layer made on every disk the pooling
//! layer takes — members, spares and each replacement a rebuild takes — before md, btrfs or
//! ZFS sees the disks, which then pool the top device of each disk's member stack. Faults the
//! lab injects stay closest to the disk, under these layers. Plain data: the spec parser
//! makes it, `layout::member` builds it, the record and the reports read it.
//!
//! Two layers sit on this one mechanism: dm-integrity (a checksum per sector, so a corrupt
//! sector reads as an error the RAID above repairs) and LUKS (dm-crypt, a key file the lab
//! makes). Both together: integrity under LUKS.

use serde::{Deserialize, Serialize};

/// The checksum dm-integrity keeps per sector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntegrityAlgorithm {
    /// CRC-32C (4 bytes a sector): integritysetup's default, hardware-assisted on x86.
    Crc32c,
    /// CRC-32 (4 bytes).
    Crc32,
    /// SHA-1 (20 bytes).
    Sha1,
    /// SHA-256 (32 bytes): more tag space, more CPU.
    Sha256,
}

impl IntegrityAlgorithm {
    /// Every algorithm, for error messages.
    pub const ALL: [IntegrityAlgorithm; 4] = [
        IntegrityAlgorithm::Crc32c,
        IntegrityAlgorithm::Crc32,
        IntegrityAlgorithm::Sha1,
        IntegrityAlgorithm::Sha256,
    ];

    /// Parses a name `integritysetup --integrity` takes.
    pub fn parse(s: &str) -> Option<IntegrityAlgorithm> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The name `integritysetup --integrity` takes and the reports show.
    pub fn name(self) -> &'static str {
        match self {
            IntegrityAlgorithm::Crc32c => "crc32c",
            IntegrityAlgorithm::Crc32 => "crc32",
            IntegrityAlgorithm::Sha1 => "sha1",
            IntegrityAlgorithm::Sha256 => "sha256",
        }
    }

    /// Bytes of tag per sector.
    pub fn tag_bytes(self) -> u64 {
        match self {
            IntegrityAlgorithm::Crc32c | IntegrityAlgorithm::Crc32 => 4,
            IntegrityAlgorithm::Sha1 => 20,
            IntegrityAlgorithm::Sha256 => 32,
        }
    }
}

/// dm-integrity's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegrityOptions {
    /// The checksum.
    pub algorithm: IntegrityAlgorithm,
    /// Writes go through dm-integrity's journal first (data and tag land together after a
    /// crash); `false` (`--integrity-no-journal`) writes in place, faster, and a crash can
    /// leave a sector whose tag does not match.
    pub journal: bool,
}

/// The LUKS2 key sizes `aes-xts-plain64` takes (two AES keys).
pub const LUKS_KEY_SIZES: [u32; 2] = [256, 512];

/// LUKS's options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LuksOptions {
    /// The dm-crypt cipher (`aes-xts-plain64`).
    pub cipher: String,
    /// Key bits (256 or 512).
    pub key_size: u32,
}

/// One layer under each member, bottom first in [`super::Stack`]'s list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum MemberLayer {
    /// dm-integrity (`integritysetup format` + `open`).
    Integrity(IntegrityOptions),
    /// LUKS2 (`cryptsetup luksFormat` + `open`).
    Luks(LuksOptions),
}

impl MemberLayer {
    /// Its place under a member, bottom first: integrity under LUKS.
    pub fn rank(&self) -> u8 {
        match self {
            MemberLayer::Integrity(_) => 0,
            MemberLayer::Luks(_) => 1,
        }
    }

    /// The short name (`dm-integrity`, `luks`): the registry's, the dm name's suffix.
    pub fn name(&self) -> &'static str {
        match self {
            MemberLayer::Integrity(_) => "dm-integrity",
            MemberLayer::Luks(_) => "luks",
        }
    }

    /// The word in a stack's short form (`md raid5 x3 over luks over integrity`).
    pub fn short(&self) -> &'static str {
        match self {
            MemberLayer::Integrity(_) => "integrity",
            MemberLayer::Luks(_) => "luks",
        }
    }

    /// Bytes this layer leaves of a `size`-byte device below it, as the kernel lays it out:
    /// dm-integrity keeps a journal of 1/128 of the device (at most 64 MiB, made by `format`
    /// whether it is used or not) and a tag per 512-byte sector; LUKS2 a 16 MiB header.
    /// An estimate the spec checks sizes with; the lab reports the real device's size.
    pub fn usable(&self, size: u64) -> u64 {
        match self {
            MemberLayer::Integrity(o) => {
                let journal = (size / 128).min(64 << 20);
                let rest = size.saturating_sub(journal + (4 << 10));
                let sectors = rest / (512 + o.algorithm.tag_bytes());
                sectors * 512
            }
            MemberLayer::Luks(_) => size.saturating_sub(16 << 20),
        }
    }

    /// Its words in [`super::Stack::describe`]: `dm-integrity (crc32c)`,
    /// `dm-integrity (sha256, no journal)`, `luks (aes-xts-plain64, 512-bit key)`.
    pub fn describe(&self) -> String {
        match self {
            MemberLayer::Integrity(o) => format!(
                "dm-integrity ({}{})",
                o.algorithm.name(),
                if o.journal { "" } else { ", no journal" }
            ),
            MemberLayer::Luks(o) => format!("luks ({}, {}-bit key)", o.cipher, o.key_size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::{FsKind, FsLayer, Layer, MdLevel, MdOptions, RaidLayer, Stack};

    #[test]
    fn names_parse_and_describe() {
        assert_eq!(
            IntegrityAlgorithm::parse("SHA256"),
            Some(IntegrityAlgorithm::Sha256)
        );
        assert_eq!(IntegrityAlgorithm::parse("md5"), None);
        let i = MemberLayer::Integrity(IntegrityOptions {
            algorithm: IntegrityAlgorithm::Crc32c,
            journal: false,
        });
        assert_eq!(i.describe(), "dm-integrity (crc32c, no journal)");
        let l = MemberLayer::Luks(LuksOptions {
            cipher: "aes-xts-plain64".into(),
            key_size: 512,
        });
        assert!(i.rank() < l.rank());
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"type":"luks","cipher":"aes-xts-plain64","key_size":512}"#
        );
    }

    /// Layers under each member sit bottom-most, sorted (integrity under LUKS),
    /// named after the RAID layer top first, stored after the old fields only when present,
    /// and shrink each member in the capacity the stack expects.
    #[test]
    fn member_layers_are_bottom_most_and_stored_only_when_present() {
        let plain = Stack::over(RaidLayer::Md(MdOptions::new(MdLevel::Raid5)), 4)
            .fs(FsLayer::plain(FsKind::Xfs));
        let luks = MemberLayer::Luks(LuksOptions {
            cipher: "aes-xts-plain64".into(),
            key_size: 512,
        });
        let integrity = MemberLayer::Integrity(IntegrityOptions {
            algorithm: IntegrityAlgorithm::Crc32c,
            journal: true,
        });
        let s = plain
            .clone()
            .with_member_layers(vec![luks.clone(), integrity.clone()]);
        assert_eq!(
            s.layers()[..2],
            [Layer::Member(integrity), Layer::Member(luks)]
        );
        assert_eq!(
            s.describe(),
            "md raid5 x4 over luks (aes-xts-plain64, 512-bit key) over dm-integrity (crc32c) > xfs"
        );
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            json.ends_with(r#","under_members":[{"type":"integrity","algorithm":"crc32c","journal":true},{"type":"luks","cipher":"aes-xts-plain64","key_size":512}]}"#),
            "{json}"
        );
        assert!(
            !serde_json::to_string(&plain)
                .unwrap()
                .contains("under_members")
        );
        let back: Stack = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        // 1 GiB members: less than the bare disks give, by the journal, tags and header.
        let bare = plain.expected_usable(1 << 30);
        let under = s.expected_usable(1 << 30);
        assert!(
            under < bare - 3 * (16 << 20) && under > bare - 3 * (40 << 20),
            "{under}"
        );
    }
}
