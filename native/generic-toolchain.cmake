# Portable liboqs: generic C only, no CPU-specific code and no run-time dispatch.
# Read by CMake through the CMAKE_TOOLCHAIN_FILE environment variable during the
# cargo build of the "generic" variant (see build-liboqs.sh); it overrides the
# OQS_DIST_BUILD=Yes that oqs-sys passes.
set(OQS_DIST_BUILD OFF CACHE BOOL "" FORCE)
set(OQS_OPT_TARGET "generic" CACHE STRING "" FORCE)
