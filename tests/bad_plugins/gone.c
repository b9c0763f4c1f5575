/* gone.c: a library one bad plugin links against and that is then not on the
 * library search path when the plugin is loaded (a missing dependency). */
__attribute__((visibility("default"))) int tern_test_gone_value(void);
__attribute__((visibility("default"))) int tern_test_gone_value(void) { return 7; }
