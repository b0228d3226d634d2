//! Replaying a trace (`iolab run --replay FILE`, `replay = "FILE"` in a spec): the recorded IOs
//! issued at their recorded times, open loop. The trace itself is read by the runner; the spec
//! holds where it is and how to replay it.

use serde::{Deserialize, Serialize};

/// How a replay places the trace's offsets on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OffsetMap {
    /// As recorded; a trace reaching past the target's end is refused.
    #[default]
    Exact,
    /// Offsets past the end wrap around (offset modulo the target): locality kept, far
    /// regions folded onto near ones.
    Wrap,
    /// Offsets scaled by target / traced span: the layout's shape kept, sequential runs kept
    /// (each IO moves, not its length).
    Scale,
}

impl OffsetMap {
    /// Parses `exact`, `wrap`, `scale`.
    pub fn parse(s: &str) -> Option<OffsetMap> {
        match s.trim().to_ascii_lowercase().as_str() {
            "exact" | "none" => Some(OffsetMap::Exact),
            "wrap" | "modulo" => Some(OffsetMap::Wrap),
            "scale" => Some(OffsetMap::Scale),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            OffsetMap::Exact => "exact",
            OffsetMap::Wrap => "wrap",
            OffsetMap::Scale => "scale",
        }
    }
}

/// A trace replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The trace file, as given.
    pub trace: String,
    /// Time runs this many times as fast as recorded (2: twice as fast).
    pub speed: f64,
    /// Ignore the recorded times: issue in order, each IO as soon as no more IOs are in
    /// flight than were when it was recorded.
    #[serde(default)]
    pub as_fast_as_possible: bool,
    /// How offsets are placed on the target.
    #[serde(default)]
    pub map: OffsetMap,
}
