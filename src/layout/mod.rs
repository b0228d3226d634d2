//! Building and tearing down storage stacks: loop disks, btrfs, mdadm, LVM, mkfs and mounts.
