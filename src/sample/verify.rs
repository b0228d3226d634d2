//! What `--verify` found in one trial: every block read back checked against the header it was
//! written with, each bad block kept with its offset and what was wrong with it (up to
//! [`MAX_REPORTED_MISMATCHES`]; all are counted).

use serde::{Deserialize, Serialize};

/// Mismatches kept with their offsets per trial (all are counted).
pub const MAX_REPORTED_MISMATCHES: usize = 1000;

/// What kind of mismatch a block showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// The checksum does not match the content.
    Corrupt,
    /// A valid block that belongs to another offset.
    Misdirected,
    /// A valid block of an older generation than the last one written.
    LostWrite,
    /// The read failed.
    ReadError,
}

/// One bad block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Byte offset of the block.
    pub offset: u64,
    /// What was wrong.
    pub kind: MismatchKind,
    /// Generation expected there.
    pub expected_generation: u32,
    /// Generation found (when the header was readable).
    pub found_generation: Option<u64>,
    /// Offset the block claims (misdirected writes).
    pub found_offset: Option<u64>,
}

/// What verification saw in one trial.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifySummary {
    /// Blocks read and checked.
    pub blocks_checked: u64,
    /// Bytes read and checked.
    pub bytes_checked: u64,
    /// Blocks written with a header.
    pub blocks_written: u64,
    /// Bad checksums.
    pub corrupt: u64,
    /// Blocks at the wrong offset.
    pub misdirected: u64,
    /// Blocks of an older generation.
    pub lost_writes: u64,
    /// Failed reads.
    pub read_errors: u64,
    /// The first mismatches with their offsets.
    pub mismatches: Vec<Mismatch>,
}

impl VerifySummary {
    /// Total bad blocks.
    pub fn bad(&self) -> u64 {
        self.corrupt + self.misdirected + self.lost_writes + self.read_errors
    }

    /// Records a mismatch.
    pub fn add(&mut self, m: Mismatch) {
        match m.kind {
            MismatchKind::Corrupt => self.corrupt += 1,
            MismatchKind::Misdirected => self.misdirected += 1,
            MismatchKind::LostWrite => self.lost_writes += 1,
            MismatchKind::ReadError => self.read_errors += 1,
        }
        if self.mismatches.len() < MAX_REPORTED_MISMATCHES {
            self.mismatches.push(m);
        }
    }

    /// Adds another summary (threads merge this way).
    pub fn merge(&mut self, o: VerifySummary) {
        self.blocks_checked += o.blocks_checked;
        self.bytes_checked += o.bytes_checked;
        self.blocks_written += o.blocks_written;
        self.corrupt += o.corrupt;
        self.misdirected += o.misdirected;
        self.lost_writes += o.lost_writes;
        self.read_errors += o.read_errors;
        for m in o.mismatches {
            if self.mismatches.len() < MAX_REPORTED_MISMATCHES {
                self.mismatches.push(m);
            }
        }
        self.mismatches.sort_by_key(|m| m.offset);
    }

    /// One line for the table and the error.
    pub fn describe(&self) -> String {
        if self.bad() == 0 {
            return format!(
                "verified {} blocks ({}): no mismatches",
                self.blocks_checked,
                crate::units::format_bytes(self.bytes_checked)
            );
        }
        let first: Vec<String> = self
            .mismatches
            .iter()
            .take(5)
            .map(|m| format!("{:?} at {}", m.kind, m.offset))
            .collect();
        format!(
            "verify found {} bad blocks of {}: {} corrupt, {} misdirected, {} lost writes, {} read errors (first: {})",
            self.bad(),
            self.blocks_checked,
            self.corrupt,
            self.misdirected,
            self.lost_writes,
            self.read_errors,
            first.join(", ").to_lowercase()
        )
    }
}
