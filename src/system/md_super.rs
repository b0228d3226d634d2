//! The md RAID superblock of a device, decoded: which array it belongs to (UUID, name, level,
//! number of devices) and this device's role in it.
//!
//! libblkid finds md superblocks and calls them `linux_raid_member`, which tells a reader
//! neither that the device is an md array's member nor which array. A refusal to write such a
//! device should say both: writing it degrades (or destroys) that array. The layouts are the
//! kernel's (`include/uapi/linux/raid/md_p.h`): version 0.90 (`mdp_super_t`) in the last
//! 64..128 KiB, 64 KiB-aligned; version 1.x (`struct mdp_superblock_1`) at the end (1.0, 8..12
//! KiB from the end, 4 KiB-aligned), at the start (1.1) or 4 KiB from the start (1.2). All
//! fields are little-endian (0.90 in the host's order, little-endian on every machine we run on).
//!
//! The checksum is checked and reported, not required: a superblock with a wrong checksum still
//! says the device held an array's data (newer libblkid versions skip it, so it is found here
//! even when libblkid names nothing).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// md's superblock magic (`MD_SB_MAGIC`).
pub const MD_MAGIC: u32 = 0xa92b_4efc;
/// Bytes read at each candidate place: the largest superblock (1.x with 1920 roles).
const READ: usize = 4096;

/// An md superblock found on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdSuper {
    /// Metadata version: `0.90`, `1.0`, `1.1` or `1.2`.
    pub version: &'static str,
    /// Byte offset of the superblock on the device.
    pub offset: u64,
    /// RAID level as mdadm names it (`raid6`, `linear`), or the raw number when unknown.
    pub level: String,
    /// Array UUID as mdadm prints it (`3f2a9c41:d07e4b55:a1e2c3d4:e5f60718`).
    pub array_uuid: String,
    /// Array name (`host:name`, 1.x only), when set.
    pub name: Option<String>,
    /// Devices the array has when complete.
    pub raid_disks: u32,
    /// This device's role: `active device 2`, `spare`, `faulty`, `journal`.
    pub role: Option<String>,
    /// The superblock's checksum matches its contents.
    pub checksum_ok: bool,
}

impl std::fmt::Display for MdSuper {
    /// `md RAID member: active device 2 of the 4-device raid6 array 3f2a9c41:...:e5f60718
    /// (host1:data), metadata 1.2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = match self.role.as_deref() {
            Some("spare") => "a spare".to_string(),
            Some("faulty") => "a faulty member".to_string(),
            Some("journal") => "the journal".to_string(),
            Some(r) => r.to_string(),
            None => "a member".to_string(),
        };
        write!(
            f,
            "md RAID member: {role} of the {}-device {} array {}",
            self.raid_disks, self.level, self.array_uuid
        )?;
        if let Some(n) = &self.name {
            write!(f, " ({n})")?;
        }
        write!(f, ", metadata {}", self.version)?;
        if !self.checksum_ok {
            write!(f, ", superblock checksum wrong")?;
        }
        Ok(())
    }
}

