# Eigen 3.4 comes from PyPI as cmeel-eigen, which installs its CMake package under
# <site-packages>/cmeel.prefix. When no Eigen3 is already findable (system package,
# -DEigen3_DIR, CMAKE_PREFIX_PATH), ask the Python on PATH (or the build's) where that
# prefix is and add it to the search path.
find_package(Eigen3 3.4 QUIET NO_MODULE)
if(NOT Eigen3_FOUND)
  find_program(NYTRO_PYTHON NAMES python3 python HINTS "${Python_EXECUTABLE}")
  if(Python_EXECUTABLE)
    set(NYTRO_PYTHON "${Python_EXECUTABLE}")
  endif()
  if(NYTRO_PYTHON)
    execute_process(
      COMMAND "${NYTRO_PYTHON}" -c
        "import os, sys; print(';'.join(os.path.join(p, 'cmeel.prefix') for p in sys.path if os.path.isdir(os.path.join(p, 'cmeel.prefix'))))"
      OUTPUT_VARIABLE _nytro_cmeel_prefixes
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_nytro_cmeel_prefixes)
      message(STATUS "nytro: looking for Eigen3 under ${_nytro_cmeel_prefixes}")
      list(APPEND CMAKE_PREFIX_PATH ${_nytro_cmeel_prefixes})
    endif()
  endif()
endif()
