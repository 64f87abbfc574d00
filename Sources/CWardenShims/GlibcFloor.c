// The glibc floor of the installed binary (issue 31): `make build` links with `-Xlinker --wrap=hypotf`, which
// turns every reference to `hypotf` into one to `__wrap_hypotf` below. The only one is in the Swift runtime's
// Glibc overlay (libswiftGlibc.a's `hypot(Float, Float)`); linked as is, it binds to `hypotf@GLIBC_2.35`, the
// version glibc 2.35 gave the function when it dropped the SVID error-handling wrapper, and the binary then
// refuses to start on glibc 2.34 (RHEL 9). `.symver` binds this file's call to the function's first version
// instead, which every glibc since 2.2.5 (x86_64; 2.17 on aarch64) has and glibc 2.35+ keeps for old binaries:
// the same result, errno set the same way. In builds without the --wrap (debug, tests) nothing calls it.
#if defined(__x86_64__)
__asm__(".symver cwsys_hypotf_first_version, hypotf@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver cwsys_hypotf_first_version, hypotf@GLIBC_2.17");
#else
#define cwsys_hypotf_first_version hypotf
#endif
float cwsys_hypotf_first_version(float x, float y);

float __wrap_hypotf(float x, float y) { return cwsys_hypotf_first_version(x, y); }
