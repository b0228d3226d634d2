//! What people read: terminal tables, JSON, Markdown and HTML, rendered from samples or the store.
