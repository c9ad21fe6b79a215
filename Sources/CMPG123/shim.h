// CMPG123: brings libmpg123 into Swift. Large-file offsets, as Debian builds the library.
#include <mpg123.h>
