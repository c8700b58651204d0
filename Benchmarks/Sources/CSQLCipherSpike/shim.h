#ifndef CSQLCIPHER_SHIM_H
#define CSQLCIPHER_SHIM_H
// The storage spike (issue 16) talks to Debian's SQLCipher 3.4.1 directly. It is linked only into
// StorageSpike: SQLCipher exports the sqlite3_* symbols, so it must never share a process with GRDB's SQLite.
#include <sqlcipher/sqlite3.h>
#endif
