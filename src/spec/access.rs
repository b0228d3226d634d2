//! What real workloads have and a single block size and uniform offsets do not: block-size
//! mixes (fio `bssplit`) and skewed access distributions (fio `random_distribution`: zipf,
//! pareto, normal, zoned hot spots). Parsed here from fio's own spellings, so a spec and a job
//! file write them the same way; `runner::offsets` draws from them.

use serde::{Deserialize, Serialize};

/// One size of a block-size mix and its share of the IOs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeShare {
    /// IO size, bytes.
    pub size: u64,
    /// Percent of the IOs.
    pub pct: u32,
}

/// A block-size mix per direction (fio `bssplit=8k/50:128k/50` for both, or
/// `bssplit=8k/50:128k/50,4k/100` for reads then writes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BsSplit {
    /// The reads' sizes.
    pub read: Vec<SizeShare>,
    /// The writes' sizes.
    pub write: Vec<SizeShare>,
}

fn parse_shares(s: &str) -> Result<Vec<SizeShare>, String> {
    let mut out: Vec<SizeShare> = Vec::new();
    let mut rest_at: Option<usize> = None;
    for part in s.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, pct) = part.split_once('/').unwrap_or((part, ""));
        let size =
            crate::units::parse_bytes(size.trim()).map_err(|e| format!("'{part}': size: {e}"))?;
        if size == 0 || size > u64::from(u32::MAX / 2) {
            return Err(format!("'{part}': a size must be 1 byte to 1GiB"));
        }
        let pct = if pct.trim().is_empty() {
            if rest_at.is_some() {
                return Err(format!("'{s}': only one size may take the rest (no /PCT)"));
            }
            rest_at = Some(out.len());
            0
        } else {
            pct.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{part}': '{pct}' is not a whole percentage"))?
        };
        if out.iter().any(|o| o.size == size) {
            return Err(format!("'{s}': size {size} appears twice"));
        }
        out.push(SizeShare { size, pct });
    }
    if out.is_empty() {
        return Err("empty: write e.g. 8k/50:128k/50".into());
    }
    let sum: u32 = out.iter().map(|o| o.pct).sum();
    match rest_at {
        Some(i) if sum <= 100 => out[i].pct = 100 - sum,
        _ if sum == 100 => {}
        _ => return Err(format!("'{s}': the shares add up to {sum}%, not 100%")),
    }
    out.retain(|o| o.pct > 0);
    if out.is_empty() {
        return Err(format!("'{s}': every share is 0%"));
    }
    Ok(out)
}

fn describe_shares(v: &[SizeShare]) -> String {
    v.iter()
        .map(|s| {
            let t = crate::units::format_bytes(s.size);
            let t = if crate::units::parse_bytes(&t) == Ok(s.size) {
                t
            } else {
                s.size.to_string()
            };
            format!("{t}/{}", s.pct)
        })
        .collect::<Vec<_>>()
        .join(":")
}

impl BsSplit {
    /// Parses fio's `bssplit`: `SIZE/PCT:SIZE/PCT...` for both directions, or two such lists
    /// separated by a comma (reads, then writes). A size without `/PCT` takes the rest.
    pub fn parse(s: &str) -> Result<BsSplit, String> {
        let mut parts = s.split(',').map(str::trim);
        let read = parse_shares(parts.next().unwrap_or_default())?;
        let write = match parts.next() {
            Some(w) if !w.is_empty() => parse_shares(w)?,
            _ => read.clone(),
        };
        if parts.next().is_some() {
            return Err(format!(
                "'{s}': at most two lists (reads,writes); iolab has no trims"
            ));
        }
        Ok(BsSplit { read, write })
    }

    /// As fio writes it (one list when reads and writes share it).
    pub fn describe(&self) -> String {
        if self.read == self.write {
            describe_shares(&self.read)
        } else {
            format!(
                "{},{}",
                describe_shares(&self.read),
                describe_shares(&self.write)
            )
        }
    }

    /// The largest size (the IO buffers must hold it).
    pub fn max_size(&self) -> u64 {
        self.read
            .iter()
            .chain(&self.write)
            .map(|s| s.size)
            .max()
            .unwrap_or(0)
    }

    /// The smallest size (offsets are aligned to it).
    pub fn min_size(&self) -> u64 {
        self.read
            .iter()
            .chain(&self.write)
            .map(|s| s.size)
            .min()
            .unwrap_or(0)
    }
}

/// One zone of a zoned distribution: this share of the IOs goes to this share of the
/// working set (zones follow each other from offset 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Percent of the IOs.
    pub access_pct: f64,
    /// Percent of the working set.
    pub size_pct: f64,
}

