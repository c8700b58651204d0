#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

// Typed wrappers for libcurl's variadic calls, which Swift cannot import.
// One static-inline function per argument type; everything else imports directly.
#include <curl/curl.h>

typedef size_t (*CCurl_write_callback)(char *buffer, size_t size, size_t nitems, void *userdata);
typedef int (*CCurl_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                       curl_off_t ultotal, curl_off_t ulnow);
typedef int (*CCurl_socket_callback)(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp);

/// `curl_easy_setopt` with a `long` argument.
static inline CURLcode CCurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
/// `curl_easy_setopt` with a pointer argument (strings, `curl_slist *`, userdata).
static inline CURLcode CCurl_easy_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
/// `curl_easy_setopt` with a `curl_off_t` argument.
static inline CURLcode CCurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
/// `curl_easy_setopt` for the read, write and header callbacks.
static inline CURLcode CCurl_easy_setopt_write_function(CURL *handle, CURLoption option, CCurl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}
/// `curl_easy_setopt` for `CURLOPT_XFERINFOFUNCTION`.
static inline CURLcode CCurl_easy_setopt_xferinfo_function(CURL *handle, CCurl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}
/// `curl_easy_getinfo` for a `long` result.
static inline CURLcode CCurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
/// `curl_easy_getinfo` for a `curl_off_t` result.
static inline CURLcode CCurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
/// `curl_easy_getinfo` for a `double` result.
static inline CURLcode CCurl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}
/// `curl_easy_getinfo` for a pointer result (`char *`, `void *` private data).
static inline CURLcode CCurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
/// `curl_multi_setopt` with a `long` argument.
static inline CURLMcode CCurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
/// `curl_multi_setopt` with a pointer argument.
static inline CURLMcode CCurl_multi_setopt_pointer(CURLM *handle, CURLMoption option, const void *value) {
    return curl_multi_setopt(handle, option, value);
}
#endif
