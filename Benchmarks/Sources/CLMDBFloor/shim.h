#ifndef CLMDBFLOOR_SHIM_H
#define CLMDBFLOOR_SHIM_H
// The cache benchmark's floor talks to liblmdb directly, without the LMDB wrapper.
#include <lmdb.h>
#endif
