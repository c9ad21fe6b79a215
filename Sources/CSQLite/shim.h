// CSQLite: brings SQLite (the music library's database, with FTS5 for search) into Swift.
#include <sqlite3.h>
