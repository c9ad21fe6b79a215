// CCurlLoader: libcurl loaded when the first stream plays, not when Earshot starts. Linked, libcurl and what it
// brings (OpenSSL, Kerberos, LDAP, libssh2, ...) cost an idle `earshot` about 6 MB of resident memory at start
// (`earshot --version`: 14.5 MB without, 20.8 MB with, max RSS, debug build, 2026-12-07) for a feature many never use.
// The types and constants are libcurl's own header's (libcurl4-openssl-dev, the CCurl target's provider); every call
// goes through a pointer found once with dlopen("libcurl.so.4") and dlsym. curl_easy_setopt is variadic, which Swift
// cannot call: the typed setters below are the only other additions.
#ifndef EARSHOT_CCURL_LOADER_H
#define EARSHOT_CCURL_LOADER_H
#include <curl/curl.h>

/// The write and header callbacks' type (CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION).
typedef size_t (*earshot_curl_data_callback)(char *bytes, size_t size, size_t count, void *context);
/// The progress callback's type (CURLOPT_XFERINFOFUNCTION).
typedef int (*earshot_curl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                              curl_off_t upload_total, curl_off_t uploaded);

/// Loads libcurl and initializes it (curl_global_init), once per process, thread-safely: 0 when it is ready, -1 when
/// libcurl.so.4 is missing or lacks a function. Every other function here needs it to have returned 0.
int earshot_curl_load(void);

CURL *earshot_curl_easy_init(void);
void earshot_curl_easy_cleanup(CURL *handle);
CURLcode earshot_curl_easy_perform(CURL *handle);
struct curl_slist *earshot_curl_slist_append(struct curl_slist *list, const char *text);
void earshot_curl_slist_free_all(struct curl_slist *list);
CURLcode earshot_curl_set_long(CURL *handle, CURLoption option, long value);
CURLcode earshot_curl_set_string(CURL *handle, CURLoption option, const char *value);
CURLcode earshot_curl_set_pointer(CURL *handle, CURLoption option, void *value);
CURLcode earshot_curl_set_data_callback(CURL *handle, CURLoption option, earshot_curl_data_callback callback);
CURLcode earshot_curl_set_progress_callback(CURL *handle, earshot_curl_progress_callback callback);

#endif
