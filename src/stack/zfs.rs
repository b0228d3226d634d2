//! The `zfs` RAID layer's shape as plain data: the kind of the data vdevs, how many, how wide,
//! the special, log, cache and spare devices and the pool and dataset properties, with what
//! that shape needs and gives (disks, failures tolerated, usable bytes, the slop reserve).
//! Built by the lab spec parser, built on disks by `layout::zfs`, read by the planner.

use serde::{Deserialize, Serialize};

/// The kind of the data vdevs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VdevKind {
    /// An N-way mirror (N = width).
    Mirror,
    /// RAID-Z with 1, 2 or 3 parity sectors per row.
    Raidz(u8),
    /// dRAID: fixed-width redundancy groups of `data + parity` sectors, and distributed spares,
    /// spread over `width` children.
    Draid {
        /// Parity per group (1-3).
        parity: u8,
        /// Data sectors per group.
        data: u32,
        /// Distributed spares.
        spares: u32,
    },
}

impl VdevKind {
    /// Parses `mirror`, `raidz`, `raidz1`..`raidz3`, `draid[P][:Dd][:Cc][:Ss]` (zpool's own
    /// syntax). Returns the kind and the children count when the text gives one (`:12c`); a
    /// dRAID without `:Dd` gets 8 data sectors (zpool's default, capped by `width` later).
    pub fn parse(text: &str) -> Result<(VdevKind, Option<u32>), String> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "mirror" => return Ok((VdevKind::Mirror, None)),
            "raidz" | "raidz1" => return Ok((VdevKind::Raidz(1), None)),
            "raidz2" => return Ok((VdevKind::Raidz(2), None)),
            "raidz3" => return Ok((VdevKind::Raidz(3), None)),
            _ => {}
        }
        let bad = || {
            format!(
                "unknown vdev '{text}' (use mirror, raidz1, raidz2, raidz3 or draid[P][:Dd][:Cc][:Ss], e.g. draid2:8d:2s)"
            )
        };
        let rest = t.strip_prefix("draid").ok_or_else(bad)?;
        let mut parts = rest.split(':');
        let p = parts.next().unwrap_or("");
        let parity: u8 = if p.is_empty() {
            1
        } else {
            p.parse().map_err(|_| bad())?
        };
        if !(1..=3).contains(&parity) {
            return Err(format!("dRAID parity must be 1, 2 or 3, not {parity}"));
        }
        let (mut data, mut children, mut spares) = (8, None, 0);
        for part in parts {
            let (num, unit) = part.split_at(part.len().saturating_sub(1));
            let n: u32 = num.parse().map_err(|_| bad())?;
            match unit {
                "d" if n >= 1 => data = n,
                "c" => children = Some(n),
                "s" => spares = n,
                _ => return Err(bad()),
            }
        }
        Ok((
            VdevKind::Draid {
                parity,
                data,
                spares,
            },
            children,
        ))
    }

    /// Fewest children one vdev of this kind takes (zpool's own minimums).
    pub fn min_width(self) -> usize {
        match self {
            VdevKind::Mirror => 2,
            VdevKind::Raidz(p) => usize::from(p) + 1,
            VdevKind::Draid {
                parity,
                data,
                spares,
            } => usize::from(parity) + data as usize + spares as usize,
        }
    }

    /// Parity sectors per row (mirror: 0, its redundancy is copies).
    pub fn parity(self) -> u32 {
        match self {
            VdevKind::Mirror => 0,
            VdevKind::Raidz(p) | VdevKind::Draid { parity: p, .. } => u32::from(p),
        }
    }

    /// The vdev type word `zpool create` takes for `width` children: `mirror`, `raidz2`,
    /// `draid2:8d:12c:2s`.
    pub fn zpool_word(self, width: usize) -> String {
        match self {
            VdevKind::Mirror => "mirror".into(),
            VdevKind::Raidz(p) => format!("raidz{p}"),
            VdevKind::Draid {
                parity,
                data,
                spares,
            } => format!("draid{parity}:{data}d:{width}c:{spares}s"),
        }
    }
}

