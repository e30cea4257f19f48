/* <gc/gc_inline.h>, as bdwgc installs it beside <gc_inline.h>. */
#include "../gc_inline.h"
