/* dl_plugin.c - the plugin bench/dl_threads.c loads and unloads ("open" mode);
 * bench/dl-threads.sh builds one copy per thread, libdlplugN.so. */
int dl_plugin_answer(void);
int dl_plugin_answer(void) { return 42; }
