//! Runners: turn a validated workload into IOs on an engine and a trial sample.
