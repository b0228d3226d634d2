//! The results store: every run kept in SQLite with its exact setup, so any report can be rebuilt.
