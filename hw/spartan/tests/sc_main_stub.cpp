// libsystemc references sc_main; the tests use GoogleTest's main and call sc_start themselves.
extern "C" int sc_main(int, char**) { return 0; }
