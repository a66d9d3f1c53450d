// Linked into every GoogleTest executable (cmake/SpartanTest.cmake) and the other executables that link
// SystemC but have their own main() (coverage tests, benches). libsystemc.so references sc_main
// (its own main() calls it), so an executable that links SystemC must define one even when GoogleTest owns
// main(); whether a static library's weak fallback gets pulled in depends on the build type (an ASan Debug
// link of test_rtl_engine failed on it). Weak: a test that defines its own sc_main wins.
extern "C" __attribute__((weak)) int sc_main(int, char**) { return 0; }
