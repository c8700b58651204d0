#ifndef CSQLCIPHER_SHIM_H
#define CSQLCIPHER_SHIM_H
// Debian's SQLCipher 3.4.1 (libsqlcipher-dev): SQLite 3.15.2 with page-level AES-256-CBC and an HMAC per page.
// SQLCipher exports the sqlite3_* symbols of SQLite itself: only the SQLCipher module's Swift wrapper
// imports this, and it checks `PRAGMA cipher_version` after keying (another SQLite in the process may answer).
// The key is given with `PRAGMA key`, never with sqlite3_key (which exists only in SQLCipher and would be
// handed a handle of another SQLite's sqlite3_open if that one won the symbol race).
#include <sqlcipher/sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro around a cast of -1 to a function pointer, which Swift cannot import:
/// binding with it makes SQLite copy the bytes before the call returns.
static inline sqlite3_destructor_type CSQLCipher_transient(void) { return SQLITE_TRANSIENT; }

/// `sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, lines)`: every page cache made after it takes its first `lines`
/// cache lines from one allocation (sqlite3_config is variadic, which Swift cannot call). `SQLITE_MISUSE` once
/// SQLite is initialized in this process.
static inline int CSQLCipher_configureBulkPageCache(int lines) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, lines);
}

/// The bytes SQLite has allocated and not freed (`sqlite3_memory_used`).
static inline sqlite3_int64 CSQLCipher_memoryUsed(void) { return sqlite3_memory_used(); }
#endif
