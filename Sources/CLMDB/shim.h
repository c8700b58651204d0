#ifndef CLMDB_SHIM_H
#define CLMDB_SHIM_H
// LMDB has no variadic functions: the header imports as it is.
#include <lmdb.h>

#if defined(__linux__)
#include <unistd.h>
#include <sys/syscall.h>
#endif

/// Starts the kernel's writeback of every dirty page of the file `fd` and returns without waiting for it
/// (Linux: `sync_file_range` with `SYNC_FILE_RANGE_WRITE`, through `syscall`, which Swift cannot call: it is
/// variadic). 0 on success, -1 with `errno` set; elsewhere it does nothing and returns 0.
static inline int clmdb_start_writeback(int fd) {
#if defined(__linux__) && defined(SYS_sync_file_range)
    return (int)syscall(SYS_sync_file_range, fd, (long long)0, (long long)0, 2u /* SYNC_FILE_RANGE_WRITE */);
#else
    (void)fd;
    return 0;
#endif
}
#endif
