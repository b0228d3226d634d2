//! `iolab lab`: build each candidate layout, run the workloads on it, degrade, rebuild, tear down.
