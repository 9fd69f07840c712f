// Linked into the sanitizer builds only (make sanitize): the sanitizers' defaults, which
// the environment's *SAN_OPTIONS may still override. Every finding ends the program with
// status 66, which none of the programs exits with itself, so that a test that runs one
// tells a finding from the program's own failure (perfetto_ipc_tool's 1 for a protocol
// violation, say) and from a leak.
const char* __asan_default_options(void) { return "exitcode=66"; }
const char* __lsan_default_options(void) { return "exitcode=66"; }
const char* __ubsan_default_options(void) { return "exitcode=66:print_stacktrace=1"; }
const char* __tsan_default_options(void) { return "exitcode=66"; }
