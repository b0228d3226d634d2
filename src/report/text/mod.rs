//! Plain-text renderers of the earlier stages' results, for a terminal or a wiki: the lab's
//! table, its Markdown and its summary, and the tables of `iolab disks`. The types they render
//! stay with the stage that fills them (`lab::report`, `disks`); this module only reads them.
//!
//! `plan/render.rs` (the planner's text) is the last text renderer outside `report/`: it moves
//! here once the planner's ZFS work has landed.

pub mod decide;
pub mod disks;
pub mod lab;
pub mod lab_summary;
pub mod lab_sweep;
pub mod plan;
pub mod slo;