/// A validated `zfs` layer: data vdevs and the support vdevs, pool and dataset properties.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZfsOptions {
    /// Kind of every data vdev.
    pub vdev: VdevKind,
    /// How many data vdevs (striped).
    pub vdevs: usize,
    /// Disks per data vdev.
    pub width: usize,
    /// Disks of the special (metadata and small blocks) vdev, a mirror; 0: none.
    pub special: usize,
    /// Disks of the SLOG (a mirror when 2 or more); 0: none.
    pub log: usize,
    /// L2ARC disks; 0: none.
    pub cache: usize,
    /// Hot spares.
    pub spares: usize,
    /// Pool properties (`-o ashift=12`), in the order given.
    pub pool: Vec<(String, String)>,
    /// Properties of the measured dataset (`recordsize=1M`), in the order given.
    pub dataset: Vec<(String, String)>,
}

impl ZfsOptions {
    /// One vdev of `width` disks, nothing else (for tests and defaults).
    pub fn simple(vdev: VdevKind, width: usize) -> ZfsOptions {
        ZfsOptions {
            vdev,
            vdevs: 1,
            width,
            special: 0,
            log: 0,
            cache: 0,
            spares: 0,
            pool: Vec::new(),
            dataset: Vec::new(),
        }
    }

    /// Disks in data vdevs.
    pub fn data_disks(&self) -> usize {
        self.vdevs * self.width
    }

    /// Disks outside the data vdevs: special, log, cache and spares.
    pub fn extra_disks(&self) -> usize {
        self.special + self.log + self.cache + self.spares
    }

    /// Members that can be missing at once anywhere in the data vdevs without losing data
    /// (a mirror's width less one, the parity otherwise); a special vdev is a mirror too.
    pub fn tolerated_failures(&self) -> usize {
        let data = match self.vdev {
            VdevKind::Mirror => self.width.saturating_sub(1),
            v => v.parity() as usize,
        };
        if self.special >= 2 {
            data.min(self.special - 1)
        } else {
            data
        }
    }

    /// Rough usable bytes from members of `size` bytes: data disks less parity (dRAID: less
    /// spares, times data/(data+parity)), less the pool's slop reserve. The planner has the
    /// exact allocation model.
    pub fn usable(&self, size: u64) -> u64 {
        let raw = self.raw_usable(size);
        raw - slop(raw)
    }

    fn raw_usable(&self, size: u64) -> u64 {
        let v = self.vdevs as u64;
        let w = self.width as u64;
        match self.vdev {
            VdevKind::Mirror => v.saturating_mul(size),
            VdevKind::Raidz(p) => v
                .saturating_mul(w.saturating_sub(u64::from(p)))
                .saturating_mul(size),
            VdevKind::Draid {
                parity,
                data,
                spares,
            } => {
                let d = u128::from(data);
                let g = d + u128::from(parity);
                let raw = u128::from(v)
                    * u128::from(w.saturating_sub(u64::from(spares)))
                    * u128::from(size);
                u64::try_from(raw * d / g).unwrap_or(u64::MAX)
            }
        }
    }

    /// A property of the pool, when set.
    pub fn pool_prop(&self, key: &str) -> Option<&str> {
        self.pool
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A property of the measured dataset, when set.
    pub fn dataset_prop(&self, key: &str) -> Option<&str> {
        self.dataset
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `zfs raidz2 x6, special mirror x2, log x1 [ashift=12; recordsize=1M]`.
    pub fn describe(&self) -> String {
        let word = self.vdev.zpool_word(self.width);
        let mut s = if self.vdevs > 1 {
            format!("zfs {} x {word} x{}", self.vdevs, self.width)
        } else {
            format!("zfs {word} x{}", self.width)
        };
        for (n, what) in [
            (self.special, "special mirror"),
            (self.log, "log"),
            (self.cache, "cache"),
            (self.spares, "spare"),
        ] {
            if n > 0 {
                s.push_str(&format!(", {what} x{n}"));
            }
        }
        let props: Vec<String> = self
            .pool
            .iter()
            .chain(&self.dataset)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !props.is_empty() {
            s.push_str(&format!(" [{}]", props.join(" ")));
        }
        s
    }
}

/// Smallest slop (`spa_min_slop`): a small pool keeps up to half its space back.
pub const MIN_SLOP: u64 = 128 << 20;
/// Largest slop (`spa_max_slop`).
pub const MAX_SLOP: u64 = 128 << 30;

/// The pool's slop reserve for `space` bytes (`spa_get_slop_space`, 2.x): space ZFS keeps
/// back from every dataset.
pub fn slop(space: u64) -> u64 {
    (space / 32).min(MAX_SLOP).max(MIN_SLOP.min(space / 2))
}
