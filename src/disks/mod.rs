//! `iolab disks`: the census of block devices, the per-disk read test and the slow-disk finder.
