/* <gc/gc.h>, as bdwgc installs it beside <gc.h>. */
#include "../gc.h"
