// The client requests are inline functions in include/CCallgrind.h; a C target needs one source file.
#include "CCallgrind.h"
