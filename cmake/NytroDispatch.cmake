# Run-time dispatch over instruction sets (NYTRO_DISPATCH), for builds that must run on
# any x86-64 machine and still use the one they land on: every source that computes is
# compiled three times, for baseline x86-64, x86-64-v3 (AVX2, FMA) and x86-64-v4
# (AVX-512), and the library picks one variant at first use (cpp/src/dispatch/isa.cpp).
#
# The variants must not share code: the Eigen and standard-library templates each one
# instantiates carry the same names, and a linker keeps one copy of each, which could
# put AVX-512 instructions into the baseline variant. So each variant is partially
# linked into one object (ld -r, its section groups resolved there) and every symbol it
# defines is made local but its table of entry points (cpp/src/dispatch/dispatch_table.cpp), by
# objcopy --keep-global-symbol; what it uses from elsewhere (libstdc++, OpenMP, the
# sources compiled once) stays undefined and is resolved as usual. Hidden visibility
# alone would not do: libstdc++ declares namespace std with default visibility.

include_guard(GLOBAL)

set(_nytro_dispatch_default OFF)
if(NYTRO_ARCH STREQUAL "portable" AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
   AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(_nytro_dispatch_default ON)
endif()
option(NYTRO_DISPATCH "Portable build: compile the core for baseline x86-64, AVX2 and AVX-512 and choose at run time"
       ${_nytro_dispatch_default})
if(NYTRO_DISPATCH AND NOT NYTRO_ARCH STREQUAL "portable")
  message(FATAL_ERROR "NYTRO_DISPATCH needs NYTRO_ARCH=portable (the variants set their own -march)")
endif()

# The variants: name and the compiler flags beyond the baseline.
set(NYTRO_DISPATCH_VARIANTS baseline avx2 avx512)
set(NYTRO_DISPATCH_FLAGS_baseline "")
set(NYTRO_DISPATCH_FLAGS_avx2 -march=x86-64-v3)
set(NYTRO_DISPATCH_FLAGS_avx512 -march=x86-64-v4)

# nytro_add_dispatch_variants(<out_var> SOURCES <sources> SETTINGS <target>)
# Compiles <sources> once per variant, with the usage requirements and compile settings
# of <target> (an interface library), and sets <out_var> to the variants' objects.
function(nytro_add_dispatch_variants out_var)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SETTINGS" "SOURCES")
  if(NOT CMAKE_LINKER OR NOT CMAKE_OBJCOPY)
    message(FATAL_ERROR "NYTRO_DISPATCH needs ld and objcopy (binutils); configure with -DNYTRO_DISPATCH=OFF")
  endif()
  set(objects "")
  foreach(variant IN LISTS NYTRO_DISPATCH_VARIANTS)
    set(lib nytro_variant_${variant})
    add_library(${lib} OBJECT ${ARG_SOURCES})
    target_link_libraries(${lib} PRIVATE ${ARG_SETTINGS})
    target_compile_definitions(${lib} PRIVATE NYTRO_ISA_NAME=${variant})
    target_compile_options(${lib} PRIVATE ${NYTRO_DISPATCH_FLAGS_${variant}} -fvisibility=hidden
                           -fvisibility-inlines-hidden)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # GCC marks static locals of inline functions and inline static members "unique
      # global", a binding objcopy cannot make local: weak ones can be.
      target_compile_options(${lib} PRIVATE -fno-gnu-unique)
    endif()
    set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    if(NYTRO_UNITY_BUILD)
      set_target_properties(${lib} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${NYTRO_UNITY_BATCH_SIZE})
    endif()
    set(object ${CMAKE_CURRENT_BINARY_DIR}/nytro_${variant}${CMAKE_CXX_OUTPUT_EXTENSION})
    add_custom_command(OUTPUT ${object}
      COMMAND ${CMAKE_LINKER} -r --force-group-allocation -o ${object} "$<TARGET_OBJECTS:${lib}>"
      COMMAND ${CMAKE_OBJCOPY} --keep-global-symbol=nytro_api_table_${variant} ${object}
      DEPENDS ${lib} "$<TARGET_OBJECTS:${lib}>"
      COMMENT "nytro: partially linking the ${variant} variant, its symbols made local but its table"
      COMMAND_EXPAND_LISTS VERBATIM)
    list(APPEND objects ${object})
  endforeach()
  set(${out_var} ${objects} PARENT_SCOPE)
endfunction()
