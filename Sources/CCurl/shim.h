// CCurl: libcurl's header (Debian's OpenSSL flavour, libcurl4-openssl-dev). No `link`: the library is loaded when the
// first stream plays (Sources/CCurlLoader).
#include <curl/curl.h>