/// mdadm's name for a level number (`map_pers` in mdadm's maps.c).
fn level_name(level: i32) -> String {
    match level {
        -5 => "faulty".into(),
        -4 => "multipath".into(),
        -1 => "linear".into(),
        0 => "raid0".into(),
        1 => "raid1".into(),
        4 => "raid4".into(),
        5 => "raid5".into(),
        6 => "raid6".into(),
        10 => "raid10".into(),
        n => format!("level {n}"),
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Decodes a version 1.x superblock (`struct mdp_superblock_1`) read at byte `offset`.
pub fn parse_v1(b: &[u8], offset: u64, version: &'static str) -> Option<MdSuper> {
    if u32_at(b, 0)? != MD_MAGIC || u32_at(b, 4)? != 1 {
        return None;
    }
    // A superblock copied elsewhere (an image inside a file system) records another place.
    if u64_at(b, 144)? != offset >> 9 {
        return None;
    }
    let uuid = b.get(16..32)?;
    let array_uuid = uuid
        .chunks(4)
        .map(|c| format!("{:08x}", u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
        .collect::<Vec<_>>()
        .join(":");
    let name = b.get(32..64)?;
    let name = String::from_utf8_lossy(&name[..name.iter().position(|&c| c == 0).unwrap_or(32)])
        .trim()
        .to_string();
    let max_dev = usize::try_from(u32_at(b, 220)?).ok()?;
    let dev_number = usize::try_from(u32_at(b, 160)?).ok()?;
    let role = (dev_number < max_dev)
        .then(|| u16_at(b, 256 + 2 * dev_number))
        .flatten()
        .map(|r| match r {
            0xffff => "spare".to_string(),
            0xfffe => "faulty".to_string(),
            0xfffd => "journal".to_string(),
            n => format!("active device {n}"),
        });
    // `calc_sb_1_csum`: 32-bit little-endian words of the first 256 + 2 x max_dev bytes
    // (the checksum field counted as 0), carries folded in once.
    let len = 256 + 2 * max_dev;
    let checksum_ok = b.get(..len).is_some_and(|sb| {
        let mut words = sb.chunks_exact(4);
        let mut sum: u64 = words
            .by_ref()
            .enumerate()
            .filter(|(i, _)| *i != 216 / 4)
            .map(|(_, w)| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
            .sum();
        if let [a, c] = words.remainder() {
            sum += u64::from(u16::from_le_bytes([*a, *c]));
        }
        let folded = (sum & 0xffff_ffff) + (sum >> 32);
        u32_at(b, 216) == Some((folded & 0xffff_ffff) as u32)
    });
    Some(MdSuper {
        version,
        offset,
        level: level_name(u32_at(b, 72)? as i32),
        array_uuid,
        name: (!name.is_empty()).then_some(name),
        raid_disks: u32_at(b, 92)?,
        role,
        checksum_ok,
    })
}

/// Decodes a version 0.90 superblock (`mdp_super_t`, 4 KiB) read at byte `offset`.
pub fn parse_v090(b: &[u8], offset: u64) -> Option<MdSuper> {
    let word = |i: usize| u32_at(b, 4 * i);
    if word(0)? != MD_MAGIC || word(1)? != 0 || word(2)? != 90 {
        return None;
    }
    // set_uuid0 is word 5; set_uuid1..3 are words 13..15.
    let array_uuid = [word(5)?, word(13)?, word(14)?, word(15)?]
        .iter()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(":");
    // this_disk (`mdp_disk_t` at word 992): number, major, minor, raid_disk, state.
    let state = word(996)?;
    let role = if state & 1 != 0 {
        "faulty".to_string()
    } else if state & 2 != 0 {
        format!("active device {}", word(995)?)
    } else {
        "spare".to_string()
    };
    // sb_csum (word 38): the sum of all 1024 words with it counted as 0, folded once.
    let sum: u64 = (0..1024)
        .filter(|&i| i != 38)
        .map(|i| word(i).map_or(0, u64::from))
        .sum();
    let folded = (sum & 0xffff_ffff) + (sum >> 32);
    Some(MdSuper {
        version: "0.90",
        offset,
        level: level_name(word(7)? as i32),
        array_uuid,
        name: None,
        raid_disks: word(10)?,
        role: Some(role),
        checksum_ok: word(38) == Some((folded & 0xffff_ffff) as u32),
    })
}

/// The md superblock on `dev`, looked for where each metadata version keeps it (1.2, 1.1, 1.0,
/// then 0.90, the order mdadm examines them in). `None` when there is none or the device
/// cannot be read.
pub fn read(dev: &Path) -> Option<MdSuper> {
    let mut f = std::fs::File::open(dev).ok()?;
    let size = f.seek(SeekFrom::End(0)).ok()?;
    let mut at = |off: u64| -> Option<Vec<u8>> {
        if off.checked_add(READ as u64)? > size {
            return None;
        }
        f.seek(SeekFrom::Start(off)).ok()?;
        let mut b = vec![0u8; READ];
        f.read_exact(&mut b).ok()?;
        Some(b)
    };
    let end_1_0 = (size.checked_sub(8 << 10)?) & !4095;
    for (off, version) in [(4096, "1.2"), (0, "1.1"), (end_1_0, "1.0")] {
        if let Some(s) = at(off).and_then(|b| parse_v1(&b, off, version)) {
            return Some(s);
        }
    }
    let off_090 = (size & !(64 * 1024 - 1)).checked_sub(64 * 1024)?;
    at(off_090).and_then(|b| parse_v090(&b, off_090))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1.2 superblock as mdadm writes it (`init_super1` + `write_init_super1`): member 2 of a
    /// 4-device raid6, the checksum over 256 + 2 x max_dev bytes.
    fn v1(offset: u64, csum_ok: bool) -> Vec<u8> {
        let mut b = vec![0u8; READ];
        b[0..4].copy_from_slice(&MD_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&1u32.to_le_bytes());
        b[16..32].copy_from_slice(&[
            0x3f, 0x2a, 0x9c, 0x41, 0xd0, 0x7e, 0x4b, 0x55, 0xa1, 0xe2, 0xc3, 0xd4, 0xe5, 0xf6,
            0x07, 0x18,
        ]);
        b[32..42].copy_from_slice(b"host1:data");
        b[72..76].copy_from_slice(&6u32.to_le_bytes());
        b[92..96].copy_from_slice(&4u32.to_le_bytes());
        b[144..152].copy_from_slice(&(offset >> 9).to_le_bytes());
        b[160..164].copy_from_slice(&2u32.to_le_bytes());
        b[220..224].copy_from_slice(&4u32.to_le_bytes());
        for i in 0..4u16 {
            let at = 256 + 2 * usize::from(i);
            b[at..at + 2].copy_from_slice(&i.to_le_bytes());
        }
        let mut sum: u64 = b[..264]
            .chunks_exact(4)
            .map(|w| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
            .sum();
        sum = (sum & 0xffff_ffff) + (sum >> 32);
        let csum = (sum as u32).wrapping_add(u32::from(!csum_ok));
        b[216..220].copy_from_slice(&csum.to_le_bytes());
        b
    }

    #[test]
    fn names_a_1_2_member_with_its_array() {
        let s = parse_v1(&v1(4096, true), 4096, "1.2").unwrap();
        assert_eq!(s.level, "raid6");
        assert_eq!(s.array_uuid, "3f2a9c41:d07e4b55:a1e2c3d4:e5f60718");
        assert_eq!(s.name.as_deref(), Some("host1:data"));
        assert!(s.checksum_ok);
        assert_eq!(
            s.to_string(),
            "md RAID member: active device 2 of the 4-device raid6 array 3f2a9c41:d07e4b55:a1e2c3d4:e5f60718 (host1:data), metadata 1.2"
        );
        let bad = parse_v1(&v1(4096, false), 4096, "1.2").unwrap();
        assert!(!bad.checksum_ok);
        assert!(bad.to_string().ends_with("superblock checksum wrong"));
    }

    #[test]
    fn a_superblock_recording_another_place_or_no_magic_is_not_one() {
        assert_eq!(parse_v1(&v1(4096, true), 0, "1.1"), None);
        let mut b = v1(4096, true);
        b[0] = 0;
        assert_eq!(parse_v1(&b, 4096, "1.2"), None);
        assert_eq!(parse_v090(&[0u8; READ], 0), None);
    }

    #[test]
    fn reads_the_superblock_from_a_file_at_each_place() {
        let d = tempfile::tempdir().unwrap();
        let size: u64 = 8 << 20;
        for (off, version) in [(4096u64, "1.2"), (0, "1.1"), (size - 8192, "1.0")] {
            let p = d.path().join(format!("m{version}"));
            let mut img = vec![0u8; usize::try_from(size).unwrap()];
            let at = usize::try_from(off).unwrap();
            img[at..at + READ].copy_from_slice(&v1(off, true));
            std::fs::write(&p, &img).unwrap();
            let s = read(&p).unwrap();
            assert_eq!((s.version, s.offset), (version, off));
        }
        let empty = d.path().join("empty");
        std::fs::write(&empty, vec![0u8; 1 << 20]).unwrap();
        assert_eq!(read(&empty), None);
    }
}
