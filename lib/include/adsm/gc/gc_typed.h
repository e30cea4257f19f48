/* <gc/gc_typed.h>, as bdwgc installs it beside <gc_typed.h>. */
#include "../gc_typed.h"
