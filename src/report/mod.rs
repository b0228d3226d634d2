//! What people read: terminal tables, JSON, Markdown and HTML, rendered from samples or the store.

pub mod compare;
pub mod show;
