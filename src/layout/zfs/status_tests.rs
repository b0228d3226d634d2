//! `zpool status` samples written by hand from zpool's documented format (OpenZFS 2.3
//! `zpool-status(8)`): tab-indented config table, two spaces per tree level.

use super::*;

/// A raidz2 pool with a special mirror, a log, a cache and a spare, one member offline, a
/// resilver done (`-p -P`: exact bytes, full paths).
const DEGRADED: &str = "  pool: iolab-ab12-0
 state: DEGRADED
status: One or more devices has been taken offline by the administrator.
\tSufficient replicas exist for the pool to continue functioning in a
\tdegraded state.
action: Online the device using 'zpool online' or replace the device with
\t'zpool replace'.
  scan: resilvered 52428800 in 00:00:03 with 0 errors on Tue May 20 10:00:00 2025
config:

\tNAME            STATE     READ WRITE CKSUM
\tiolab-ab12-0    DEGRADED     0     0     0
\t  raidz2-0      DEGRADED     0     0     0
\t    /dev/vdb    ONLINE       0     0     0
\t    /dev/vdc    ONLINE       0     0     3
\t    /dev/vdd    OFFLINE      0     0     0
\t    /dev/vde    ONLINE       0     0     0
\tspecial
\t  mirror-1      ONLINE       0     0     0
\t    /dev/vdf    ONLINE       0     0     0
\t    /dev/vdg    ONLINE       0     0     0
\tlogs
\t  /dev/vdh      ONLINE       0     0     0
\tcache
\t  /dev/vdi      ONLINE       0     0     0
\tspares
\t  /dev/vdj      AVAIL

errors: No known data errors
";

#[test]
fn reads_devices_roles_and_counters() {
    let st = parse_status(DEGRADED);
    assert_eq!(st.pool, "iolab-ab12-0");
    assert_eq!(st.state, "DEGRADED");
    assert!(!st.data_errors);
    let names: Vec<(&str, &str, VdevRole)> = st
        .devices
        .iter()
        .map(|d| (d.name.as_str(), d.vdev.as_str(), d.role))
        .collect();
    assert_eq!(
        names,
        vec![
            ("/dev/vdb", "raidz2-0", VdevRole::Data),
            ("/dev/vdc", "raidz2-0", VdevRole::Data),
            ("/dev/vdd", "raidz2-0", VdevRole::Data),
            ("/dev/vde", "raidz2-0", VdevRole::Data),
            ("/dev/vdf", "mirror-1", VdevRole::Special),
            ("/dev/vdg", "mirror-1", VdevRole::Special),
            ("/dev/vdh", "/dev/vdh", VdevRole::Log),
            ("/dev/vdi", "/dev/vdi", VdevRole::Cache),
            ("/dev/vdj", "/dev/vdj", VdevRole::Spare),
        ]
    );
    assert_eq!(st.devices[2].state, "OFFLINE");
    assert_eq!(st.devices[8].state, "AVAIL");
    assert_eq!(st.error_totals(), (3, 0, 0));
    let scan = st.scan.expect("scan line");
    assert_eq!(scan.kind, ScanKind::Resilver);
    assert!(!scan.in_progress);
    assert_eq!(scan.bytes, 52_428_800);
    assert_eq!(scan.errors, 0);
}

/// A scrub that found checksum errors it could not repair on a mirror, human sizes (no `-p`).
const SCRUB_ERRORS: &str = "  pool: tank
 state: ONLINE
status: One or more devices has experienced an error resulting in data
\tcorruption.  Applications may be affected.
action: Restore the file in question if possible.  Otherwise restore the
\tentire pool from backup.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-8A
  scan: scrub repaired 1.50M in 00:01:02 with 2 errors on Sun Jun  1 12:00:00 2025
config:

\tNAME        STATE     READ WRITE CKSUM
\ttank        ONLINE       0     0     0
\t  mirror-0  ONLINE       0     0     0
\t    sda     ONLINE       0     0    12
\t    sdb     ONLINE       0     0    1.2K

errors: 2 data errors, use '-v' for a list
";

#[test]
fn a_scrub_with_errors() {
    let st = parse_status(SCRUB_ERRORS);
    assert!(st.data_errors);
    let scan = st.scan.clone().expect("scan line");
    assert_eq!(scan.kind, ScanKind::Scrub);
    assert_eq!(scan.bytes, 3 << 19);
    assert_eq!(scan.errors, 2);
    assert_eq!(st.error_totals().0, 12 + 1229);
    assert_eq!(st.devices[0].vdev, "mirror-0");
    assert_eq!(st.data_error_count, 2);
    assert_eq!(st.permanent_errors(), 2);
    // What the fault line says ZFS counted, per device.
    let said: Vec<String> = st.devices.iter().filter_map(Device::describe).collect();
    assert!(
        said.iter().any(|s| s.ends_with("checksum errors")),
        "{said:?}"
    );
    assert!(said.iter().all(|s| !s.contains('/')), "{said:?}");
}

/// `zpool status -v` after a raidz1 lost blocks: the files listed one per line.
const PERMANENT: &str = "  pool: iolab-l-0
 state: ONLINE
