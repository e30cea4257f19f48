/* A library with a GC_ name of its own that adsm does not export: a
   program importing it is refused, whoever defines the name. */
int GC_exotic_feature(int x) { return x + 1; }
