//! The layers under each member: dm-integrity (`integritysetup`) and LUKS2
//! (`cryptsetup`), their command lines, their kinds (whose `StorageLayer` impls are in `session/member.rs`), and where a byte of the
//! device they offer lies on the disk under them (so a fault placed on a member lands on the
//! disk, under the layer that should notice it).

use std::path::Path;

use crate::stack::member::{IntegrityOptions, LuksOptions};

/// PBKDF iterations for the lab's LUKS key slot: the least cryptsetup takes, so a format under
/// TCG takes a moment instead of seconds (the key is random and thrown away at teardown).
pub const PBKDF_ITERATIONS: u32 = 1000;

/// dm-integrity.
pub struct Integrity;

/// LUKS2 (dm-crypt).
pub struct Luks;

pub(crate) const CRYPTSETUP_BIN: &str = "cryptsetup-bin";

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `integritysetup format`: writes the superblock and journal and, unless `no_wipe`, every
/// sector with its tag (a sector never written reads as an error otherwise).
pub fn integrity_format_argv(dev: &Path, o: &IntegrityOptions, no_wipe: bool) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "integritysetup".into(),
        "format".into(),
        "--batch-mode".into(),
        "--integrity".into(),
        o.algorithm.name().into(),
    ];
    if no_wipe {
        v.push("--no-wipe".into());
    }
    v.push(s(dev));
    v
}

/// `integritysetup open DEV NAME`, without the journal when the options say so.
pub fn integrity_open_argv(dev: &Path, name: &str, o: &IntegrityOptions) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "integritysetup".into(),
        "open".into(),
        "--integrity".into(),
        o.algorithm.name().into(),
    ];
    if !o.journal {
        v.push("--integrity-no-journal".into());
    }
    v.extend([s(dev), name.to_string()]);
    v
}

/// `cryptsetup luksFormat --type luks2` with the lab's key file and a fast PBKDF.
pub fn luks_format_argv(dev: &Path, key: &Path, o: &LuksOptions) -> Vec<String> {
    vec![
        "cryptsetup".into(),
        "luksFormat".into(),
        "--type".into(),
        "luks2".into(),
        "--batch-mode".into(),
        "--cipher".into(),
        o.cipher.clone(),
        "--key-size".into(),
        o.key_size.to_string(),
        "--pbkdf".into(),
        "pbkdf2".into(),
        "--pbkdf-force-iterations".into(),
        PBKDF_ITERATIONS.to_string(),
        "--key-file".into(),
        s(key),
        s(dev),
    ]
}

/// `cryptsetup open --type luks2 DEV NAME` with the key file.
pub fn luks_open_argv(dev: &Path, name: &str, key: &Path) -> Vec<String> {
    vec![
        "cryptsetup".into(),
        "open".into(),
        "--type".into(),
        "luks2".into(),
        "--key-file".into(),
        s(key),
        s(dev),
        name.to_string(),
    ]
}

/// What `integritysetup dump` says of a device's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntegrityGeometry {
    /// log2 of the data sectors between two runs of tags.
    pub log2_interleave_sectors: u32,
    /// Tag bytes per block.
    pub tag_size: u64,
    /// Journal sections.
    pub journal_sections: u64,
    /// Bytes per block (512 unless `--sector-size`).
    pub sector_size: u64,
    /// Tags padded to 4 KiB (`fix_padding`, what integritysetup formats since 2.2) rather than
    /// to 128 KiB.
    pub fixed_padding: bool,
}

/// Reads `integritysetup dump` output; `None` when a field is missing.
pub fn parse_dump(text: &str) -> Option<IntegrityGeometry> {
    let get = |k: &str| {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(k)).then(|| w.next()?.parse::<u64>().ok())?
        })
    };
    Some(IntegrityGeometry {
        log2_interleave_sectors: u32::try_from(get("log2_interleave_sectors")?).ok()?,
        tag_size: get("integrity_tag_size")?,
        journal_sections: get("journal_sections")?,
        sector_size: get("sector_size").unwrap_or(512),
        fixed_padding: text
            .lines()
            .any(|l| l.starts_with("flags") && l.contains("fix_padding")),
    })
}