status: One or more devices has experienced an error resulting in data
	corruption.  Applications may be affected.
  scan: scrub repaired 0B in 00:00:03 with 3 errors on Tue May 20 10:00:00 2025
config:

	NAME            STATE     READ WRITE CKSUM
	iolab-l-0       ONLINE       0     0     0
	  raidz1-0      ONLINE       0     0     0
	    /dev/vda1   ONLINE       0     0    14
	    /dev/vdb1   ONLINE       0     0     0
	    /dev/vdf1   ONLINE       0     0     0

errors: Permanent errors have been detected in the following files:

        /tmp/iolab-mnt/data/000017
        /tmp/iolab-mnt/data/000023
        iolab-l-0/data:<0x2c>
";

#[test]
fn permanent_errors_are_listed_and_counted() {
    let st = parse_status(PERMANENT);
    assert!(st.data_errors);
    assert_eq!(st.permanent.len(), 3, "{:?}", st.permanent);
    assert_eq!(st.permanent[2], "iolab-l-0/data:<0x2c>");
    assert_eq!(st.permanent_errors(), 3);
    assert_eq!(st.devices.len(), 3);
    assert_eq!(st.error_totals().0, 14);
    let clean = parse_status("  pool: p\n state: ONLINE\nerrors: No known data errors\n");
    assert_eq!(clean.permanent_errors(), 0);
}

/// A resilver still running (three scan lines), a replacing vdev nested under raidz1.
const RESILVERING: &str = "  pool: tank
 state: DEGRADED
status: One or more devices is currently being resilvered.
action: Wait for the resilver to complete.
  scan: resilver in progress since Tue May 20 10:00:00 2025
\t1073741824 / 2147483648 scanned at 104857600/s, 536870912 / 2147483648 issued at 52428800/s
\t314572800 resilvered, 25.00% done, 00:00:30 to go
config:

\tNAME              STATE     READ WRITE CKSUM
\ttank              DEGRADED     0     0     0
\t  raidz1-0        DEGRADED     0     0     0
\t    /dev/loop1    ONLINE       0     0     0
\t    replacing-1   DEGRADED     0     0     0
\t      /dev/loop2  OFFLINE      0     0     0
\t      /dev/loop5  ONLINE       0     0     0  (resilvering)
\t    /dev/loop3    ONLINE       0     0     0

errors: No known data errors
";

#[test]
fn a_running_resilver() {
    let st = parse_status(RESILVERING);
    let scan = st.scan.expect("scan line");
    assert!(scan.in_progress);
    assert_eq!(scan.kind, ScanKind::Resilver);
    assert_eq!(scan.bytes, 314_572_800);
    assert_eq!(scan.done_pct, Some(25.0));
    let d: Vec<(&str, &str)> = st
        .devices
        .iter()
        .map(|d| (d.name.as_str(), d.vdev.as_str()))
        .collect();
    assert_eq!(
        d,
        vec![
            ("/dev/loop1", "raidz1-0"),
            ("/dev/loop2", "raidz1-0"),
            ("/dev/loop5", "raidz1-0"),
            ("/dev/loop3", "raidz1-0"),
        ]
    );
}

/// dRAID after a sequential rebuild onto its distributed spare, and a second pool after it.
const DRAID_AND_ANOTHER: &str = "  pool: dr
 state: DEGRADED
  scan: resilvered (draid2:3d:6c:1s-0) 10485760 in 00:00:02 with 0 errors on Tue May 20 10:00:00 2025
config:

\tNAME                     STATE     READ WRITE CKSUM
\tdr                       DEGRADED     0     0     0
\t  draid2:3d:6c:1s-0      DEGRADED     0     0     0
\t    /dev/vdb             ONLINE       0     0     0
\t    spare-1              DEGRADED     0     0     0
\t      /dev/vdc           OFFLINE      0     0     0
\t      draid2-0-0         ONLINE       0     0     0
\t    /dev/vdd             ONLINE       0     0     0
\tspares
\t  draid2-0-0             INUSE     currently in use

errors: No known data errors

  pool: other
 state: ONLINE
config:

\tNAME        STATE     READ WRITE CKSUM
\tother       ONLINE       0     0     0
\t  /dev/sdx  ONLINE       0     0     0

errors: No known data errors
";

#[test]
fn draid_and_several_pools() {
    let all = parse_all(DRAID_AND_ANOTHER);
    assert_eq!(all.len(), 2);
    let dr = &all[0];
    assert_eq!(dr.scan.as_ref().map(|s| s.bytes), Some(10_485_760));
    assert_eq!(dr.devices[0].vdev, "draid2:3d:6c:1s-0");
    assert!(
        dr.devices
            .iter()
            .any(|d| d.name == "draid2-0-0" && d.role == VdevRole::Spare)
    );
    assert_eq!(all[1].pool, "other");
    assert_eq!(all[1].devices[0].vdev, "/dev/sdx");
    assert!(all[1].scan.is_none());
}

#[test]
fn sizes_as_zpool_prints_them() {
    assert_eq!(parse_size("0B"), Some(0));
    assert_eq!(parse_size("1234"), Some(1234));
    assert_eq!(parse_size("512K"), Some(512 << 10));
    assert_eq!(parse_size("1.50M"), Some(3 << 19));
    assert_eq!(parse_size("x"), None);
}
