/* Loaded later, through GC_dlopen: imports a function of bdwgc's that adsm
   does not serve. */
#include <gc.h>

int unserved_register(void **link, void *obj) { return GC_register_long_link(link, obj); }
