#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H
// hiredis (Debian libhiredis-dev). Only the non-variadic calls are used (`redisCommandArgv`, binary safe),
// so the header imports as it is; the shims below only give Swift typed access to what hiredis hands out
// as `void *` or through macros.
#include <hiredis/hiredis.h>

/// `redisCommandArgv` returns `void *`; this returns the `redisReply *` it is (NULL on an I/O or protocol
/// error, which is then in `c->err` / `c->errstr`).
static inline redisReply *CHiredis_commandArgv(redisContext *c, int argc, const char **argv, const size_t *argvlen) {
    return (redisReply *)redisCommandArgv(c, argc, argv, argvlen);
}
#endif