/// How random offsets spread over the working set (fio `random_distribution`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Distribution {
    /// Every block equally likely.
    #[default]
    Uniform,
    /// The block of popularity rank r is hit in proportion to 1/r^theta (hot blocks scattered
    /// over the working set); theta 1.2 is a typical web or database cache.
    Zipf {
        /// The exponent, above 0.
        theta: f64,
    },
    /// fio's Pareto: with `h` = 0.8, about 80% of the IOs go to about 20% of the blocks.
    Pareto {
        /// Between 0 and 1.
        h: f64,
    },
    /// A Gaussian around the middle of the working set, with this standard deviation in
    /// percent of it (fio `normal:DEV`).
    Normal {
        /// Standard deviation, percent of the working set.
        dev_pct: f64,
    },
    /// Hot-spot ranges: `zoned:60/10:30/20:10/70` sends 60% of the IOs to the first 10% of the
    /// working set, 30% to the next 20%, 10% to the last 70%.
    Zoned {
        /// The zones, in offset order.
        zones: Vec<Zone>,
    },
}

/// The zones of `zoned:ACCESS/SIZE:...`. A zone written `ACCESS/` (or `ACCESS`) is open: as
/// in fio, the open zones share what the others leave of the working set, in whole percents
/// (`zoned:50/5:30/15:20/` is `50/5:30/15:20/80`; fio's rand-zones.fio).
fn parse_zones(s: &str, arg: &str) -> Result<Vec<Zone>, String> {
    let mut zones = Vec::new();
    let mut open = Vec::new();
    for z in arg.split(':').map(str::trim).filter(|z| !z.is_empty()) {
        let (a, b) = z.split_once('/').unwrap_or((z, ""));
        let access_pct = num(a, "access percent")?;
        let size_pct = if b.trim().is_empty() {
            open.push(zones.len());
            0.0
        } else {
            num(b, "size percent")?
        };
        if access_pct < 0.0 || (size_pct <= 0.0 && !b.trim().is_empty()) {
            return Err(format!("'{z}': percentages must be positive"));
        }
        zones.push(Zone {
            access_pct,
            size_pct,
        });
    }
    if !open.is_empty() && zones.len() == 1 {
        return Err(format!(
            "'{s}': one open zone is the whole working set (fio would give it 0%): write random"
        ));
    }
    if !open.is_empty() {
        let given: f64 = zones.iter().map(|z| z.size_pct).sum();
        if given.fract() != 0.0 || given >= 100.0 {
            return Err(format!(
                "'{s}': open zones (ACCESS/ with no size) share the rest of whole percents; the sizes given add up to {given}%"
            ));
        }
        // fio divides the rest in whole percents: what does not divide is left unaccessed,
        // and then the sizes do not add up to 100% (refused below).
        let each = ((100.0 - given) / open.len() as f64).floor();
        for i in open {
            zones[i].size_pct = each;
        }
    }
    let access: f64 = zones.iter().map(|z| z.access_pct).sum();
    let size: f64 = zones.iter().map(|z| z.size_pct).sum();
    if (access - 100.0).abs() > 0.01 || (size - 100.0).abs() > 0.01 {
        return Err(format!(
            "'{s}': the zones' access shares add up to {access}% and their sizes to {size}%; both must be 100%"
        ));
    }
    Ok(zones)
}

fn num(s: &str, what: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{s}' is not a number ({what})"))
}

