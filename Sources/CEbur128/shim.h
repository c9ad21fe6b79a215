// CEbur128: brings libebur128 (EBU R128 loudness, for the library's ReplayGain of files that carry none) into Swift.
#include <ebur128.h>
