# XDC_FUZZ=ON: the parsers of users' files under libFuzzer, ASan and UBSan (tests/fuzz).
# Every library is compiled with the sanitizers and libFuzzer's coverage; only the fuzz
# targets are built by default (the rest of the tree is EXCLUDE_FROM_ALL), so a build
# compiles no more than the targets link. No tests, no CUDA.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "XDC_FUZZ needs clang (libFuzzer): cmake -DCMAKE_CXX_COMPILER=clang++ "
                      "-DCMAKE_C_COMPILER=clang; found ${CMAKE_CXX_COMPILER_ID}")
endif()
set(XDC_CUDA OFF)
# A UBSan finding stops the input like a crash (libFuzzer keeps it), not a log line.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -Wno-pass-failed)
add_link_options(-fsanitize=address,undefined)
set(XDC_FUZZ_EXCLUDE EXCLUDE_FROM_ALL)
