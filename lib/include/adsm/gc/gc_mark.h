/* <gc/gc_mark.h>, as bdwgc installs it beside <gc_mark.h>. */
#include "../gc_mark.h"
