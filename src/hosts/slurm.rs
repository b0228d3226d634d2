//! `--hosts @slurm`: the nodes of the Slurm allocation the controller runs in, so that
//! `salloc -N4 iolab run --hosts @slurm ...` (or the same line in an `sbatch` script) runs on
//! exactly the nodes Slurm granted, each agent started as a job step by `srun` (the way a
//! cluster that runs its jobs through Slurm lets a job reach its nodes; ssh to compute nodes
//! is often closed).
//!
//! The allocation's nodes are in `SLURM_JOB_NODELIST` in Slurm's compressed form
//! (`node[01-04,07]`); `scontrol show hostnames` expands it, so the rules of Slurm's own
//! hostlist syntax are Slurm's, not re-implemented here.

use std::path::PathBuf;

use super::{HostSpec, HostsError};
use crate::layout::cmd::Runner;

/// The `--hosts` value that names the allocation's nodes (`@slurm`, or `@slurm:/target` with
/// a target for every node).
pub const ALLOCATION: &str = "@slurm";

/// The variables that hold the allocation's node list, in the order they are read
/// (`SLURM_NODELIST` is the older name, still set by Slurm).
pub const NODELIST_VARS: [&str; 2] = ["SLURM_JOB_NODELIST", "SLURM_NODELIST"];

/// The launch template of `--hosts @slurm` when `--launch` is not given: one job step of one
/// task on each node, inside the allocation (its stdin and stdout are the agent's).
pub const SRUN_LAUNCH: &str = "srun --nodelist={host} --nodes=1 --ntasks=1 iolab agent --stdio";

/// When `--hosts` is `@slurm` or `@slurm:/target`: `Some(target)`; otherwise `None`.
pub fn names_allocation(list: &str) -> Option<Option<PathBuf>> {
    let rest = list.trim().strip_prefix(ALLOCATION)?;
    if rest.is_empty() {
        Some(None)
    } else {
        let t = rest.strip_prefix(':')?;
        t.starts_with('/').then(|| Some(PathBuf::from(t)))
    }
}

/// The allocation's node list as Slurm set it, from the first of [`NODELIST_VARS`] set.
pub fn nodelist_from_env() -> Option<String> {
    NODELIST_VARS
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .filter(|v| !v.trim().is_empty())
}

/// The allocation's nodes, expanded by `scontrol show hostnames`, each with `target` (`None`:
/// the run's). `nodelist` is the value of `SLURM_JOB_NODELIST` (`None`: not inside an
/// allocation, which is refused with the way to get one).
pub fn allocation_hosts(
    nodelist: Option<&str>,
    target: Option<PathBuf>,
    runner: &Runner,
) -> Result<Vec<HostSpec>, HostsError> {
    let Some(list) = nodelist else {
        return Err(HostsError::Slurm(
            "not inside a Slurm allocation (SLURM_JOB_NODELIST is not set); run under one, e.g. salloc -N4 iolab run --hosts @slurm ..., or name the nodes: --hosts node1,node2".into(),
        ));
    };
    let out = runner
        .run(&["scontrol", "show", "hostnames", list])
        .map_err(|e| match e {
            crate::layout::LayoutError::Spawn { .. } => HostsError::Slurm(format!(
                "cannot expand SLURM_JOB_NODELIST '{list}': scontrol is not installed here (Debian: apt-get install slurm-client)"
            )),
            e => HostsError::Slurm(format!("cannot expand SLURM_JOB_NODELIST '{list}': {e}")),
        })?;
    let hosts: Vec<HostSpec> = out
        .stdout
        .split_whitespace()
        .map(|name| {
            super::parse_host(name).map(|h| HostSpec {
                name: h.name,
                target: target.clone(),
            })
        })
        .collect::<Result<_, _>>()?;
    if hosts.is_empty() {
        return Err(HostsError::Slurm(format!(
            "SLURM_JOB_NODELIST '{list}' names no node"
        )));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_slurm_alone_or_with_a_target_names_the_allocation() {
        assert_eq!(names_allocation("@slurm"), Some(None));
        assert_eq!(
            names_allocation(" @slurm:/scratch/x"),
            Some(Some(PathBuf::from("/scratch/x")))
        );
        assert_eq!(names_allocation("@slurmx"), None);
        assert_eq!(names_allocation("@slurm:rel"), None);
        assert_eq!(names_allocation("node1,@slurm"), None);
    }

    #[test]
    fn the_node_list_is_expanded_by_scontrol() {
        let r = Runner::recording_with(Box::new(|argv: &[String]| {
            assert_eq!(argv, ["scontrol", "show", "hostnames", "n[1-2],x7"]);
            Ok("n1\nn2\nx7\n".into())
        }));
        let h = allocation_hosts(Some("n[1-2],x7"), Some("/t".into()), &r).expect("hosts");
        let names: Vec<&str> = h.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["n1", "n2", "x7"]);
        assert!(h.iter().all(|h| h.target.as_deref() == Some("/t".as_ref())));
    }

    #[test]
    fn outside_an_allocation_or_without_nodes_says_what_to_do() {
        let r = Runner::recording();
        let e = allocation_hosts(None, None, &r).expect_err("no allocation");
        let m = e.to_string();
        assert!(
            m.starts_with("--hosts @slurm: not inside a Slurm allocation") && m.contains("salloc"),
            "{m}"
        );
        assert!(!m.contains('\n'));
        let e = allocation_hosts(Some("n[1-0]"), None, &r).expect_err("no nodes");
        assert!(e.to_string().contains("names no node"), "{e}");
        let failing = Runner::recording_with(Box::new(|_: &[String]| Err("bad list".into())));
        let e = allocation_hosts(Some("n["), None, &failing).expect_err("scontrol fails");
        assert!(e.to_string().contains("bad list"), "{e}");
    }
}
