// Compiled, never run: includes one header of the runtime from inside one
// layer, to show which includes that layer's build allows.
#include ADSM_PROBE_HEADER
