#ifndef CSQLCIPHER_SHIM_H
#define CSQLCIPHER_SHIM_H
// Debian's SQLCipher 3.4.1 (libsqlcipher-dev): SQLite 3.15.2 with page-level AES-256-CBC and an HMAC per page.
// SQLCipher exports the sqlite3_* symbols of SQLite itself: only the SQLCipher module's Swift wrapper
// imports this, and it checks `PRAGMA cipher_version` after keying (another SQLite in the process may answer).
// The key is given with `PRAGMA key`, never with sqlite3_key (which exists only in SQLCipher and would be
// handed a handle of another SQLite's sqlite3_open if that one won the symbol race).
#include <sqlcipher/sqlite3.h>
// SQLCipher 3.4.1 calls OpenSSL's HMAC_* (deprecated in OpenSSL 3, not removed); the functions below call them as it does.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <string.h>

/// `SQLITE_TRANSIENT` is a macro around a cast of -1 to a function pointer, which Swift cannot import:
/// binding with it makes SQLite copy the bytes before the call returns.
static inline sqlite3_destructor_type CSQLCipher_transient(void) { return SQLITE_TRANSIENT; }

/// `sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, lines)`: every page cache made after it takes its first `lines`
/// cache lines from one allocation (sqlite3_config is variadic, which Swift cannot call). `SQLITE_MISUSE` once
/// SQLite is initialized in this process.
static inline int CSQLCipher_configureBulkPageCache(int lines) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, lines);
}

/// SQLCipher 3.4's table of crypto functions (`sqlcipher_provider` in src/sqlcipher.h of SQLCipher 3.4.1, which
/// Debian's libsqlcipher-dev does not install). SQLCipher copies the registered table into every cipher context it
/// makes ("fetch the current registered provider and make minor changes to it", crypto_impl.c).
typedef struct {
    int (*activate)(void *ctx);
    int (*deactivate)(void *ctx);
    const char *(*get_provider_name)(void *ctx);
    int (*add_random)(void *ctx, void *buffer, int length);
    int (*random)(void *ctx, void *buffer, int length);
    int (*hmac)(void *ctx, unsigned char *hmac_key, int key_sz, unsigned char *in, int in_sz, unsigned char *in2, int in2_sz, unsigned char *out);
    int (*kdf)(void *ctx, const unsigned char *pass, int pass_sz, unsigned char *salt, int salt_sz, int workfactor, int key_sz, unsigned char *key);
    int (*cipher)(void *ctx, int mode, unsigned char *key, int key_sz, unsigned char *iv, unsigned char *in, int in_sz, unsigned char *out);
    int (*set_cipher)(void *ctx, const char *cipher_name);
    const char *(*get_cipher)(void *ctx);
    int (*get_key_sz)(void *ctx);
    int (*get_iv_sz)(void *ctx);
    int (*get_block_sz)(void *ctx);
    int (*get_hmac_sz)(void *ctx);
    int (*ctx_copy)(void *target_ctx, void *source_ctx);
    int (*ctx_cmp)(void *c1, void *c2);
    int (*ctx_init)(void **ctx);
    int (*ctx_free)(void **ctx);
    int (*fips_status)(void *ctx);
    const char *(*get_provider_version)(void *ctx);
} CSQLCipher_provider;
extern void sqlcipher_activate(void);
extern CSQLCipher_provider *sqlcipher_get_provider(void);
/// The OpenSSL provider's context (`openssl_ctx` in crypto_openssl.c of SQLCipher 3.4.1): the cipher `PRAGMA cipher`
/// chose.
typedef struct { EVP_CIPHER *evp_cipher; } CSQLCipher_opensslContext;

/// The algorithms fetched once, and SQLCipher's own cipher function (kept in a function: Swift emits a header's
/// functions, not its global variables).
typedef struct {
    EVP_MD *sha1;
    EVP_CIPHER *aes256CBC;
    int (*stockCipher)(void *, int, unsigned char *, int, unsigned char *, unsigned char *, int, unsigned char *);
} CSQLCipher_fetchedCrypto;
static inline CSQLCipher_fetchedCrypto *CSQLCipher_fetched(void) {
    static CSQLCipher_fetchedCrypto fetched;
    return &fetched;
}