impl Distribution {
    /// Parses fio's `random_distribution` values: `random`, `zipf:THETA`, `pareto:H`,
    /// `normal:DEV` (`gauss:DEV`), `zoned:ACCESS/SIZE:...`.
    pub fn parse(s: &str) -> Result<Distribution, String> {
        let s = s.trim();
        let (kind, arg) = s.split_once(':').unwrap_or((s, ""));
        let kind = kind.trim().to_ascii_lowercase();
        let need = |what: &str| {
            if arg.trim().is_empty() {
                Err(format!(
                    "'{s}': {kind} needs {what} (e.g. {kind}:{})",
                    match kind.as_str() {
                        "zipf" => "1.2",
                        "pareto" => "0.8",
                        "normal" | "gauss" => "10",
                        _ => "60/10:40/90",
                    }
                ))
            } else {
                Ok(())
            }
        };
        let d = match kind.as_str() {
            "random" | "uniform" => Distribution::Uniform,
            "zipf" => {
                need("an exponent")?;
                let theta = num(arg, "the zipf exponent")?;
                if !(theta > 0.0 && theta <= 10.0) {
                    return Err(format!(
                        "'{s}': the zipf exponent must be above 0 and at most 10"
                    ));
                }
                Distribution::Zipf { theta }
            }
            "pareto" => {
                need("a shape")?;
                let h = num(arg, "the pareto shape")?;
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!("'{s}': the pareto shape must be between 0 and 1"));
                }
                Distribution::Pareto { h }
            }
            "normal" | "gauss" | "gaussian" => {
                need("a deviation")?;
                let dev_pct = num(arg, "the deviation in percent")?;
                if !(dev_pct > 0.0 && dev_pct <= 100.0) {
                    return Err(format!(
                        "'{s}': the deviation must be above 0 and at most 100 (percent of the working set)"
                    ));
                }
                Distribution::Normal { dev_pct }
            }
            "zoned" => {
                need("zones")?;
                Distribution::Zoned {
                    zones: parse_zones(s, arg)?,
                }
            }
            other => {
                return Err(format!(
                    "unknown distribution '{other}' (use random, zipf:THETA, pareto:H, normal:DEV or zoned:ACCESS/SIZE:...)"
                ));
            }
        };
        Ok(d)
    }

    /// As fio writes it: `zipf:1.2`.
    pub fn describe(&self) -> String {
        match self {
            Distribution::Uniform => "random".into(),
            Distribution::Zipf { theta } => format!("zipf:{theta}"),
            Distribution::Pareto { h } => format!("pareto:{h}"),
            Distribution::Normal { dev_pct } => format!("normal:{dev_pct}"),
            Distribution::Zoned { zones } => format!(
                "zoned:{}",
                zones
                    .iter()
                    .map(|z| format!("{}/{}", z.access_pct, z.size_pct))
                    .collect::<Vec<_>>()
                    .join(":")
            ),
        }
    }

    /// Whether this is the uniform default.
    pub fn is_uniform(&self) -> bool {
        *self == Distribution::Uniform
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssplit_parses_fio_spellings() {
        let b = BsSplit::parse("8k/50:128k/50").unwrap();
        assert_eq!(b.read, b.write);
        assert_eq!(
            b.read,
            vec![
                SizeShare {
                    size: 8192,
                    pct: 50
                },
                SizeShare {
                    size: 131_072,
                    pct: 50
                }
            ]
        );
        assert_eq!(b.describe(), "8KiB/50:128KiB/50");
        assert_eq!(BsSplit::parse(&b.describe()).unwrap(), b);
        let b = BsSplit::parse("4k/10:64k:32k/40,8k/100").unwrap();
        assert_eq!(
            b.read[1],
            SizeShare {
                size: 65536,
                pct: 50
            },
            "the rest"
        );
        assert_eq!(
            b.write,
            vec![SizeShare {
                size: 8192,
                pct: 100
            }]
        );
        assert_eq!((b.min_size(), b.max_size()), (4096, 65536));
        assert_eq!(BsSplit::parse(&b.describe()).unwrap(), b);
        for (bad, want) in [
            ("8k/50:128k/60", "add up to 110%"),
            ("8k/x", "not a whole percentage"),
            ("", "empty"),
            ("8k/50:8k/50", "twice"),
            ("8k/100,8k/100,8k/100", "at most two"),
            ("0/100", "1 byte"),
        ] {
            let e = BsSplit::parse(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn distributions_parse_and_describe_back() {
        for s in [
            "random",
            "zipf:1.2",
            "pareto:0.8",
            "normal:10",
            "zoned:60/10:30/20:10/70",
        ] {
            let d = Distribution::parse(s).unwrap();
            assert_eq!(d.describe(), s);
            assert_eq!(Distribution::parse(&d.describe()).unwrap(), d);
        }
        // fio's rand-zones.fio: the last zone takes the rest of the working set.
        let d = Distribution::parse("zoned:50/5:30/15:20/").unwrap();
        assert_eq!(d.describe(), "zoned:50/5:30/15:20/80");
        // Two open zones share it in whole percents, as fio divides it.
        let d = Distribution::parse("zoned:40/20:30/:30").unwrap();
        assert_eq!(d.describe(), "zoned:40/20:30/40:30/40");
        assert_eq!(
            Distribution::parse("zoned:60/10:40").unwrap().describe(),
            "zoned:60/10:40/90"
        );
        assert_eq!(
            Distribution::parse("gauss:5").unwrap(),
            Distribution::Normal { dev_pct: 5.0 }
        );
        for (bad, want) in [
            ("zipf", "needs an exponent"),
            ("zipf:0", "above 0"),
            ("pareto:1", "between 0 and 1"),
            ("normal:200", "at most 100"),
            ("zoned:60/10:30/20", "must be 100%"),
            ("zoned:60", "one open zone"),
            ("zoned:60/11:20/:20/", "sizes to 99%"),
            ("zoned:60/10.5:40/", "whole percents"),
            ("hot", "unknown distribution"),
            ("zipf:nan", "not a number"),
        ] {
            let e = Distribution::parse(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
