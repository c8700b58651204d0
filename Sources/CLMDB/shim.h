#ifndef CLMDB_SHIM_H
#define CLMDB_SHIM_H
// LMDB has no variadic functions: the header imports as it is.
#include <lmdb.h>
#endif