/// SQLCipher's page HMAC (HMAC-SHA1 of `in` then `in2`) as its OpenSSL provider computes it, with SHA-1 fetched once:
/// given `EVP_sha1()`, OpenSSL 3 looks the implementation up again in its method store at every call.
static int CSQLCipher_hmac(void *ctx, unsigned char *key, int key_sz, unsigned char *in, int in_sz,
                           unsigned char *in2, int in2_sz, unsigned char *out) {
    (void)ctx;
    unsigned int length = 0;
    HMAC_CTX *hmac = HMAC_CTX_new();
    if (hmac == NULL) return SQLITE_ERROR;
    int ok = HMAC_Init_ex(hmac, key, key_sz, CSQLCipher_fetched()->sha1, NULL) && HMAC_Update(hmac, in, (size_t)in_sz)
        && HMAC_Update(hmac, in2, (size_t)in2_sz) && HMAC_Final(hmac, out, &length);
    HMAC_CTX_free(hmac);
    return ok ? SQLITE_OK : SQLITE_ERROR;
}

/// SQLCipher's page cipher (no padding) as its OpenSSL provider runs it, with AES-256-CBC fetched once; a context
/// whose `PRAGMA cipher` chose another cipher goes to SQLCipher's own function.
static int CSQLCipher_cipher(void *ctx, int mode, unsigned char *key, int key_sz, unsigned char *iv,
                             unsigned char *in, int in_sz, unsigned char *out) {
    const EVP_CIPHER *chosen = ((CSQLCipher_opensslContext *)ctx)->evp_cipher;
    if (chosen == NULL || EVP_CIPHER_get_nid(chosen) != NID_aes_256_cbc) {
        return CSQLCipher_fetched()->stockCipher(ctx, mode, key, key_sz, iv, in, in_sz, out);
    }
    int written = 0, last = 0;
    EVP_CIPHER_CTX *cipher = EVP_CIPHER_CTX_new();
    if (cipher == NULL) return SQLITE_ERROR;
    int ok = EVP_CipherInit_ex(cipher, CSQLCipher_fetched()->aes256CBC, NULL, key, iv, mode) && EVP_CIPHER_CTX_set_padding(cipher, 0)
        && EVP_CipherUpdate(cipher, out, &written, in, in_sz) && EVP_CipherFinal_ex(cipher, out + written, &last);
    EVP_CIPHER_CTX_free(cipher);
    return ok ? SQLITE_OK : SQLITE_ERROR;
}

/// Initializes SQLite, holds one SQLCipher activation for the life of the process (SQLCipher frees its registered
/// table when its last connection closes and makes a stock one at the next) and points the table's page HMAC and
/// cipher at the functions above. Returns 1 when installed; 0 — nothing changed — when the SQLite answering the
/// `sqlite3_*` symbols in this process is not SQLCipher 3.4.1's (another SQLite loaded first: SQLCipher's own functions
/// would then run on that library's state, and the connection refuses to open anyway), when the registered provider is
/// not SQLCipher's OpenSSL one, or when OpenSSL has no SHA-1 or AES-256-CBC to fetch.
static inline int CSQLCipher_installFetchedCrypto(void) {
    if (strcmp(sqlite3_libversion(), "3.15.2") != 0 || !sqlite3_compileoption_used("HAS_CODEC")) return 0;
    if (sqlite3_initialize() != SQLITE_OK) return 0;
    sqlcipher_activate();
    CSQLCipher_provider *provider = sqlcipher_get_provider();
    if (provider == NULL || provider->get_provider_name == NULL || provider->cipher == NULL) return 0;
    const char *name = provider->get_provider_name(NULL);
    if (name == NULL || strcmp(name, "openssl") != 0) return 0;
    CSQLCipher_fetchedCrypto *fetched = CSQLCipher_fetched();
    fetched->sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
    fetched->aes256CBC = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
    if (fetched->sha1 == NULL || fetched->aes256CBC == NULL) return 0;
    fetched->stockCipher = provider->cipher;
    provider->hmac = CSQLCipher_hmac;
    provider->cipher = CSQLCipher_cipher;
    return 1;
}

/// The bytes SQLite has allocated and not freed (`sqlite3_memory_used`).
static inline sqlite3_int64 CSQLCipher_memoryUsed(void) { return sqlite3_memory_used(); }
#endif
