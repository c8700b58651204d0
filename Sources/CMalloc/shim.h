// glibc's malloc statistics (mallinfo2), for the soak's heap figures. Swift's Glibc module leaves out <malloc.h>.
#include <malloc.h>
