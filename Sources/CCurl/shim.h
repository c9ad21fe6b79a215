// CCurl: brings libcurl (Debian's OpenSSL flavour, libcurl4) into Swift.
// curl_easy_setopt and curl_easy_getinfo are C variadic functions, which Swift cannot call: the typed inline
// wrappers below are the only additions, one per argument type Earshot passes. Nothing else is defined here.
#ifndef EARSHOT_CCURL_SHIM_H
#define EARSHOT_CCURL_SHIM_H
#include <curl/curl.h>

/// The write and header callbacks' type (CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION).
typedef size_t (*earshot_curl_data_callback)(char *bytes, size_t size, size_t count, void *context);
/// The progress callback's type (CURLOPT_XFERINFOFUNCTION).
typedef int (*earshot_curl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                              curl_off_t upload_total, curl_off_t uploaded);

static inline CURLcode earshot_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode earshot_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode earshot_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode earshot_curl_set_data_callback(CURL *handle, CURLoption option,
                                                      earshot_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode earshot_curl_set_progress_callback(CURL *handle, earshot_curl_progress_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline CURLcode earshot_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
