//! IO engines: the seam between the runner and the kernel (io_uring, psync, null).