impl IntegrityGeometry {
    /// The disk byte where byte `at` of the integrity device lies, as the kernel lays the
    /// device out (drivers/md/dm-integrity.c, `get_data_sector`): the superblock (8 sectors),
    /// the journal, then areas of a run of tags followed by `2^log2_interleave_sectors` data
    /// sectors.
    pub fn disk_offset(&self, at: u64) -> u64 {
        let spb_log2 = (self.sector_size / 512).max(1).trailing_zeros();
        // A journal entry: the sector number, the last 8 bytes of each sector, the tag,
        // rounded up to 8 bytes; a journal sector holds 504 bytes of them.
        let spb = 1u64 << spb_log2;
        let entry = (8 + 8 * spb + self.tag_size).div_ceil(8) * 8;
        let per_sector = 504 / entry;
        let section_entries = per_sector * 8;
        let section_sectors = (section_entries << spb_log2) + 8;
        let initial = 8 + section_sectors * self.journal_sections;
        let padding = if self.fixed_padding {
            8 * 512
        } else {
            1u64 << 9 << 8
        };
        let tags = self.tag_size << (self.log2_interleave_sectors - spb_log2);
        let metadata_run = tags.div_ceil(padding) * padding / 512;
        let sector = at / 512;
        let area = sector >> self.log2_interleave_sectors;
        let offset = sector & ((1u64 << self.log2_interleave_sectors) - 1);
        let disk_sector =
            (area << self.log2_interleave_sectors) + (area + 1) * metadata_run + initial + offset;
        disk_sector * 512 + at % 512
    }
}

/// The data offset of a LUKS device (`dmsetup table NAME`: `0 N crypt CIPHER KEY IV DEV OFFSET`),
/// in bytes.
pub fn crypt_offset(table: &str) -> Option<u64> {
    let w: Vec<&str> = table.split_whitespace().collect();
    (w.get(2) == Some(&"crypt"))
        .then(|| w.get(7)?.parse::<u64>().ok())?
        .map(|s| s * 512)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::member::IntegrityAlgorithm;

    #[test]
    fn command_lines() {
        let o = IntegrityOptions {
            algorithm: IntegrityAlgorithm::Sha256,
            journal: false,
        };
        assert_eq!(
            integrity_open_argv(Path::new("/dev/vdb"), "x", &o).join(" "),
            "integritysetup open --integrity sha256 --integrity-no-journal /dev/vdb x"
        );
        let l = LuksOptions {
            cipher: "aes-xts-plain64".into(),
            key_size: 256,
        };
        let f = luks_format_argv(Path::new("/dev/vdb"), Path::new("/k"), &l).join(" ");
        assert!(f.contains("--key-size 256 --pbkdf pbkdf2 --pbkdf-force-iterations 1000"));
        assert_eq!(
            crypt_offset("0 491520 crypt aes-xts-plain64 :64:logon:x 0 253:3 32768"),
            Some(32768 * 512)
        );
    }

    /// The layout of a crc32c device with 4 KiB tag padding: 8 sectors of superblock, the
    /// journal's sections of 176 sectors (168 entries of 24 bytes, 21 to a sector), then a
    /// 128 KiB tag run (32768 tags of 4 bytes) before each 16 MiB of data.
    #[test]
    fn integrity_offsets_follow_the_kernels_layout() {
        let g = parse_dump(
            "Info for integrity device /dev/vdb.\nsuperblock_version 5\nlog2_interleave_sectors 15\nintegrity_tag_size 4\njournal_sections 11\nprovided_data_sectors 500000\nsector_size 512\nlog2_blocks_per_bitmap 12\nflags fix_padding fix_hmac\n",
        )
        .unwrap();
        let initial = (8 + 176 * 11) * 512;
        assert_eq!(g.disk_offset(0), initial + 256 * 512);
        assert_eq!(g.disk_offset(4097), initial + 256 * 512 + 4097);
        assert_eq!(
            g.disk_offset(16 << 20),
            initial + 2 * 256 * 512 + (16 << 20)
        );
    }
}
