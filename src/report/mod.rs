//! What people read: terminal tables, JSON, Markdown and HTML, rendered from samples or the
//! store. Renderers only read; one renderer per file.

pub mod chart;
pub mod compare;
pub mod html;
pub mod json;
pub mod markdown;
pub mod pts;
pub mod show;
pub mod terminal;
pub mod text;

pub use crate::sample::labels;
