// libcurl through dlopen: see include/CCurlLoader.h for why.
#include "CCurlLoader.h"
#include <dlfcn.h>
#include <pthread.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result = -1;

static CURLcode (*global_init)(long);
static CURL *(*easy_init)(void);
static void (*easy_cleanup)(CURL *);
static CURLcode (*easy_perform)(CURL *);
static CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
static struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
static void (*slist_free_all)(struct curl_slist *);

static void load(void) {
    // Never closed: a process that played a stream keeps libcurl, as a linked one would.
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return;
    global_init = (CURLcode (*)(long))dlsym(library, "curl_global_init");
    easy_init = (CURL *(*)(void))dlsym(library, "curl_easy_init");
    easy_cleanup = (void (*)(CURL *))dlsym(library, "curl_easy_cleanup");
    easy_perform = (CURLcode (*)(CURL *))dlsym(library, "curl_easy_perform");
    easy_setopt = (CURLcode (*)(CURL *, CURLoption, ...))dlsym(library, "curl_easy_setopt");
    slist_append = (struct curl_slist *(*)(struct curl_slist *, const char *))dlsym(library, "curl_slist_append");
    slist_free_all = (void (*)(struct curl_slist *))dlsym(library, "curl_slist_free_all");
    if (!global_init || !easy_init || !easy_cleanup || !easy_perform || !easy_setopt || !slist_append
        || !slist_free_all) return;
    // curl_global_init is not thread-safe: here it runs once, under pthread_once.
    if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return;
    load_result = 0;
}

int earshot_curl_load(void) {
    pthread_once(&load_once, load);
    return load_result;
}

CURL *earshot_curl_easy_init(void) { return easy_init(); }
void earshot_curl_easy_cleanup(CURL *handle) { easy_cleanup(handle); }
CURLcode earshot_curl_easy_perform(CURL *handle) { return easy_perform(handle); }
struct curl_slist *earshot_curl_slist_append(struct curl_slist *list, const char *text) {
    return slist_append(list, text);
}
void earshot_curl_slist_free_all(struct curl_slist *list) { slist_free_all(list); }

CURLcode earshot_curl_set_long(CURL *handle, CURLoption option, long value) {
    return easy_setopt(handle, option, value);
}

CURLcode earshot_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return easy_setopt(handle, option, value);
}

CURLcode earshot_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return easy_setopt(handle, option, value);
}

CURLcode earshot_curl_set_data_callback(CURL *handle, CURLoption option, earshot_curl_data_callback callback) {
    return easy_setopt(handle, option, callback);
}

CURLcode earshot_curl_set_progress_callback(CURL *handle, earshot_curl_progress_callback callback) {
    return easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
